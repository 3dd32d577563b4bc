/*
 * framekind: the rule that picks, in a coroutine's stack, the frames that
 * tell a user something.  A switch's direct caller is always a scheduler
 * or Boost function; WHERE is the first frame of the program's own code
 * that led to it, and a coroutine's NAME the first frame of the program's
 * own code its entry runs (docs/TRACING.md, "Which frames are the
 * program's").
 *
 * The program's code is its main executable's.  Every other file the
 * process maps -- any shared library (libc, Boost, libpth, a scheduler of
 * the user's), the loader, the vDSO, corotop's own preload and probe -- is
 * a runtime's, and so is a function in a runtime's namespace (boost::,
 * std::, __gnu_cxx::, corotop_) wherever it was compiled: Boost.Fiber's
 * templates (fiber_entry, worker_context, condition_variable_any::wait)
 * are instantiated in the program's own executable.  The namespace is the
 * one of the function's qualified name, after any return type a
 * template's demangled name starts with ("void
 * boost::context::detail::fiber_entry<...>(...)").  A lambda or a local
 * class of the program's code ("main::{lambda()#1}::operator()") is the
 * program's.  A frame in no mapped file (JIT code) is the program's: the
 * rule only ever skips what it recognizes.
 *
 * The user adjusts it (struct framekind, from --runtime and --own-lib):
 * a --runtime pattern, a prefix of a module's basename or of a function's
 * qualified name ("libmysched", "mysched::", "sched_"), makes matching
 * frames the runtime's, also in the main executable; an --own-lib pattern,
 * a prefix of a module's basename, makes a shared library the program's
 * (its frames then count as the program's, but for the runtime
 * namespaces and --runtime's functions).
 *
 * Where only a module's name is known, not whether it is the main
 * executable (FRAMEKIND_NAMED: a name kept by a recording), the system's
 * and corotop's libraries are known by their basename prefixes
 * (framekind_modules) and any other module is taken for the program's.
 *
 * A fiber whose function is a lambda often has no frame of the program's
 * at all: the lambda is inlined into Boost's worker_context<F>::run_.  Its
 * name then comes from that frame's template argument (framekind_inlined),
 * when the argument is a name of the program's (not a function pointer
 * type, whose target has a frame of its own).  A context the runtime made
 * for itself (Boost.Fiber's dispatcher) is named for what it is.
 */
#include "engine/names/framekind.h"
#include "engine/names/symname.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FRAMEKIND_PATTERNS_MAX 32
#define FRAMEKIND_PATTERN_MAX 128
#define FRAMEKIND_NAME_MAX 512 /* framekind_coro_name's longest */

/* The user's patterns, each a NUL-terminated prefix in one buffer. */
struct framekind {
	const char *runtime[FRAMEKIND_PATTERNS_MAX];
	const char *own[FRAMEKIND_PATTERNS_MAX];
	size_t nruntime, nown;
	char *text; /* the patterns' bytes */
};

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
	/* Only the dispatcher's run_ calls it: the frame that names the
	 * dispatcher where run_, a local symbol, is stripped (Debian's
	 * libboost_fiber), as a memory scan walks it. */
	{"boost::fibers::scheduler::dispatch()", "boost.fiber dispatcher"},
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

bool framekind_role(const char *name)
{
	for (size_t i = 0;
	     name && i < sizeof(framekind_roles) / sizeof(framekind_roles[0]);
	     i++)
		if (!strcmp(name, framekind_roles[i].name))
			return true;
	return false;
}

/* The patterns of list (comma-separated) into v, cut in place in buf: a
 * trailing '*' is dropped (a prefix already matches what follows). */
static bool framekind_split(char *buf, const char **v, size_t *n,
			    const char *option, char *err, size_t errlen)
{
	for (char *p = buf, *next; p; p = next) {
		size_t len;

		next = strchr(p, ',');
		if (next)
			*next++ = '\0';
		len = strlen(p);
		if (len && p[len - 1] == '*')
			p[--len] = '\0';
		if (!len || len > FRAMEKIND_PATTERN_MAX ||
		    strcspn(p, " \t*") != len) {
			snprintf(err, errlen,
				 "%s expects prefixes of library or function "
				 "names separated by commas (like "
				 "libmysched,mysched::), got '%s'",
				 option, p);
			return false;
		}
		if (*n == FRAMEKIND_PATTERNS_MAX) {
			snprintf(err, errlen, "%s takes at most %d patterns",
				 option, FRAMEKIND_PATTERNS_MAX);
			return false;
		}
		v[(*n)++] = p;
	}
	return true;
}

struct framekind *framekind_create(const char *runtime, const char *own,
				   char *err, size_t errlen)
{
	size_t rlen = runtime ? strlen(runtime) + 1 : 0;
	size_t olen = own ? strlen(own) + 1 : 0;
	struct framekind *k = calloc(1, sizeof(*k));

	if (errlen)
		err[0] = '\0';
	if (!k || !(k->text = malloc(rlen + olen + 1))) {
		snprintf(err, errlen, "out of memory");
		goto err_free;
	}
	if (runtime)
		memcpy(k->text, runtime, rlen);
	if (own)
		memcpy(k->text + rlen, own, olen);
	if (runtime && !framekind_split(k->text, k->runtime, &k->nruntime,
					"--runtime", err, errlen))
		goto err_free;
	if (own && !framekind_split(k->text + rlen, k->own, &k->nown,
				    "--own-lib", err, errlen))
		goto err_free;
	return k;
err_free:
	framekind_destroy(k);
	return NULL;
}

void framekind_destroy(struct framekind *k)
{
	if (!k)
		return;
	free(k->text);
	free(k);
}

bool framekind_runtime(const struct framekind *k, const char *module,
		       const char *function, enum framekind_module kind)
{
	const char *q =
		function && *function ? framekind_qualified(function) : NULL;

	if (q && framekind_prefixed(q, framekind_spaces,
				    sizeof(framekind_spaces) /
					    sizeof(framekind_spaces[0])))
		return true;
	if (k &&
	    ((q && framekind_prefixed(q, k->runtime, k->nruntime)) ||
	     (module && framekind_prefixed(module, k->runtime, k->nruntime))))
		return true;
	if (k && module && framekind_prefixed(module, k->own, k->nown))
		return false;
	switch (kind) {
	case FRAMEKIND_PROGRAM:
		return false;
	case FRAMEKIND_LIBRARY:
		return true;
	case FRAMEKIND_NAMED:
		break;
	}
	return module &&
	       framekind_prefixed(module, framekind_modules,
				  sizeof(framekind_modules) /
					  sizeof(framekind_modules[0]));
}

void framekind_coro_name(const char *where, char *out, size_t n)
{
	char fn[FRAMEKIND_NAME_MAX], f[FRAMEKIND_NAME_MAX];
	size_t len = symname_function_len(where);

	if (!n)
		return;
	if (len >= sizeof(fn))
		len = sizeof(fn) - 1;
	memcpy(fn, where, len);
	fn[len] = '\0';
	if (symname_entry(fn, f, sizeof(f)))
		snprintf(out, n, "%s", f);
	else if (framekind_runtime(NULL, NULL, fn, FRAMEKIND_PROGRAM))
		out[0] = '\0';
	else
		snprintf(out, n, "%s", fn);
}

/* Whether `where` ("func+0xOFF (file:N)") is at its function's first
 * byte: its offset is 0. */
static bool framekind_at_start(const char *where)
{
	size_t len = symname_function_len(where);

	return len < strlen(where) && !strncmp(where + len, "+0x0", 4) &&
	       (where[len + 4] == '\0' || where[len + 4] == ' ');
}

void framekind_coro_name_made(const char *where, const char *made, char *out,
			      size_t n)
{
	char fn[FRAMEKIND_NAME_MAX], f[FRAMEKIND_NAME_MAX];
	size_t len;

	framekind_coro_name(where, out, n);
	if (!n || out[0] || !made || !framekind_at_start(made))
		return;
	len = symname_function_len(where);
	if (len >= sizeof(fn))
		len = sizeof(fn) - 1;
	memcpy(fn, where, len);
	fn[len] = '\0';
	/* An entry template that names none of the program's functions
	 * (made for a function's type, a std::function or a bind of one):
	 * the function the probe found, when it is the program's. */
	if (symname_entry(fn, f, sizeof(f)) && !f[0])
		framekind_coro_name(made, out, n);
}
