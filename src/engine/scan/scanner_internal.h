/*
 * scanner_internal: the scanner's state, shared by its pass
 * (scanner.c) and its refreshes (scanner_refresh.c).  Not for other
 * modules: scanner.h is the interface.
 */
#ifndef COROTOP_ENGINE_SCAN_SCANNER_INTERNAL_H
#define COROTOP_ENGINE_SCAN_SCANNER_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "engine/model/snapshot.h"
#include "engine/scan/ctxscan.h"
#include "engine/scan/fiberwalk.h"
#include "engine/scan/scanner.h"
#include "engine/target/fcsave.h"
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
	/* The proof that it did not run (scanner_idle.c): watched since
	 * the arm at idle_from (CLOCK_MONOTONIC; 0: not watched), its stack
	 * touched since (touched), or proven untouched by the last check
	 * (idle), and what the model was last told (idle_sent; touch_sent:
	 * that it may have run, its IN-STATE counted from then). */
	uint64_t idle_from;
	bool touched, idle, idle_sent, touch_sent;
	bool listed; /* a Boost.Fiber its scheduler's lists hold */
	bool judged; /* the model's kind says the lint judges it */
};

/* What a refresh saw of a known context. */
enum scanner_fate {
	SCANNER_UNKNOWN, /* not read this refresh, or not readable */
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
	uint32_t *free;	  /* stations not in use, a stack */
	bool *alone;	  /* per found: alone in a stack of its own */
	uint64_t heap_lo; /* [heap]'s start in the last maps (0: none) */
	uint32_t nfree;
	/* Refreshes (live only): the stop, the words re-read (two per known
	 * context: its holder, its saved pc), which contexts resumed and on
	 * which thread, the threads seen, and their rows. */
	struct threadstop *ts;
	struct scanner_word {
		uint64_t addr;
		uint32_t k; /* the known context whose holder it is */
	} * plan;	    /* sorted by address, made after each apply */
	size_t nplan;	    /* ... its words (not those in frozen stacks) */
	uint64_t *addrs, *got, *words; /* words[k]: known k's holder */
	uint8_t *got_ok, *cand_ok;     /* ... read (procmem_read_words) */
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
	bool torn;
	bool planned; /* plan is the known list's (a pass unsets it) */
	/* The holders the last refresh read: plan[from] on, nread of them
	 * (wrapping); the next starts at cursor. */
	size_t from, nread, cursor;
	uint64_t sps[SCANNER_THREADS_MAX];
	struct ctxscan_range dead[SCANNER_THREADS_MAX];
	struct ctxscan_range running[SCANNER_THREADS_MAX];
	/* The idle proofs (scanner_idle.c): the last arm (CLOCK_MONOTONIC;
	 * 0: none yet), how long the last read of smaps took, whether this
	 * refresh arms in its stop, whether clear_refs refused (no proofs
	 * then); the stacks being checked (lo sorted, their contexts) and
	 * those not to read (frozen: untouched since the arm, sorted). */
	uint64_t armed_ns, check_ns, checked_ns;
	uint64_t rearm_ns;	 /* the wait before the next arm (backs off) */
	bool arm_due, arm_after; /* this refresh arms: in its stop, after */
	bool idle_off, proved;	 /* proved: since the last arm */
	uint64_t *watch_lo, *watch_hi, *watch_kb;
	uint32_t *watch_k;
	size_t nwatch;
	struct ctxscan_region *frozen; /* flags 0 */
	size_t nfrozen;
	uint64_t arms, arm_ns; /* so far; the last one's length */
	/* The pass's numbers (the pass's thread), and those of the last
	 * pass applied (under the caller's lock: snapshots read them). */
	struct snapshot_scan pass, st;
	struct ctxscan_stats scan;
};

/* Shared by the pass and the refreshes (scanner.c). */
bool scanner_shared(const struct scanner *s, uint64_t lo);
bool scanner_after_call(void *ctx, uint64_t pc);
void scanner_send(struct scanner *s, const struct ctxscan_found *f, uint64_t id,
		  uint32_t station, uint64_t now, bool unsure, bool waiting,
		  pid_t tid);
void scanner_keep(struct scanner_known *kn, const struct ctxscan_found *f);
bool scanner_region_of(const struct scanner *s, uint64_t addr, uint64_t *lo,
		       uint64_t *hi);
/* In r[0..n) (sorted by address, disjoint): the first that ends after
 * addr (n: none). */
size_t scanner_ends_after(const struct ctxscan_region *r, size_t n,
			  uint64_t addr);

/* The idle proofs (scanner_idle.c).  frozen: whether [addr, addr + n)
 * meets a stack not to read.  check: before a refresh's stop, what the
 * kernel says was touched since the arm, and whether this refresh arms.
 * stop: in the stop, after the reads, an arm that carries proofs across;
 * after: once the stop is over, any other arm (no stop needed).  apply: into
 * the model, under the caller's lock.  carry: after a pass's nfound in found
 * (room: max in all), the contexts of the stacks it did not read (not found
 * already); how many. */
bool scanner_frozen(const struct scanner *s, uint64_t addr, uint64_t n);
void scanner_idle_check(struct scanner *s);
void scanner_idle_stop(struct scanner *s);
void scanner_idle_after(struct scanner *s);
void scanner_idle_apply(struct scanner *s, uint64_t now);
size_t scanner_idle_carry(struct scanner *s, struct ctxscan_found *found,
			  size_t nfound, size_t max);

#endif
