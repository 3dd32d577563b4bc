/*
 * framekind: whether a stack frame is the program's own code or a
 * runtime's.  See framekind.c.
 */
#ifndef COROTOP_FRAMEKIND_H
#define COROTOP_FRAMEKIND_H

#include <stdbool.h>
#include <stddef.h>

/* What is known of a frame's module. */
enum framekind_module {
	FRAMEKIND_PROGRAM, /* the program's main executable */
	FRAMEKIND_LIBRARY, /* any other file it maps: a shared library, the
			      loader, the vDSO */
	FRAMEKIND_NAMED,   /* its name only (a recording's): the system's
			      and corotop's libraries by name */
};

/* The user's adjustments of the rule: --runtime and --own-lib. */
struct framekind;

/*
 * From `runtime` (frames the runtime's: prefixes of a module's basename or
 * of a function's qualified name) and `own` (shared libraries the
 * program's: prefixes of a module's basename), each a comma-separated list
 * or NULL; a trailing '*' of a pattern is allowed.  NULL with a message
 * for people in err (which names the option) when a list does not parse.
 */
struct framekind *framekind_create(const char *runtime, const char *own,
				   char *err, size_t errlen);
/* NULL is a no-op. */
void framekind_destroy(struct framekind *k);

/*
 * True when a frame in `module` (basename of its ELF file; NULL when in
 * none) running `function` (its name as people read it, symname.h; NULL or
 * "" when unknown) belongs to a runtime rather than to the program: see
 * framekind.c.  k NULL: no user patterns.
 */
bool framekind_runtime(const struct framekind *k, const char *module,
		       const char *function, enum framekind_module kind);

/*
 * The program's code a runtime frame runs inlined, when its name says so:
 * Boost.Fiber runs a fiber's function as worker_context<F>::run_, and a
 * lambda F is usually inlined there, leaving no frame of its own.  Copies
 * F ("main::{lambda()#2}") into out and returns true for such a frame --
 * and for a context a runtime made for itself, what it is ("boost.fiber
 * dispatcher").
 */
bool framekind_inlined(const char *function, char *out, size_t n);

/*
 * The name a coroutine takes from the code its context was made to run,
 * given that code's symbol as recorded or symbolized ("func+0xOFF
 * (file:N)"): the function; the program's function a runtime's entry
 * template was made for (symname_entry: Boost's fiber_entry<...F...>);
 * nothing ("") for another function of a runtime's.  The live view
 * (snapshot_name) and a recording's readers (hephcoronames) both name so.
 */
void framekind_coro_name(const char *where, char *out, size_t n);
/*
 * The same, where the entry is a runtime's template that names none of
 * the program's functions (symname_entry: made for a function's type --
 * Boost.Fiber's worker_context<void (&)(int)> -- or for a std::function
 * or a bind), from `made` (NULL: none), the symbol of the function the
 * probe said the entry was made for (ctp_station_ext.made_for): that
 * function's name, when made is a function's first byte
 * ("fn(int)+0x0 (file:N)") and the function is the program's.  Else as
 * framekind_coro_name.
 */
void framekind_coro_name_made(const char *where, const char *made, char *out,
			      size_t n);

/* True when `name` is one framekind_inlined gives a context a runtime made
 * for itself ("boost.fiber dispatcher"), not a function of the program's. */
bool framekind_role(const char *name);

#endif
