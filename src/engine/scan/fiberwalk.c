/*
 * fiberwalk: Boost.Fiber's own lists, read from a process's memory, as
 * the gdb scripts of fiber runtimes do -- so that a fiber the scan found
 * parked is known to wait (in a wait queue, with no deadline: a
 * condition variable, a mutex, a channel, a join) and not to yield in a
 * loop, which a saved state alone cannot tell.
 *
 * Where the lists are.  Every boost::fibers::context keeps its fcontext_t
 * in its member c_ while it is parked, a pointer to its scheduler, and
 * the hooks of the intrusive lists it can be in: wait (a wait queue),
 * ready, remote ready, sleep (a timed wait), worker (its scheduler's list
 * of all its fibers) and terminated.  A scheduler keeps its main and
 * dispatcher contexts and the worker queue.  So from a parked context the
 * scan found -- its fcontext_t's store, minus c_'s offset -- the walk
 * reaches its scheduler, checks it (its main and dispatcher contexts
 * point back at it, with the right types), and lists every context it
 * has; one scheduler per thread that runs fibers.
 *
 * Layout.  Debian ships no type information for Boost, so the offsets are
 * a table per build (Debian's 1.74, x86-64), picked when that very
 * library is mapped, and unit-fiberwalk checks the table against the
 * installed headers (offsetof with the members made public).  Another
 * build: no walk (the scan alone, as before).
 *
 * Untrusted input.  Every pointer read is checked before it is followed:
 * a context's type, its terminated flag, its list hooks (both links or
 * neither), its scheduler; a scheduler's contexts must point back at it;
 * a list is walked at most `max` nodes and stops at the first node that
 * is not a context of that scheduler (stats.cut).
 *
 * State.  A context whose c_ is empty runs (its fcontext_t was taken to
 * resume it); one linked in a ready queue is ready; in the sleep queue,
 * it has a deadline; in a wait queue only, it waits for somebody's
 * notify -- the lost-wakeup lint's proof (engine/model/lint.c).
 */
#define _GNU_SOURCE
#include "engine/scan/fiberwalk.h"

#include <stdlib.h>
#include <string.h>

#include "engine/target/procfs.h"

#define FIBERWALK_LIB "libboost_fiber.so."
#define FIBERWALK_SCHEDULERS 64u
#define FIBERWALK_CTX_MAX 512u	 /* bytes of a context read */
#define FIBERWALK_SCHED_MAX 256u /* ... of a scheduler */

static const struct fiberwalk_layout fiberwalk_layouts[] = {
#if defined(__x86_64__)
	/* Debian's libboost-fiber1.74.0 (1.74.0-18 and later), checked by
	 * unit-fiberwalk against /usr/include/boost/fiber. */
	{
		.lib = "libboost_fiber.so.1.74.0",
		.arch = "x86_64",
		.ctx_size = 232,
		.remote_ready_hook = 16,
		.terminated = 28,
		.wait_hook = 48,
		.scheduler = 72,
		.sleep_hook = 128,
		.ready_hook = 160,
		.worker_hook = 184,
		.c = 208,
		.type = 224,
		.sched_size = 144,
		.worker_queue = 80,
		.dispatcher_ctx = 120,
		.main_ctx = 128,
	},
#endif
};

const struct fiberwalk_layout *fiberwalk_layout_named(const char *lib)
{
	for (size_t k = 0;
	     lib && k < sizeof(fiberwalk_layouts) / sizeof(*fiberwalk_layouts);
	     k++)
		if (!strcmp(fiberwalk_layouts[k].lib, lib))
			return &fiberwalk_layouts[k];
	return NULL;
}

const struct fiberwalk_layout *fiberwalk_layout_in_maps(const char *maps)
{
	char lib[256];

	procfs_maps_lib(maps, FIBERWALK_LIB, lib, sizeof(lib));
	return fiberwalk_layout_named(lib[0] ? lib : NULL);
}

/* ---- one context -------------------------------------------------------- */

static uint64_t fw_word(const unsigned char *b, uint32_t at)
{
	uint64_t w;

	memcpy(&w, b + at, sizeof(w));
	return w;
}

/* A list hook: both links or neither. */
static bool fw_hook_ok(const unsigned char *b, uint32_t at)
{
	return !fw_word(b, at) == !fw_word(b, at + 8);
}

/* The context at ctx, when it is one: of scheduler sched (0: any), its
 * fcontext_t fctx (0: any).  Into *f. */
static bool fw_context(const struct fiberwalk_layout *l,
		       const struct ctxscan_reader *rd, uint64_t ctx,
		       uint64_t sched, uint64_t fctx, struct fiberwalk_fiber *f)
{
	unsigned char b[FIBERWALK_CTX_MAX];
	uint32_t type;
	uint64_t s;

	if (!ctx || (ctx & 7u) || l->ctx_size > sizeof(b) ||
	    !rd->read(rd->ctx, ctx, b, l->ctx_size))
		return false;
	memcpy(&type, b + l->type, sizeof(type));
	s = fw_word(b, l->scheduler);
	if ((type != FIBERWALK_MAIN && type != FIBERWALK_DISPATCHER &&
	     type != FIBERWALK_WORKER &&
	     type != (FIBERWALK_MAIN | FIBERWALK_DISPATCHER)) ||
	    b[l->terminated] > 1 || !s || (s & 7u) || (sched && s != sched) ||
	    (fctx && fw_word(b, l->c) != fctx) ||
	    !fw_hook_ok(b, l->wait_hook) || !fw_hook_ok(b, l->ready_hook) ||
	    !fw_hook_ok(b, l->worker_hook))
		return false;
	*f = (struct fiberwalk_fiber){
		.ctx = ctx, .fctx = fw_word(b, l->c), .sched = s, .type = type};
	if (!f->fctx)
		f->state = FIBERWALK_RUNNING;
	else if (b[l->terminated])
		f->state = FIBERWALK_TERMINATED;
	else if (fw_word(b, l->ready_hook) || fw_word(b, l->remote_ready_hook))
		f->state = FIBERWALK_READY;
	else if (fw_word(b, l->sleep_hook)) /* the rbtree node's parent */
		f->state = FIBERWALK_SLEEPING;
	else if (fw_word(b, l->wait_hook))
		f->state = FIBERWALK_WAITING;
	else
		f->state = FIBERWALK_SUSPENDED;
	return true;
}

/* ---- schedulers ------------------------------------------------------------
 */

/* Scheduler s, checked: its main and dispatcher contexts point back at
 * it.  Into *main_f, *disp_f. */
static bool fw_scheduler(const struct fiberwalk_layout *l,
			 const struct ctxscan_reader *rd, uint64_t s,
			 struct fiberwalk_fiber *main_f,
			 struct fiberwalk_fiber *disp_f)
{
	unsigned char b[FIBERWALK_SCHED_MAX];

	return l->sched_size <= sizeof(b) &&
	       rd->read(rd->ctx, s, b, l->sched_size) &&
	       fw_context(l, rd, fw_word(b, l->main_ctx), s, 0, main_f) &&
	       (main_f->type & FIBERWALK_MAIN) &&
	       fw_context(l, rd, fw_word(b, l->dispatcher_ctx), s, 0, disp_f) &&
	       (disp_f->type & FIBERWALK_DISPATCHER);
}

static void fw_put(struct fiberwalk_fiber *out, size_t max, size_t *n,
		   const struct fiberwalk_fiber *f, struct fiberwalk_stats *st)
{
	if (*n < max)
		out[(*n)++] = *f;
	else
		st->cut = true;
}

/* Scheduler s's worker queue (a circular list through worker hooks,
 * headed in s) into out. */
static void fw_workers(const struct fiberwalk_layout *l,
		       const struct ctxscan_reader *rd, uint64_t s,
		       struct fiberwalk_fiber *out, size_t max, size_t *n,
		       struct fiberwalk_stats *st)
{
	uint64_t head = s + l->worker_queue, node;

	if (!rd->read(rd->ctx, head, &node, sizeof(node)))
		return;
	for (size_t k = 0; node && node != head; k++) {
		struct fiberwalk_fiber f;

		if (k >= max || node < l->worker_hook ||
		    !fw_context(l, rd, node - l->worker_hook, s, 0, &f) ||
		    !rd->read(rd->ctx, node, &node, sizeof(node))) {
			st->cut = true;
			return;
		}
		fw_put(out, max, n, &f, st);
	}
}

static int fw_cmp(const void *a, const void *b)
{
	const struct fiberwalk_fiber *x = a, *y = b;

	return x->fctx < y->fctx ? -1 : x->fctx > y->fctx;
}

size_t fiberwalk_run(const struct fiberwalk_layout *l,
		     const struct ctxscan_reader *rd,
		     const struct ctxscan_found *found, size_t nfound,
		     struct fiberwalk_fiber *out, size_t max,
		     struct fiberwalk_stats *st)
{
	uint64_t sched[FIBERWALK_SCHEDULERS];
	size_t ns = 0, n = 0;

	memset(st, 0, sizeof(*st));
	for (size_t i = 0; i < nfound; i++) {
		const struct ctxscan_found *fd = &found[i];
		struct fiberwalk_fiber f, m, d;
		bool known = false;

		if (fd->ucontext || fd->stored_at < l->c)
			continue;
		if (!fw_context(l, rd, fd->stored_at - l->c, 0, fd->at, &f)) {
			st->rejected++;
			continue;
		}
		for (size_t k = 0; k < ns && !known; k++)
			known = sched[k] == f.sched;
		if (known || ns == FIBERWALK_SCHEDULERS ||
		    !fw_scheduler(l, rd, f.sched, &m, &d))
			continue;
		sched[ns++] = f.sched;
		fw_put(out, max, &n, &m, st);
		if (d.ctx != m.ctx) /* a pinned context is both */
			fw_put(out, max, &n, &d, st);
		fw_workers(l, rd, f.sched, out, max, &n, st);
	}
	st->schedulers = (uint32_t)ns;
	st->fibers = (uint32_t)n;
	qsort(out, n, sizeof(*out), fw_cmp);
	return n;
}

const struct fiberwalk_fiber *fiberwalk_find(const struct fiberwalk_fiber *f,
					     size_t n, uint64_t fctx)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (f[mid].fctx < fctx)
			lo = mid + 1;
		else if (f[mid].fctx > fctx)
			hi = mid;
		else
			return &f[mid];
	}
	return NULL;
}
