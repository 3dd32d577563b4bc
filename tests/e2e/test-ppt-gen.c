/*
 * Integration: corotop -p against clients written the way the shipped ppt
 * generator's code behaves (ppt_gentarget.c), in each revision's way of
 * placing frames: the data offset, the slot of frame i, whether unattached
 * saves take an index; a generated buffer asking for a resizable block is
 * attached static; and --force-attach over a generated client that still
 * holds the segment of an agent that was SIGKILLed.
 */
#define _GNU_SOURCE
#include "engine/engine.h"
#include "e2e.h"
#include "ppt-it.h"

/* One revision of the generator's client (ppt_gentarget.c's options):
 * frames saved before the attach are not seen, the 50 after are, whole,
 * with their values; after corotop exits (SIGINT, once it showed all 50)
 * the client lets go. */
static void gen_variant(const char *offset, const char *slot, const char *count,
			bool resize_tag)
{
	struct target t;
	struct proc p;
	struct seen s;
	char r[160];
	int hmem, stat, attached;
	uint64_t first;
	char *targv[] = {PPT_GENTARGET, "--offset", (char *)offset, "--slot",
			 (char *)slot,	"--count",  (char *)count,  NULL};
	char *argv[] = {ITEST_COROTOP, "-b", "-f",	     "json", "-d", "2",
			"-p",	       NULL, "--ppt-frames", "1000", NULL};

	print_message("generator: --offset %s --slot %s --count %s%s\n", offset,
		      slot, count, resize_tag ? " --resize-tag" : "");
	if (!resize_tag)
		targv[7] = NULL;
	target_start_args(&t, targv);
	/* Saves while nobody is attached (which may take indexes). */
	target_cmd(&t, "save 7", r, sizeof(r));
	argv[7] = (char *)pid_arg(t.pid);
	proc_start(&p, argv);
	wait_published(&t);
	target_cmd(&t, "save 50", r, sizeof(r));
	/* Until all 50 are shown, however long the machine takes. */
	frames_then_sigint(&p, "legacy", 50, &s);
	assert_int_equal(s.n, 50);
	first = json_u64(s.frames[0], "seq");
	assert_int_equal(first, strcmp(count, "always") ? 1 : 8);
	for (size_t i = 0; i < s.n; i++) {
		uint64_t seq = json_u64(s.frames[i], "seq");

		assert_int_equal(seq, first + i);
		assert_int_equal(json_u64(s.frames[i], "values.a"), seq);
		assert_true(json_need(s.frames[i], "values.b", J_NUM)->num ==
			    2.5 * (double)seq);
	}
	assert_int_equal(json_u64(s.last_buffer, "lost"), 0);
	/* It never sets client_flags: its frames say it attached. */
	assert_string_equal(json_need(s.last_buffer, "state", J_STR)->s,
			    "attached");
	/* A resize tag or not, its client reads the static layout only. */
	assert_string_equal(json_need(s.last_buffer, "layout", J_STR)->s,
			    "static");
	seen_free(&s);
	proc_free(&p);
	target_cmd(&t, "save 1", r, sizeof(r));
	target_cmd(&t, "state", r, sizeof(r));
	assert_int_equal(sscanf(r, "ok hmem=%d stat=%d attached=%d", &hmem,
				&stat, &attached),
			 3);
	assert_int_equal(hmem, 0);
	assert_int_equal(stat, 0);
	assert_int_equal(attached, 0);
	target_stop(&t);
	assert_xdg_empty();
}

static void test_generator_compat(void **state)
{
	(void)state;
	gen_variant("round", "plain", "always", false);
	gen_variant("mod", "minus1", "always", false);
	gen_variant("mod", "rotate", "attached", false);
	gen_variant("round", "rotate", "always", true);
}

/* --force-attach over a generated client that still holds the segment of
 * an agent that was SIGKILLed: it attaches only when it holds none, so
 * corotop first sets _hmem to 0, waits for the client to let go (at its
 * next save), then publishes its own segment. */
static void test_force_over_held_segment(void **state)
{
	struct target t;
	struct proc a, b;
	struct seen s;
	char r[160];
	int hmem = 1, stat = 0;
	uint64_t end;
	char *argv_a[] = {ITEST_COROTOP, "-b", "-d", "5", "-p", NULL, NULL};
	char *argv_b[] = {ITEST_COROTOP,  "-b",	  "-f",
			  "json",	  "-d",	  "2",
			  "-p",		  NULL,	  "--force-attach",
			  "--ppt-frames", "1000", NULL};

	(void)state;
	target_start(&t, PPT_GENTARGET);
	argv_a[5] = argv_b[7] = (char *)pid_arg(t.pid);
	proc_start(&a, argv_a);
	wait_published(&t);
	target_cmd(&t, "save 5", r, sizeof(r)); /* holds a's segment now */
	kill(a.pid, SIGKILL);
	proc_finish(&a, 30000);
	proc_free(&a);
	proc_start(&b, argv_b);
	/* b unhooks: _hmem goes to 0 while the client still holds a's. */
	end = it_now() + 30000000000ull;
	while (hmem && it_now() < end) {
		it_sleep_ms(10);
		target_state(&t, &hmem, &stat);
	}
	assert_int_equal(hmem, 0);
	assert_int_equal(stat, (int)b.pid);
	target_cmd(&t, "save 1", r, sizeof(r)); /* lets go of a's */
	wait_published(&t);
	target_cmd(&t, "save 20", r, sizeof(r));
	frames_then_sigint(&b, "legacy", 20, &s);
	assert_int_equal(s.n, 20);
	assert_int_equal(json_u64(s.frames[0], "seq"), 7);
	assert_int_equal(json_u64(s.last_buffer, "lost"), 0);
	seen_free(&s);
	proc_free(&b);
	target_stop(&t);
	/* a's directory: it was SIGKILLed. */
	teardown_xdg(NULL);
	setup_xdg(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_generator_compat),
		cmocka_unit_test(test_force_over_held_segment),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, setup_xdg, teardown_xdg);
}
