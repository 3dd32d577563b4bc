/*
 * jmpbuf: where a glibc jmp_buf resumes -- the stack pointer a longjmp to
 * it will run on, which tells the preload whether that longjmp is a switch
 * to another context (QEMU's coroutines, and any runtime that starts a
 * context with makecontext and switches with sigsetjmp/siglongjmp).
 *
 * glibc keeps the saved stack pointer mangled with the thread's pointer
 * guard (PTR_MANGLE).  On x86-64 that is a xor with the guard, kept in the
 * thread control block at %fs:0x30, then a rotation left by 17 bits; this
 * undoes it.  The layout is checked once, at load, on a jmp_buf of our own
 * (jmpbuf_init): when what it decodes is not our own stack pointer (another
 * libc, another layout), jmpbuf_sp says it cannot tell, and the preload
 * leaves longjmp untraced -- and says so, through the count of switches it
 * saw made behind its back (preload.c).  Other machines: not decoded.
 */
#ifndef COROTOP_PRELOAD_JMPBUF_H
#define COROTOP_PRELOAD_JMPBUF_H

#include <stdbool.h>
#include <stdint.h>

/* Checks the layout on a jmp_buf of its own: true when jmpbuf_sp works.
 * Called once, before any other thread runs jmpbuf_sp. */
bool jmpbuf_init(void);

/* The stack pointer a longjmp to env resumes with, into *sp: false when
 * it cannot be told (jmpbuf_init failed, or not on this machine).  env is
 * the program's jmp_buf or sigjmp_buf; only its register area is read. */
bool jmpbuf_sp(const void *env, uint64_t *sp);

#endif
