/*
 * resolve: the real functions the preload's wrappers forward to -- glibc's
 * ucontext functions, found at load, and Boost.Context's fcontext
 * functions, found where the calling object would have found them, even
 * in a plugin loaded RTLD_LOCAL.  See resolve.c.
 */
#ifndef COROTOP_RESOLVE_H
#define COROTOP_RESOLVE_H

#include <stdbool.h>

enum resolve_fn {
	RESOLVE_MAKE_FCONTEXT,
	RESOLVE_JUMP_FCONTEXT,
	RESOLVE_ONTOP_FCONTEXT,
	RESOLVE_N,
};

/* At load: note which object the preload is, so that its own symbols are
 * never taken for the real ones. */
void resolve_init(const void *own);

/* glibc's `name` after the preload (dlsym RTLD_NEXT); never NULL: when
 * there is none the process ends as the dynamic linker ends it for a
 * symbol it cannot bind (a message on stderr, exit status 127). */
void *resolve_libc(const char *name);

/* Boost.Context's function f as the object calling it (its return
 * address, `caller`) binds it: the global scope's copy when there is one,
 * else the one in the caller's own object or its dependencies (an object
 * loaded RTLD_LOCAL).  Never NULL: like resolve_libc when none exists.
 * One compare on the common path. */
void *resolve_boost(enum resolve_fn f, const void *caller);

/* Objects resolved on their own (RTLD_LOCAL callers), for tests. */
unsigned resolve_local_objects(void);

#endif
