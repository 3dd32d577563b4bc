/*
 * jmpbuf: where a glibc jmp_buf resumes (see jmpbuf.h).
 *
 * x86-64 glibc (sysdeps/x86_64/setjmp.S) stores rbx, rbp, r12-r15, rsp and
 * the return address in __jmpbuf[0..7]; rbp, rsp and the address are
 * mangled: x ^ guard, rotated left 17.  The guard is tcbhead_t's
 * pointer_guard, at %fs:0x30 in every thread (each thread's control block
 * has the process's guard copied in).  Nothing here trusts the layout
 * before jmpbuf_init has seen it give back our own stack pointer.
 */
#include "preload/jmpbuf.h"

#include <setjmp.h>

/* Written once by jmpbuf_init, before other threads exist (the preload's
 * constructor runs before main). */
static bool jmpbuf_ok;

#if defined(__x86_64__) && defined(__GLIBC__)
#define JMPBUF_RSP 6 /* JB_RSP */

static uint64_t jmpbuf_decode(const void *env)
{
	const long *regs = (const long *)env;
	uint64_t v = (uint64_t)regs[JMPBUF_RSP], guard;

	__asm__("movq %%fs:0x30, %0" : "=r"(guard));
	v = (v >> 17) | (v << 47); /* undo the rotation left by 17 */
	return v ^ guard;
}

/* Our own jmp_buf, made here: the stack pointer it saved is this frame's
 * (just below its locals), if the layout is the one we decode. */
static __attribute__((noinline, noipa)) bool jmpbuf_check(void)
{
	jmp_buf b;
	uint64_t sp, at = (uint64_t)(uintptr_t)&b;

	if (_setjmp(b))
		return false; /* never jumped to */
	sp = jmpbuf_decode(b);
	return sp <= at && at - sp < 4096 && !(sp & 7);
}
#else
static uint64_t jmpbuf_decode(const void *env)
{
	(void)env;
	return 0;
}

static bool jmpbuf_check(void)
{
	return false;
}
#endif

bool jmpbuf_init(void)
{
	jmpbuf_ok = jmpbuf_check();
	return jmpbuf_ok;
}

bool jmpbuf_sp(const void *env, uint64_t *sp)
{
	if (!jmpbuf_ok || !env)
		return false;
	*sp = jmpbuf_decode(env);
	return true;
}
