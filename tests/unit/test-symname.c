/*
 * symname: symbols as people read them (src/engine/names/symname.c).
 *
 * Real mangled names, as GCC 12, Clang 14 and rustc 1.95 made them (nm of
 * small programs; the C++ ones also come out of symfix-coro in
 * test-symbolizer): C++ functions, methods, templates and lambdas; a C++20
 * coroutine's parts in both compilers' spellings, which must show as the
 * coroutine; Rust's legacy names (hash hidden) and v0 names.  Then what
 * is not demangled (plain C, versioned, broken, too long), how long names
 * are shortened (and never past the bound, whatever the buffer), that a
 * name whose demangling is exponentially long is stopped and cut (without
 * the stop this test would run until its timeout), and finding the
 * function in corotop's "func+0xOFF (file:N)" text.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "engine/names/framekind.h"
#include "engine/names/symname.h"

struct pair {
	const char *mangled;
	const char *shown;
};

static const char *show(const char *raw, char *buf, size_t n)
{
	size_t len = symname_format(raw, strlen(raw), buf, n);

	assert_int_equal(len, strlen(buf));
	return buf;
}

static void check_pairs(const struct pair *p, size_t n)
{
	char buf[256];

	for (size_t i = 0; i < n; i++) {
		show(p[i].mangled, buf, sizeof(buf));
		if (strcmp(buf, p[i].shown))
			fail_msg("%s\n  shows as %s\n  wanted   %s",
				 p[i].mangled, buf, p[i].shown);
	}
}

#define CHECK_PAIRS(p) check_pairs(p, sizeof(p) / sizeof(p[0]))

static void test_cxx(void **state)
{
	static const struct pair p[] = {
		{"_Z3fooi", "foo(int)"},
		{"_ZNK3Foo3getEv", "Foo::get() const"},
		{"_ZN3FooC2Ev", "Foo::Foo()"},
		{"_ZN3FooD1Ev", "Foo::~Foo()"},
		{"_ZN12_GLOBAL__N_13fooEv", "(anonymous namespace)::foo()"},
		{"_ZThn8_N3Foo3barEv", "non-virtual thunk to Foo::bar()"},
		/* templates */
		{"_ZNSt6vectorIiSaIiEE9push_backERKi",
		 "std::vector<int, std::allocator<int> >::push_back(int "
		 "const&)"},
		{"_ZN6symfix5twiceIlEET_S1_", "long symfix::twice<long>(long)"},
		{"_ZNKSt8functionIFvvEEclEv",
		 "std::function<void ()>::operator()() const"},
		/* lambdas */
		{"_ZZ4mainENKUliE_clEi",
		 "main::{lambda(int)#1}::operator()(int) const"},
		{"_ZZ4mainENUliE_4_FUNEi", "main::{lambda(int)#1}::_FUN(int)"},
		/* other clones stay: they are separate code */
		{"_ZN3fooIiE3barEv.isra.0", "foo<int>::bar() [clone .isra.0]"},
		{"_ZN3foo3barEv.cold", "foo::bar() [clone .cold]"},
	};

	(void)state;
	CHECK_PAIRS(p);
}

static void test_coroutine_parts(void **state)
{
	static const struct pair p[] = {
		/* GCC 12: the parts take a frame type named after the
		 * coroutine's own mangled name */
		{"_ZN2ns5plainEPZNS_5plainEiE20_ZN2ns5plainEi.Frame.actor",
		 "ns::plain(int)"},
		{"_ZN2ns5plainEPZNS_5plainEiE20_ZN2ns5plainEi.Frame.destroy",
		 "ns::plain(int)"},
		{"_ZN2ns4tmplEPZNS_4tmplIiEE4taskT_E28_ZN2ns4tmplIiEE4taskT_."
		 "Frame.actor",
		 "task ns::tmpl<int>(int)"},
		{"_ZN12_GLOBAL__N_16workerEPZNS_6workerERNS_9schedulerEiiPmE50_"
		 "ZN12_GLOBAL__N_16workerERNS_9schedulerEiiPm.Frame.actor",
		 "(anonymous namespace)::worker((anonymous "
		 "namespace)::scheduler&, int, int, unsigned long*)"},
		/* ... the cold part of the body keeps its own marker */
		{"_ZN12_GLOBAL__N_16workerEPZNS_6workerERNS_9schedulerEiiPmE50_"
		 "ZN12_GLOBAL__N_16workerERNS_9schedulerEiiPm.Frame.actor.cold",
		 "(anonymous namespace)::worker((anonymous "
		 "namespace)::scheduler&, int, int, unsigned long*) [clone "
		 ".cold]"},
		/* Clang 14 */
		{"_ZN2ns5plainEi.resume", "ns::plain(int)"},
		{"_ZN2ns5plainEi.destroy", "ns::plain(int)"},
		{"_ZN2ns4tmplIdEE4taskT_.resume",
		 "task ns::tmpl<double>(double)"},
		{"_Z4taskv.cleanup", "task()"},
		/* the short spelling */
		{"_Z4taskv.actor", "task()"},
		{"_Z4taskv.destroy.cold", "task() [clone .cold]"},
		/* A frame named after no name: the part, demangled. */
		{"_ZN1fEPZ1fvE9_Zx.Frame.actor", "f(f()::_Zx.Frame*)"},
	};

	(void)state;
	CHECK_PAIRS(p);
}

static void test_rust_legacy(void **state)
{
	static const struct pair p[] = {
		{"_ZN1m4main17h4009bc0cd8b193aaE", "m::main"},
		{"_ZN1m7Counter4bump17h3c0059f1d3744774E", "m::Counter::bump"},
		{"_ZN1m7generic17h4463ebd73557e790E", "m::generic"},
		{"_ZN4core3ptr85drop_in_place$LT$std..rt..lang_start$LT$$LP$$"
		 "RP$$GT$..$u7b$$u7b$closure$u7d$$u7d$$GT$17h0123456789abcdefE",
		 "core::ptr::drop_in_place<std::rt::lang_start<()>::{{closure}}"
		 ">"},
		{"_ZN1m4main17h4009bc0cd8b193aaE.llvm.999", "m::main"},
	};

	(void)state;
	CHECK_PAIRS(p);
}

static void test_rust_v0(void **state)
{
	static const struct pair p[] = {
		{"_RNvCskK7mfDs1mzF_1m4main", "m::main"},
		{"_RNvMCskK7mfDs1mzF_1mNtB2_7Counter4bump",
		 "<m::Counter>::bump"},
		{"_RNvXs_CskK7mfDs1mzF_1mNtB4_7CounterNtB4_5Speak5speak",
		 "<m::Counter as m::Speak>::speak"},
		{"_RINvCskK7mfDs1mzF_1m7genericmEB2_", "m::generic::<u32>"},
		{"_RINvCskK7mfDs1mzF_1m7genericINtNtCslNYArtu3iFV_5alloc3vec3V"
		 "echEEB2_",
		 "m::generic::<alloc::vec::Vec<u8>>"},
		{"_RNCINvNtCsjrHSEGnQ3l9_3std2rt10lang_startuE0CskK7mfDs1mzF_"
		 "1m",
		 "std::rt::lang_start::<()>::{closure#0}"},
		{"_RINvMs6_NtCsgvbsrvnw3yD_9hashbrown3rawINtB6_8RawTableTyNtNtC"
		 "slNYArtu3iFV_5alloc6string6StringEE14reserve_rehashNCINvNtB8_"
		 "3map11make_hasheryBR_NtNtNtCsjrHSEGnQ3l9_"
		 "3std4hash6random11Ran"
		 "domStateE0ECskK7mfDs1mzF_1m.llvm.11307886682564119501",
		 "<hashbrown::raw::RawTable<...>>::reserve_rehash::<hashbrown::"
		 "map::make_hasher<...>::{closure#0}>"},
	};

	(void)state;
	CHECK_PAIRS(p);
}

static void test_not_demangled(void **state)
{
	static const struct pair p[] = {
		{"main", "main"},
		{"clock_gettime@@GLIBC_2.17", "clock_gettime"},
		{"memcpy@GLIBC_2.2.5", "memcpy"},
		{"_Zfoo", "_Zfoo"},  /* not a valid C++ name */
		{"_Rfoo", "_Rfoo"},  /* nor a Rust one */
		{"_ZN3fooE", "foo"}, /* a data-style name: fine */
		{"__libc_start_main", "__libc_start_main"},
	};
	char buf[64];

	(void)state;
	CHECK_PAIRS(p);
	assert_int_equal(symname_format("", 0, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "");
	assert_int_equal(symname_format("@@GLIBC_2.17", 12, buf, sizeof(buf)),
			 0);
	/* only len bytes are read */
	assert_int_equal(symname_format("_Z3fooiGARBAGE", 7, buf, sizeof(buf)),
			 8);
	assert_string_equal(buf, "foo(int)");
	assert_int_equal(symname_format("mainly", 4, buf, sizeof(buf)), 4);
	assert_string_equal(buf, "main");
	assert_int_equal(symname_format("x", 1, buf, 0), 0);
}

/* A name longer than the bound, shortened in steps. */
static void test_shortened(void **state)
{
	static const struct pair p[] = {
		/* the template arguments are enough */
		{"_ZStlsISt11char_traitsIcEERSt13basic_ostreamIcT_ES5_PKc",
		 "std::basic_ostream<...>& std::operator<< <...>(std::basic_os"
		 "tream<...>&, char const*)"},
		/* then the parameters */
		{"_ZN9__gnu_cxx13new_allocatorISt4pairIKNSt7__cxx1112basic_str"
		 "ingIcSt11char_traitsIcESaIcEEES8_EE9constructIS9_JRKSt21piece"
		 "wise_construct_tSt5tupleIJRS7_EESG_IJEEEEEvPT_DpOT0_",
		 "void __gnu_cxx::new_allocator<...>::construct<...>(...)"},
	};
	char raw[512], buf[256], want[256];
	static const char vec[] =
		"_ZNSt6vectorISt4pairIiiESaIS1_EE9push_backERKS1_";

	(void)state;
	CHECK_PAIRS(p);
	/* Only the deeper levels go when that is enough. */
	show(vec, buf, 100);
	assert_string_equal(buf, "std::vector<std::pair<...>, std::allocator<"
				 "...> >::push_back(std::pair<int, int> "
				 "const&)");
	show(vec, buf, 60);
	assert_string_equal(
		buf, "std::vector<...>::push_back(std::pair<...> const&)");
	/* Nothing to collapse: the middle goes, the end stays. */
	strcpy(raw, "_ZN");
	for (int i = 0; i < 40; i++)
		strcat(raw, "3abc");
	strcat(raw, "4lastEv");
	show(raw, buf, sizeof(buf));
	assert_int_equal(strlen(buf), SYMNAME_MAX);
	assert_true(!strncmp(buf, "abc::abc::", 10));
	assert_non_null(strstr(buf, "..."));
	assert_string_equal(buf + strlen(buf) - 11, "abc::last()");
	/* A long C name too. */
	memset(raw, 'a', 300);
	strcpy(raw + 300, "_end");
	show(raw, buf, sizeof(buf));
	assert_int_equal(strlen(buf), SYMNAME_MAX);
	snprintf(want, sizeof(want), "%.40s...", raw);
	assert_true(!strncmp(buf, want, 43));
	assert_string_equal(buf + SYMNAME_MAX - 4, "_end");
	/* "(anonymous namespace)" is kept, operator<< is not a bracket. */
	show("_ZN12_GLOBAL__N_1lsERSoRKNS_"
	     "33a_rather_long_type_name_to_be_cutEv",
	     buf, sizeof(buf));
	assert_null(strstr(buf, "_Z"));
}

/* Whatever the buffer, the result fits it and the bound. */
static void test_any_buffer(void **state)
{
	static const char *const names[] = {
		"_ZN9__gnu_cxx13new_allocatorISt4pairIKNSt7__cxx1112basic_str"
		"ingIcSt11char_traitsIcESaIcEEES8_EE9constructIS9_JRKSt21piece"
		"wise_construct_tSt5tupleIJRS7_EESG_IJEEEEEvPT_DpOT0_",
		"_ZStlsISt11char_traitsIcEERSt13basic_ostreamIcT_ES5_PKc",
		"_Z4taskv.actor",
		"_RNvXs_CskK7mfDs1mzF_1mNtB4_7CounterNtB4_5Speak5speak",
		"plain_c_name",
	};
	char buf[300];

	(void)state;
	for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++)
		for (size_t n = 1; n < sizeof(buf); n++) {
			size_t len;

			memset(buf, 'X', sizeof(buf));
			len = symname_format(names[k], strlen(names[k]), buf,
					     n);
			assert_true(len < n);
			assert_true(len <= SYMNAME_MAX);
			assert_int_equal(buf[len], '\0');
			assert_int_equal(strlen(buf), len);
			assert_int_equal(buf[n], 'X'); /* nothing past n */
		}
}

/* "_Z1f1pIiiE" then levels, each p<previous, previous>: 2^levels. */
static void cxx_blowup(char *m, size_t cap, int levels)
{
	size_t o = (size_t)snprintf(m, cap, "_Z1f1pIiiE");

	/* S_ is "p", S0_ is p<int, int>, S<k-1>_ the k-th p<...> */
	for (int k = 1; k <= levels && k <= 36; k++) {
		char sub = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"[k - 1];

		o += (size_t)snprintf(m + o, cap - o, "S_IS%c_S%c_E", sub, sub);
	}
}

/* Rust v0: tuples of two back-references to the tuple before. */
static void rust_blowup(char *m, size_t cap, int levels)
{
	static const char b62[] =
		"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHI"
		"JKLMNOPQRSTUVWXYZ";
	char s[960];
	size_t o = 0, prev;

	o += (size_t)snprintf(s + o, sizeof(s) - o, "INvC1c1f");
	prev = o;
	o += (size_t)snprintf(s + o, sizeof(s) - o, "TuuE");
	for (int k = 0; k < levels; k++) {
		size_t here = o, v = prev - 1; /* B<prev>: base 62, minus 1 */
		char enc[8];
		int e = (int)sizeof(enc) - 1;

		enc[e] = '\0';
		do {
			enc[--e] = b62[v % 62];
			v /= 62;
		} while (v);
		o += (size_t)snprintf(s + o, sizeof(s) - o, "TB%s_B%s_E",
				      enc + e, enc + e);
		prev = here;
	}
	snprintf(m, cap, "_R%sE", s);
}

static void test_exponential_output_stops(void **state)
{
	char m[1024], buf[256];

	(void)state;
	/* 2^34 and 2^40 copies: without the stop, hours of printing */
	cxx_blowup(m, sizeof(m), 34);
	show(m, buf, sizeof(buf));
	assert_true(strlen(buf) <= SYMNAME_MAX);
	assert_true(!strncmp(buf, "f(p<...>, p<...>", 16));
	rust_blowup(m, sizeof(m), 40);
	show(m, buf, sizeof(buf));
	assert_true(strlen(buf) <= SYMNAME_MAX);
	assert_true(!strncmp(buf, "c::f::<", 7));
}

/* Past SYMNAME_MANGLED_MAX a name is not demangled at all.  (libiberty's
 * own recursion limits -- never lifted: symname.c asserts at compile time
 * that DMGL_NO_RECURSE_LIMIT is not among its options -- can not be
 * reached by a name this short.) */
static void test_too_long_to_demangle(void **state)
{
	char m[SYMNAME_MANGLED_MAX + 64], buf[256], want[32];
	int id = SYMNAME_MANGLED_MAX - 7; /* "_Z" NNNN id "v" */

	_Static_assert(SYMNAME_MANGLED_MAX >= 1007 &&
			       SYMNAME_MANGLED_MAX < 10007,
		       "the length takes four digits");

	(void)state;
	snprintf(m, sizeof(m), "_Z%d", id);
	memset(m + 6, 'a', (size_t)id);
	strcpy(m + 6 + id, "v");
	assert_int_equal(strlen(m), SYMNAME_MANGLED_MAX);
	show(m, buf, sizeof(buf)); /* at the bound: demangled */
	assert_int_equal(strlen(buf), SYMNAME_MAX);
	assert_true(!strncmp(buf, "aaaa", 4));
	assert_string_equal(buf + strlen(buf) - 4, "aa()");
	snprintf(m, sizeof(m), "_Z%d", id + 1);
	memset(m + 6, 'a', (size_t)id + 1);
	strcpy(m + 7 + id, "v");
	assert_int_equal(strlen(m), SYMNAME_MANGLED_MAX + 1);
	show(m, buf, sizeof(buf)); /* past it: as it is */
	assert_int_equal(strlen(buf), SYMNAME_MAX);
	snprintf(want, sizeof(want), "_Z%daaa", id + 1);
	assert_true(!strncmp(buf, want, strlen(want)));
	assert_string_equal(buf + strlen(buf) - 3, "aav");
}

static void test_function_len(void **state)
{
	static const struct {
		const char *where;
		size_t len;
	} c[] = {
		{"foo+0x1a", 3},
		{"foo+0x1a (f.c:3)", 3},
		{"operator+(int, char const*) const+0x10 (x.cpp:9)", 33},
		{"std::vector<int, std::allocator<int> >::push_back(int "
		 "const&)+0x0",
		 61},
		{"f+0x1+0x2", 5},
		{"a+0xzz", 6},
		{"0x1234", 6},
		{"lib.so+0x1234", 6},
		{"", 0},
		{"f+0x", 4},
		{"f+0x1 (", 1},
		{"mid;fn (b.c:9)", 6},		  /* no offset: the file goes */
		{"f(void (*)(int)) (b.c:9)", 16}, /* the last " (" */
		{"f(void (*)(int))", 16},
		{"f (x:)", 6},
		{"f (:1)", 1},
		{"(x:1)", 5},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++)
		if (symname_function_len(c[i].where) != c[i].len)
			fail_msg("%s: %zu, wanted %zu", c[i].where,
				 symname_function_len(c[i].where), c[i].len);
}

/*
 * Entries: the functions a runtime makes a context run, mangled as GCC 12
 * made them on Debian's Boost 1.74 (nm of tests/targets/fiber-target,
 * boost-ucfiber, and a program of Boost.Coroutine2 and callcc), each
 * formatted as the symbolizer does, then asked for the program's
 * function: a Boost.Fiber lambda (worker_context<F>), a fiber of a
 * function reference (none: its type names no function), a Coroutine2
 * generator's lambda and its function object, a callcc lambda, a fiber
 * on the ucontext backend.
 */
static const struct {
	const char *mangled, *program;
} entry_cases[] = {
	{"_ZN5boost7context6detail11fiber_entryINS1_12fiber_recordINS0_"
	 "5fiberENS0_21basic_fixedsize_stackINS0_12stack_traitsEEESt5_BindIFMN"
	 "S_6fibers14worker_contextIZ4mainEUlvE0_JEEEFS4_OS4_EPSC_St12_"
	 "PlaceholderILi1EEEEEEEEvNS1_10transfer_tE",
	 "main::{lambda()#2}"},
	{"_ZN5boost7context6detail11fiber_entryINS1_12fiber_recordINS0_"
	 "5fiberENS0_21basic_fixedsize_stackINS0_12stack_traitsEEESt5_BindIFMN"
	 "S_6fibers14worker_contextIRFvvEJEEEFS4_OS4_EPSD_St12_PlaceholderILi1"
	 "EEEEEEEEvNS1_10transfer_tE",
	 ""},
	{"_ZN5boost7context6detail11fiber_entryINS1_12fiber_recordINS0_"
	 "5fiberENS0_21basic_fixedsize_stackINS0_12stack_traitsEEEZNS_"
	 "11coroutines26detail14pull_coroutineIiE13control_blockC4IS7_Z4mainE"
	 "UlRNS9_14push_coroutineIiEEE_EENS0_12preallocatedEOT_OT0_EUlOS4_E_"
	 "EEEEvNS1_10transfer_tE",
	 "main::{lambda(...)#1}"}, /* shortened with the rest */
	{"_ZN5boost7context6detail11fiber_entryINS1_12fiber_recordINS0_"
	 "5fiberENS0_21basic_fixedsize_stackINS0_12stack_traitsEEEZNS_"
	 "11coroutines26detail14pull_coroutineIiE13control_blockC4IS7_3GenEEN"
	 "S0_12preallocatedEOT_OT0_EUlOS4_E_EEEEvNS1_10transfer_tE",
	 "Gen"},
	{"_ZN5boost7context6detail13context_entryINS1_6recordINS0_"
	 "12continuationENS0_21basic_fixedsize_stackINS0_12stack_traitsEEEZ4m"
	 "ainEUlOS4_E0_EEEEvNS1_10transfer_tE",
	 "main::{lambda(...)#2}"},
	{"_ZN5boost7context6detailL16fiber_entry_funcINS1_20fiber_capture_"
	 "recordINS0_5fiberENS0_21basic_fixedsize_stackINS0_12stack_traitsEEE"
	 "Z4mainEUlOS4_E_EEEEvPv",
	 "main::{lambda(boost::context::fiber&&)#1}"},
	/* A lambda in a function with parameters (its name holds them). */
	{"_ZN5boost7context6detail11fiber_entryINS1_12fiber_recordINS0_5fibe"
	 "rENS0_21basic_fixedsize_stackINS0_12stack_traitsEEESt5_BindIFMNS_6"
	 "fibers14worker_contextIZ13start_workersiPiEUlvE_JEEEFS4_OS4_EPSD_S"
	 "t12_PlaceholderILi1EEEEEEEEvNS1_10transfer_tE",
	 "start_workers(...)::{lambda()#1}"},
	/* A std::bind of the program's lambda (Boost's wait_stuff.cpp),
	 * shortened without cutting into a bracket. */
	{"_ZN5boost7context6detail11fiber_entryINS1_12fiber_recordINS0_5fibe"
	 "rENS0_21basic_fixedsize_stackINS0_12stack_traitsEEESt5_BindIFMNS_6"
	 "fibers14worker_contextIS8_IFZ20wait_all_simple_implIZNK3wasMUlvE_c"
	 "lEvEUlvE0_JZNKSC_clEvEUlvE1_EEvSt10shared_ptrINS9_7barrierEEOT_DpO"
	 "T0_EUlRSH_RSD_E_SH_SD_EEJEEEFS4_OS4_EPSS_St12_PlaceholderILi1EEEEE"
	 "EEEvNS1_10transfer_tE",
	 "wait_all_simple_...::{lambda(...)#1}"},
	/* boost::fibers::async's fiber (Boost's future.cpp): what it runs. */
	{"_ZN5boost7context6detail11fiber_entryINS1_12fiber_recordINS0_5fibe"
	 "rENS0_21basic_fixedsize_stackINS0_12stack_traitsEEESt5_BindIFMNS_6"
	 "fibers14worker_contextINS9_13packaged_taskIFivEEEJEEEFS4_OS4_EPSE_"
	 "St12_PlaceholderILi1EEEEEEEEvNS1_10transfer_tE",
	 "packaged_task<int ()>"},
};

static void test_entry(void **state)
{
	char shown[SYMNAME_MAX + 1], f[256];

	(void)state;
	for (size_t i = 0; i < sizeof(entry_cases) / sizeof(entry_cases[0]);
	     i++) {
		const char *m = entry_cases[i].mangled;

		symname_format(m, strlen(m), shown, sizeof(shown));
		shown[symname_function_len(shown)] = '\0';
		if (!symname_entry(shown, f, sizeof(f)) ||
		    strcmp(f, entry_cases[i].program))
			fail_msg("%s: \"%s\", wanted \"%s\"", shown, f,
				 entry_cases[i].program);
	}
}

/* The entry shortened keeps the program's function in sight; the full
 * demangled text gives the same; other names are not entries. */
static void test_entry_text(void **state)
{
	static const char full[] =
		"void boost::context::detail::fiber_entry<boost::context::"
		"detail::fiber_record<boost::context::fiber, boost::context::"
		"basic_fixedsize_stack<boost::context::stack_traits>, "
		"std::_Bind<"
		"boost::context::fiber (boost::fibers::worker_context<main::{"
		"lambda()#2}>::*(boost::fibers::worker_context<main::{lambda()#"
		"2}"
		">*, std::_Placeholder<1>))(boost::context::fiber&&)> > "
		">(boost::"
		"context::detail::transfer_t)";
	static const char *const not_entries[] = {
		"fiber_main",
		"boost::fibers::worker_context<main::{lambda()#2}>::run_(boost:"
		":"
		"context::fiber&&)",
		"void boost::context::detail::fiber_entry_helper(int)",
		"",
	};
	const char *m = entry_cases[0].mangled;
	char shown[SYMNAME_MAX + 1], f[64];

	(void)state;
	symname_format(m, strlen(m), shown, sizeof(shown));
	assert_string_equal(shown, "void boost::context::detail::fiber_entry<"
				   "...main::{lambda()#2}...>(boost::context::"
				   "detail::transfer_t)");
	assert_true(symname_entry(full, f, sizeof(f)));
	assert_string_equal(f, "main::{lambda()#2}");
	/* Cut to the buffer, terminated. */
	assert_true(symname_entry(full, f, 5));
	assert_string_equal(f, "main");
	for (size_t i = 0; i < sizeof(not_entries) / sizeof(not_entries[0]);
	     i++) {
		f[0] = 'x';
		assert_false(symname_entry(not_entries[i], f, sizeof(f)));
		assert_string_equal(f, "");
	}
	/* Untrusted: unbalanced, mismatched or empty arguments name none. */
	assert_true(symname_entry("boost::context::detail::fiber_entry<a, (b>",
				  f, sizeof(f)));
	assert_string_equal(f, "");
	assert_true(symname_entry("boost::context::detail::fiber_entry<x<{y>}>",
				  f, sizeof(f)));
	assert_string_equal(f, "");
	assert_true(symname_entry("boost::context::detail::fiber_entry<>", f,
				  sizeof(f)));
	assert_string_equal(f, "");
	assert_true(symname_entry("boost::context::detail::fiber_entry<int, "
				  "void (*)(), 3, std::x, Fn>(t)",
				  f, sizeof(f)));
	assert_string_equal(f, "Fn");
	/* A reference to the program's object names its type (Boost's
	 * priority.cpp: launch(Fn&& func) makes fiber(func), F = Fn&); one
	 * to a function, or to a runtime's object, names nothing. */
	assert_true(symname_entry("boost::context::detail::fiber_entry<boost::"
				  "context::detail::fiber_record<"
				  "boost::fibers::worker_context<main::{"
				  "lambda()#1}&> > >(t)",
				  f, sizeof(f)));
	assert_string_equal(f, "main::{lambda()#1}");
	assert_true(symname_entry("boost::context::detail::fiber_entry<boost::"
				  "context::detail::fiber_record<"
				  "boost::fibers::worker_context<counter "
				  "const&> > >(t)",
				  f, sizeof(f)));
	assert_string_equal(f, "counter");
	assert_true(
		symname_entry("boost::context::detail::fiber_entry<boost::"
			      "context::detail::fiber_record<"
			      "boost::fibers::worker_context<work&&> > >(t)",
			      f, sizeof(f)));
	assert_string_equal(f, "work");
	assert_true(symname_entry("boost::context::detail::fiber_entry<boost::"
				  "context::detail::fiber_record<"
				  "boost::fibers::worker_context<void (&)(int)"
				  "> > >(t)",
				  f, sizeof(f)));
	assert_string_equal(f, "");
	assert_true(symname_entry("boost::context::detail::fiber_entry<boost::"
				  "context::detail::fiber_record<"
				  "boost::fibers::worker_context<boost::fibers:"
				  ":packaged_task<int ()>&, int&> > >(t)",
				  f, sizeof(f)));
	assert_string_equal(f, "");
}

/* A fiber of a plain function (Boost's simple.cpp: fiber f(fn, "abc", 5)):
 * its entry names only fn's type, and the name comes from the function the
 * probe found (made_for) -- only when made_for is a function's first byte
 * and the program's, and never over a name the entry gives itself. */
static void test_made_for(void **state)
{
	static const char by_type[] =
		"void boost::context::detail::fiber_entry<boost::context::"
		"detail::fiber_record<...> >(boost::context::detail::"
		"transfer_t)+0x0 (fiber_fcontext.hpp:71)";
	static const char lambda[] =
		"void boost::context::detail::fiber_entry<...main::{lambda()#2}"
		"...>(boost::context::detail::transfer_t)+0x0";
	char out[64];

	(void)state;
	framekind_coro_name_made(by_type, "fn(int)+0x0 (simple.cpp:8)", out,
				 sizeof(out));
	assert_string_equal(out, "fn(int)");
	framekind_coro_name_made(by_type, "fn(int)+0x0", out, sizeof(out));
	assert_string_equal(out, "fn(int)");
	/* Not at a function's start: a word that only looks like code. */
	framekind_coro_name_made(by_type, "fn(int)+0x10 (simple.cpp:9)", out,
				 sizeof(out));
	assert_string_equal(out, "");
	framekind_coro_name_made(by_type, "fn(int)+0x0x", out, sizeof(out));
	assert_string_equal(out, "");
	/* Unnamed code, a runtime's function, none at all. */
	framekind_coro_name_made(by_type, "0x401000", out, sizeof(out));
	assert_string_equal(out, "");
	framekind_coro_name_made(by_type,
				 "boost::fibers::context::resume()+0x0", out,
				 sizeof(out));
	assert_string_equal(out, "");
	framekind_coro_name_made(by_type, NULL, out, sizeof(out));
	assert_string_equal(out, "");
	/* The entry names the program's function itself: that one. */
	framekind_coro_name_made(lambda, "fn(int)+0x0", out, sizeof(out));
	assert_string_equal(out, "main::{lambda()#2}");
	/* Not an entry template (a function run directly): its own name. */
	framekind_coro_name_made("worker(void*)+0x0", "fn(int)+0x0", out,
				 sizeof(out));
	assert_string_equal(out, "worker(void*)");
	/* A runtime's function that is no entry: nothing, made_for or not. */
	framekind_coro_name_made("boost::fibers::context::resume()+0x4",
				 "fn(int)+0x0", out, sizeof(out));
	assert_string_equal(out, "");
	/* Cut to the buffer. */
	framekind_coro_name_made(by_type, "fn(int)+0x0", out, 3);
	assert_string_equal(out, "fn");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cxx),
		cmocka_unit_test(test_coroutine_parts),
		cmocka_unit_test(test_rust_legacy),
		cmocka_unit_test(test_rust_v0),
		cmocka_unit_test(test_not_demangled),
		cmocka_unit_test(test_shortened),
		cmocka_unit_test(test_any_buffer),
		cmocka_unit_test(test_exponential_output_stops),
		cmocka_unit_test(test_too_long_to_demangle),
		cmocka_unit_test(test_function_len),
		cmocka_unit_test(test_entry),
		cmocka_unit_test(test_entry_text),
		cmocka_unit_test(test_made_for),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
