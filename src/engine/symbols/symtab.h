/*
 * symtab: the engine's symbols for its target, shared by threads.  See
 * symtab.c.
 */
#ifndef COROTOP_SYMTAB_H
#define COROTOP_SYMTAB_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "engine/symbols/keptmaps.h"
#include "engine/symbols/unwinder.h"

struct symbolizer;
struct framekind;

#define SYMTAB_OTHERS 8

struct symtab {
	pthread_mutex_t lock; /* guards everything below */
	pid_t pid;	      /* 0: no target to symbolize */
	struct symbolizer *sym;
	/* sym was given (symtab_set_symbolizer: a core's): never made,
	 * refreshed nor replaced; every pid's. */
	bool fixed;
	bool failed; /* symbolizer_create refused; retried only with maps
			kept since (failed_seq: the kept copy it had) */
	uint64_t failed_seq;
	uint64_t refreshed_ns; /* CLOCK_MONOTONIC of the last refresh */
	uint32_t calls;	       /* lookups since the clock was last read */
	uint32_t gen;	       /* bumped whenever names may have changed */
	/* Replay: names a recording carries ("func+0xOFF (file:N)"), used
	 * when there is no process to symbolize; immutable once set. */
	const char *(*recorded)(void *ctx, uint64_t addr);
	void *recorded_ctx;
	char error[160]; /* why there are no symbols, for people */
	/* The user's adjustments of which frames are the program's
	 * (framekind.h; NULL: none); the caller's, immutable once set. */
	const struct framekind *kind;
	/* Other processes' symbolizers (a traced program's children that
	 * exec'd another image), the least recently used replaced. */
	struct symtab_other {
		pid_t pid; /* 0: unused */
		struct symbolizer *sym;
		bool failed;
		uint64_t refreshed_ns, used;
	} other[SYMTAB_OTHERS];
	uint64_t uses;
	/* The target's maps, kept from its first events by the harvest
	 * thread, under a lock of their own (keptmaps.c): what the
	 * symbolizer is made from once the target has exited. */
	struct keptmaps kept;
};

void symtab_init(struct symtab *t);
void symtab_finish(struct symtab *t);

/* The process whose addresses to name (0: none).  Symbols load lazily, on
 * the first lookup. */
void symtab_set_pid(struct symtab *t, pid_t pid);
/* The target's symbolizer is sym, made by the caller (a core file's:
 * symbolizer_create_image), owned by t from now on; no pid is read. */
void symtab_set_symbolizer(struct symtab *t, struct symbolizer *sym);
/* The target's data object `name` (symbolizer_find_object); false when
 * it has none, or no symbols. */
bool symtab_find_object(struct symtab *t, const char *name, uint64_t *addr);

/*
 * Make the symbolizer now, or refresh it when it is a second old, unless
 * another thread holds it (never waits).  For a target whose stacks are
 * named late: the modules the process had when it was last primed are
 * the ones its stacks are named from after it exited.  False when
 * another thread held it (nothing done).
 */
bool symtab_prime(struct symtab *t);

/*
 * Keep the target's maps now (keptmaps.c: one read of /proc/PID/maps, no
 * ELF work) unless a copy is younger than SYMTAB_KEEP_NS at `now`
 * (CLOCK_MONOTONIC).  For the engine's threads that see the target first
 * (the probe's connection, its first events): never waits for the
 * symbolizer's lock, nor for another thread keeping.  True when a copy is
 * kept.
 */
#define SYMTAB_KEEP_NS 100000000ull
bool symtab_keep_maps(struct symtab *t, pid_t pid, uint64_t now);
/* pid was just launched (keptmaps_expect): its /proc opened now, and
 * `file` its probe's copy of its maps, for when /proc has none. */
bool symtab_expect(struct symtab *t, pid_t pid, const char *file);
void symtab_kept_stats(struct symtab *t, struct keptmaps_stats *out);

/*
 * The target has exited: make its symbolizer now, from the kept maps if
 * need be, or bring it up to the kept maps (a library loaded since its
 * last refresh), waiting for the lock -- so that what is named after the
 * exit (a final snapshot) is named from every module it had.
 */
void symtab_settle(struct symtab *t);

/* The user's patterns of which frames are the program's (framekind.h),
 * kept by the caller until symtab_finish; NULL: none.  Set before the
 * first walk. */
void symtab_set_framekind(struct symtab *t, const struct framekind *k);

/*
 * The symbolizer refreshed when it is a second old (symtab_prime), unless
 * another thread holds it (never waits), but never made: for a thread
 * that asks nothing of it but should see names change (debug info that
 * debuginfod fetched).  True with *gen (symtab_gen) when it got the lock.
 */
bool symtab_poll(struct symtab *t, uint32_t *gen);

/* Name addresses from a recording's table instead of a process. */
void symtab_set_recorded(struct symtab *t,
			 const char *(*fn)(void *ctx, uint64_t addr),
			 void *ctx);
/* `addr` as "func+0x1a (file.c:42)", "lib.so+0x1234" or "0x7f..." (no
 * symbols); thread-safe.  `full` false leaves out " (file:line)".
 * `call_site`: addr is a return address, named at its call (addr - 1) by
 * the symbolizer, as debuggers do; a recording's table already holds the
 * call site's name under addr, and hex is addr itself. */
const char *symtab_where(struct symtab *t, uint64_t addr, bool call_site,
			 bool full, char *buf, size_t n);
/* The same for an address of process `pid` (0 or the target's: as
 * symtab_where; another: by that process's own symbols, loaded on first
 * use; -1: none, hex). */
const char *symtab_where_in(struct symtab *t, pid_t pid, uint64_t addr,
			    bool call_site, bool full, char *buf, size_t n);

/* One lookup's answer, copied out (the symbolizer's strings may go away
 * with it once the lock is released).  Empty strings: unknown. */
struct symtab_sym {
	char function[128];
	char module[64]; /* basename of the ELF file */
	char file[96];	 /* basename of the source file */
	int line;	 /* > 0 when file is set */
	uint64_t offset; /* from the function's start, else the module's */
};

/* Look `addr` up; true when it lies in a file the live target maps (module
 * is then set).  Thread-safe. */
bool symtab_lookup(struct symtab *t, uint64_t addr, struct symtab_sym *out);

/* A stack walked with the target's CFI (symtab_unwind): which of its
 * frames are the program's own code (framekind.h); -1 = none. */
struct symtab_unwound {
	size_t n;  /* frames stored */
	int where; /* the innermost program frame: what led to the switch */
	int entry; /* the outermost: the first program code the entry ran */
	/* No program frame, but a runtime frame runs the program's code
	 * inlined (framekind_inlined): that frame (else -1), and the name of
	 * the code (else ""). */
	int inlined_at;
	char inlined[48];
};
/*
 * Walk a stack of the target from regs (unwinder.h), reading its memory
 * through `read`, and mark its program frames.  Unless `wait`, never
 * waits for the lock: BUSY when another thread holds it (ask again later).
 * NONE when there are no symbols of a live target; DONE with out->n
 * frames otherwise.
 */
enum symtab_unwind_rc {
	SYMTAB_UNWIND_DONE,
	SYMTAB_UNWIND_BUSY,
	SYMTAB_UNWIND_NONE,
};
enum symtab_unwind_rc symtab_unwind(struct symtab *t,
				    const struct unwinder_regs *regs,
				    unwinder_read_fn read, void *ctx,
				    uint64_t *frames, size_t max, bool wait,
				    struct symtab_unwound *out);
/* Which frames of a walk are believed: fn returns how many of frames[0..n)
 * to keep (the walk ends before the first it refuses: framecheck_walk),
 * before any is marked. */
struct symtab_keep {
	size_t (*fn)(void *ctx, const uint64_t *frames, size_t n);
	void *ctx;
};
/* The same for a stack of process `pid` (0 or the target's: as
 * symtab_unwind; another: with that process's own symbols), the frames
 * cut where `keep` says (NULL: all kept). */
enum symtab_unwind_rc symtab_unwind_in(struct symtab *t, pid_t pid,
				       const struct unwinder_regs *regs,
				       unwinder_read_fn read, void *ctx,
				       uint64_t *frames, size_t max, bool wait,
				       const struct symtab_keep *keep,
				       struct symtab_unwound *out);
/* The same walk without marking frames (no symbol lookups): *n frames. */
enum symtab_unwind_rc symtab_unwind_frames(struct symtab *t,
					   const struct unwinder_regs *regs,
					   unwinder_read_fn read, void *ctx,
					   uint64_t *frames, size_t max,
					   bool wait, size_t *n);
/* "0x7f..." (no leading zeros): how an address without a name shows. */
void symtab_hex(uint64_t addr, char *buf, size_t n);

/* Changes when names given earlier may no longer hold (libraries loaded
 * or unloaded), so callers can drop what they derived from them. */
uint32_t symtab_gen(struct symtab *t);

#endif
