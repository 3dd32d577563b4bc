/*
 * fiberfn: the program's function a Boost.Fiber fiber was made for, when
 * the fiber's entry template tells only its type.  See fiberfn.c.
 */
#ifndef COROTOP_FIBERFN_H
#define COROTOP_FIBERFN_H

#include <stdbool.h>
#include <stdint.h>

/* One layout of Boost.Fiber's worker_context, as a Boost version's
 * headers lay it out (fiberfn.c's table). */
struct fiberfn_layout {
	const char *lib;     /* libboost_fiber's file name, e.g. .so.1.74.0 */
	unsigned record_at;  /* the record, past make_fcontext's sp */
	unsigned record_len; /* bytes of the record searched for `this` */
	/* its stack_context's size and sp (the allocation's top), past the
	 * record */
	unsigned sctx_size_at;
	unsigned sctx_sp_at;
	unsigned worker_at; /* the worker_context, past the record */
	unsigned fn_at;	    /* its fn_, past the worker_context */
};

/* The layout of the libboost_fiber this process has loaded, or NULL (none
 * loaded, or a version not in the table).  Asks the dynamic linker
 * (dlopen RTLD_NOLOAD) until one is found, then keeps it. */
const struct fiberfn_layout *fiberfn_layout(void);

/* For a context make_fcontext is making at sp: the fn_ of the Boost.Fiber
 * worker_context whose stack it is, read as l lays it out -- 0 when the
 * memory there is not one (the record does not point at the worker, or
 * its stack_context does not hold it; the bytes are not mapped) or l is
 * NULL; *is_worker says which.  Reads with process_vm_readv on the
 * process's own pid: never faults, whatever sp is.  The value is only a
 * candidate: fn_ is the function only when F is a function type, which
 * corotop tells from the entry's name (docs/TRACING.md, "Names"). */
uint64_t fiberfn_peek(const struct fiberfn_layout *l, uint64_t sp,
		      bool *is_worker);
/* The same, read directly: only for an sp whose record is known to be
 * there -- made by an entry whose first context fiberfn_peek found a
 * worker's. */
uint64_t fiberfn_read(const struct fiberfn_layout *l, uint64_t sp);

/* For make_fcontext(sp, ..., entry): the function, with this process's
 * layout (fiberfn_layout, looked for only when sp is where a fiber's
 * would be).  The first context of each entry is read with fiberfn_peek;
 * the verdict is kept per entry (a template instance lays out every
 * context it makes alike), and the next ones of a worker's entry are read
 * directly, the others not at all. */
uint64_t fiberfn_of(uint64_t sp, uint64_t entry);

#endif
