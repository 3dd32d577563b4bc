/*
 * fiberfn: the program's function a Boost.Fiber or Boost.Context fiber was
 * made for, when the fiber's entry template tells only its type.  See
 * fiberfn.c.
 */
#ifndef COROTOP_FIBERFN_H
#define COROTOP_FIBERFN_H

#include <stdbool.h>
#include <stdint.h>

/* One layout of Boost's fiber records, as a Boost version's headers lay
 * them out (fiberfn.c's table). */
struct fiberfn_layout {
	const char *lib;     /* libboost_context's file name, e.g. .so.1.74.0 */
	unsigned record_at;  /* the record, past make_fcontext's sp */
	unsigned record_len; /* bytes of the record searched for `this` */
	/* its stack_context's size and sp (the allocation's top), past the
	 * record */
	unsigned sctx_size_at;
	unsigned sctx_sp_at;
	unsigned worker_at; /* a Boost.Fiber worker_context, past the record */
	unsigned fn_at;	    /* its fn_, past the worker_context */
	/* A Boost.Context fiber's own record (at the top of its allocation):
	 * its fn_, and how far past it the allocation's top is at most. */
	unsigned record_fn_at;
	unsigned record_top_max;
};

/* What the bytes at a context's sp were found to be: none of Boost's, a
 * Boost.Fiber worker's (fn_ in the worker_context), a Boost.Context
 * fiber's own record (fn_ in the record).  Two bits. */
enum fiberfn_kind {
	FIBERFN_NONE = 0,
	FIBERFN_WORKER = 1,
	FIBERFN_RECORD = 2,
};

/* The layout of the libboost_context this process has loaded, or NULL
 * (none loaded, or a version not in the table).  Asks the dynamic linker
 * (dlopen RTLD_NOLOAD) until one is found, then keeps it. */
const struct fiberfn_layout *fiberfn_layout(void);

/* For a context make_fcontext is making at sp: the fn_ of the Boost.Fiber
 * worker_context whose stack it is, or of the Boost.Context fiber record
 * at its top, read as l lays them out -- 0 when the memory there is
 * neither (the record does not point at the worker and its stack_context
 * does not span it as a fiber's own; the bytes are not mapped) or l is
 * NULL; *kind says which.  Reads with process_vm_readv on the process's
 * own pid: never faults, whatever sp is.  The value is only a candidate:
 * fn_ is the function only when F is a function type, which corotop tells
 * from the entry's name (docs/TRACING.md, "Names"). */
uint64_t fiberfn_peek(const struct fiberfn_layout *l, uint64_t sp,
		      enum fiberfn_kind *kind);
/* The same, read directly: only for an sp whose record is known to be
 * there and of that kind -- made by an entry whose first context
 * fiberfn_peek found so. */
uint64_t fiberfn_read(const struct fiberfn_layout *l, uint64_t sp,
		      enum fiberfn_kind kind);

/* For make_fcontext(sp, ..., entry): the function, with this process's
 * layout (fiberfn_layout, looked for only when sp is where a fiber's
 * would be).  The first context of each entry is read with fiberfn_peek;
 * the verdict is kept per entry (a template instance lays out every
 * context it makes alike), and the next ones of a worker's or a record's
 * entry are read directly, the others not at all. */
uint64_t fiberfn_of(uint64_t sp, uint64_t entry);

#endif
