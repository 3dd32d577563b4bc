/*
 * scanner: the coroutines of a running process that was never prepared
 * (no probe, no preload, no ppt buffer), found by scanning its memory.
 *
 * A pass reads the process's memory map (/proc/PID/maps), the stack
 * pointer of each thread that waits in the kernel (procfs_thread_sps:
 * below it lies dead stack, above it running frames), and scans every
 * writable mapping for Boost.Context's parked contexts (ctxscan.c).  The
 * threads are never stopped: a pass reads memory that changes under it,
 * so a context that moved while it was read is seen at the next pass.
 *
 * Identity.  A Boost.Fiber that its scheduler lists (fiberwalk.c) is
 * known by its context object, wherever it parks.  Another context is
 * known by its saved area's address (the fcontext_t): a coroutine that
 * parks again at the same depth, as a loop that yields does, saves at the
 * same address and stays the same record; one that parks at another
 * depth is a new record, the old one closed.
 * Nothing in memory says how often it switched or since when it exists:
 * its record carries the scan's mark (model_found), which the views and
 * the JSON show as "unknown" for AGE and SWITCHES, and IN-STATE counts
 * from the first pass that saw it (a lower bound).
 *
 * A core file (scanner_create_core, corotop --core) is scanned the same
 * way, its maps text and memory from corefile.c, and the stack pointer
 * of every thread from its registers: a core's threads all stopped.
 *
 * Apply.  The pass's list, sorted by address, is merged with the previous
 * one (sorted too) under the engine lock: new ones are opened on a free
 * station of the model and sent as census events (the engine walks their
 * parked stacks and names them as it does a late attach's census), those
 * whose saved pc changed are sent again, and the missing are closed.
 */
#define _GNU_SOURCE
#include "engine/scan/scanner.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/grow.h"
#include "engine/model/event.h"
#include "engine/model/model.h"
#include "engine/model/snapshot.h"
#include "engine/scan/fiberwalk.h"
#include "engine/target/corefile.h"
#include "engine/target/fcsave.h"
#include "engine/target/framecheck.h"
#include "engine/target/procfs.h"
#include "engine/target/procmem.h"
#include "engine/target/threadstop.h"

/* A refresh reads holders in chunks, for at most about SCANNER_READ_NS
 * in its stop (then goes on at the next refresh): at half a microsecond
 * to a microsecond per holder on a page of its own, a few thousand a
 * refresh; an array of them, all. */
#define SCANNER_READ_CHUNK 256u
#define SCANNER_READ_NS (1500u * 1000u)

/* The threads whose stacks a pass splits (more: their stacks are not). */
#define SCANNER_THREADS_MAX 1024u
/* A maps text longer than this is cut (65536 regions of ~100 bytes). */
#define SCANNER_MAPS_MAX (8u << 20)

/* One context the model holds: its area, its station, its saved pc,
 * and what a refresh re-reads of it. */
struct scanner_known {
	uint64_t id;		 /* its identity (scanner_identify) */
	uint64_t at, pc, sp, fp; /* where it parked, a walk's start */
	/* What a refresh re-reads: a word that holds hold_val while the
	 * context stays parked (an fcontext_t's holder; the return address
	 * swapcontext left at a ucontext's sp - 8), and its saved pc. */
	uint64_t hold_at, hold_val;
	uint64_t stack_lo, stack_hi; /* the region it lies in */
	pid_t tid;		     /* the thread it last ran on (0: ?) */
	uint32_t station;
	bool unsure, waiting;
	bool ucontext;
	bool resumed; /* shown running since a refresh saw it resumed */
};

/* What a refresh saw of a known context. */
enum scanner_fate {
	SCANNER_PARKED,	 /* where it was */
	SCANNER_MOVED,	 /* its holder holds another saved area: there */
	SCANNER_RUNNING, /* resumed (on ran_on, when known) */
};

/* A thread shown as a row of its own (a live process's refreshes). */
struct scanner_trow {
	pid_t tid;
	uint32_t station;
	uint64_t sp, pc;
};

struct scanner {
	struct scanner_env env;
	pid_t pid;
	int dirfd; /* /proc/PID; -1: a core's (core) */
	const struct corefile *core;
	char *maps;
	size_t maps_cap;
	struct ctxscan_region *regions;
	size_t regions_cap, nregions;
	bool threads_sent;	     /* a core's threads are in the model */
	struct ctxscan_found *found; /* the last pass's, env.stations max */
	size_t nfound;
	/* Boost.Fiber's lists (fiberwalk.c), the last pass's, sorted by
	 * fctx; env.stations max. */
	struct fiberwalk_fiber *fibers;
	size_t nfibers;
	/* The found ones by identity: (id, index into found), sorted. */
	struct scanner_order {
		uint64_t id;
		uint32_t i;
	} * order;
	struct scanner_known *known, *next; /* sorted by at */
	size_t nknown;
	uint32_t *free; /* stations not in use, a stack */
	uint32_t nfree;
	/* Refreshes (live only): the stop, the words re-read (two per known
	 * context: its holder, its saved pc), which contexts resumed and on
	 * which thread, the threads seen, and their rows. */
	struct threadstop *ts;
	struct scanner_word {
		uint64_t addr;
		uint32_t k; /* the known context whose holder it is */
	} * plan;	    /* sorted by address, made after each apply */
	uint64_t *addrs, *got, *words; /* words[k]: known k's holder */
	/* The holders that hold another value: the saved area it may be
	 * (three words each: its pc, fp and MXCSR slots), read in the stop
	 * too. */
	uint32_t *cand;
	uint64_t *cand_addrs, *cand_words;
	size_t ncand;
	uint8_t *fate;		     /* enum scanner_fate, per known */
	struct ctxscan_found *moved; /* ... where a MOVED one is now */
	pid_t *ran_on;
	const struct fcsave_layout *layout;	     /* the last pass's */
	const struct fiberwalk_layout *fiber_layout; /* ... */
	struct threadstop_thread threads[THREADSTOP_MAX];
	size_t nthreads;
	struct scanner_trow trows[THREADSTOP_MAX], trows_next[THREADSTOP_MAX];
	size_t ntrows;
	uint32_t nresumed;
	bool torn;
	bool planned; /* plan is the known list's (a pass unsets it) */
	/* The holders the last refresh read: plan[from] on, nread of them
	 * (wrapping); the next starts at cursor. */
	size_t from, nread, cursor;
	uint64_t sps[SCANNER_THREADS_MAX];
	struct ctxscan_range dead[SCANNER_THREADS_MAX];
	struct ctxscan_range running[SCANNER_THREADS_MAX];
	/* The pass's numbers (the pass's thread), and those of the last
	 * pass applied (under the caller's lock: snapshots read them). */
	struct snapshot_scan pass, st;
	struct ctxscan_stats scan;
};

/* The scanner's arrays, for env's stations; NULL when out of memory. */
static struct scanner *scanner_alloc(const struct scanner_env *env, char *err,
				     size_t errlen)
{
	struct scanner *s = calloc(1, sizeof(*s));

	if (!s) {
		snprintf(err, errlen, "out of memory for the scan");
		return NULL;
	}
	s->env = *env;
	s->dirfd = -1;
	s->found = calloc(env->stations ? env->stations : 1, sizeof(*s->found));
	s->fibers =
		calloc(env->stations ? env->stations : 1, sizeof(*s->fibers));
	s->order = calloc(env->stations ? env->stations : 1, sizeof(*s->order));
	s->known = calloc(env->stations ? env->stations : 1, sizeof(*s->known));
	s->next = calloc(env->stations ? env->stations : 1, sizeof(*s->next));
	s->free = calloc(env->stations ? env->stations : 1, sizeof(*s->free));
	s->addrs = calloc(env->stations ? env->stations : 1, sizeof(*s->addrs));
	s->got = calloc(env->stations ? env->stations : 1, sizeof(*s->got));
	s->plan = calloc(env->stations ? env->stations : 1, sizeof(*s->plan));
	s->words = calloc(env->stations ? env->stations : 1, sizeof(*s->words));
	s->cand = calloc(env->stations ? env->stations : 1, sizeof(*s->cand));
	s->cand_addrs = calloc(3 * (env->stations ? env->stations : 1),
			       sizeof(*s->cand_addrs));
	s->cand_words = calloc(3 * (env->stations ? env->stations : 1),
			       sizeof(*s->cand_words));
	s->fate = calloc(env->stations ? env->stations : 1, sizeof(*s->fate));
	s->moved = calloc(env->stations ? env->stations : 1, sizeof(*s->moved));
	s->ran_on =
		calloc(env->stations ? env->stations : 1, sizeof(*s->ran_on));
	if (!s->found || !s->fibers || !s->order || !s->known || !s->next ||
	    !s->free || !s->addrs || !s->got || !s->plan || !s->words ||
	    !s->cand || !s->cand_addrs || !s->cand_words || !s->fate ||
	    !s->moved || !s->ran_on) {
		snprintf(err, errlen, "out of memory for the scan");
		scanner_destroy(s);
		return NULL;
	}
	/* Lowest stations first. */
	for (uint32_t i = env->stations; i > 0; i--)
		s->free[s->nfree++] = i - 1;
	return s;
}

struct scanner *scanner_create(pid_t pid, const struct scanner_env *env,
			       char *err, size_t errlen)
{
	struct scanner *s = scanner_alloc(env, err, errlen);
	char path[64];

	if (!s)
		return NULL;
	s->pid = pid;
	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	s->dirfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (s->dirfd < 0) {
		snprintf(err, errlen, "cannot open %s: %s", path,
			 strerror(errno));
		scanner_destroy(s);
		return NULL;
	}
	return s;
}

struct scanner *scanner_create_core(const struct corefile *core,
				    const struct scanner_env *env, char *err,
				    size_t errlen)
{
	struct scanner *s = scanner_alloc(env, err, errlen);

	if (s)
		s->core = core;
	return s;
}

void scanner_destroy(struct scanner *s)
{
	if (!s)
		return;
	threadstop_destroy(s->ts);
	if (s->dirfd >= 0)
		close(s->dirfd);
	free(s->addrs);
	free(s->got);
	free(s->plan);
	free(s->words);
	free(s->cand);
	free(s->cand_addrs);
	free(s->cand_words);
	free(s->fate);
	free(s->moved);
	free(s->ran_on);
	free(s->maps);
	free(s->regions);
	free(s->found);
	free(s->fibers);
	free(s->order);
	free(s->known);
	free(s->next);
	free(s->free);
	free(s);
}

/* The maps text, whole (up to SCANNER_MAPS_MAX), NUL-terminated: its
 * length, or -1 when it cannot be read. */
static long scanner_read_maps(struct scanner *s)
{
	size_t len = 0;
	int fd;

	if (s->core) { /* a core's: its text */
		const char *text = corefile_maps(s->core, &len);

		if (len >= SCANNER_MAPS_MAX ||
		    !grow_array((void **)&s->maps, &s->maps_cap, len + 1, 1))
			return -1;
		memcpy(s->maps, text, len);
		s->maps[len] = '\0';
		return (long)len;
	}
	fd = openat(s->dirfd, "maps", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	for (;;) {
		ssize_t got;

		if (len + 4096 + 1 > s->maps_cap &&
		    (len + 4096 + 1 > SCANNER_MAPS_MAX ||
		     !grow_array((void **)&s->maps, &s->maps_cap,
				 len + 4096 + 1, 1)))
			break;
		got = read(fd, s->maps + len, s->maps_cap - len - 1);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0) {
			if (got < 0 && !len) {
				close(fd);
				return -1;
			}
			break;
		}
		len += (size_t)got;
	}
	close(fd);
	if (!s->maps)
		return -1;
	s->maps[len] = '\0';
	return (long)len;
}

/* Whether the mapping that starts at lo may hold the stacks of many
 * contexts, not one thread's: the heap ([heap]), or a malloc arena's heap
 * (an anonymous mapping aligned to glibc's HEAP_MAX_SIZE, 64 MiB, where
 * fixedsize stacks of other threads' fibers lie).  A thread that waits
 * with its sp there does not make the memory below it dead nor above it
 * its own frames: other contexts' stacks lie on both sides. */
static bool scanner_shared(const char *maps, size_t len, uint64_t lo)
{
	const char *p = maps, *end = maps + len;

	if (!(lo & ((64ull << 20) - 1)))
		return true;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
		struct procfs_maps_line m;

		if (procfs_maps_line(p, n, &m) && m.start == lo)
			return m.path_len == 6 && !memcmp(m.path, "[heap]", 6);
		p += n + 1;
	}
	return false;
}

static bool scanner_read(void *ctx, uint64_t addr, void *buf, size_t n)
{
	struct scanner *s = ctx;
	char err[128];

	return procmem_read(s->env.pm, addr, buf, n, err, sizeof(err));
}

static bool scanner_after_call(void *ctx, uint64_t pc)
{
	struct scanner *s = ctx;

	return framecheck_frame(s->env.fc, pc, false) == FRAMECHECK_OK;
}

/* Boost.Fiber's lists, from the contexts found, when its layout is one
 * fiberwalk knows. */
static void scanner_fibers(struct scanner *s, const struct ctxscan_reader *rd)
{
	const struct fiberwalk_layout *l = fiberwalk_layout_in_maps(s->maps);
	struct fiberwalk_stats st;

	s->fiber_layout = l;
	s->nfibers = 0;
	s->pass.fiber_layout = l != NULL;
	s->pass.schedulers = s->pass.fibers = 0;
	if (!l)
		return;
	s->nfibers = fiberwalk_run(l, rd, s->found, s->nfound, s->fibers,
				   s->env.stations, &st);
	s->pass.schedulers = st.schedulers;
	s->pass.fibers = st.fibers;
}

static int scanner_order_cmp(const void *a, const void *b)
{
	const struct scanner_order *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

/* Each found context's identity, what keeps its record from pass to
 * pass: a Boost.Fiber's context object, when its scheduler lists it (it
 * stays the same wherever the fiber parks); else the saved area's
 * address (a context that parks again at the same depth).  Sorted. */
static void scanner_identify(struct scanner *s)
{
	for (size_t i = 0; i < s->nfound; i++) {
		const struct fiberwalk_fiber *fb =
			fiberwalk_find(s->fibers, s->nfibers, s->found[i].at);

		s->order[i] = (struct scanner_order){
			.id = fb ? fb->ctx : s->found[i].at, .i = (uint32_t)i};
	}
	qsort(s->order, s->nfound, sizeof(*s->order), scanner_order_cmp);
}

bool scanner_pass(struct scanner *s)
{
	uint64_t t0 = clock_now_ns(CLOCK_MONOTONIC);
	const struct fcsave_layout *layout;
	size_t lines = 1, nr, nsp, busy = 0, nd = 0;
	long len = scanner_read_maps(s);

	if (len < 0)
		return false;
	for (long i = 0; i < len; i++)
		lines += s->maps[i] == '\n';
	if (lines > CTXSCAN_REGIONS_MAX)
		lines = CTXSCAN_REGIONS_MAX;
	if (!grow_array_fit((void **)&s->regions, &s->regions_cap, lines,
			    sizeof(*s->regions)))
		return false;
	nr = ctxscan_regions(s->maps, (size_t)len, s->regions, lines);
	s->nregions = nr;
	layout = fcsave_layout_in_maps(s->maps);
	s->layout = layout;
	s->pass.no_layout = !layout;
	if (s->core) { /* every thread of a core stopped, its sp known */
		const struct corefile_thread *t;
		size_t n = corefile_threads(s->core, &t);

		for (nsp = 0; nsp < n && nsp < SCANNER_THREADS_MAX; nsp++)
			s->sps[nsp] = t[nsp].sp;
	} else {
		nsp = procfs_thread_sps(s->dirfd, s->sps, SCANNER_THREADS_MAX,
					&busy);
	}
	for (size_t i = 0; i < nsp; i++)
		if (ctxscan_split(s->regions, nr, s->sps[i], &s->dead[nd],
				  &s->running[nd]) &&
		    !scanner_shared(s->maps, (size_t)len, s->dead[nd].lo))
			nd++;
	s->pass.threads = (uint32_t)nsp;
	s->pass.busy = (uint32_t)busy;
	s->nfound = 0;
	memset(&s->scan, 0, sizeof(s->scan));
	{
		const struct ctxscan_input in = {
			.regions = s->regions,
			.nregions = nr,
			.dead = s->dead,
			.ndead = nd,
			.running = s->running,
			.nrunning = nd,
			.layout = layout,
			.ucontext = true,
			.reader = {.read = scanner_read,
				   .after_call = scanner_after_call,
				   .ctx = s},
		};

		s->nfound = ctxscan_fcontext(&in, s->found, s->env.stations,
					     &s->scan);
		scanner_fibers(s, &in.reader);
		scanner_identify(s);
	}
	s->pass.bytes = s->scan.bytes;
	s->pass.pass_ns = clock_now_ns(CLOCK_MONOTONIC) - t0;
	if (!s->pass.passes++)
		s->pass.first_ns = s->pass.pass_ns;
	return true;
}

/* Found context f, on station `station`, into the model: its census. */
static void scanner_send(struct scanner *s, const struct ctxscan_found *f,
			 uint64_t id, uint32_t station, uint64_t now,
			 bool unsure, bool waiting, pid_t tid)
{
	struct harvest_event ev = {
		.ts = now,
		.tid = (uint64_t)(tid > 0 ? tid : 0),
		.addr = f->pc,
		.probe_id = id,
		.station = station,
		.census = 1,
		.where = {.sp = f->sp,
			  .fp = f->fp,
			  .pc = f->pc,
			  .stack_lo = f->stack_lo,
			  .stack_hi = f->stack_hi},
	};

	model_found(s->env.model, station, unsure, waiting);
	s->env.event(s->env.ctx, &ev);
}

/* A core's threads, each a running record of its own: its thread id
 * for ID and TID, its stack walked from its registers (the census walks
 * it: engine/stacks/census.c), up to the end of the mapping its sp lies
 * in.  Once: a core does not change. */
static void scanner_threads(struct scanner *s, uint64_t now)
{
	const struct corefile_thread *t;
	size_t n = corefile_threads(s->core, &t);

	s->threads_sent = true;
	for (size_t k = 0; k < n && s->nfree; k++) {
		uint32_t st = s->free[--s->nfree];
		struct harvest_event ev = {
			.ts = now,
			.tid = (uint64_t)t[k].tid,
			.addr = t[k].pc,
			.probe_id = (uint64_t)t[k].tid,
			.station = st,
			.census = 1,
			.is_active = 1,
			.where = {.sp = t[k].sp, .fp = t[k].fp, .pc = t[k].pc},
		};

		for (size_t r = 0; r < s->nregions; r++)
			if (s->regions[r].lo <= t[k].sp &&
			    t[k].sp < s->regions[r].hi) {
				ev.where.stack_lo = t[k].sp;
				ev.where.stack_hi = s->regions[r].hi;
			}
		model_open(s->env.model, st, ev.probe_id, now);
		model_found(s->env.model, st, false, false);
		s->env.event(s->env.ctx, &ev);
		s->pass.threads_listed++;
	}
}

/* The refreshes' numbers, which a pass's do not replace. */
static void scanner_keep_refresh(struct snapshot_scan *st,
				 const struct snapshot_scan *was)
{
	st->nonblocking = was->nonblocking;
	st->refreshes = was->refreshes;
	st->pause_ns = was->pause_ns;
	st->pause_max_ns = was->pause_max_ns;
	st->stopped = was->stopped;
	st->resumed = was->resumed;
	st->round = was->round;
	st->torn = was->torn;
	st->refused = was->refused;
	st->late = was->late;
	if (!st->threads_listed)
		st->threads_listed = was->threads_listed;
}

/* Where context f is now, into its record kn: parked (not resumed). */
static void scanner_keep(struct scanner_known *kn,
			 const struct ctxscan_found *f)
{
	kn->at = f->at;
	kn->pc = f->pc;
	kn->sp = f->sp;
	kn->fp = f->fp;
	kn->hold_at = f->ucontext ? f->sp - 8 : f->stored_at;
	kn->hold_val = f->ucontext ? f->pc : f->at;
	kn->ucontext = f->ucontext;
	kn->stack_lo = f->stack_lo;
	kn->stack_hi = f->stack_hi;
	kn->resumed = false;
}

/* A fiber its scheduler lists: its holder is its context's c_ (the
 * lowest word that held its fcontext_t may be a stale copy). */
static void scanner_fiber_holder(const struct scanner *s,
				 struct scanner_known *kn,
				 const struct fiberwalk_fiber *fb)
{
	if (fb && s->fiber_layout && !kn->ucontext)
		kn->hold_at = fb->ctx + s->fiber_layout->c;
}

void scanner_apply(struct scanner *s, uint64_t now)
{
	size_t i = 0, k = 0, n = 0;
	uint32_t unsure = 0, lost = 0, waiting = 0;

	/* Both lists are sorted by identity (scanner_identify). */
	while (i < s->nfound || k < s->nknown) {
		const struct ctxscan_found *f =
			i < s->nfound ? &s->found[s->order[i].i] : NULL;
		uint64_t id = f ? s->order[i].id : 0;
		struct scanner_known *o = k < s->nknown ? &s->known[k] : NULL;
		const struct fiberwalk_fiber *fb =
			f ? fiberwalk_find(s->fibers, s->nfibers, f->at) : NULL;

		/* Ended, its scheduler says, not yet freed: not live. */
		if (fb && fb->state == FIBERWALK_TERMINATED) {
			i++;
			continue;
		}
		/* What the lists say: listed (then live), waiting. */
		bool u = f && f->unsure && !fb;
		bool w = fb && fb->state == FIBERWALK_WAITING;

		if (o && (!f || o->id < id)) {
			/* Gone: not found at this pass. */
			model_close(s->env.model, o->station, now, true);
			s->free[s->nfree++] = o->station;
			k++;
			continue;
		}
		if (o && o->id == id) {
			struct scanner_known kn = *o;

			/* Parked elsewhere, or anew, or parked again after a
			 * refresh saw it resumed: walked again. */
			if (kn.at != f->at || kn.pc != f->pc ||
			    kn.unsure != u || kn.resumed)
				scanner_send(s, f, id, kn.station, now, u, w,
					     kn.tid);
			else if (kn.waiting != w)
				model_found(s->env.model, kn.station, u, w);
			scanner_keep(&kn, f);
			scanner_fiber_holder(s, &kn, fb);
			kn.unsure = u;
			kn.waiting = w;
			s->next[n++] = kn;
			i++, k++;
		} else {
			/* New.  No station left: not listed (the stats say
			 * how many were found). */
			if (s->nfree) {
				uint32_t st = s->free[--s->nfree];

				model_open(s->env.model, st, id, now);
				scanner_send(s, f, id, st, now, u, w, 0);
				s->next[n] =
					(struct scanner_known){.id = id,
							       .station = st,
							       .unsure = u,
							       .waiting = w};
				scanner_keep(&s->next[n], f);
				scanner_fiber_holder(s, &s->next[n++], fb);
			} else {
				lost++;
			}
			i++;
		}
	}
	for (size_t j = 0; j < n; j++) {
		unsure += s->next[j].unsure;
		waiting += s->next[j].waiting;
	}
	/* The new list becomes the known one. */
	{
		struct scanner_known *t = s->known;

		s->known = s->next;
		s->next = t;
		s->nknown = n;
		s->planned = false;
	}
	if (s->core && !s->threads_sent)
		scanner_threads(s, now);
	{
		struct snapshot_scan was = s->st;

		s->st = s->pass;
		scanner_keep_refresh(&s->st, &was);
	}
	s->st.found = (uint32_t)n;
	s->st.unsure = unsure;
	s->st.waiting = waiting;
	s->st.lost = lost + (uint32_t)s->scan.found_lost;
}

/* The writable region [lo, hi) that holds addr, from the last pass's
 * regions; false when none does. */
static bool scanner_region_of(const struct scanner *s, uint64_t addr,
			      uint64_t *lo, uint64_t *hi)
{
	for (size_t r = 0; r < s->nregions; r++)
		if (s->regions[r].lo <= addr && addr < s->regions[r].hi) {
			*lo = s->regions[r].lo;
			*hi = s->regions[r].hi;
			return true;
		}
	return false;
}

static int scanner_word_cmp(const void *a, const void *b)
{
	const struct scanner_word *x = a, *y = b;

	return (x->addr > y->addr) - (x->addr < y->addr);
}

/* The holders a refresh re-reads, sorted by address (outside any stop:
 * a sort of 100k words takes milliseconds), so that consecutive ones
 * (an array of them) are read as one. */
static void scanner_plan(struct scanner *s)
{
	for (size_t k = 0; k < s->nknown; k++)
		s->plan[k] = (struct scanner_word){.addr = s->known[k].hold_at,
						   .k = (uint32_t)k};
	qsort(s->plan, s->nknown, sizeof(*s->plan), scanner_word_cmp);
	for (size_t w = 0; w < s->nknown; w++)
		s->addrs[w] = s->plan[w].addr;
	s->planned = true;
}

/* Holder i of the plan, just read: its word kept for its context, and
 * the saved area it may point to listed as a candidate (when it holds
 * another value than its context's). */
static void scanner_candidate(struct scanner *s, size_t i)
{
	const struct fcsave_layout *l = s->layout;
	uint32_t k = s->plan[i].k;
	const struct scanner_known *kn = &s->known[k];
	uint64_t v = s->got[i];

	s->words[k] = v;
	if (!l || kn->ucontext || !v || v == kn->hold_val || (v & 7))
		return;
	s->cand_addrs[3 * s->ncand] = v + l->pc_at;
	s->cand_addrs[3 * s->ncand + 1] = v + l->fp_at;
	s->cand_addrs[3 * s->ncand + 2] =
		v + (l->has_mxcsr ? l->mxcsr_at : l->pc_at);
	s->cand[s->ncand++] = k;
}

/* The refresh's reads, in the stop: the holders from the cursor on, a
 * chunk at a time, each chunk's holders then the saved areas those that
 * hold another value may point to (their candidates), for as long as
 * SCANNER_READ_NS allows (all of them, unless there are thousands, each
 * on a page of its own).  The next refresh goes on from where this one
 * stopped, so every holder is read in turn; the range read is
 * [s->from, s->from + s->nread) of the plan, wrapping.  again: the same
 * range once more (a thread woke meanwhile), whatever it takes. */
static void scanner_reread(struct scanner *s, bool again)
{
	uint64_t t0 = clock_now_ns(CLOCK_MONOTONIC);
	size_t n = s->nknown, done = 0;

	if (!again) {
		s->from = n ? s->cursor % n : 0;
		s->nread = n;
	}
	s->ncand = 0;
	while (done < s->nread) {
		size_t at = (s->from + done) % n;
		size_t k = s->nread - done, c0 = s->ncand;

		if (k > SCANNER_READ_CHUNK)
			k = SCANNER_READ_CHUNK;
		if (k > n - at)
			k = n - at;
		(void)procmem_read_words(s->env.pm, s->addrs + at, s->got + at,
					 k);
		for (size_t i = at; i < at + k; i++)
			scanner_candidate(s, i);
		(void)procmem_read_words(s->env.pm, s->cand_addrs + 3 * c0,
					 s->cand_words + 3 * c0,
					 3 * (s->ncand - c0));
		done += k;
		if (!again &&
		    clock_now_ns(CLOCK_MONOTONIC) - t0 >= SCANNER_READ_NS)
			s->nread = done; /* the rest at the next refresh */
	}
}

/* Which known contexts run on a thread: the one known context whose
 * region holds the thread's sp, when that region holds only one (a
 * stack of its own, as mmap'd stacks are; not the heap, where many
 * contexts' stacks lie, nor a static array of several). */
static void scanner_runs_on(struct scanner *s)
{
	memset(s->ran_on, 0, s->nknown * sizeof(*s->ran_on));
	for (size_t i = 0; i < s->nthreads; i++) {
		const struct threadstop_thread *t = &s->threads[i];
		uint64_t lo, hi;
		size_t n = 0, which = 0;

		if (!t->sp || !scanner_region_of(s, t->sp, &lo, &hi) ||
		    !s->maps || scanner_shared(s->maps, strlen(s->maps), lo))
			continue;
		for (size_t k = 0; k < s->nknown && n < 2; k++)
			if (s->known[k].stack_lo == lo)
				n++, which = k;
		if (n == 1)
			s->ran_on[which] = t->tid;
	}
}

/* Candidate c (scanner_reread: a holder's new value, its words read in
 * the stop), checked as the scan checks a saved area (in a writable
 * region, its MXCSR's reserved bits clear, its pc after a call): where
 * its known context parks now, into *f. */
static bool scanner_area(struct scanner *s, size_t c, struct ctxscan_found *f)
{
	const struct fcsave_layout *l = s->layout;
	const struct scanner_known *kn = &s->known[s->cand[c]];
	uint64_t at = s->words[s->cand[c]], lo, hi;
	uint64_t pc = s->cand_words[3 * c], fp = s->cand_words[3 * c + 1];
	uint64_t mxcsr = s->cand_words[3 * c + 2];

	if (!l || !scanner_region_of(s, at, &lo, &hi) || at + l->size > hi ||
	    (l->has_mxcsr && (uint32_t)mxcsr >> 16) ||
	    !scanner_after_call(s, pc))
		return false;
	*f = (struct ctxscan_found){
		.at = at,
		.sp = at + l->sp_after,
		.fp = fp,
		.pc = pc,
		.pc_at = at + l->pc_at,
		.stack_lo = lo,
		.stack_hi = hi,
		.stored_at = kn->hold_at,
		.stored = 1,
		.unsure = kn->unsure,
	};
	return true;
}

size_t scanner_refresh(struct scanner *s)
{
	const struct threadstop_thread *t;
	size_t n, moved = 0;
	int rounds = 0;

	if (s->core || s->dirfd < 0)
		return 0;
	if (!s->ts) {
		s->ts = threadstop_create(s->pid, s->dirfd, s->env.nonblocking);
		if (!s->ts)
			return 0;
	}
	if (!s->planned)
		scanner_plan(s);
	/* Under the stop, each holder: whether it still holds its
	 * context (a resumed one's is cleared or rewritten).  A thread that
	 * woke meanwhile may have changed what was read: it is stopped (or
	 * seen waiting again) and the holders read again. */
	n = threadstop_begin(s->ts, &t);
	scanner_reread(s, false);
	s->torn = false;
	while (!threadstop_settled(s->ts)) {
		if (++rounds > 2) {
			s->torn = true;
			break;
		}
		scanner_reread(s, true);
	}
	memcpy(s->threads, t, n * sizeof(*t));
	s->nthreads = n;
	threadstop_end(s->ts);
	/* Each known context's fate.  A holder that still holds it: parked
	 * where it was (one that parked again at the same depth is too, until
	 * the next pass).  One emptied (Boost.Fiber's c_ while it runs), or a
	 * ucontext resumed: running.  One that holds a saved area: parked
	 * there.  Anything else: as it was, until the next pass. */
	scanner_runs_on(s);
	memset(s->fate, SCANNER_PARKED, s->nknown);
	for (size_t w = 0; w < s->nread; w++) {
		uint32_t k = s->plan[(s->from + w) % s->nknown].k;
		const struct scanner_known *kn = &s->known[k];
		uint64_t hold = s->words[k];

		if (hold != kn->hold_val && (!hold || kn->ucontext))
			s->fate[k] = SCANNER_RUNNING;
	}
	for (size_t k = 0; k < s->nknown; k++)
		if (s->ran_on[k])
			s->fate[k] = SCANNER_RUNNING;
	s->cursor = s->nknown ? (s->from + s->nread) % s->nknown : 0;
	for (size_t c = 0; c < s->ncand; c++)
		if (!s->ran_on[s->cand[c]] &&
		    scanner_area(s, c, &s->moved[s->cand[c]]))
			s->fate[s->cand[c]] = SCANNER_MOVED;
	for (size_t k = 0; k < s->nknown; k++)
		moved += s->fate[k] != SCANNER_PARKED;
	return moved;
}

/* The refresh's thread tid (NULL: not seen). */
static const struct threadstop_thread *scanner_thread(const struct scanner *s,
						      pid_t tid)
{
	for (size_t i = 0; i < s->nthreads; i++)
		if (s->threads[i].tid == tid)
			return &s->threads[i];
	return NULL;
}

/* A thread's row: opened, walked again when it moved. */
static void scanner_thread_row(struct scanner *s,
			       const struct threadstop_thread *t,
			       struct scanner_trow *row, bool fresh,
			       uint64_t now)
{
	struct harvest_event ev = {
		.ts = now,
		.tid = (uint64_t)t->tid,
		.addr = t->pc,
		.probe_id = (uint64_t)t->tid,
		.station = row->station,
		.census = 1,
		.is_active = 1,
		.where = {.sp = t->sp, .fp = t->fp, .pc = t->pc},
	};
	uint64_t lo, hi;

	if (!fresh && row->sp == t->sp && row->pc == t->pc)
		return;
	if (t->sp && scanner_region_of(s, t->sp, &lo, &hi)) {
		ev.where.stack_lo = t->sp;
		ev.where.stack_hi = hi;
	}
	if (fresh) {
		model_open(s->env.model, row->station, ev.probe_id, now);
		model_found(s->env.model, row->station, false, false);
	}
	row->sp = t->sp;
	row->pc = t->pc;
	s->env.event(s->env.ctx, &ev);
}

static int scanner_tid_cmp(const void *a, const void *b)
{
	const struct threadstop_thread *x = a, *y = b;

	return (x->tid > y->tid) - (x->tid < y->tid);
}

void scanner_refresh_apply(struct scanner *s, uint64_t now)
{
	struct threadstop_stats ts;
	size_t i = 0, k = 0, n = 0;
	uint32_t resumed = 0;

	if (!s->ts)
		return;
	/* The threads, merged by id with the rows (both sorted). */
	qsort(s->threads, s->nthreads, sizeof(*s->threads), scanner_tid_cmp);
	while (i < s->nthreads || k < s->ntrows) {
		const struct threadstop_thread *t =
			i < s->nthreads ? &s->threads[i] : NULL;
		struct scanner_trow *o = k < s->ntrows ? &s->trows[k] : NULL;

		if (o && (!t || o->tid < t->tid)) { /* gone */
			model_close(s->env.model, o->station, now, true);
			s->free[s->nfree++] = o->station;
			k++;
		} else if (o && o->tid == t->tid) {
			struct scanner_trow row = *o;

			scanner_thread_row(s, t, &row, false, now);
			s->trows_next[n++] = row;
			i++, k++;
		} else {
			if (s->nfree) {
				struct scanner_trow row = {
					.tid = t->tid,
					.station = s->free[--s->nfree]};

				scanner_thread_row(s, t, &row, true, now);
				s->trows_next[n++] = row;
			}
			i++;
		}
	}
	memcpy(s->trows, s->trows_next, n * sizeof(*s->trows));
	s->ntrows = n;
	/* What the refresh saw of the known contexts: running (on the
	 * thread whose stack holds them, when one does) until found parked;
	 * parked elsewhere, their holder says: walked there. */
	for (size_t j = 0; j < s->nknown; j++) {
		struct scanner_known *kn = &s->known[j];
		pid_t on = s->ran_on[j];

		if (s->fate[j] == SCANNER_RUNNING && (!kn->resumed || on)) {
			/* Running: on its thread, walked from the thread's
			 * registers, when it is known; else where it last
			 * parked, its thread not known. */
			const struct threadstop_thread *t =
				on ? scanner_thread(s, on) : NULL;
			struct harvest_event ev = {
				.ts = now,
				.tid = (uint64_t)(on > 0 ? on : 0),
				.addr = t ? t->pc : kn->pc,
				.probe_id = kn->id,
				.station = kn->station,
				.census = 1,
				.is_active = 1,
			};

			if (t && t->sp) {
				ev.where = (struct ctp_census){
					.sp = t->sp, .fp = t->fp, .pc = t->pc};
				ev.where.stack_lo = t->sp;
				ev.where.stack_hi = kn->stack_hi;
			}
			kn->resumed = true;
			kn->tid = on > 0 ? on : kn->tid;
			s->env.event(s->env.ctx, &ev);
		} else if (s->fate[j] == SCANNER_MOVED) {
			uint64_t hold_at = kn->hold_at;

			scanner_keep(kn, &s->moved[j]);
			kn->hold_at = hold_at; /* the same holder */
			kn->waiting = false;   /* the next pass's lists say */
			scanner_send(s, &s->moved[j], kn->id, kn->station, now,
				     kn->unsure, false, kn->tid);
		} else if (s->fate[j] == SCANNER_PARKED && kn->resumed) {
			/* Back where it was: parked there again. */
			const struct ctxscan_found f = {
				.at = kn->at,
				.sp = kn->sp,
				.fp = kn->fp,
				.pc = kn->pc,
				.stack_lo = kn->stack_lo,
				.stack_hi = kn->stack_hi,
			};

			kn->resumed = false;
			kn->waiting = false;
			scanner_send(s, &f, kn->id, kn->station, now,
				     kn->unsure, false, kn->tid);
		}
		resumed += kn->resumed;
	}
	threadstop_stats(s->ts, &ts);
	s->st.nonblocking = s->env.nonblocking;
	s->st.refreshes++;
	s->st.pause_ns = ts.pause_ns;
	s->st.pause_max_ns = ts.pause_max_ns;
	s->st.stopped = ts.stopped;
	s->st.resumed = resumed;
	s->st.round = (uint32_t)s->nread;
	s->st.torn += s->torn;
	s->st.refused = ts.refused;
	s->st.late = ts.late;
	s->st.threads_listed = (uint32_t)n;
}

void scanner_stats(const struct scanner *s, struct snapshot_scan *out)
{
	*out = s->st;
}
