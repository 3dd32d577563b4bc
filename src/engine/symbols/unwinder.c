/*
 * unwinder: a stack of the target walked with its call frame information,
 * by libdwfl, from registers and memory the caller supplies -- never from a
 * live thread (no ptrace).
 *
 * Why.  A frame-pointer walk stops at the first frame built without frame
 * pointers, and Debian builds its libraries that way: Boost.Context,
 * Boost.Fiber and libstdc++ hide every caller above them.  Their .eh_frame
 * describes every frame, so a parked coroutine's stack (frozen while it
 * stays parked) can be walked from the registers its probe saved at the
 * suspend: pc (the return address into the suspending code), sp (the stack
 * pointer after that return) and the frame pointer register.  The other
 * callee-saved registers are unknown; a frame whose CFA depends on one (a
 * realigned stack) ends the walk.
 *
 * How.  The symbolizer's libdwfl session already has the target's modules
 * (reported from /proc/PID/maps, opened safely); this attaches a thread
 * state to it whose only thread is the one being walked: get_thread answers
 * for any tid, set_initial_registers installs the request's registers, and
 * memory_read calls the request's reader (the engine's, over
 * process_vm_readv, bounded to the coroutine's stack).  A session is
 * attached once (dwfl_attach_state), then walked any number of times.
 *
 * Bounds.  At most `max` frames; a walk ends at the first frame whose pc
 * libdwfl cannot find, whose memory the reader refuses, or whose stack
 * pointer is not above the one before (a lying stack cannot loop).  The reader
 * is the only way into the target: a lying stack ends a walk, it cannot
 * redirect a read outside what the reader allows.
 */
#define _GNU_SOURCE
#include "engine/symbols/unwinder.h"

#include <elfutils/libdwfl.h>
#include <stdlib.h>

/* DWARF register numbers of the stack and frame pointers. */
#if defined(__x86_64__)
#define UNWINDER_REG_FP 6
#define UNWINDER_REG_SP 7
#elif defined(__aarch64__)
#define UNWINDER_REG_FP 29
#define UNWINDER_REG_SP 31
#endif

struct unwinder {
	Dwfl *dwfl;
	pid_t pid;
	/* The walk in progress (unwinder_run). */
	const struct unwinder_regs *regs;
	unwinder_read_fn read;
	void *ctx;
	uint64_t *frames;
	size_t max, n;
	uint64_t last_sp; /* the last frame's stack pointer */
};

static pid_t unwinder_next_thread(Dwfl *dwfl, void *arg, void **thread_argp)
{
	struct unwinder *u = arg;

	(void)dwfl;
	if (*thread_argp)
		return 0;
	*thread_argp = u;
	return u->pid;
}

static bool unwinder_get_thread(Dwfl *dwfl, pid_t tid, void *arg,
				void **thread_argp)
{
	(void)dwfl;
	(void)tid;
	*thread_argp = arg;
	return true;
}

static bool unwinder_memory_read(Dwfl *dwfl, Dwarf_Addr addr,
				 Dwarf_Word *result, void *arg)
{
	struct unwinder *u = arg;
	uint64_t w;

	(void)dwfl;
	if (!u->read || !u->read(u->ctx, addr, &w))
		return false;
	*result = w;
	return true;
}

static bool unwinder_initial(Dwfl_Thread *thread, void *arg)
{
	struct unwinder *u = arg;
#if defined(UNWINDER_REG_SP)
	Dwarf_Word fp = u->regs->fp, sp = u->regs->sp;

	if (!dwfl_thread_state_registers(thread, UNWINDER_REG_FP, 1, &fp) ||
	    !dwfl_thread_state_registers(thread, UNWINDER_REG_SP, 1, &sp))
		return false;
	dwfl_thread_state_register_pc(thread, u->regs->pc);
	return true;
#else
	(void)thread;
	(void)u;
	return false;
#endif
}

static const Dwfl_Thread_Callbacks unwinder_callbacks = {
	.next_thread = unwinder_next_thread,
	.get_thread = unwinder_get_thread,
	.memory_read = unwinder_memory_read,
	.set_initial_registers = unwinder_initial,
};

struct unwinder *unwinder_create(struct Dwfl *dwfl, pid_t pid)
{
	struct unwinder *u;

#if !defined(UNWINDER_REG_SP)
	(void)dwfl;
	(void)pid;
	return NULL;
#endif
	if (!dwfl || pid <= 0)
		return NULL;
	u = calloc(1, sizeof(*u));
	if (!u)
		return NULL;
	u->dwfl = dwfl;
	u->pid = pid;
	if (!dwfl_attach_state(dwfl, NULL, pid, &unwinder_callbacks, u)) {
		free(u);
		return NULL;
	}
	return u;
}

void unwinder_destroy(struct unwinder *u)
{
	/* The session keeps the callbacks' argument until dwfl_end, which
	 * the symbolizer calls before this. */
	free(u);
}

static int unwinder_frame(Dwfl_Frame *state, void *arg)
{
	struct unwinder *u = arg;
	Dwarf_Addr pc;

	Dwarf_Word sp = 0;

	if (u->n >= u->max || !dwfl_frame_pc(state, &pc, NULL))
		return DWARF_CB_ABORT;
	/* A zero return address ends a walk (an entry's sentinel); so does
	 * a frame whose stack pointer did not move up (a lying stack would
	 * loop).  A recursion repeats return addresses, not stack
	 * pointers. */
	if (!pc)
		return DWARF_CB_ABORT;
#if defined(UNWINDER_REG_SP)
	if (dwfl_frame_reg(state, UNWINDER_REG_SP, &sp) == 0) {
		if (u->n && sp <= u->last_sp)
			return DWARF_CB_ABORT;
		u->last_sp = sp;
	}
#endif
	u->frames[u->n++] = pc;
	return DWARF_CB_OK;
}

size_t unwinder_run(struct unwinder *u, const struct unwinder_regs *r,
		    unwinder_read_fn read, void *ctx, uint64_t *frames,
		    size_t max)
{
	if (!u || !max || !r->pc)
		return 0;
	u->regs = r;
	u->read = read;
	u->ctx = ctx;
	u->frames = frames;
	u->max = max;
	u->n = 0;
	u->last_sp = 0;
	/* The return value is ignored: libdwfl reports the end of a stack
	 * as an error on some targets; what was walked is the answer. */
	(void)dwfl_getthread_frames(u->dwfl, u->pid, unwinder_frame, u);
	u->regs = NULL;
	u->read = NULL;
	u->ctx = NULL;
	u->frames = NULL;
	return u->n;
}
