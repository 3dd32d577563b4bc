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
 *
 * Between passes, a live process is refreshed (scanner_refresh.c): its
 * running threads stopped briefly, their registers read, the known
 * contexts' holders re-read.
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

#include "engine/scan/scanner_internal.h"

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
	s->alone = calloc(env->stations ? env->stations : 1, sizeof(*s->alone));
	s->addrs = calloc(env->stations ? env->stations : 1, sizeof(*s->addrs));
	s->got = calloc(env->stations ? env->stations : 1, sizeof(*s->got));
	s->got_ok =
		calloc(env->stations ? env->stations : 1, sizeof(*s->got_ok));
	s->cand_ok = calloc(3 * (env->stations ? env->stations : 1),
			    sizeof(*s->cand_ok));
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
	s->watch_lo =
		calloc(env->stations ? env->stations : 1, sizeof(*s->watch_lo));
	s->watch_hi =
		calloc(env->stations ? env->stations : 1, sizeof(*s->watch_hi));
	s->watch_kb =
		calloc(env->stations ? env->stations : 1, sizeof(*s->watch_kb));
	s->watch_k =
		calloc(env->stations ? env->stations : 1, sizeof(*s->watch_k));
	s->frozen =
		calloc(env->stations ? env->stations : 1, sizeof(*s->frozen));
	if (!s->found || !s->fibers || !s->order || !s->known || !s->next ||
	    !s->free || !s->alone || !s->addrs || !s->got || !s->got_ok ||
	    !s->cand_ok || !s->plan || !s->words || !s->cand ||
	    !s->cand_addrs || !s->cand_words || !s->fate || !s->moved ||
	    !s->ran_on || !s->watch_lo || !s->watch_hi || !s->watch_kb ||
	    !s->watch_k || !s->frozen) {
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
	free(s->got_ok);
	free(s->cand_ok);
	free(s->plan);
	free(s->words);
	free(s->cand);
	free(s->cand_addrs);
	free(s->cand_words);
	free(s->fate);
	free(s->moved);
	free(s->ran_on);
	free(s->watch_lo);
	free(s->watch_hi);
	free(s->watch_kb);
	free(s->watch_k);
	free(s->frozen);
	free(s->maps);
	free(s->regions);
	free(s->found);
	free(s->fibers);
	free(s->order);
	free(s->known);
	free(s->next);
	free(s->free);
	free(s->alone);
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
bool scanner_shared(const struct scanner *s, uint64_t lo)
{
	return !(lo & ((64ull << 20) - 1)) || (s->heap_lo && lo == s->heap_lo);
}

/* Where [heap] starts in the maps text (0: none), for scanner_shared. */
static uint64_t scanner_heap_lo(const char *maps, size_t len)
{
	const char *p = maps, *end = maps + len;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
		struct procfs_maps_line m;

		if (procfs_maps_line(p, n, &m) && m.path_len == 6 &&
		    !memcmp(m.path, "[heap]", 6))
			return m.start;
		p += n + 1;
	}
	return 0;
}

static bool scanner_read(void *ctx, uint64_t addr, void *buf, size_t n)
{
	struct scanner *s = ctx;
	char err[128];

	/* Not a stack untouched since the arm: reading it would touch it
	 * (scanner_idle.c); its context is carried over. */
	if (scanner_frozen(s, addr, n))
		return false;
	return procmem_read(s->env.pm, addr, buf, n, err, sizeof(err));
}

bool scanner_after_call(void *ctx, uint64_t pc)
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
 * stays the same wherever the fiber parks); else its stack's range, when
 * it is alone in a mapping of its own (wherever it parks on it); else
 * the saved area's address (a context that parks again at the same
 * depth).  Sorted. */
static void scanner_identify(struct scanner *s)
{
	/* Which contexts are alone in their writable region, when it is not
	 * the heap's: a stack of its own (mmap'd, protected stacks). */
	for (size_t i = 0; i < s->nfound; i++)
		s->order[i] = (struct scanner_order){.id = s->found[i].stack_lo,
						     .i = (uint32_t)i};
	qsort(s->order, s->nfound, sizeof(*s->order), scanner_order_cmp);
	for (size_t i = 0, j; i < s->nfound; i = j) {
		for (j = i + 1;
		     j < s->nfound && s->order[j].id == s->order[i].id; j++)
			s->alone[s->order[j].i] = false;
		s->alone[s->order[i].i] =
			j == i + 1 && !scanner_shared(s, s->order[i].id);
	}
	for (size_t i = 0; i < s->nfound; i++) {
		const struct ctxscan_found *f = &s->found[i];
		const struct fiberwalk_fiber *fb =
			fiberwalk_find(s->fibers, s->nfibers, f->at);

		s->order[i] =
			(struct scanner_order){.id = fb		   ? fb->ctx
						     : s->alone[i] ? f->stack_lo
								   : f->at,
					       .i = (uint32_t)i};
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
	s->heap_lo = scanner_heap_lo(s->maps, (size_t)len);
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
		    !scanner_shared(s, s->dead[nd].lo))
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
		s->nfound += scanner_idle_carry(s, s->found, s->nfound,
						s->env.stations);
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
void scanner_send(struct scanner *s, const struct ctxscan_found *f, uint64_t id,
		  uint32_t station, uint64_t now, bool unsure, bool waiting,
		  pid_t tid)
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
	st->idle = was->idle;
	st->arms = was->arms;
	st->arm_ns = was->arm_ns;
	st->idle_off = was->idle_off;
	if (!st->threads_listed)
		st->threads_listed = was->threads_listed;
}

/* Where context f is now, into its record kn: parked (not resumed). */
void scanner_keep(struct scanner_known *kn, const struct ctxscan_found *f)
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
	kn->listed = fb != NULL; /* its lists prove it: not watched */
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
			    kn.unsure != u || kn.resumed) {
				scanner_send(s, f, id, kn.station, now, u, w,
					     kn.tid);
				kn.touched = true; /* it ran: no proof */
				kn.idle = false;
			} else if (kn.waiting != w)
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

size_t scanner_ends_after(const struct ctxscan_region *r, size_t n,
			  uint64_t addr)
{
	size_t a = 0, b = n;

	while (a < b) {
		size_t m = a + (b - a) / 2;

		if (r[m].hi <= addr)
			a = m + 1;
		else
			b = m;
	}
	return a;
}

/* The writable region [lo, hi) that holds addr, from the last pass's
 * regions; false when none does. */
bool scanner_region_of(const struct scanner *s, uint64_t addr, uint64_t *lo,
		       uint64_t *hi)
{
	/* The regions are in the maps' order: by address, disjoint. */
	size_t a = scanner_ends_after(s->regions, s->nregions, addr);

	if (a == s->nregions || s->regions[a].lo > addr)
		return false;
	*lo = s->regions[a].lo;
	*hi = s->regions[a].hi;
	return true;
}

void scanner_stats(const struct scanner *s, struct snapshot_scan *out)
{
	*out = s->st;
}
