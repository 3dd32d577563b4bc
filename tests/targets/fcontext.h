/*
 * fcontext: Boost.Context's C interface (libboost_context's
 * make_fcontext, jump_fcontext and ontop_fcontext), declared by hand for
 * the test targets here and the benches (bench/meson.build adds this
 * folder) that use it without Boost's C++ headers -- as
 * boost/context/detail/fcontext.hpp declares it.
 */
#ifndef COROTOP_FCONTEXT_H
#define COROTOP_FCONTEXT_H

#include <stddef.h>

typedef void *fcontext_t;
typedef struct {
	fcontext_t fctx;
	void *data;
} transfer_t;

extern transfer_t jump_fcontext(fcontext_t const to, void *vp);
extern fcontext_t make_fcontext(void *sp, size_t size, void (*fn)(transfer_t));
extern transfer_t ontop_fcontext(fcontext_t const to, void *vp,
				 transfer_t (*fn)(transfer_t));

#endif
