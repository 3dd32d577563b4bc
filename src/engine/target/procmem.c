/*
 * procmem: reading and writing a few known addresses in another process.
 *
 * The agent's accesses are tiny (a pid, a shm id, a JSON string) and go to
 * addresses pptfind took from the target's symbol tables, so this is not a
 * debugger: no breakpoints, no registers, no threads.  Transfers go through
 * process_vm_readv/process_vm_writev, which need no stop of the target and
 * are checked by the kernel like ptrace (PTRACE_MODE_ATTACH_REALCREDS).
 *
 * One write needs more: process_vm_writev does not force its way into a
 * page the target itself may not write (EFAULT), while a ppt symbol may sit
 * in one (a const or RELRO object).  Then the target's main thread is
 * stopped for the duration (PTRACE_SEIZE, PTRACE_INTERRUPT, waitpid) and
 * the range is written word by word with PTRACE_POKEDATA, which does force
 * (it copies the page on write, as a debugger setting a breakpoint does).
 * A partial first or last word is read first and only the range's bytes
 * change.  Other threads keep running: a write racing one of them on the
 * bytes of the same word outside the range can lose that thread's store;
 * ppt symbols are written by the agent only.
 *
 * Stops never outlive the call that made them (or procmem_release): a
 * signal that arrives instead of our interrupt is delivered and the wait
 * goes on; detaching clears the interrupt the kernel still holds.
 *
 * Permission is ours to check first (procmem_open): the target's real,
 * effective and saved uid must all be ours, even when we are root.  What
 * the kernel refuses after that is explained by procmem_explain.
 */
#define _GNU_SOURCE
#include "engine/target/procmem.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "engine/target/corefile.h"
#include "engine/target/procfs.h"

#define PM_STATUS_MAX (64u * 1024u) /* /proc/PID/status is ~1.5 KiB */
#define PM_STOP_SIGNALS 64 /* signals delivered while waiting for a stop */
#define PM_CAP_SYS_PTRACE 19

/* The text after "key:" on its line of a status text, or NULL. */
static const char *status_field(const char *status, const char *key)
{
	size_t klen = strlen(key);

	for (const char *line = status; line && *line;) {
		if (!strncmp(line, key, klen) && line[klen] == ':')
			return line + klen + 1;
		line = strchr(line, '\n');
		if (line)
			line++;
	}
	return NULL;
}

/* The status text of pid ("self" for pid 0), or NULL with errno set. */
static char *status_read(pid_t pid)
{
	char path[48];
	size_t len;

	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	else
		snprintf(path, sizeof(path), "/proc/self/status");
	return procfs_slurp(AT_FDCWD, path, PM_STATUS_MAX, &len);
}

/* The real, effective and saved uid of a status text. */
static bool status_uids(const char *status, unsigned long uid[3])
{
	const char *p = status_field(status, "Uid");

	if (!p)
		return false;
	for (int i = 0; i < 3; i++) {
		char *end;

		while (*p == ' ' || *p == '\t')
			p++;
		if (*p < '0' || *p > '9')
			return false;
		errno = 0;
		uid[i] = strtoul(p, &end, 10);
		if (errno || end == p)
			return false;
		p = end;
	}
	return true;
}

/* The state letter of a status text ('R', 'S', 'Z' ...), or 0. */
static char status_state(const char *status)
{
	const char *p = status_field(status, "State");

	if (!p)
		return 0;
	while (*p == ' ' || *p == '\t')
		p++;
	return *p;
}

static bool have_cap_sys_ptrace(void)
{
	char *st = status_read(0);
	const char *p = st ? status_field(st, "CapEff") : NULL;
	unsigned long long caps = p ? strtoull(p, NULL, 16) : 0;

	free(st);
	return caps & (1ull << PM_CAP_SYS_PTRACE);
}

bool procmem_open(struct procmem *pm, pid_t pid, char *err, size_t errlen)
{
	unsigned long uid[3];
	char *st;
	uid_t me = getuid();

	memset(pm, 0, sizeof(*pm));
	if (pid <= 0) {
		snprintf(err, errlen, "invalid process id %d", (int)pid);
		return false;
	}
	st = status_read(pid);
	if (!st) {
		snprintf(err, errlen, "no such process %d (%s); is it running?",
			 (int)pid, strerror(errno));
		return false;
	}
	if (!status_uids(st, uid)) {
		snprintf(err, errlen,
			 "cannot tell who owns process %d: no Uid line in "
			 "/proc/%d/status",
			 (int)pid, (int)pid);
		goto err_free;
	}
	for (int i = 0; i < 3; i++) {
		if (uid[i] == me && uid[i] == geteuid())
			continue;
		snprintf(err, errlen,
			 "process %d belongs to another user (uid %lu, "
			 "effective %lu, saved %lu; you are uid %u): corotop "
			 "attaches only to your own processes, even as root; "
			 "run it as that user",
			 (int)pid, uid[0], uid[1], uid[2], (unsigned)me);
		goto err_free;
	}
	if (status_state(st) == 'Z' || status_state(st) == 'X') {
		snprintf(err, errlen,
			 "process %d has exited (a zombie, waiting for its "
			 "parent to reap it)",
			 (int)pid);
		goto err_free;
	}
	free(st);
	pm->pid = pid;
	return true;
err_free:
	free(st);
	return false;
}

void procmem_finish(struct procmem *pm)
{
	procmem_release(pm);
	pm->pid = 0;
	pm->core = NULL;
}

void procmem_open_core(struct procmem *pm, const struct corefile *core)
{
	struct corefile_info info;

	corefile_info(core, &info);
	*pm = (struct procmem){.pid = info.pid, .core = core};
}

/* The message for a transfer that failed with errnum at addr. */
static void transfer_error(const struct procmem *pm, const char *verb,
			   uint64_t addr, size_t len, int errnum, char *err,
			   size_t errlen)
{
	char why[384];

	if (errnum == EPERM || errnum == EACCES)
		procmem_explain(errnum, pm->pid, why, sizeof(why));
	else if (errnum == ESRCH)
		snprintf(why, sizeof(why), "process %d has exited",
			 (int)pm->pid);
	else if (errnum == EFAULT || errnum == EIO)
		snprintf(why, sizeof(why),
			 "%s (the range is not mapped%s in process %d)",
			 strerror(errnum),
			 verb[0] == 'w' ? " writable" : " readable",
			 (int)pm->pid);
	else
		snprintf(why, sizeof(why), "%s", strerror(errnum));
	snprintf(err, errlen, "cannot %s %zu bytes at 0x%" PRIx64 ": %s", verb,
		 len, addr, why);
}

/* The range [addr, addr + len) is an address range of ours too. */
static bool range_ok(const struct procmem *pm, const char *verb, uint64_t addr,
		     size_t len, char *err, size_t errlen)
{
	if (pm->pid <= 0 && !pm->core) {
		snprintf(err, errlen,
			 "cannot %s 0x%" PRIx64 ": no process open", verb,
			 addr);
		return false;
	}
	if (pm->core && verb[0] == 'w') {
		snprintf(err, errlen,
			 "cannot write 0x%" PRIx64 ": a core file is read only",
			 addr);
		return false;
	}
	if ((uint64_t)(uintptr_t)addr != addr || len > UINTPTR_MAX - addr ||
	    len > (size_t)SSIZE_MAX) {
		snprintf(err, errlen,
			 "cannot %s %zu bytes at 0x%" PRIx64
			 ": the range wraps the address space",
			 verb, len, addr);
		return false;
	}
	return true;
}

bool procmem_read(struct procmem *pm, uint64_t addr, void *buf, size_t len,
		  char *err, size_t errlen)
{
	struct iovec local = {buf, len};
	struct iovec remote = {(void *)(uintptr_t)addr, len};
	ssize_t got;

	if (!range_ok(pm, "read", addr, len, err, errlen))
		return false;
	if (len == 0)
		return true;
	if (pm->core) {
		if (corefile_read(pm->core, addr, buf, len))
			return true;
		snprintf(err, errlen,
			 "cannot read %zu bytes at 0x%" PRIx64
			 ": the core holds no such memory",
			 len, addr);
		return false;
	}
	got = process_vm_readv(pm->pid, &local, 1, &remote, 1, 0);
	if (got < 0) {
		transfer_error(pm, "read", addr, len, errno, err, errlen);
		return false;
	}
	if ((size_t)got != len) {
		snprintf(err, errlen,
			 "cannot read %zu bytes at 0x%" PRIx64
			 ": only the first %zd are mapped readable in "
			 "process %d",
			 len, addr, got, (int)pm->pid);
		return false;
	}
	return true;
}

/* The iovecs of one process_vm_readv (IOV_MAX on Linux). */
#define PM_WORDS_BATCH 1024u

/* One word at addr into *out (0 when it cannot be read). */
static bool pm_word(struct procmem *pm, uint64_t addr, uint64_t *out)
{
	struct iovec local = {out, 8};
	struct iovec remote = {(void *)(uintptr_t)addr, 8};

	*out = 0;
	if (pm->core)
		return corefile_read(pm->core, addr, out, 8);
	if (process_vm_readv(pm->pid, &local, 1, &remote, 1, 0) == 8)
		return true;
	*out = 0;
	return false;
}

size_t procmem_read_words(struct procmem *pm, const uint64_t *addrs,
			  uint64_t *out, uint8_t *ok, size_t n)
{
	struct iovec local[PM_WORDS_BATCH], remote[PM_WORDS_BATCH];
	size_t first[PM_WORDS_BATCH + 1];
	size_t done = 0, got_words = 0;

	memset(out, 0, n * sizeof(*out));
	if (ok)
		memset(ok, 0, n);
	if (pm->core) { /* a core's: word by word, from the file */
		for (size_t i = 0; i < n; i++) {
			bool r = pm_word(pm, addrs[i], &out[i]);

			got_words += r;
			if (ok)
				ok[i] = r;
		}
		return got_words;
	}
	while (done < n) {
		size_t k = 0, i = done, runs_read;
		ssize_t got;

		/* Runs of consecutive words (addrs sorted: an array of
		 * holders) are one iovec each: a page is pinned once. */
		while (i < n && k < PM_WORDS_BATCH) {
			size_t j = i + 1;

			while (j < n && addrs[j] == addrs[j - 1] + 8 &&
			       j - i < 512)
				j++;
			first[k] = i;
			local[k] = (struct iovec){&out[i], 8 * (j - i)};
			remote[k] = (struct iovec){(void *)(uintptr_t)addrs[i],
						   8 * (j - i)};
			k++;
			i = j;
		}
		first[k] = i;
		got = process_vm_readv(pm->pid, local, k, remote, k, 0);
		if (got < 0 && errno != EFAULT)
			return got_words; /* gone, or refused: none */
		/* Whole iovecs up to the first that failed; that one's words
		 * one by one (a run may cross into an unmapped page); the
		 * rest of the batch after it. */
		runs_read = 0;
		for (size_t b = got > 0 ? (size_t)got : 0;
		     runs_read < k && b >= local[runs_read].iov_len;
		     runs_read++)
			b -= local[runs_read].iov_len;
		if (ok)
			memset(ok + done, 1, first[runs_read] - done);
		got_words += first[runs_read] - done;
		if (runs_read < k) {
			for (size_t w = first[runs_read];
			     w < first[runs_read + 1]; w++) {
				bool r = pm_word(pm, addrs[w], &out[w]);

				got_words += r;
				if (ok)
					ok[w] = r;
			}
			done = first[runs_read + 1];
		} else {
			done = first[k];
		}
	}
	return got_words;
}

/*
 * Stop pid's main thread in a ptrace-stop (seized, interrupted).  A signal
 * reported first is passed on (PTRACE_CONT with it) and the wait goes on for
 * the interrupt, which the kernel keeps pending meanwhile.  Returns 0 or a
 * negative errno; on failure the thread is not traced any more.
 */
static int stop_main_thread(pid_t pid)
{
	int e, status;

	if (ptrace(PTRACE_SEIZE, pid, NULL, NULL) < 0)
		return -errno;
	if (ptrace(PTRACE_INTERRUPT, pid, NULL, NULL) < 0) {
		e = errno;
		ptrace(PTRACE_DETACH, pid, NULL, NULL);
		return -e;
	}
	for (int signals = 0;;) {
		pid_t w = waitpid(pid, &status, __WALL);

		if (w < 0 && errno == EINTR)
			continue; /* our own signal: wait again */
		if (w < 0) {
			e = errno;
			ptrace(PTRACE_DETACH, pid, NULL, NULL);
			return -e;
		}
		if (!WIFSTOPPED(status))
			return -ESRCH; /* it exited (or was killed) */
		/* PTRACE_EVENT_STOP: our interrupt, or a group-stop the
		 * process was in anyway (detaching leaves it in it). */
		if (status >> 16 == PTRACE_EVENT_STOP)
			return 0;
		/* A signal-delivery-stop: deliver it and wait for ours. */
		if (++signals > PM_STOP_SIGNALS) {
			ptrace(PTRACE_DETACH, pid, NULL,
			       (void *)(uintptr_t)WSTOPSIG(status));
			return -EAGAIN;
		}
		if (ptrace(PTRACE_CONT, pid, NULL,
			   (void *)(uintptr_t)WSTOPSIG(status)) < 0) {
			e = errno;
			ptrace(PTRACE_DETACH, pid, NULL, NULL);
			return -e;
		}
	}
}

int procmem_seize(struct procmem *pm)
{
	char *st;
	char state;
	int r;

	if (pm->seized)
		return 0;
	if (pm->pid <= 0 || pm->core)
		return pm->core ? -EPERM : -ESRCH;
	/* A zombie main thread (it called pthread_exit) never stops. */
	st = status_read(pm->pid);
	state = st ? status_state(st) : 0;
	free(st);
	if (!state || state == 'Z' || state == 'X')
		return -ESRCH;
	/* In uninterruptible sleep (a hung NFS mount, a vfork parent) the
	 * interrupt would not be taken and waitpid would not return: the
	 * seize is best effort, so it is skipped. */
	if (state == 'D')
		return -EAGAIN;
	r = stop_main_thread(pm->pid);
	pm->seized = r == 0;
	return r;
}

void procmem_release(struct procmem *pm)
{
	if (!pm->seized)
		return;
	/* ESRCH: it is gone, or not in a stop any more (killed): nothing is
	 * left to undo, the kernel drops the trace when it exits. */
	ptrace(PTRACE_DETACH, pm->pid, NULL, NULL);
	pm->seized = false;
}

/* Write [addr, addr + len) with PTRACE_POKEDATA, the target stopped. */
static int poke_range(pid_t pid, uint64_t addr, const unsigned char *src,
		      size_t len)
{
	const uint64_t w = sizeof(long);
	uint64_t at = addr & ~(w - 1), end = addr + len;

	for (; at < end; at += w) {
		unsigned char word[sizeof(long)];
		uint64_t from = at < addr ? addr : at;
		uint64_t to = at + w > end ? end : at + w;
		long v;

		if (from != at || to != at + w) { /* keep the other bytes */
			errno = 0;
			v = ptrace(PTRACE_PEEKDATA, pid, (void *)(uintptr_t)at,
				   NULL);
			if (v == -1 && errno)
				return -errno;
			memcpy(word, &v, sizeof(word));
		}
		memcpy(word + (from - at), src + (from - addr), to - from);
		memcpy(&v, word, sizeof(v));
		if (ptrace(PTRACE_POKEDATA, pid, (void *)(uintptr_t)at,
			   (void *)v) < 0)
			return -errno;
	}
	return 0;
}

bool procmem_write(struct procmem *pm, uint64_t addr, const void *buf,
		   size_t len, char *err, size_t errlen)
{
	struct iovec local = {(void *)(uintptr_t)buf, len};
	struct iovec remote = {(void *)(uintptr_t)addr, len};
	ssize_t put;
	size_t done;
	int r;

	if (!range_ok(pm, "write", addr, len, err, errlen))
		return false;
	if (len == 0)
		return true;
	put = process_vm_writev(pm->pid, &local, 1, &remote, 1, 0);
	if (put >= 0 && (size_t)put == len)
		return true;
	if (put < 0 && errno != EFAULT) {
		transfer_error(pm, "write", addr, len, errno, err, errlen);
		return false;
	}
	/* EFAULT, or a short write: the rest is in a page the target can
	 * not write itself.  Force it through ptrace. */
	done = put > 0 ? (size_t)put : 0;
	if (pm->seized) {
		r = poke_range(pm->pid, addr + done,
			       (const unsigned char *)buf + done, len - done);
	} else {
		r = stop_main_thread(pm->pid);
		if (r == 0) {
			r = poke_range(pm->pid, addr + done,
				       (const unsigned char *)buf + done,
				       len - done);
			ptrace(PTRACE_DETACH, pm->pid, NULL, NULL);
		}
	}
	if (r < 0) {
		transfer_error(pm, "write", addr, len, -r, err, errlen);
		return false;
	}
	return true;
}

bool procmem_read_string(struct procmem *pm, uint64_t addr, char *buf,
			 size_t max, char *err, size_t errlen)
{
	long page = sysconf(_SC_PAGESIZE);
	uint64_t pg = page > 0 ? (uint64_t)page : 4096;
	size_t n = 0;

	if (max == 0) {
		snprintf(err, errlen,
			 "cannot read the string at 0x%" PRIx64 ": no room",
			 addr);
		return false;
	}
	while (n < max) { /* max - 1 bytes of text, and its NUL */
		uint64_t at = addr + n;
		size_t chunk = (size_t)(pg - at % pg);
		char *nul;

		if (at < addr) { /* wrapped */
			snprintf(err, errlen,
				 "the string at 0x%" PRIx64
				 " runs past the end of the address space",
				 addr);
			return false;
		}
		if (chunk > max - n)
			chunk = max - n;
		if (!procmem_read(pm, at, buf + n, chunk, err, errlen))
			return false;
		nul = memchr(buf + n, '\0', chunk);
		if (nul)
			return true;
		n += chunk;
	}
	buf[max - 1] = '\0';
	snprintf(err, errlen,
		 "the string at 0x%" PRIx64
		 " is not terminated within %zu bytes",
		 addr, max - 1);
	return false;
}

bool procmem_alive(pid_t pid)
{
	char *st = pid > 0 ? status_read(pid) : NULL;
	char state = st ? status_state(st) : 0;

	free(st);
	return state && state != 'Z' && state != 'X';
}

bool procmem_writable(struct procmem *pm, uint64_t addr, size_t len)
{
	char path[64], *maps, *line, *save = NULL;
	uint64_t end = addr + len;
	size_t size;
	bool ok = false;

	if (end < addr)
		return false;
	if (pm->core)
		return corefile_writable(pm->core, addr, len);
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pm->pid);
	/* 64 MiB: a process with a million mappings still fits. */
	maps = procfs_slurp(AT_FDCWD, path, 64u << 20, &size);
	if (!maps)
		return false;
	for (line = strtok_r(maps, "\n", &save); line && !ok;
	     line = strtok_r(NULL, "\n", &save)) {
		unsigned long long lo, hi;
		char perms[5] = "";

		if (sscanf(line, "%llx-%llx %4s", &lo, &hi, perms) == 3 &&
		    lo <= addr && end <= hi && perms[0] == 'r' &&
		    perms[1] == 'w')
			ok = true;
	}
	free(maps);
	return ok;
}

int procmem_yama_scope(void)
{
	size_t len;
	char *s = procfs_slurp(AT_FDCWD, "/proc/sys/kernel/yama/ptrace_scope",
			       64, &len);
	char *end;
	long v;

	if (!s)
		return -1;
	v = strtol(s, &end, 10);
	if (end == s || v < 0 || v > 1000)
		v = -1;
	free(s);
	return (int)v;
}

/* Non-dumpable processes have their /proc/PID owned by root. */
static bool not_dumpable(pid_t pid, const char *status)
{
	char path[32];
	unsigned long uid[3];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	return status && status_uids(status, uid) && stat(path, &st) == 0 &&
	       st.st_uid != uid[1];
}

void procmem_explain(int errnum, pid_t pid, char *err, size_t errlen)
{
	char *st;
	const char *tracer;
	long tracer_pid;
	int scope;

	if (errnum != EPERM && errnum != EACCES) {
		snprintf(err, errlen,
			 "access to process %d's memory failed: %s", (int)pid,
			 strerror(errnum));
		return;
	}
	st = status_read(pid);
	tracer = st ? status_field(st, "TracerPid") : NULL;
	tracer_pid = tracer ? strtol(tracer, NULL, 10) : 0;
	scope = procmem_yama_scope();
	if (tracer_pid > 0 && tracer_pid != (long)getpid())
		snprintf(err, errlen,
			 "the kernel refused access to process %d's memory: "
			 "process %ld (a debugger?) is tracing it; detach "
			 "that first",
			 (int)pid, tracer_pid);
	else if (scope == 3)
		snprintf(err, errlen,
			 "the kernel refused access to process %d's memory: "
			 "Yama ptrace_scope is 3, no process may be attached "
			 "to until the next reboot",
			 (int)pid);
	else if (scope == 2 && !have_cap_sys_ptrace())
		snprintf(err, errlen,
			 "the kernel refused access to process %d's memory: "
			 "Yama ptrace_scope is 2 (admin only); run corotop as "
			 "root or with CAP_SYS_PTRACE",
			 (int)pid);
	else if (scope == 1 && !have_cap_sys_ptrace())
		snprintf(err, errlen,
			 "the kernel refused access to process %d's memory: "
			 "Yama ptrace_scope is 1 (only descendants); have the "
			 "target call prctl(PR_SET_PTRACER, %d) or "
			 "PR_SET_PTRACER_ANY, run corotop as root, or "
			 "`sysctl kernel.yama.ptrace_scope=0`",
			 (int)pid, (int)getpid());
	else if (not_dumpable(pid, st) && !have_cap_sys_ptrace())
		snprintf(err, errlen,
			 "the kernel refused access to process %d's memory: "
			 "it is not dumpable (PR_SET_DUMPABLE 0, or a setuid "
			 "program); run corotop as root, or have it call "
			 "prctl(PR_SET_DUMPABLE, 1)",
			 (int)pid);
	else
		snprintf(err, errlen,
			 "the kernel refused access to process %d's memory "
			 "(%s): corotop lacks CAP_SYS_PTRACE over it (another "
			 "user namespace, or a security module); run corotop "
			 "with CAP_SYS_PTRACE",
			 (int)pid, strerror(errnum));
	free(st);
}
