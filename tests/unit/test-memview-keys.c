/*
 * test-memview-keys: the memory view's key table dispatches keys and draws the
 * help, so it must be consistent: no key bound twice, an action's
 * bindings together with the help note on the first, and the keys the
 * view promises (corotop's where the meaning is the same); the key bar
 * offers Enter where it acts, on Types.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <curses.h>

#include "ui/memview/memview_keys.h"
#include "ui/memview/memview_tabs.h"

static void test_unique(void **state)
{
	(void)state;
	for (size_t i = 0; i < memview_keys_count; i++)
		for (size_t j = i + 1; j < memview_keys_count; j++)
			if (memview_keys[i].key == memview_keys[j].key)
				fail_msg("key %d bound twice",
					 memview_keys[i].key);
}

static void test_help_per_action(void **state)
{
	(void)state;
	for (size_t i = 0; i < memview_keys_count; i++) {
		bool first = !i || memview_keys[i - 1].action !=
					   memview_keys[i].action;

		for (size_t j = 0; first && j < i; j++)
			if (memview_keys[j].action == memview_keys[i].action)
				fail_msg("action %d is split",
					 memview_keys[i].action);
		if (first) {
			assert_non_null(memview_keys[i].help);
			assert_non_null(memview_keys[i].keyname);
		} else {
			assert_null(memview_keys[i].help);
		}
	}
}

static void test_promised(void **state)
{
	static const struct {
		int key;
		enum memview_action action;
		int arg;
	} want[] = {
		{'q', MEMVIEW_ACT_QUIT, 0},
		{KEY_F(10), MEMVIEW_ACT_QUIT, 0},
		{KEY_F(1), MEMVIEW_ACT_HELP, 0},
		{'?', MEMVIEW_ACT_HELP, 0},
		{'\t', MEMVIEW_ACT_TAB_NEXT, 0},
		{KEY_BTAB, MEMVIEW_ACT_TAB_PREV, 0},
		{'1', MEMVIEW_ACT_TAB, 0},
		{'2', MEMVIEW_ACT_TAB, 1},
		{'3', MEMVIEW_ACT_TAB, 2},
		{'4', MEMVIEW_ACT_TAB, 3},
		{'\n', MEMVIEW_ACT_TOGGLE, 0},
		{KEY_RIGHT, MEMVIEW_ACT_EXPAND, 0},
		{KEY_LEFT, MEMVIEW_ACT_COLLAPSE, 0},
		{KEY_UP, MEMVIEW_ACT_UP, 0},
		{KEY_DOWN, MEMVIEW_ACT_DOWN, 0},
		{KEY_PPAGE, MEMVIEW_ACT_PAGE_UP, 0},
		{KEY_NPAGE, MEMVIEW_ACT_PAGE_DOWN, 0},
		{KEY_HOME, MEMVIEW_ACT_HOME, 0},
		{KEY_END, MEMVIEW_ACT_END, 0},
		{'s', MEMVIEW_ACT_SORT_NEXT, 0},
		{'>', MEMVIEW_ACT_SORT_NEXT, 0},
		{'<', MEMVIEW_ACT_SORT_PREV, 0},
		{'I', MEMVIEW_ACT_INVERT, 0},
		{'/', MEMVIEW_ACT_SEARCH, 0},
		{'n', MEMVIEW_ACT_SEARCH_NEXT, 0},
		{' ', MEMVIEW_ACT_PAUSE, 0},
		{0x0c, MEMVIEW_ACT_REDRAW, 0},
		{27, MEMVIEW_ACT_BACK, 0},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		const struct memview_key *k = memview_keys_find(want[i].key);

		assert_non_null(k);
		assert_int_equal(k->action, want[i].action);
		assert_int_equal(k->arg, want[i].arg);
	}
	assert_null(memview_keys_find('@'));
}

/* The key bar offers Enter (open a type) on the Types tab only, the
 * other keys everywhere. */
static void test_bar(void **state)
{
	(void)state;
	for (int t = 0; t < MEMVIEW_TAB_COUNT; t++) {
		bool enter = false;
		size_t shown = 0;

		for (size_t i = 0; i < memview_keys_bar_count; i++) {
			const struct memview_bar_key *b = &memview_keys_bar[i];

			if (!memview_keys_bar_on(b, t))
				continue;
			shown++;
			enter |= !strcmp(b->key, "Enter");
		}
		assert_int_equal(enter, t == MEMVIEW_TAB_TYPES);
		assert_int_equal(shown, memview_keys_bar_count - !enter);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_unique),
		cmocka_unit_test(test_help_per_action),
		cmocka_unit_test(test_promised),
		cmocka_unit_test(test_bar),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
