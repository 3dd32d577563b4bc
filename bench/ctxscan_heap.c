/*
 * ctxscan_heap: what the memory scan for parked contexts costs
 * (src/engine/scan/ctxscan.c) on a process that was never prepared, with
 * a large heap of unrelated data -- issue 30's "time to the first
 * snapshot, with 1 GiB of unrelated heap".
 *
 * A child process allocates HEAP MiB in 1 MiB blocks and fills them with
 * pseudo-random words, one in 16 a pointer into the blocks (8-byte
 * aligned, as a heap's are), then parks TASKS raw Boost.Context tasks
 * (16 KiB stacks, their fcontext_t kept in one array) and waits in read().
 * The parent reads its maps, takes the dead stack and running frames from
 * /proc/PID/task/TID/syscall, and scans it with procmem and framecheck, as
 * corotop would; the child runs on, untouched.  It prints the scan's wall
 * and CPU time, the bytes of writable memory (read twice: the rate is
 * theirs over the wall time), what it found, and "exact" when the sure
 * contexts found are exactly the kept ones.
 *
 * With --attach COROTOP [SECONDS], what corotop itself costs the child
 * (issue 30's "pause per refresh" and "throughput while attached"): the
 * child then starts a worker thread that does small units of work,
 * counting them and the longest gap between two (its pause: a thread
 * that was stopped, or waited for a CPU), in shared memory.  The parent
 * measures the worker SECONDS (default 5) unattached, then times
 * `COROTOP dump -p CHILD --json` (the time to the first snapshot, and
 * the scan's first pass as it reports it), then SECONDS with `COROTOP -b
 * -p CHILD` attached (a refresh every second, which stops the worker --
 * the child's one running thread -- while it re-reads the known contexts;
 * a whole pass when due), then SECONDS unattached again, and prints the
 * rates, their ratio to the mean unattached rate, the longest gaps, and
 * the pauses corotop itself reports for its refreshes (their median and
 * largest, from its batch JSON).  On a machine of 2 CPUs the worker and
 * corotop compete for them.
 *
 * With --fibers PROGRAM after --attach's SECONDS, the child is
 * bench/fiber_parked (PROGRAM TASKS: Boost.Fiber, two threads, TASKS
 * fibers parked on condition variables, four workers) instead of the
 * heap and raw tasks above: the same --attach measures, on Boost.Fiber's
 * layout, where each fiber's holder (its context's c_) lies on a page of
 * its own; HEAP_MIB is not used, and the scan above is not run.
 *
 * With --mapped after --attach's SECONDS, each raw task's stack is a
 * mapping of its own below a guard page (as protected_fixedsize_stack
 * makes them) instead of malloc's: corotop watches each for its idle
 * proofs (src/engine/scan/scanner_idle.c), whose arms, in its stops,
 * the pauses then include.
 *
 * With --core COROTOP, the same process as a core file (issue 30, part
 * 2): gdb's gcore dumps the child into a temporary directory (timed), then
 * `COROTOP dump --core FILE --json` opens it (timed: the time to the first
 * snapshot of a core), and the contexts it found are counted.
 *
 * Usage: ctxscan_heap [HEAP_MIB [TASKS [--attach COROTOP [SECONDS
 *                                       [--fibers PROGRAM | --mapped]] |
 *                                       --core COROTOP]]]
 *        (1024 10000)
 */
#define _GNU_SOURCE
#include "bench.h"

#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "common/hash.h"
#include "engine/scan/ctxscan.h"
#include "engine/target/fcsave.h"
#include "engine/target/framecheck.h"
#include "engine/target/procfs.h"
#include "engine/target/procmem.h"

#include "fcontext.h"

#define CH_STACK (16 * 1024)

static bool ch_mapped; /* --mapped: stacks of their own mappings */
#define CH_MAPS_MAX (64u << 20)

static fcontext_t ch_back;

/* The child's worker's books, in memory both processes map.  Relaxed:
 * counters read for a rate, ordering nothing. */
struct ch_meter {
	_Atomic uint64_t units;
	_Atomic uint64_t max_gap_ns;
	_Atomic int reset; /* the parent asks for a new max */
};

static struct ch_meter *ch_meter;

/* Units of about 20 us of arithmetic, forever; the longest gap between
 * two ends of a unit, since the parent last reset it. */
static void *ch_worker(void *arg)
{
	uint64_t x = HASH_GOLDEN, last = clock_now_ns(CLOCK_MONOTONIC);

	(void)arg;
	for (;;) {
		uint64_t now, gap;

		for (int i = 0; i < 20000; i++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
		}
		now = clock_now_ns(CLOCK_MONOTONIC);
		gap = now - last;
		last = now;
		if (atomic_exchange_explicit(&ch_meter->reset, 0,
					     memory_order_relaxed))
			atomic_store_explicit(&ch_meter->max_gap_ns, 0,
					      memory_order_relaxed);
		else if (gap > atomic_load_explicit(&ch_meter->max_gap_ns,
						    memory_order_relaxed))
			atomic_store_explicit(&ch_meter->max_gap_ns, gap,
					      memory_order_relaxed);
		atomic_fetch_add_explicit(&ch_meter->units, 1 + (x == 0),
					  memory_order_relaxed);
	}
	return NULL;
}

static void ch_task(transfer_t t)
{
	ch_back = t.fctx;
	for (;;)
		ch_back = jump_fcontext(ch_back, NULL).fctx;
}

/* The child: the heap, the tasks, their contexts written to `out` (the
 * pipe), then a wait on stdin. */
static void ch_child(long mib, long tasks, int out)
{
	uint64_t **blocks = calloc((size_t)mib, sizeof(*blocks));
	fcontext_t *kept = calloc((size_t)tasks, sizeof(*kept));
	uint64_t x = HASH_GOLDEN;
	char c;

	if (!blocks || !kept)
		_exit(1);
	for (long b = 0; b < mib; b++)
		if (!(blocks[b] = malloc(1u << 20)))
			_exit(1);
	for (long b = 0; b < mib; b++)
		for (size_t w = 0; w < (1u << 20) / 8; w++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			blocks[b][w] = (x & 15) ? x
						: (uint64_t)(uintptr_t)&blocks
							  [x % (uint64_t)mib]
							  [(x >> 20) % 131072];
		}
	for (long i = 0; i < tasks; i++) {
		char *stack = malloc(CH_STACK);

		if (ch_mapped) {
			char *m = mmap(NULL, CH_STACK + 4096,
				       PROT_READ | PROT_WRITE,
				       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

			free(stack);
			stack = m == MAP_FAILED || mprotect(m, 4096, PROT_NONE)
					? NULL
					: m + 4096;
		}

		if (!stack)
			_exit(1);
		kept[i] = jump_fcontext(make_fcontext(stack + CH_STACK,
						      CH_STACK, ch_task),
					NULL)
				  .fctx;
	}
	if (write(out, &tasks, sizeof(tasks)) != (ssize_t)sizeof(tasks) ||
	    write(out, kept, (size_t)tasks * sizeof(*kept)) !=
		    (ssize_t)((size_t)tasks * sizeof(*kept)))
		_exit(1);
	/* 'w': start the worker (--attach); end of input: exit. */
	while (read(0, &c, 1) > 0) {
		pthread_t t;

		if (c == 'w' && ch_meter &&
		    pthread_create(&t, NULL, ch_worker, NULL))
			_exit(1);
	}
	_exit(0);
}

struct ch_reader {
	struct procmem pm;
	struct framecheck *fc;
};

static bool ch_read(void *ctx, uint64_t addr, void *buf, size_t n)
{
	struct ch_reader *r = ctx;
	char err[128];

	return procmem_read(&r->pm, addr, buf, n, err, sizeof(err));
}

static bool ch_after_call(void *ctx, uint64_t pc)
{
	struct ch_reader *r = ctx;

	return framecheck_frame(r->fc, pc, false) == FRAMECHECK_OK;
}

/* Each waiting thread's dead stack and running frames, split at its sp.
 * Until the child blocks in read() its thread is "running": wait for it,
 * 30 s at most. */
static size_t ch_threads(pid_t pid, const struct ctxscan_region *r, size_t nr,
			 struct ctxscan_range *dead,
			 struct ctxscan_range *running, size_t max)
{
	uint64_t sps[64];
	size_t nsp, busy = 0, n = 0;
	char path[64];
	int dirfd;

	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	if ((dirfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		bench_die("cannot open %s", path);
	for (int tries = 0;; tries++) {
		nsp = procfs_thread_sps(dirfd, sps, 64, &busy);
		if (!busy && nsp)
			break;
		if (tries >= 30000)
			bench_die("the child's threads never waited");
		bench_sleep_ns(1000000);
	}
	close(dirfd);
	for (size_t i = 0; i < nsp && n < max; i++)
		if (ctxscan_split(r, nr, sps[i], &dead[n], &running[n]))
			n++;
	return n;
}

static int ch_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The worker's units over `secs` seconds, per second, and its longest
 * gap in that time (ms). */
static double ch_rate(double secs, double *max_gap_ms)
{
	uint64_t u0, u1;

	atomic_store_explicit(&ch_meter->reset, 1, memory_order_relaxed);
	u0 = atomic_load_explicit(&ch_meter->units, memory_order_relaxed);
	bench_sleep_ns((uint64_t)(secs * 1e9));
	u1 = atomic_load_explicit(&ch_meter->units, memory_order_relaxed);
	*max_gap_ms = (double)atomic_load_explicit(&ch_meter->max_gap_ns,
						   memory_order_relaxed) /
		      1e6;
	return (double)(u1 - u0) / secs;
}

/* argv run with stdout on a pipe (out_fd, else /dev/null), stderr on
 * /dev/null; its pid. */
static pid_t ch_spawn(char *const *argv, int *out_fd)
{
	int p[2] = {-1, -1};
	pid_t pid;

	if (out_fd && pipe(p))
		bench_die("pipe failed");
	pid = fork();
	if (pid < 0)
		bench_die("fork failed");
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);

		dup2(null, 0);
		dup2(out_fd ? p[1] : null, 1);
		dup2(null, 2);
		if (out_fd) {
			close(p[0]);
			close(p[1]);
		}
		execv(argv[0], argv);
		_exit(127);
	}
	if (out_fd) {
		close(p[1]);
		*out_fd = p[0];
	}
	return pid;
}

/* argv run with stdout to file descriptor fd; its pid. */
static pid_t ch_spawn_to(char *const *argv, int fd)
{
	pid_t pid = fork();

	if (pid < 0)
		bench_die("fork failed");
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);

		dup2(null, 0);
		dup2(fd, 1);
		dup2(null, 2);
		execv(argv[0], argv);
		_exit(127);
	}
	return pid;
}

/* The pauses corotop's refreshes reported (its batch JSON lines in fd:
 * "refreshes", "pause_ns", "threads_stopped" of each snapshot, each
 * refresh counted once), their median and the largest. */
struct ch_pauses {
	unsigned n, stopped, reread;
	double median_ms, max_ms;
};

/* Lines in file descriptor fd's file (corotop's snapshots so far). */
static unsigned ch_lines(int fd)
{
	char buf[65536];
	unsigned n = 0;
	off_t at = 0;
	ssize_t got;

	while ((got = pread(fd, buf, sizeof(buf), at)) > 0) {
		for (ssize_t i = 0; i < got; i++)
			n += buf[i] == '\n';
		at += got;
	}
	return n;
}

/* Process pid's CPU time (user + system), from /proc/PID/stat. */
static uint64_t ch_cpu_ns(pid_t pid)
{
	char path[64], text[1024];
	unsigned long long ut = 0, st = 0;
	const char *p;
	FILE *f;
	size_t got;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (!(f = fopen(path, "r")))
		return 0;
	got = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	text[got] = '\0';
	/* After the command's closing parenthesis: fields 3 on; utime and
	 * stime are the 14th and 15th. */
	if (!(p = strrchr(text, ')')) ||
	    sscanf(p + 2,
		   "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut,
		   &st) != 2)
		return 0;
	return (ut + st) * (1000000000ull / (uint64_t)sysconf(_SC_CLK_TCK));
}

static uint64_t ch_field(const char *line, const char *key)
{
	const char *at = strstr(line, key);

	return at ? strtoull(at + strlen(key), NULL, 10) : 0;
}

static int ch_u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

static void ch_pauses_read(int fd, struct ch_pauses *pz)
{
	static uint64_t pause[4096];
	static char line[1 << 20];
	uint64_t last = 0;
	FILE *f;

	memset(pz, 0, sizeof(*pz));
	if (lseek(fd, 0, SEEK_SET) < 0 || !(f = fdopen(dup(fd), "r")))
		bench_die("cannot read corotop's output");
	while (fgets(line, sizeof(line), f) && pz->n < 4096) {
		uint64_t r = ch_field(line, "\"refreshes\":");

		if (!r || r == last)
			continue;
		last = r;
		pause[pz->n++] = ch_field(line, "\"pause_ns\":");
		pz->reread = (unsigned)ch_field(line, "\"holders_reread\":");
		pz->stopped = (unsigned)ch_field(line, "\"threads_stopped\":");
	}
	fclose(f);
	if (!pz->n)
		return;
	qsort(pause, pz->n, sizeof(pause[0]), ch_u64_cmp);
	pz->median_ms = (double)pause[pz->n / 2] / 1e6;
	pz->max_ms = (double)pause[pz->n - 1] / 1e6;
}

/* argv run to its end, its stdout read whole, the first cap - 1 bytes
 * kept in buf (NUL-terminated: a JSON line with every stack, whose scan
 * numbers come first); its wall time, or the bench dies with `what` when
 * it fails. */
static uint64_t ch_capture(char *const *argv, char *buf, size_t cap,
			   const char *what)
{
	uint64_t t0 = clock_now_ns(CLOCK_MONOTONIC);
	char sink[4096];
	size_t len = 0;
	ssize_t got;
	int fd, status;
	pid_t c = ch_spawn(argv, &fd);

	while ((got = read(fd, len < cap - 1 ? buf + len : sink,
			   len < cap - 1 ? cap - 1 - len : sizeof(sink))) > 0)
		if (len < cap - 1)
			len += (size_t)got;
	buf[len] = '\0';
	close(fd);
	if (waitpid(c, &status, 0) != c || !WIFEXITED(status) ||
	    WEXITSTATUS(status))
		bench_die(what);
	return clock_now_ns(CLOCK_MONOTONIC) - t0;
}

/* --attach: the child's worker unattached, corotop dump's time, the
 * worker with corotop attached, unattached again. */
static void ch_attach(const char *corotop, pid_t child, int child_in,
		      double secs, long mib, long tasks)
{
	char pid_s[16], buf[1 << 16];
	char stations[24];
	/* A station per context, and some (the default is 4096). */
	char *dump[] = {(char *)corotop, "dump",   "--stations", stations, "-p",
			pid_s,		 "--json", NULL};
	/* Its running rows only (the threads): the scan's numbers per
	 * snapshot, not 100k rows a second. */
	char *batch[] = {(char *)corotop,
			 "-b",
			 "-d",
			 "10",
			 "-f",
			 "json",
			 "-F",
			 "state=running",
			 "--stations",
			 stations,
			 "-p",
			 pid_s,
			 NULL};
	char out_path[] = "/tmp/ctxscan_heap.XXXXXX";
	double r0, r1, r2, g0, g1, g2, mean;
	uint64_t dump_ns, first_pass = 0, cpu0, cpu1;
	struct ch_pauses pz;
	int status, out;
	const char *at;
	pid_t c;

	snprintf(pid_s, sizeof(pid_s), "%d", (int)child);
	snprintf(stations, sizeof(stations), "%ld",
		 tasks + 4096 < 1048576 ? tasks + 4096 : 1048576);
	if (write(child_in, "w", 1) != 1)
		bench_die("cannot start the child's worker");
	bench_sleep_ns(500000000);
	r0 = ch_rate(secs, &g0);
	dump_ns = ch_capture(dump, buf, sizeof(buf), "corotop dump failed");
	if ((at = strstr(buf, "\"first_pass_ns\":")))
		first_pass = strtoull(at + 16, NULL, 10);
	out = mkstemp(out_path);
	if (out < 0)
		bench_die("mkstemp failed");
	c = ch_spawn_to(batch, out);
	/* Its first snapshot out (the first pass, its census walks and the
	 * refresh after it: seconds at 100k), then 2 s more: what is
	 * measured is corotop attached, not starting. */
	for (int i = 0; i < 1200 && ch_lines(out) < 1; i++)
		bench_sleep_ns(100000000);
	bench_sleep_ns(2000000000);
	cpu0 = ch_cpu_ns(c);
	r1 = ch_rate(secs, &g1);
	cpu1 = ch_cpu_ns(c);
	kill(c, SIGTERM);
	waitpid(c, &status, 0);
	ch_pauses_read(out, &pz);
	close(out);
	unlink(out_path);
	r2 = ch_rate(secs, &g2);
	mean = (r0 + r2) / 2;
	printf("ctxscan_heap attach heap_mib=%ld tasks=%ld seconds=%.0f "
	       "dump_ms=%.0f first_pass_ms=%.0f units_per_s_before=%.0f "
	       "units_per_s_attached=%.0f units_per_s_after=%.0f "
	       "throughput_ratio=%.3f max_gap_ms_before=%.2f "
	       "max_gap_ms_attached=%.2f max_gap_ms_after=%.2f "
	       "refreshes=%u threads_stopped=%u pause_ms_median=%.3f "
	       "pause_ms_max=%.3f holders_reread_last=%u "
	       "corotop_cpu_pct=%.1f\n",
	       mib, tasks, secs, (double)dump_ns / 1e6,
	       (double)first_pass / 1e6, r0, r1, r2, mean > 0 ? r1 / mean : 0,
	       g0, g1, g2, pz.n, pz.stopped, pz.median_ms, pz.max_ms, pz.reread,
	       (double)(cpu1 - cpu0) / (secs * 1e9) * 100);
	fflush(stdout);
}

/* --fibers: bench/fiber_parked as the child, its meter a shared memory
 * object on its fd 3; then --attach's measures. */
static int ch_fibers(const char *corotop, const char *program, long tasks,
		     double secs)
{
	char n[24], line[64];
	char *argv[] = {(char *)program, n, NULL};
	int in[2], out[2], status, mfd = memfd_create("ch_meter", 0);
	ssize_t got;
	pid_t pid;

	snprintf(n, sizeof(n), "%ld", tasks);
	if (mfd < 0 || ftruncate(mfd, sizeof(*ch_meter)) ||
	    (ch_meter = mmap(NULL, sizeof(*ch_meter), PROT_READ | PROT_WRITE,
			     MAP_SHARED, mfd, 0)) == MAP_FAILED)
		bench_die("--fibers: no shared memory");
	if (pipe(in) || pipe(out))
		bench_die("pipe failed");
	pid = fork();
	if (pid < 0)
		bench_die("fork failed");
	if (pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		dup2(mfd, 3);
		/* Its input's other end only here: its end of input is
		 * ours to give. */
		close(in[1]);
		close(out[0]);
		execv(program, argv);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	close(mfd);
	got = read(out[0], line, sizeof(line) - 1);
	if (got <= 0 || strncmp(line, "fibers=", 7))
		bench_die("%s did not get ready", program);
	line[got] = '\0';
	printf("ctxscan_heap fibers program=%s tasks=%ld\n", program, tasks);
	fflush(stdout);
	ch_attach(corotop, pid, in[1], secs, 0, tasks);
	close(in[1]);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status))
		bench_die("%s did not exit 0", program);
	return 0;
}

/* --core: gcore of the child, then corotop dump --core of it. */
static void ch_core(const char *corotop, pid_t child, long mib, long tasks)
{
	char dir[] = "/tmp/ctxscan-core-XXXXXX", prefix[64], core[96];
	char pid_s[16], stations[24], buf[1 << 16];
	char *gcore[] = {"/usr/bin/gcore", "-o", prefix, pid_s, NULL};
	char *dump[] = {(char *)corotop, "dump", "--stations", stations,
			"--core",	 core,	 "--json",     NULL};
	uint64_t t0, gcore_ns, dump_ns;
	unsigned long long found = 0;
	struct stat st;
	const char *at;
	int status;
	pid_t c;

	if (!mkdtemp(dir))
		bench_die("mkdtemp failed");
	snprintf(pid_s, sizeof(pid_s), "%d", (int)child);
	snprintf(prefix, sizeof(prefix), "%s/core", dir);
	snprintf(core, sizeof(core), "%s.%d", prefix, (int)child);
	snprintf(stations, sizeof(stations), "%ld",
		 tasks + 4096 < 1048576 ? tasks + 4096 : 1048576);
	t0 = clock_now_ns(CLOCK_MONOTONIC);
	c = ch_spawn(gcore, NULL);
	if (waitpid(c, &status, 0) != c || !WIFEXITED(status) ||
	    WEXITSTATUS(status) || stat(core, &st))
		bench_die("gcore failed (is gdb installed?)");
	gcore_ns = clock_now_ns(CLOCK_MONOTONIC) - t0;
	dump_ns = ch_capture(dump, buf, sizeof(buf),
			     "corotop dump --core failed");
	if ((at = strstr(buf, "\"scan\":")) && (at = strstr(at, "\"found\":")))
		found = strtoull(at + 8, NULL, 10);
	printf("ctxscan_heap core heap_mib=%ld tasks=%ld gcore_ms=%.0f "
	       "core_mib=%.0f dump_core_ms=%.0f found=%llu result=%s\n",
	       mib, tasks, (double)gcore_ns / 1e6,
	       (double)st.st_size / 1048576.0, (double)dump_ns / 1e6, found,
	       found == (unsigned long long)tasks ? "exact" : "MISMATCH");
	fflush(stdout);
	unlink(core);
	rmdir(dir);
}

int main(int argc, char **argv)
{
	long mib = argc > 1 ? atol(argv[1]) : 1024;
	long tasks = argc > 2 ? atol(argv[2]) : 10000;
	const char *corotop =
		argc > 4 && !strcmp(argv[3], "--attach") ? argv[4] : NULL;
	const char *core_corotop =
		argc > 4 && !strcmp(argv[3], "--core") ? argv[4] : NULL;
	double secs = argc > 5 ? atof(argv[5]) : 5;
	const char *fibers =
		argc > 7 && !strcmp(argv[6], "--fibers") ? argv[7] : NULL;

	ch_mapped = argc > 6 && !strcmp(argv[6], "--mapped");
	static struct ctxscan_region regions[CTXSCAN_REGIONS_MAX];
	struct ctxscan_range dead[64], running[64];
	struct ctxscan_found *found;
	struct ctxscan_stats st;
	struct ch_reader rd;
	uint64_t *kept, t0, c0, wall, cpu;
	int in[2], out[2], status;
	size_t nr, n, len, sure = 0, match = 0;
	long got;
	char path[64], err[256], *maps;
	pid_t pid;
	FILE *f;

	if (mib < 1 || mib > 65536 || tasks < 1 || tasks > 1000000)
		bench_die("usage: ctxscan_heap [HEAP_MIB [TASKS [--attach "
			  "COROTOP [SECONDS]]]]");
	if (corotop) {
		ch_meter = mmap(NULL, sizeof(*ch_meter), PROT_READ | PROT_WRITE,
				MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		if (ch_meter == MAP_FAILED || secs < 1 || secs > 600)
			bench_die("--attach: no shared memory, or SECONDS "
				  "not in 1..600");
	}
	if (corotop && fibers)
		return ch_fibers(corotop, fibers, tasks, secs);
	if (pipe(in) || pipe(out))
		bench_die("pipe failed");
	pid = fork();
	if (pid < 0)
		bench_die("fork failed");
	if (pid == 0) {
		dup2(in[0], 0);
		close(in[1]);
		close(out[0]);
		ch_child(mib, tasks, out[1]);
	}
	close(in[0]);
	close(out[1]);
	kept = calloc((size_t)tasks, sizeof(*kept));
	found = calloc((size_t)tasks * 2 + 1024, sizeof(*found));
	if (!kept || !found)
		bench_die("out of memory");
	if (read(out[0], &got, sizeof(got)) != (ssize_t)sizeof(got) ||
	    got != tasks)
		bench_die("the child did not get ready");
	for (size_t done = 0; done < (size_t)tasks * sizeof(*kept);) {
		ssize_t r = read(out[0], (char *)kept + done,
				 (size_t)tasks * sizeof(*kept) - done);

		if (r <= 0)
			bench_die("the child's contexts were cut short");
		done += (size_t)r;
	}
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	if (!(f = fopen(path, "r")) || !(maps = malloc(CH_MAPS_MAX)))
		bench_die("cannot read %s", path);
	len = fread(maps, 1, CH_MAPS_MAX - 1, f);
	fclose(f);
	nr = ctxscan_regions(maps, len, regions, CTXSCAN_REGIONS_MAX);
	free(maps);
	if (!procmem_open(&rd.pm, pid, err, sizeof(err)))
		bench_die("procmem: %s", err);
	if (!(rd.fc = framecheck_create(pid)))
		bench_die("framecheck_create failed");

	struct ctxscan_input input = {
		.regions = regions,
		.nregions = nr,
		.dead = dead,
		.running = running,
		.layout = fcsave_layout_of(pid),
		.reader = {.read = ch_read,
			   .after_call = ch_after_call,
			   .ctx = &rd},
	};

	if (!input.layout)
		bench_die("no checked Boost.Context layout in the child");
	input.ndead = input.nrunning =
		ch_threads(pid, regions, nr, dead, running, 64);
	t0 = clock_now_ns(CLOCK_MONOTONIC);
	c0 = clock_now_ns(CLOCK_PROCESS_CPUTIME_ID);
	n = ctxscan_fcontext(&input, found, (size_t)tasks * 2 + 1024, &st);
	cpu = clock_now_ns(CLOCK_PROCESS_CPUTIME_ID) - c0;
	wall = clock_now_ns(CLOCK_MONOTONIC) - t0;
	qsort(kept, (size_t)tasks, sizeof(*kept), ch_cmp);
	for (size_t i = 0; i < n; i++) {
		if (found[i].unsure)
			continue;
		sure++;
		match += bsearch(&found[i].at, kept, (size_t)tasks,
				 sizeof(*kept), ch_cmp) != NULL;
	}
	printf("ctxscan_heap heap_mib=%ld tasks=%ld regions=%zu "
	       "read_mib=%.0f skipped_gib=%.0f wall_ms=%.0f cpu_ms=%.0f "
	       "mib_per_s=%.0f areas=%llu code_checks=%llu found=%zu "
	       "unsure=%llu sure=%zu false_negatives=%zu "
	       "false_positives=%zu result=%s\n",
	       mib, tasks, nr, (double)st.bytes / 1048576.0,
	       (double)st.skipped / 1073741824.0, (double)wall / 1e6,
	       (double)cpu / 1e6,
	       (double)st.bytes / 1048576.0 / ((double)wall / 1e9),
	       (unsigned long long)st.areas, (unsigned long long)st.code_checks,
	       n, (unsigned long long)st.unsure, sure, (size_t)tasks - match,
	       sure - match,
	       match == (size_t)tasks && sure == match ? "exact" : "MISMATCH");
	fflush(stdout);
	framecheck_destroy(rd.fc);
	procmem_finish(&rd.pm);
	if (corotop)
		ch_attach(corotop, pid, in[1], secs, mib, tasks);
	if (core_corotop)
		ch_core(core_corotop, pid, mib, tasks);
	close(in[1]);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status))
		bench_die("the child did not exit 0");
	free(found);
	free(kept);
	return 0;
}
