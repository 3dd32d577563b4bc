/*
 * cray_keys: the memory view's key table dispatches keys and draws the
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
	for (size_t i = 0; i < cray_keys_count; i++)
		for (size_t j = i + 1; j < cray_keys_count; j++)
			if (cray_keys[i].key == cray_keys[j].key)
				fail_msg("key %d bound twice",
					 cray_keys[i].key);
}

static void test_help_per_action(void **state)
{
	(void)state;
	for (size_t i = 0; i < cray_keys_count; i++) {
		bool first =
			!i || cray_keys[i - 1].action != cray_keys[i].action;

		for (size_t j = 0; first && j < i; j++)
			if (cray_keys[j].action == cray_keys[i].action)
				fail_msg("action %d is split",
					 cray_keys[i].action);
		if (first) {
			assert_non_null(cray_keys[i].help);
			assert_non_null(cray_keys[i].keyname);
		} else {
			assert_null(cray_keys[i].help);
		}
	}
}

static void test_promised(void **state)
{
	static const struct {
		int key;
		enum cray_action action;
		int arg;
	} want[] = {
		{'q', CRAY_ACT_QUIT, 0},
		{KEY_F(10), CRAY_ACT_QUIT, 0},
		{KEY_F(1), CRAY_ACT_HELP, 0},
		{'?', CRAY_ACT_HELP, 0},
		{'\t', CRAY_ACT_TAB_NEXT, 0},
		{KEY_BTAB, CRAY_ACT_TAB_PREV, 0},
		{'1', CRAY_ACT_TAB, 0},
		{'2', CRAY_ACT_TAB, 1},
		{'3', CRAY_ACT_TAB, 2},
		{'4', CRAY_ACT_TAB, 3},
		{'\n', CRAY_ACT_TOGGLE, 0},
		{KEY_RIGHT, CRAY_ACT_EXPAND, 0},
		{KEY_LEFT, CRAY_ACT_COLLAPSE, 0},
		{KEY_UP, CRAY_ACT_UP, 0},
		{KEY_DOWN, CRAY_ACT_DOWN, 0},
		{KEY_PPAGE, CRAY_ACT_PAGE_UP, 0},
		{KEY_NPAGE, CRAY_ACT_PAGE_DOWN, 0},
		{KEY_HOME, CRAY_ACT_HOME, 0},
		{KEY_END, CRAY_ACT_END, 0},
		{'s', CRAY_ACT_SORT_NEXT, 0},
		{'>', CRAY_ACT_SORT_NEXT, 0},
		{'<', CRAY_ACT_SORT_PREV, 0},
		{'I', CRAY_ACT_INVERT, 0},
		{'/', CRAY_ACT_SEARCH, 0},
		{'n', CRAY_ACT_SEARCH_NEXT, 0},
		{' ', CRAY_ACT_PAUSE, 0},
		{0x0c, CRAY_ACT_REDRAW, 0},
		{27, CRAY_ACT_BACK, 0},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		const struct cray_key *k = cray_keys_find(want[i].key);

		assert_non_null(k);
		assert_int_equal(k->action, want[i].action);
		assert_int_equal(k->arg, want[i].arg);
	}
	assert_null(cray_keys_find('@'));
}

/* The key bar offers Enter (open a type) on the Types tab only, the
 * other keys everywhere. */
static void test_bar(void **state)
{
	(void)state;
	for (int t = 0; t < CRAY_TAB_COUNT; t++) {
		bool enter = false;
		size_t shown = 0;

		for (size_t i = 0; i < cray_keys_bar_count; i++) {
			const struct cray_bar_key *b = &cray_keys_bar[i];

			if (!cray_keys_bar_on(b, t))
				continue;
			shown++;
			enter |= !strcmp(b->key, "Enter");
		}
		assert_int_equal(enter, t == CRAY_TAB_TYPES);
		assert_int_equal(shown, cray_keys_bar_count - !enter);
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
