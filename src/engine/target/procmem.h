/*
 * procmem: another process's memory, read and written only at addresses the
 * caller has validated (the ppt agent's symbol addresses).  See procmem.c.
 *
 * A core file's memory reads the same (procmem_open_core, corefile.c).
 *
 * Reads and writes go through process_vm_readv/process_vm_writev; a write
 * that the kernel refuses there because the page is not writable from
 * outside (EFAULT on a mapping without write permission, as .rodata or a
 * RELRO page) falls back to PTRACE_POKEDATA word by word, under a short
 * PTRACE_SEIZE + PTRACE_INTERRUPT stop of the target's main thread.
 *
 * Permission.  procmem_open refuses a process whose real, effective or
 * saved uid differs from ours, even when we are root (corotop never attaches
 * to another user's process), before anything is read or written.  When the
 * kernel still refuses (EPERM: Yama ptrace_scope, a non-dumpable target, a
 * missing CAP_SYS_PTRACE) the message says why and what to do: PR_SET_PTRACER
 * in the target, running as root, or the sysctl.
 */
#ifndef COROTOP_PROCMEM_H
#define COROTOP_PROCMEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct corefile;

struct procmem {
	pid_t pid;
	bool seized; /* between procmem_seize and procmem_release */
	/* A core file's memory instead of a process's (procmem_open_core):
	 * reads come from it, writes and seizes are refused. */
	const struct corefile *core;
};

/* Check that pid exists and belongs to us; nothing is read or written.
 * False with a message (no such process / another user's process). */
bool procmem_open(struct procmem *pm, pid_t pid, char *err, size_t errlen);
void procmem_finish(struct procmem *pm);
/* The memory of the process a core file holds (corotop --core): read
 * only, the caller's core outliving pm.  Nothing is ever written. */
void procmem_open_core(struct procmem *pm, const struct corefile *core);

/* Exactly len bytes at addr, or false with a message naming the address. */
bool procmem_read(struct procmem *pm, uint64_t addr, void *buf, size_t len,
		  char *err, size_t errlen);
/* n words (8 bytes each) at addrs[i] into out[i], in batches of
 * process_vm_readv's iovecs, consecutive addresses in one (sorted addrs
 * read fastest): a word that cannot be read is 0 in out, ok[i] 0 (ok may
 * be NULL), and does not stop the others.  The count of words read. */
size_t procmem_read_words(struct procmem *pm, const uint64_t *addrs,
			  uint64_t *out, uint8_t *ok, size_t n);
/* Exactly len bytes to addr (process_vm_writev, else ptrace), or false. */
bool procmem_write(struct procmem *pm, uint64_t addr, const void *buf,
		   size_t len, char *err, size_t errlen);
/* A NUL-terminated string of at most max - 1 bytes at addr, read in
 * page-bounded chunks (a string at the end of a mapping is fine).  False
 * when unreadable or not terminated within max - 1 bytes. */
bool procmem_read_string(struct procmem *pm, uint64_t addr, char *buf,
			 size_t max, char *err, size_t errlen);

/* Stop the target's main thread briefly (PTRACE_SEIZE, PTRACE_INTERRUPT),
 * so that a check-and-set of its memory is not raced by another ptrace-based
 * agent.  Returns 0, or a negative errno: -EPERM (not allowed, or another
 * tracer such as gdb holds it), -ESRCH (gone). */
int procmem_seize(struct procmem *pm);
/* PTRACE_DETACH; the thread runs on.  A no-op when not seized. */
void procmem_release(struct procmem *pm);

/* [addr, addr + len) lies in one mapping that the process can read and
 * write (rw in /proc/PID/maps): what a symbol corotop writes must be. */
bool procmem_writable(struct procmem *pm, uint64_t addr, size_t len);
/* Is the process still there (and not a zombie)? */
bool procmem_alive(pid_t pid);
/* Yama's kernel.yama.ptrace_scope, or -1 when Yama is absent. */
int procmem_yama_scope(void);
/* Why access to pid's memory failed with errnum, for people, with the fix
 * (Yama, dumpable, capabilities) when errnum is EPERM or EACCES. */
void procmem_explain(int errnum, pid_t pid, char *err, size_t errlen);

#endif
