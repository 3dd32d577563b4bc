/*
 * snapshot: an immutable copy of the model handed to the UI or batch
 * printer.  The harvest thread keeps running while a snapshot is read.
 */
#ifndef COROTOP_SNAPSHOT_H
#define COROTOP_SNAPSHOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "engine/model/lint.h"
#include "corotop/ctp.h"
#include "engine/model/coro.h"

struct snapshot_target {
	pid_t pid; /* 0 in observer mode */
	/* Attach mode: not our child, never signalled nor reaped; its exit
	 * is seen through a pidfd and its status is unknown (0). */
	bool attached;
	bool running;
	bool exited;	 /* waited for; exit_code/term_signal are valid */
	int exit_code;	 /* exit status, or -1 when killed by a signal */
	int term_signal; /* signal that killed it, or 0 */
	/* Attach mode on a process without buffers: its contexts are found
	 * by scanning its memory (engine/scan; struct snapshot_scan). */
	bool scanned;
	/* Core mode (corotop --core): a core file's process, scanned once,
	 * frozen at its dump (also scanned and exited; pid is the core's). */
	bool core;
};

/* What the memory scan saw at its last pass (target.scanned). */
struct snapshot_scan {
	uint64_t passes;
	uint64_t pass_ns;  /* the last pass's length */
	uint64_t first_ns; /* the first pass's */
	uint64_t bytes;	   /* read by the last pass */
	uint32_t found;	   /* contexts listed */
	uint32_t unsure;   /* ... of them not proven live */
	uint32_t threads;  /* threads waiting in the kernel (sp read) */
	uint32_t busy;	   /* threads running (their stacks not split) */
	uint32_t lost;	   /* found past the model's stations: not listed */
	bool no_layout;	   /* no Boost.Context fcsave knows is mapped now */
	/* Boost.Fiber's own lists (engine/scan/fiberwalk.c), when a
	 * libboost_fiber whose layout corotop knows is mapped. */
	bool fiber_layout;
	uint32_t schedulers;	 /* its schedulers found */
	uint32_t fibers;	 /* contexts they list */
	uint32_t waiting;	 /* ... found and proven waiting */
	uint32_t threads_listed; /* threads shown as rows of their own */
	/* The refreshes between passes (a live process's: scanner.c), and
	 * the target's pause in them (threadstop.c). */
	bool nonblocking; /* --nonblocking: no thread ever stopped */
	uint64_t refreshes;
	uint64_t pause_ns; /* the last refresh's (0: none stopped) */
	uint64_t pause_max_ns;
	uint32_t stopped; /* threads the last refresh stopped */
	uint32_t resumed; /* known contexts it saw resumed */
	uint32_t round;	  /* holders it re-read (of found) */
	uint64_t torn;	  /* refreshes a waking thread may have torn */
	uint64_t refused; /* stops refused (a debugger holds a thread) */
	uint64_t late;	  /* threads that did not stop in time */
	/* The idle proofs (engine/scan/scanner_idle.c). */
	uint32_t idle;	 /* rows proven not to have run since a moment */
	uint64_t arms;	 /* times the accessed bits were cleared */
	uint64_t arm_ns; /* the last clearing's length (in its stop) */
	bool idle_off;	 /* clear_refs refused: no proofs */
};

/* Core mode (target.core): what the core file says of the process. */
struct snapshot_core {
	char command[17];    /* its command (pr_fname) */
	char exe[512];	     /* where its code was read from */
	uint32_t threads;    /* threads in the core */
	uint32_t unreadable; /* files it maps that could not be opened */
	uint64_t dumped;     /* bytes of memory the core holds */
	bool truncated;	     /* the core ends before its segments do */
	/* A probe's registry was read (a program that ran with the probe
	 * or the preload): its exact list, not a scan. */
	bool registry;
	uint32_t registry_live;	  /* coroutines it listed */
	uint32_t registry_unread; /* ... whose struct could not be read */
};

/* Replay (corotop --replay): where in the recording this snapshot is. */
struct snapshot_replay {
	bool on;
	bool playing;
	double speed;	 /* trace time per wall time */
	uint64_t t0, t1; /* the recording's first and last moments */
};

/* The engine's names of code addresses (engine/names/namecache.h):
 * text only, thread-safe, never a symbolizer (see snapshot_where). */
struct namecache;
/* The coroutines' names (engine/model/namepool.h): thread-safe, read
 * through snapshot_name. */
struct namepool;

/* A live --record in progress (the recorder's books, as of ts). */
struct snapshot_record {
	bool on;
	const char *path;   /* engine-owned (the configured path) */
	uint64_t bytes;	    /* written to the file so far */
	uint64_t intervals; /* event packets written */
	uint64_t dropped;   /* items the recorder could not keep up with
			       (in the file as "lost" events) */
	bool stopped;	    /* a write failed: recording stopped (warning) */
};

/* A process the traced program runs as (engine_procs.c). */
struct snapshot_proc {
	uint32_t pid;
	uint64_t image;		     /* CLOCK_MONOTONIC ns its probe loaded */
	char name[CTP_STX_NAME_LEN]; /* its command, cleaned */
	bool gone;		     /* ended, or exec'd another image */
	uint64_t contexts_untracked; /* its interposer's table was full */
	uint64_t switches_unseen;    /* made where its interposer was blind */
};

/* Processes a snapshot lists at most (the latest). */
#define SNAPSHOT_PROCS_MAX 64
/* Processes other than the target whose addresses are named by their own
 * symbols; the coroutines of any more stay in hex. */
#define SNAPSHOT_SPACES_MAX 64

struct snapshot {
	uint64_t ts;	  /* CLOCK_MONOTONIC ns, the clock events carry */
	uint64_t wall_ns; /* CLOCK_REALTIME ns at the same moment */
	bool sleeping;	  /* engine asleep on the futex/socket */
	/* The longest wait between two harvest passes so far (ns), a sleep
	 * a write would end aside: a ring laps when it is longer than the
	 * ring holds. */
	uint64_t pass_gap_max_ns;
	bool observer;	   /* read-only observer of someone else's region */
	const char *error; /* engine failure (e.g. region truncated), or NULL */
	/* Something the engine could not do while harvesting goes on (e.g.
	 * the --record file could not be written), or NULL; engine-owned,
	 * valid until the engine is destroyed. */
	const char *warning;
	/* The names of the addresses below (snapshot_where), engine-owned
	 * and valid while the engine is, or NULL: hex.  names_gen as of this
	 * snapshot: it changes whenever names given earlier may have
	 * changed, so that what was derived from settled names (a filter's
	 * matches) can be redone. */
	struct namecache *names;
	uint32_t names_gen;
	/* The records' names (struct model_coro.name), engine-owned and
	 * valid while the engine is, or NULL: none. */
	struct namepool *coro_names;
	struct model_totals t;
	struct snapshot_target target;
	struct snapshot_scan scan; /* target.scanned: its last pass */
	struct snapshot_core core; /* target.core: the core file's */
	/* History of the watched coroutine (engine_watch), oldest first. */
	uint64_t history_id;		  /* 0: none */
	struct model_transition *history; /* MODEL_WATCH_MAX entries */
	size_t nhistory;
	struct model_coro *coro; /* count records, in slot order */
	size_t count;
	size_t cap; /* allocated; also bounds every record's slot */
	/* Which copy of the model the records are (snapcopy.c): the model's
	 * uid (0: none to build on) and its generation when copied; the
	 * model's records ever handed out then (cap is made at least that
	 * by settle, outside the lock); the records the last copy took (all,
	 * or those changed), and the changed ones until they are merged
	 * in. */
	uint64_t copy_of, copy_gen;
	size_t copy_used;
	size_t ncopied;
	struct model_coro *changed;
	size_t nchanged, changed_cap;
	/* Per record (cap of them, or NULL when none waits): for one whose
	 * thread waits in the kernel (in_kernel), 1 + 1 + the syscall
	 * number, or 1 when the call is not known; 0 otherwise.  Read with
	 * snapshot_kernel. */
	int32_t *kernel;
	size_t kernel_cap;
	/* Lints at ts: each record's `warn` mask, and how many records trip
	 * each lint (filled by snapshot_lint, or record by record as
	 * engine_snapshot copies). */
	uint32_t warn_counts[LINT_COUNT];
	/* The processes (launch, attach: the probes' process stations; none
	 * in replay or from writers that publish none). */
	struct snapshot_proc procs[SNAPSHOT_PROCS_MAX];
	/* Processes other than the target whose coroutines were seen, in
	 * the order the engine numbered them for names (snapshot_space). */
	uint32_t spaces[SNAPSHOT_SPACES_MAX];
	uint32_t nspaces;
	size_t nprocs;	    /* listed */
	size_t procs_total; /* seen */
	/* Contexts the interposers could not track, every process's. */
	uint64_t contexts_untracked;
	/* Switches the interposers found made where they could not see them
	 * (a longjmp not decoded, a runtime's own assembly): the table
	 * misses them, every process's. */
	uint64_t switches_unseen;
	/* Stack walks stopped at a frame that is no return address into
	 * the program's code (engine/target/framecheck.c), since start, by
	 * why: not in an executable mapping; in one, after no call. */
	uint64_t frames_not_code, frames_not_after_call;
	/* Parked walks made while watching (engine/stacks/walks.c), since
	 * start, by where they started: the registers Boost.Context's switch
	 * saved (engine/target/fcsave.c); the probe's, no saved ones published
	 * for that park; the probe's, the saved ones refused (a layout not
	 * checked, or a check failed). */
	uint64_t walks_from_saved, walks_from_probe, walks_saved_refused;
	struct snapshot_replay replay; /* on: ts is a moment of a recording */
	struct snapshot_record record; /* on: --record is writing */
};

void snapshot_init(struct snapshot *s);
void snapshot_finish(struct snapshot *s);
/* s given the records `from` holds (a settled snapshot of the same
 * engine's: a reader's previous one), so that the engine's next snapshot
 * into s copies only the records changed since from's
 * (engine/model/snapcopy.c) instead of every one under its lock.  False,
 * s as it was, when from holds no copy to build on or memory ran out. */
bool snapshot_seed(struct snapshot *s, const struct snapshot *from);

/* Derived values, all at the snapshot's ts. */
uint64_t snapshot_age_ns(const struct snapshot *s, const struct model_coro *c);
uint64_t snapshot_in_state_ns(const struct snapshot *s,
			      const struct model_coro *c);
/* Share of the coroutine's observed life spent running, 0..100. */
double snapshot_run_pct(const struct snapshot *s, const struct model_coro *c);
const char *snapshot_state_name(uint8_t state);
/* "coroutine", "dispatcher", "root" (enum model_kind; JSON's "kind"). */
const char *snapshot_kind_name(uint8_t kind);
/* The target for people: "pid 42 running", "pid 42 exited (status 3)",
 * "pid 42 killed by SIGKILL", or "observer".  Returns buf. */
const char *snapshot_target_text(const struct snapshot *s, char *buf, size_t n);
/* Where `addr` -- a coroutine's `where`, a return address -- is, for
 * people: the name of its call site (addr - 1) as the engine resolved it
 * (full: "func+0x19 (file.c:41)", else "func+0x19"), or hex of addr
 * ("0x7f...") while it has none.  (The probe records an exact code address
 * as pc + 1: corotop_coro_suspend_pc.)  Copies text; never runs the
 * symbolizer: in the TUI an address not named yet is handed to the
 * engine's names thread.  Returns buf. */
const char *snapshot_where(const struct snapshot *s, uint64_t addr, bool full,
			   char *buf, size_t n);
/* The same for an address of coroutine c's process (its space). */
const char *snapshot_where_of(const struct snapshot *s,
			      const struct model_coro *c, uint64_t addr,
			      bool full, char *buf, size_t n);
/* The name cache's key for a `where` (a return address, named at its call
 * site: SNAPSHOT_WHERE_KEY(addr)), apart from the key of an exact code
 * address (a coroutine's entry, named at itself: the address).  A process
 * other than the target's (snapshot_space) is in bits 48-62: an address
 * of user space fits below them (x86-64 and AArch64 give programs 47 or 48
 * bits); one that does not is never named (SNAPSHOT_ADDR_NAMEABLE). */
#define SNAPSHOT_WHERE_TAG (1ull << 63)
#define SNAPSHOT_WHERE_KEY(addr) ((addr) | SNAPSHOT_WHERE_TAG)
#define SNAPSHOT_SPACE_SHIFT 48
#define SNAPSHOT_SPACE_MAX 0x7fffu
#define SNAPSHOT_SPACE_NONE SNAPSHOT_SPACE_MAX /* a process not named */
#define SNAPSHOT_ADDR_NAMEABLE(addr) ((addr) < (1ull << SNAPSHOT_SPACE_SHIFT))
#define SNAPSHOT_KEY_IN(key, space)                                            \
	((key) | ((uint64_t)(space) << SNAPSHOT_SPACE_SHIFT))
#define SNAPSHOT_KEY_SPACE(key)                                                \
	((uint16_t)(((key) >> SNAPSHOT_SPACE_SHIFT) & SNAPSHOT_SPACE_MAX))
#define SNAPSHOT_KEY_ADDR(key) ((key) & ((1ull << SNAPSHOT_SPACE_SHIFT) - 1))
/* The same, and whether the text is settled: true when it stands while
 * names_gen does (a name, or an address that has none), false while a
 * name may still come (hex for now: do not keep what was derived). */
const char *snapshot_where_settled(const struct snapshot *s, uint64_t addr,
				   bool full, char *buf, size_t n,
				   bool *settled);
/* Whose symbols name c's addresses, in its name cache keys: 0 the
 * target's, k the k-th of s->spaces, SNAPSHOT_SPACE_NONE none. */
uint16_t snapshot_space(const struct snapshot *s, const struct model_coro *c);
const char *snapshot_where_of_settled(const struct snapshot *s,
				      const struct model_coro *c, uint64_t addr,
				      bool full, char *buf, size_t n,
				      bool *settled);

/* The coroutine's name, for people: the name its probe gave, else the
 * function of its name_pc (model_name_pc) by the name cache, as
 * snapshot_where finds it (hex while it has none) -- for a runtime's entry
 * template the program's function it was made for (symname_entry), and
 * nothing for another runtime's function -- else "".  Printable
 * ASCII, at most NAMEPOOL_TEXT_MAX - 1 bytes for a probe's name.  Copies
 * text, never runs the symbolizer.  Returns buf. */
const char *snapshot_name(const struct snapshot *s, const struct model_coro *c,
			  char *buf, size_t n);
/* The same, and whether the text is settled (snapshot_where_settled): a
 * probe's name always is; one from name_pc is not while its symbol may
 * still come. */
const char *snapshot_name_settled(const struct snapshot *s,
				  const struct model_coro *c, char *buf,
				  size_t n, bool *settled);

/* (Re)compute every record's `warn` mask and warn_counts at the snapshot's
 * ts, e.g. after a threshold changed while the display is paused. */
void snapshot_lint(struct snapshot *s, const struct lint_config *c);
/* Lint record r of s again (its in_kernel bit changed): its old share of
 * warn_counts taken back, the new one added. */
void snapshot_relint_record(struct snapshot *s, const struct lint_config *c,
			    struct model_coro *r);
/* Whether c (one of s's records) runs on a thread that waits in the
 * kernel, and in which syscall (*nr; -1: not known). */
bool snapshot_kernel(const struct snapshot *s, const struct model_coro *c,
		     long *nr);
/* The same in words: the syscall's name, "syscall N" (in b), "" when the
 * call is not known; NULL when c's thread does not wait in the kernel. */
const char *snapshot_kernel_text(const struct snapshot *s,
				 const struct model_coro *c, char *b, size_t n);
/* One record of s (warn, and its share of warn_counts, which the caller
 * zeroed): engine_snapshot lints each record as it copies it. */
void snapshot_lint_record(struct snapshot *s, const struct lint_config *c,
			  struct model_coro *r);

#endif
