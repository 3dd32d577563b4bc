/*
 * scripted: the deterministic workload behind the UI tests (tests/ui).
 *
 *   scripted STATUS CTL_FIFO INFO_FILE
 *
 * It links the real probe and attaches through the CTP_* environment that
 * corotop gives it.  Everything it does is fixed, so the table corotop shows
 * is the same on every run except for times, rates, pids and tids (which
 * tests/ui/normalize.py masks):
 *
 *   - the main thread opens 12 coroutines with probe ids 0x1001..0x100c, in
 *     that order (so stations 0..11, and corotop ids in the same order),
 *     each with a name (coro_names: NAME);
 *   - thread T1 records its transitions, then thread T2 records its own;
 *     T1 is whichever of the two has the lower tid (run_threads), so the
 *     views that list threads by tid (the thread meters, groups) show T1
 *     first even after the pid counter wrapped.  Both then stay, idle,
 *     every signal blocked, until the program exits: the table's thread
 *     meters show them (T1 with no coroutine running, T2 running 1007);
 *   - no coroutine records more than 8 transitions, the size of a station's
 *     ring, so nothing can be lost however late the engine harvests.
 *
 * Final states (switches, last tid, WHERE = address of the last switch):
 *
 *   id    S  sw  tid  WHERE      id    S  sw  tid  WHERE
 *   1001  S  4   T1   0x4010a0   1007  R  3   T2   0x401600
 *   1002  S  2   T1   0x4bee10   1008  S  2   T2   0x4bee20
 *   1003  S  6   T1   0x41cafe   1009  S  6   T1   0x409090
 *   1004  S  2   T1   0x404040   100a  S  2   T2   0x40a0a0
 *   1005  S  4   T2   0x405050   100b  S  4   T2   0x43cafe
 *   1006  S  8   T2   0x42cafe   100c  S  0   -    (never resumed)
 *
 * 1005 ran on T1 first, then on T2.  A resume is recorded at the entry,
 * 0x401000 + 0x100 * (id - 0x1001), so the running 1007 shows 0x401600.
 * 43 transitions in all.
 *
 * Dead coroutines stay listed for corotop's linger only (config, 3 s by
 * default), so 1004 and 100a are closed on request, when the test looks.
 *
 * Control: CTL_FIFO is a named pipe the test writes lines to:
 *   close    close 1004 and 100a (they become D)
 *   close-exit  close 1004 and 100a, then exit with STATUS at once
 *   hot      store four call stacks through corotop_calltrace_put, made of
 *            addresses inside this file's hot_* functions (so they
 *            symbolize), as the sampler would (corotop/calltrace.h):
 *              hot_leaf_a <- hot_mid <- hot_root, tagged 1001, weight 60
 *              hot_leaf_b <- hot_mid <- hot_root, tagged 1002, weight 30
 *              hot_leaf_b <- hot_root, untagged,              weight 6
 *              hot_leaf_b+1 <- hot_root, untagged,            weight 4
 *            (the last two differ only in the leaf pc: one row of 10 by
 *            function or line, two by address)
 *            (no transition: the engine collects on its own cadence)
 *   noise N  print N numbered lines on stdout and N on stderr, the first
 *            of each coloured with escape sequences, then "partial" with
 *            no newline: the output a server logs, which corotop must
 *            keep out of its table (the output view shows it)
 *   exit     exit with STATUS (so does any other line, EOF or SIGTERM)
 * INFO_FILE is written once the script has run (atomically, by rename):
 *   "pid P\ntid1 A\ntid2 B\nwrapped no\n"; or "error ..." when the probe is
 *   not attached (exit 77).
 * COROTOP_SCRIPTED_WRAP in the environment: the pid counter is moved back
 *   before the second thread starts (/proc/sys/kernel/ns_last_pid, root
 *   only; "error ..." and exit 77 without it), as a wrap on a busy machine
 *   does, so the second thread has the lower tid ("wrapped yes").  The program
 * writes to stdout or stderr only when told to (noise).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "corotop/calltrace.h"
#include "corotop/ctp.h"
#include "corotop/probe.h"

#define NCORO 12

struct step {
	int coro; /* index: probe id 0x1001 + coro */
	int active;
	uint64_t addr;
};

/* Resume at the coroutine's entry, park at a fixed address. */
/* clang-format off */
#define R(c) {c, 1, 0x401000u + 0x100u * (c)}

/* NAME of 1001..100c (1004 and 100a: "closer-1", "closer-2", copied).
 * None holds a text the flows filter or search for (cafe, bee, zz). */
static const char *const coro_names[NCORO] = {
	"acceptor", "reader", "parser",	  NULL,	    "migrant", "ring-full",
	"ticker",   "writer", "parser-2", NULL,	    "poller",  "never-ran",
};
#define S(c, a) {c, 0, a}

static const struct step steps_t1[] = {
	R(0), S(0, 0x401010), R(1), S(1, 0x4bee10), R(2), S(2, 0x402020),
	R(3), S(3, 0x404040), R(4), S(4, 0x405000), R(8), S(8, 0x409010),
	R(0), S(0, 0x4010a0), R(2), S(2, 0x402030), R(8), S(8, 0x409020),
	R(2), S(2, 0x41cafe), R(8), S(8, 0x409090),
};

static const struct step steps_t2[] = {
	R(4), S(4, 0x405050), R(5), S(5, 0x406010), R(6), S(6, 0x407010),
	R(7), S(7, 0x4bee20), R(9), S(9, 0x40a0a0), R(10), S(10, 0x40b010),
	R(5), S(5, 0x406020), R(5), S(5, 0x406030), R(10), S(10, 0x43cafe),
	R(5), S(5, 0x42cafe), R(6),
};
/* clang-format on */

static struct corotop_coro coros[NCORO];

/* Never called: their addresses are the frames of the "hot" stacks.  Each
 * has its own body so the linker cannot fold two into one, and all of it on
 * one line (the macro's use), so that the line an address in it names is
 * the same whatever the build type: -O0 puts +0x1 in the prologue (the
 * line of the function's name), -O2 in the body (the next line). */
static volatile int hot_sink;
#define HOT_FN(name, v)                                                        \
	__attribute__((noinline, used)) static void name(void)                 \
	{                                                                      \
		hot_sink = v;                                                  \
	}
HOT_FN(hot_leaf_a, 0xa)
HOT_FN(hot_leaf_b, 0xb0b)
HOT_FN(hot_mid, 0x3d3d3)
HOT_FN(hot_root, 0x7007007)
/* (The hot flow's goldens name the four lines above, scripted.c:134-137:
 * a line added above them or taken away means rewriting those goldens.) */

/* A frame inside f, as a return address would be. */
#define HOT_FRAME(f) ((uint64_t)(uintptr_t)(f) + 1)

static uint64_t hot_tag(const struct corotop_coro *c)
{
	uint64_t gen = atomic_load_explicit(&c->station->ext.gen,
					    memory_order_relaxed);

	return CT_TAG_CORO | (uint64_t)(uint16_t)gen << 32 | c->index;
}

static void put_hot_stacks(void)
{
	uint64_t a[] = {HOT_FRAME(hot_leaf_a), HOT_FRAME(hot_mid),
			HOT_FRAME(hot_root), hot_tag(&coros[0])};
	uint64_t b[] = {HOT_FRAME(hot_leaf_b), HOT_FRAME(hot_mid),
			HOT_FRAME(hot_root), hot_tag(&coros[1])};
	uint64_t c[] = {HOT_FRAME(hot_leaf_b), HOT_FRAME(hot_root)};
	uint64_t d[] = {HOT_FRAME(hot_leaf_b) + 1, HOT_FRAME(hot_root)};

	corotop_calltrace_put(a, 4, 60);
	corotop_calltrace_put(b, 4, 30);
	corotop_calltrace_put(c, 2, 6);
	corotop_calltrace_put(d, 2, 4);
}
/* Control "deep" (not in the list above, whose lines the hot flow's
 * goldens count): park 1001 again -- a resume and a suspend at 0x4010a0,
 * from the main thread -- at the bottom of 12 calls of deep_frame, so that
 * with --parked-stacks its parked stack has more frames than the detail
 * view lists before its "...".  Never inlined, never a tail call: the
 * volatile store after the call keeps each frame. */
static volatile int deep_sink;
__attribute__((noinline)) static void deep_frame(int depth)
{
	if (depth > 0) {
		deep_frame(depth - 1);
	} else {
		corotop_coro_record(&coros[0], true, 0x401000);
		corotop_coro_record(&coros[0], false, 0x4010a0);
	}
	deep_sink = depth;
}

static uint64_t tids[2];
static volatile sig_atomic_t got_term;

struct thread_arg {
	const struct step *steps; /* set before go is posted */
	size_t n;
	uint64_t tid; /* set before ready is posted */
	sem_t go;
};

static sem_t ready, steps_done;

static void sem_wait_intr(sem_t *s)
{
	while (sem_wait(s) && errno == EINTR)
		;
}

static void *run_steps(void *p)
{
	struct thread_arg *a = p;
	sigset_t all;

	/* Signals are the main thread's: its read of the control pipe must
	 * see SIGTERM. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	a->tid = (uint64_t)syscall(SYS_gettid);
	sem_post(&ready);
	sem_wait_intr(&a->go);
	for (size_t i = 0; i < a->n; i++)
		corotop_coro_record(&coros[a->steps[i].coro],
				    a->steps[i].active, a->steps[i].addr);
	sem_post(&steps_done);
	for (;;)
		pause(); /* idle until the program exits */
	return NULL;
}

/* COROTOP_SCRIPTED_WRAP (the tid-wrap flow): move the kernel's pid counter
 * back before the second thread starts, as a wrap does, so that it gets
 * the lower tid.  Returns false when it could not (not root). */
static bool wrap_pid_counter(void)
{
	int fd = open("/proc/sys/kernel/ns_last_pid", O_WRONLY | O_CLOEXEC);
	bool ok;

	if (fd < 0)
		return false;
	/* 300: the kernel's RESERVED_PIDS, where a wrap starts over. */
	ok = write(fd, "300", 3) == 3;
	close(fd);
	return ok;
}

/* Both threads started, then T1's steps on the one with the lower tid and,
 * once they are done, T2's on the other.  Tids are handed out in creation
 * order only until the kernel's pid counter wraps (a busy machine wraps it
 * within minutes), and corotop lists threads by tid: so T1 sorts first
 * whatever the numbers are.  *wrapped: the second thread got the lower
 * tid. */
static int run_threads(bool wrap, bool *wrapped)
{
	static struct thread_arg a[2];
	int lo;

	sem_init(&ready, 0, 0);
	for (int k = 0; k < 2; k++) {
		pthread_t th;

		sem_init(&a[k].go, 0, 0);
		if (k == 1 && wrap && !wrap_pid_counter())
			return -2;
		if (pthread_create(&th, NULL, run_steps, &a[k]))
			return -1;
		pthread_detach(th);
		sem_wait_intr(&ready);
	}
	lo = a[0].tid < a[1].tid ? 0 : 1;
	*wrapped = lo == 1;
	a[lo].steps = steps_t1;
	a[lo].n = sizeof(steps_t1) / sizeof(steps_t1[0]);
	a[1 - lo].steps = steps_t2;
	a[1 - lo].n = sizeof(steps_t2) / sizeof(steps_t2[0]);
	sem_post(&a[lo].go);
	sem_wait_intr(&steps_done);
	sem_post(&a[1 - lo].go);
	sem_wait_intr(&steps_done);
	tids[0] = a[lo].tid;
	tids[1] = a[1 - lo].tid;
	return 0;
}

static void write_info(const char *path, const char *text)
{
	char tmp[4096];
	int fd;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return;
	if (write(fd, text, strlen(text)) < 0) {
		/* nothing to report to: the terminal is corotop's */
	}
	close(fd);
	rename(tmp, path);
}

static void on_term(int sig)
{
	(void)sig;
	got_term = 1;
}

static void make_noise(int n)
{
	for (int i = 1; i <= n; i++) {
		fprintf(stdout, "%sout line %d%s\n", i == 1 ? "\033[1;31m" : "",
			i, i == 1 ? "\033[0m" : "");
		fprintf(stderr, "%serr line %d%s\n", i == 1 ? "\033[33m" : "",
			i, i == 1 ? "\033[0m" : "");
	}
	fputs("partial", stdout);
	fflush(stdout);
	fflush(stderr);
}

int main(int argc, char **argv)
{
	struct sigaction sa;
	char info[256], line[64];
	size_t len = 0;
	bool wrapped = false;
	int status, ctl, rc;

	if (argc != 4)
		return 2;
	status = atoi(argv[1]);
	sem_init(&steps_done, 0, 0);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_term; /* no SA_RESTART: read() returns EINTR */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	/* O_RDWR: the pipe always has a writer (us), so read() blocks until a
	 * line arrives instead of seeing EOF before the test opens it. */
	ctl = open(argv[2], O_RDWR);
	if (ctl < 0) {
		snprintf(info, sizeof(info), "error opening %s: %s\n", argv[2],
			 strerror(errno));
		write_info(argv[3], info);
		return 2;
	}
	if (!corotop_probe_live_) {
		snprintf(info, sizeof(info), "error probe not attached: %s\n",
			 corotop_probe_status());
		write_info(argv[3], info);
		return 77;
	}
	for (int i = 0; i < NCORO; i++) {
		char name[16];

		/* The two that close are numbered: copied at open. */
		if (i == 3 || i == 9) {
			snprintf(name, sizeof(name), "closer-%d",
				 i == 3 ? 1 : 2);
			corotop_coro_open_named(&coros[i],
						0x1001u + (unsigned)i, name,
						COROTOP_NAME_COPY);
		} else {
			corotop_coro_open_named(
				&coros[i], 0x1001u + (unsigned)i, coro_names[i],
				COROTOP_NAME_STATIC);
		}
	}
	rc = run_threads(getenv("COROTOP_SCRIPTED_WRAP") != NULL, &wrapped);
	if (rc) {
		write_info(argv[3],
			   rc == -2 ? "error cannot move the pid counter "
				      "(ns_last_pid)\n"
				    : "error pthread\n");
		return rc == -2 ? 77 : 2;
	}
	snprintf(info, sizeof(info),
		 "pid %ld\ntid1 %llu\ntid2 %llu\nwrapped %s\n", (long)getpid(),
		 (unsigned long long)tids[0], (unsigned long long)tids[1],
		 wrapped ? "yes" : "no");
	write_info(argv[3], info);

	while (!got_term) {
		char c;
		ssize_t r = read(ctl, &c, 1);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		if (c != '\n') {
			if (len + 1 < sizeof(line))
				line[len++] = c;
			continue;
		}
		line[len] = '\0';
		len = 0;
		if (strcmp(line, "hot") == 0) {
			put_hot_stacks();
			continue;
		}
		if (strcmp(line, "deep") == 0) {
			deep_frame(12);
			continue;
		}
		if (strncmp(line, "noise ", 6) == 0) {
			make_noise(atoi(line + 6));
			continue;
		}
		if (strcmp(line, "close") != 0 &&
		    strcmp(line, "close-exit") != 0)
			break;
		corotop_coro_close(&coros[3]);
		corotop_coro_close(&coros[9]);
		if (strcmp(line, "close-exit") == 0)
			break;
	}
	return status;
}
