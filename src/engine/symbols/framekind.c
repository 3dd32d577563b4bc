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
 *
 * A fiber whose function is a lambda often has no frame of the program's
 * at all: the lambda is inlined into Boost's worker_context<F>::run_.  Its
 * name then comes from that frame's template argument (framekind_inlined),
 * when the argument is a name of the program's (not a function pointer
 * type, whose target has a frame of its own).  A context the runtime made
 * for itself (Boost.Fiber's dispatcher) is named for what it is.
 */
#include "engine/symbols/framekind.h"

#include <stddef.h>
#include <stdio.h>
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

static const char *const framekind_runners[] = {
	"boost::fibers::worker_context<",
};

/* Contexts a runtime makes for itself, named for what they are. */
static const struct {
	const char *prefix, *name;
} framekind_roles[] = {
	{"boost::fibers::dispatcher_context::", "boost.fiber dispatcher"},
};

bool framekind_inlined(const char *function, char *out, size_t n)
{
	const char *f, *a = NULL;
	size_t len, depth = 1;

	if (!function || !n)
		return false;
	f = framekind_qualified(function);
	for (size_t i = 0;
	     i < sizeof(framekind_roles) / sizeof(framekind_roles[0]); i++)
		if (!strncmp(f, framekind_roles[i].prefix,
			     strlen(framekind_roles[i].prefix))) {
			snprintf(out, n, "%s", framekind_roles[i].name);
			return true;
		}
	for (size_t i = 0;
	     !a && i < sizeof(framekind_runners) / sizeof(framekind_runners[0]);
	     i++)
		if (!strncmp(f, framekind_runners[i],
			     strlen(framekind_runners[i])))
			a = f + strlen(framekind_runners[i]);
	if (!a)
		return false;
	/* The argument: up to the '>' that closes the runner's '<'. */
	for (len = 0; a[len]; len++) {
		if (a[len] == '<')
			depth++;
		else if (a[len] == '>' && !--depth)
			break;
	}
	/* Unclosed, empty, shortened ("..."), a runtime's own type
	 * (std::_Bind<...>), or a function pointer type ("void (*)(int)"),
	 * which names no function: not a name. */
	if (!a[len] || !len || !strncmp(a, "...", 3) ||
	    framekind_prefixed(a, framekind_spaces,
			       sizeof(framekind_spaces) /
				       sizeof(framekind_spaces[0])) ||
	    memchr(a, '*', len) || memchr(a, ' ', len))
		return false;
	if (len >= n)
		len = n - 1;
	memcpy(out, a, len);
	out[len] = '\0';
	return true;
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
