/*
 * test-unwinder: stacks walked with CFI (engine/symbols/unwinder.c through
 * symbolizer_unwind) see through frames built without frame pointers, and
 * framekind tells the program's frames from the runtimes' (and names the
 * program's code a runtime frame runs inlined).
 *
 * The walk is of this process's own stack: three functions built with
 * -fomit-frame-pointer call a capture function, which hands the unwinder
 * its return address, the stack pointer after its return and a frame
 * pointer register that means nothing (omitting it made rbp a general
 * register), through a reader bounded to the stack above it.  A
 * frame-pointer walk stops there; the CFI walk must name all three.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "engine/names/framekind.h"
#include "engine/symbols/symbolizer.h"

#define NOFP __attribute__((noinline, optimize("omit-frame-pointer")))

static struct symbolizer *sym;
static uint64_t frames[32];
static size_t nframes;
static uint64_t stack_lo, stack_hi;
static unsigned reads_refused;

static bool read_own(void *ctx, uint64_t addr, uint64_t *word)
{
	(void)ctx;
	if (addr < stack_lo || addr > stack_hi - 8) {
		reads_refused++;
		return false;
	}
	memcpy(word, (const void *)(uintptr_t)addr, 8);
	return true;
}

static __attribute__((noinline)) void capture(void)
{
	uint64_t *rec = __builtin_frame_address(0);
	struct unwinder_regs r = {
		.pc = (uint64_t)(uintptr_t)__builtin_return_address(0),
		.sp = (uint64_t)(uintptr_t)(rec + 2),
		.fp = 0xdeadbeefu, /* the callers use rbp as they like */
	};

	stack_lo = r.sp;
	stack_hi = r.sp + 256 * 1024;
	nframes = symbolizer_unwind(sym, &r, read_own, NULL, frames, 32);
}

/* volatile sinks keep the calls from being tail calls. */
static volatile int sink;

static NOFP void level3(int x)
{
	capture();
	sink = x;
}

static NOFP void level2(int x)
{
	level3(x + 1);
	sink = x;
}

static NOFP void level1(int x)
{
	level2(x + 1);
	sink = x;
}

/* A recursion: every level returns to the same address. */
static NOFP void recurse(int depth)
{
	if (depth > 0)
		recurse(depth - 1);
	else
		capture();
	sink = depth;
}

static bool frame_named(const char *name, size_t *at)
{
	for (size_t i = 0; i < nframes; i++) {
		struct symbol s;

		if (symbolizer_lookup(sym, frames[i] - 1, &s) && s.function &&
		    !strcmp(s.function, name)) {
			*at = i;
			return true;
		}
	}
	return false;
}

static void test_cfi_sees_through(void **state)
{
	char err[256];
	size_t a, b, c;

	(void)state;
	sym = symbolizer_create(getpid(), err, sizeof(err));
	assert_non_null(sym);
	level1(1);
	print_message("%zu frames, %u reads refused\n", nframes, reads_refused);
	assert_true(nframes >= 4);
	assert_true(frame_named("level3", &a));
	assert_true(frame_named("level2", &b));
	assert_true(frame_named("level1", &c));
	assert_true(a < b && b < c); /* innermost first */
	symbolizer_destroy(sym);
	sym = NULL;
}

/* A recursion repeats return addresses, not stack pointers: the walk
 * goes through every level. */
static void test_cfi_recursion(void **state)
{
	char err[256];
	size_t same = 0, at;

	(void)state;
	sym = symbolizer_create(getpid(), err, sizeof(err));
	assert_non_null(sym);
	recurse(12);
	assert_true(frame_named("recurse", &at));
	for (size_t i = at; i < nframes; i++)
		same += frames[i] == frames[at + 1];
	print_message("%zu frames, %zu at one return address\n", nframes, same);
	assert_true(same >= 12);
	symbolizer_destroy(sym);
	sym = NULL;
}

/* A reader that refuses everything: the walk is the first frame alone,
 * and nothing is read past what the reader allows. */
static bool read_none(void *ctx, uint64_t addr, uint64_t *word)
{
	(void)ctx;
	(void)addr;
	(void)word;
	return false;
}

static void test_reader_bounds(void **state)
{
	struct unwinder_regs r = {
		.pc = (uint64_t)(uintptr_t)&level1 + 4, .sp = 0x1000, .fp = 0};
	char err[256];

	(void)state;
	sym = symbolizer_create(getpid(), err, sizeof(err));
	assert_non_null(sym);
	nframes = symbolizer_unwind(sym, &r, read_none, NULL, frames, 32);
	assert_true(nframes <= 1);
	assert_int_equal(symbolizer_unwind(sym, &r, read_none, NULL, frames, 0),
			 0);
	symbolizer_destroy(sym);
	sym = NULL;
}

/* The rule by module kind and name: a library's frames are the
 * runtime's whatever its name, the main executable's the program's but
 * for the runtime namespaces; a name alone (a recording) by the list. */
static void test_framekind(void **state)
{
	static const struct {
		const char *module, *function;
		enum framekind_module kind;
		bool runtime;
	} cases[] = {
		{"libboost_fiber.so.1.74.0",
		 "boost::fibers::context::resume(boost::fibers::context*)",
		 FRAMEKIND_LIBRARY, true},
		{"fiber-target",
		 "void boost::context::detail::fiber_entry<boost::context::"
		 "detail::fiber_record<...> >(boost::context::detail::"
		 "transfer_t)",
		 FRAMEKIND_PROGRAM, true},
		{"fiber-target",
		 "std::_Function_handler<void (), main::{lambda()#1}>::"
		 "_M_invoke(std::_Any_data const&)",
		 FRAMEKIND_PROGRAM, true},
		{"fiber-target", "main::{lambda()#1}::operator()() const",
		 FRAMEKIND_PROGRAM, false},
		{"fiber-target", "stuck_wait_for_signal()", FRAMEKIND_PROGRAM,
		 false},
		{"fiber-target", "void ns::wait<int>(int)", FRAMEKIND_PROGRAM,
		 false},
		{"fiber-target", "corotop_coro_yield", FRAMEKIND_PROGRAM, true},
		{"libc.so.6", "swapcontext", FRAMEKIND_LIBRARY, true},
		{"libcorotop-preload.so", "preload_fc_entry", FRAMEKIND_LIBRARY,
		 true},
		{"libstdc++.so.6", "execute_native_thread_routine",
		 FRAMEKIND_LIBRARY, true},
		/* Pth, and any library: the runtime's now. */
		{"libpth.so.20.0.27", "pth_yield", FRAMEKIND_LIBRARY, true},
		{"libmyapp.so", "handle_request", FRAMEKIND_LIBRARY, true},
		{"[vdso]", NULL, FRAMEKIND_LIBRARY, true},
		{"uctx-target", NULL, FRAMEKIND_PROGRAM, false},
		{"pdns_recursor", NULL, FRAMEKIND_PROGRAM, false},
		{NULL, NULL, FRAMEKIND_PROGRAM, false},
		{"fiber-target", "", FRAMEKIND_PROGRAM, false},
		/* Names only: the system's and corotop's libraries by name. */
		{"libc.so.6", "swapcontext", FRAMEKIND_NAMED, true},
		{"libcorotop-preload.so", "preload_fc_entry", FRAMEKIND_NAMED,
		 true},
		{"libmyapp.so", "handle_request", FRAMEKIND_NAMED, false},
		{"uctx-target", "worker", FRAMEKIND_NAMED, false},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (framekind_runtime(NULL, cases[i].module, cases[i].function,
				      cases[i].kind) != cases[i].runtime)
			fail_msg("%s in %s (kind %d): expected %s",
				 cases[i].function ? cases[i].function
						   : "(none)",
				 cases[i].module ? cases[i].module : "(none)",
				 (int)cases[i].kind,
				 cases[i].runtime ? "runtime" : "program");
}

/* --runtime and --own-lib: prefixes of a module's or a function's name. */
static void test_framekind_patterns(void **state)
{
	char err[256];
	struct framekind *k =
		framekind_create("mysched::,sched_*,libmain-sched",
				 "libmyapp,libplugin-", err, sizeof(err));
	static const struct {
		const char *module, *function;
		enum framekind_module kind;
		bool runtime;
	} cases[] = {
		{"server", "mysched::Scheduler::park()", FRAMEKIND_PROGRAM,
		 true},
		{"server", "void mysched::wait<int>(int)", FRAMEKIND_PROGRAM,
		 true},
		{"server", "sched_park", FRAMEKIND_PROGRAM, true},
		{"server", "handle_request", FRAMEKIND_PROGRAM, false},
		{"server", "my_sched_park", FRAMEKIND_PROGRAM, false},
		{"libmain-sched.so.1", "anything", FRAMEKIND_LIBRARY, true},
		{"libmain-sched.so.1", NULL, FRAMEKIND_NAMED, true},
		/* The program's own shared libraries. */
		{"libmyapp.so.2", "handle_request", FRAMEKIND_LIBRARY, false},
		{"libplugin-echo.so", "echo_loop", FRAMEKIND_LIBRARY, false},
		{"libmyapp.so.2", NULL, FRAMEKIND_LIBRARY, false},
		/* ... but for the runtimes' namespaces and --runtime's. */
		{"libmyapp.so.2", "boost::fibers::context::resume()",
		 FRAMEKIND_LIBRARY, true},
		{"libmyapp.so.2", "sched_park", FRAMEKIND_LIBRARY, true},
		{"libother.so", "handle_request", FRAMEKIND_LIBRARY, true},
	};

	(void)state;
	if (!k)
		fail_msg("framekind_create: %s", err);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (framekind_runtime(k, cases[i].module, cases[i].function,
				      cases[i].kind) != cases[i].runtime)
			fail_msg("%s in %s: expected %s",
				 cases[i].function ? cases[i].function
						   : "(none)",
				 cases[i].module,
				 cases[i].runtime ? "runtime" : "program");
	framekind_destroy(k);
	framekind_destroy(NULL);
	/* Lists that do not parse say which option and what. */
	static const char *const bad[] = {"", ",", "a,,b", "*", "a b", "lib*x"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_null(framekind_create(bad[i], NULL, err, sizeof(err)));
		assert_non_null(strstr(err, "--runtime"));
		assert_null(framekind_create(NULL, bad[i], err, sizeof(err)));
		assert_non_null(strstr(err, "--own-lib"));
	}
}

static void test_framekind_inlined(void **state)
{
	static const struct {
		const char *function, *name; /* name NULL: none */
	} cases[] = {
		{"boost::fibers::worker_context<main::{lambda()#2}>::run_("
		 "boost::context::fiber&&)",
		 "main::{lambda()#2}"},
		{"boost::fibers::worker_context<Server::accept_loop()::"
		 "{lambda()#1}>::run_(boost::context::fiber&&)",
		 "Server::accept_loop()::{lambda()#1}"},
		{"boost::fibers::worker_context<void (*)(int), int>::run_("
		 "boost::context::fiber&&)",
		 NULL},
		{"boost::fibers::worker_context<std::_Bind<void (*())()> >::"
		 "run_(boost::context::fiber&&)",
		 NULL},
		{"boost::fibers::worker_context<...>::run_(boost::context::"
		 "fiber&&)",
		 NULL},
		{"boost::fibers::worker_context<main::{lambda()#2}", NULL},
		{"boost::fibers::dispatcher_context::run_(boost::context::"
		 "fiber&&)",
		 "boost.fiber dispatcher"},
		{"boost::fibers::scheduler::dispatch()",
		 "boost.fiber dispatcher"},
		{"boost::fibers::scheduler::dispatch_later()", NULL},
		{"boost::fibers::context::resume()", NULL},
		{"main", NULL},
		{NULL, NULL},
	};
	char out[48];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		bool got =
			framekind_inlined(cases[i].function, out, sizeof(out));

		if (got != (cases[i].name != NULL) ||
		    (got && strcmp(out, cases[i].name)))
			fail_msg("%s: got %s, expected %s",
				 cases[i].function ? cases[i].function
						   : "(null)",
				 got ? out : "(none)",
				 cases[i].name ? cases[i].name : "(none)");
	}
	/* Cut to the buffer, terminated. */
	assert_true(framekind_inlined(
		"boost::fibers::worker_context<main::{lambda()#2}>::run_()",
		out, 8));
	assert_string_equal(out, "main::{");
	/* A role's name is told from a function's. */
	assert_true(framekind_role("boost.fiber dispatcher"));
	assert_false(framekind_role("main::{lambda()#2}"));
	assert_false(framekind_role("root"));
	assert_false(framekind_role(NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cfi_sees_through),
		cmocka_unit_test(test_cfi_recursion),
		cmocka_unit_test(test_reader_bounds),
		cmocka_unit_test(test_framekind),
		cmocka_unit_test(test_framekind_patterns),
		cmocka_unit_test(test_framekind_inlined),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
