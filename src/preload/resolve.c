/*
 * resolve: where a wrapper forwards to.
 *
 * glibc.  makecontext, swapcontext and setcontext are glibc's: libc is in
 * every process, so dlsym(RTLD_NEXT) finds them, once, at load.
 *
 * Boost.Context.  make_fcontext, jump_fcontext and ontop_fcontext live in
 * libboost_context, which may not be in the global scope at all: a plugin
 * linked to it and loaded RTLD_LOCAL by a host that does not link Boost (a
 * Python, Lua or Ruby extension module, a JNI library, a plugin host) binds
 * its calls to its own copy, and dlsym(RTLD_NEXT) never searches such an
 * object.  The preload, first in the global scope, still gets those calls.
 * So each function is looked up as the dynamic linker binds the caller's
 * reference: the global scope first (RTLD_NEXT: the copy every caller
 * binds to when there is one), and only when that has none, the calling
 * object's own scope -- dladdr on the return address names the object,
 * dlopen(RTLD_NOLOAD) gives its handle without loading anything, dlsym on
 * the handle searches the object and its dependencies.  Two plugins may
 * each carry their own libboost_context: that lookup is kept per calling
 * object (its load address), and per thread for the last few call sites,
 * so the common path is one load and one compare.  A symbol the lookup
 * returns from the preload itself is never taken for the real one.
 *
 * None at all.  A program cannot call a function no object defines: the
 * dynamic linker would have stopped it at the call with "symbol lookup
 * error" and exit status 127.  The preload does the same (never abort(),
 * which would dump a core the program itself never would).
 */
#define _GNU_SOURCE
#include "preload/resolve.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

/* The global scope has none of this function: look per caller. */
#define RESOLVE_LOCAL ((void *)1)
/* Calling objects kept (more are looked up at every call). */
#define RESOLVE_OBJECTS 64u
/* Per thread: the last call sites of each function (a power of two). */
#define RESOLVE_SITES 8u

static const char *const resolve_names[RESOLVE_N] = {
	[RESOLVE_MAKE_FCONTEXT] = "make_fcontext",
	[RESOLVE_JUMP_FCONTEXT] = "jump_fcontext",
	[RESOLVE_ONTOP_FCONTEXT] = "ontop_fcontext",
};

/* The preload's own load address (resolve_init). */
static const void *resolve_own;

/* Per function: NULL (not looked up yet), RESOLVE_LOCAL, or the global
 * scope's copy.  relaxed: any thread that looks stores the same answer. */
static _Atomic(void *) resolve_global[RESOLVE_N];

/* Calling objects that resolve on their own: base 0 is a free entry; an
 * entry is claimed by a CAS on its base and never given back (objects are
 * rarely unloaded, and a stale entry only costs a slot). */
static struct {
	_Atomic uintptr_t base;
	_Atomic(void *) fn[RESOLVE_N];
} resolve_objects[RESOLVE_OBJECTS];
static _Atomic unsigned resolve_nobjects;

static __thread __attribute__((tls_model("initial-exec")))
const void *resolve_site[RESOLVE_N][RESOLVE_SITES];
static __thread __attribute__((tls_model(
	"initial-exec"))) void *resolve_site_fn[RESOLVE_N][RESOLVE_SITES];

void resolve_init(const void *own)
{
	Dl_info info;

	resolve_own = dladdr(own, &info) ? info.dli_fbase : NULL;
}

/* As the dynamic linker ends a program whose call it cannot bind. */
static __attribute__((noreturn)) void resolve_fail(const char *object,
						   const char *name)
{
	fprintf(stderr, "%s: symbol lookup error: %s: undefined symbol: %s\n",
		program_invocation_name, object ? object : "?", name);
	_exit(127);
}

/* f is not the preload's own. */
static bool resolve_foreign(void *f)
{
	Dl_info info;

	return f && (!dladdr(f, &info) || info.dli_fbase != resolve_own);
}

void *resolve_libc(const char *name)
{
	void *f = dlsym(RTLD_NEXT, name);

	if (!resolve_foreign(f))
		resolve_fail("libc", name);
	return f;
}

/* The calling object's entry: found, claimed, or NULL (the table is full:
 * no caching). */
static unsigned resolve_entry(uintptr_t base)
{
	for (unsigned k = 0; k < RESOLVE_OBJECTS; k++) {
		/* acquire: pairs with the claim's release, so the entry's
		 * functions stored after it are seen. */
		uintptr_t b = atomic_load_explicit(&resolve_objects[k].base,
						   memory_order_acquire);

		if (b == base)
			return k;
		if (b == 0) {
			uintptr_t zero = 0;

			/* release: the entry is this object's from now on. */
			if (atomic_compare_exchange_strong_explicit(
				    &resolve_objects[k].base, &zero, base,
				    memory_order_release,
				    memory_order_acquire)) {
				/* relaxed: a statistic. */
				atomic_fetch_add_explicit(&resolve_nobjects, 1,
							  memory_order_relaxed);
				return k;
			}
			if (zero == base)
				return k; /* claimed by another thread */
		}
	}
	return RESOLVE_OBJECTS;
}

/* f as the object at `caller` binds it on its own: the object and its
 * dependencies. */
static void *resolve_object(enum resolve_fn f, const void *caller)
{
	const char *name = resolve_names[f];
	Dl_info info;
	unsigned k;
	void *h, *fn;

	if (!dladdr(caller, &info) || !info.dli_fbase)
		resolve_fail(NULL, name);
	k = resolve_entry((uintptr_t)info.dli_fbase);
	/* relaxed: any thread stores the same function. */
	if (k < RESOLVE_OBJECTS &&
	    (fn = atomic_load_explicit(&resolve_objects[k].fn[f],
				       memory_order_relaxed)))
		return fn;
	h = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
	fn = h ? dlsym(h, name) : NULL;
	if (h)
		dlclose(h);
	if (!resolve_foreign(fn))
		resolve_fail(info.dli_fname, name);
	if (k < RESOLVE_OBJECTS)
		atomic_store_explicit(&resolve_objects[k].fn[f], fn,
				      memory_order_relaxed);
	return fn;
}

void *resolve_boost(enum resolve_fn f, const void *caller)
{
	/* relaxed: see resolve_global. */
	void *g =
		atomic_load_explicit(&resolve_global[f], memory_order_relaxed);
	unsigned h;
	void *fn;

	if (__builtin_expect(g != NULL && g != RESOLVE_LOCAL, 1))
		return g;
	if (!g) {
		g = dlsym(RTLD_NEXT, resolve_names[f]);
		if (!resolve_foreign(g))
			g = NULL;
		atomic_store_explicit(&resolve_global[f], g ? g : RESOLVE_LOCAL,
				      memory_order_relaxed);
		if (g)
			return g;
	}
	h = (unsigned)((uintptr_t)caller >> 3) & (RESOLVE_SITES - 1);
	if (resolve_site[f][h] == caller)
		return resolve_site_fn[f][h];
	fn = resolve_object(f, caller);
	resolve_site[f][h] = caller;
	resolve_site_fn[f][h] = fn;
	return fn;
}

unsigned resolve_local_objects(void)
{
	/* relaxed: a statistic. */
	return atomic_load_explicit(&resolve_nobjects, memory_order_relaxed);
}
