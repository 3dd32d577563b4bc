/*
 * keymap: the binding table that both dispatches keys and draws help must
 * be consistent: no key bound twice, every action's first binding carries
 * a help note and a printable name, and the conventional keys are there.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <curses.h>

#include "ui/tui/keymap.h"

static void test_unique_keys(void **state)
{
	(void)state;
	for (size_t i = 0; i < keymap_count; i++)
		for (size_t j = i + 1; j < keymap_count; j++)
			if (keymap[i].key == keymap[j].key)
				fail_msg("key %d bound twice", keymap[i].key);
}

static void test_help_per_action(void **state)
{
	(void)state;
	for (size_t i = 0; i < keymap_count; i++) {
		bool first = !i || keymap[i - 1].action != keymap[i].action;

		/* Bindings of one action are consecutive: an action that
		 * starts here must not have appeared before. */
		for (size_t j = 0; first && j < i; j++)
			if (keymap[j].action == keymap[i].action)
				fail_msg("action %d is split",
					 keymap[i].action);
		if (first) {
			assert_non_null(keymap[i].help);
			assert_non_null(keymap[i].keyname);
		} else {
			assert_null(keymap[i].help);
		}
	}
}

static void test_conventions(void **state)
{
	static const struct {
		int key;
		enum tui_action action;
	} want[] = {
		{'q', ACT_QUIT},
		{KEY_F(10), ACT_QUIT},
		{KEY_F(1), ACT_HELP},
		{'?', ACT_HELP},
		{'/', ACT_SEARCH},
		{KEY_F(3), ACT_SEARCH},
		{'\\', ACT_FILTER},
		{KEY_F(4), ACT_FILTER},
		{KEY_F(6), ACT_SORT_NEXT},
		{'>', ACT_SORT_NEXT},
		{'<', ACT_SORT_PREV},
		{'I', ACT_INVERT},
		{'t', ACT_GROUP},
		{' ', ACT_PAUSE},
		{'Z', ACT_PAUSE},
		{'j', ACT_DOWN},
		{'k', ACT_UP},
		{'g', ACT_HOME},
		{'G', ACT_END},
		{'\n', ACT_ENTER},
		{27, ACT_BACK},
		{'n', ACT_SEARCH_NEXT},
		{'N', ACT_SEARCH_PREV},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		const struct key_binding *b = keymap_find(want[i].key);

		assert_non_null(b);
		assert_int_equal(b->action, want[i].action);
	}
	assert_null(keymap_find('@'));
}

/* Replaying, g and Home still go to the first row (g is not "go to", so
 * the key means one thing in every mode); T asks for a time; F5 is the
 * table's tree (group by thread) as in htop. */
static void test_replay_keys_keep_conventions(void **state)
{
	(void)state;
	assert_int_equal(keymap_find_replay('g')->action, ACT_HOME);
	assert_int_equal(keymap_find_replay(KEY_HOME)->action, ACT_HOME);
	assert_int_equal(keymap_find_replay('T')->action, ACT_GOTO);
	assert_int_equal(keymap_find(KEY_F(5))->action, ACT_TREE);
	for (size_t i = 0; i < keymap_replay_count; i++) {
		const struct key_binding *b = keymap_find(keymap_replay[i].key);

		/* A replay key may only shadow a key of the same sense
		 * (Space, Z: pause -> play) or of the hot-stack tree. */
		if (b && b->action != ACT_PAUSE && b->action != ACT_EXPAND &&
		    b->action != ACT_COLLAPSE)
			fail_msg("replay key %s hides %s",
				 keymap_replay[i].keyname,
				 b->keyname ? b->keyname : "?");
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_unique_keys),
		cmocka_unit_test(test_help_per_action),
		cmocka_unit_test(test_conventions),
		cmocka_unit_test(test_replay_keys_keep_conventions),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
