/*
 * framekind: the rule that picks, in a coroutine's stack, the frames that
 * tell a user something.  A switch's direct caller is always a scheduler
 * or Boost function; WHERE is the first frame of the program's own code
 * that led to it, and a coroutine's NAME the first frame of the program's
 * own code its entry runs (docs/TRACING.md).
 *
 * A frame is a runtime's when its module is one of the system's or
 * corotop's libraries (by basename prefix), or when its function is in a
 * runtime's namespace (boost::, std::, __gnu_cxx::) wherever it was
 * compiled: Boost.Fiber's templates (fiber_entry, worker_context,
 * condition_variable_any::wait) are instantiated in the program's own
 * executable.  The namespace is the one of the function's qualified name,
 * after any return type a template's demangled name starts with ("void
 * boost::context::detail::fiber_entry<...>(...)").  A lambda or a local
 * class of the program's code ("main::{lambda()#1}::operator()") is the
 * program's.  Everything else, unknown frames included, is the program's:
 * the rule only ever skips what it recognizes.
 */
#include "engine/symbols/framekind.h"

#include <stddef.h>
#include <string.h>

static const char *const framekind_modules[] = {
	"libc.so",  "libc-",	 "ld-linux",   "ld64.so",    "libstdc++",
	"libgcc_s", "libboost_", "libcorotop", "libpthread", "libm.so",
	"libdl.so", "libasan",	 "libtsan",    "libubsan",   "liblsan",
	"[vdso]",   "libunwind",
};

static const char *const framekind_spaces[] = {
	"boost::",  "std::",   "__gnu_cxx::", "__cxxabiv1::",
	"corotop_", "__libc_", "__GI_",
};

static bool framekind_prefixed(const char *s, const char *const *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!strncmp(s, v[i], strlen(v[i])))
			return true;
	return false;
}

/* Where the qualified name starts: past a return type, i.e. after the last
 * space before the first '(' or '<' (none in a plain C name). */
static const char *framekind_qualified(const char *f)
{
	const char *start = f;

	for (const char *p = f; *p && *p != '(' && *p != '<'; p++)
		if (*p == ' ')
			start = p + 1;
	return start;
}

bool framekind_runtime(const char *module, const char *function)
{
	if (module && framekind_prefixed(module, framekind_modules,
					 sizeof(framekind_modules) /
						 sizeof(framekind_modules[0])))
		return true;
	if (!function || !*function)
		return false;
	return framekind_prefixed(
		framekind_qualified(function), framekind_spaces,
		sizeof(framekind_spaces) / sizeof(framekind_spaces[0]));
}
