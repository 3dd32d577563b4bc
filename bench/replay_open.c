/*
 * replay_open: how long a large recording takes to show its first screen,
 * and what a seek costs once it is open (issue 6: first screen of a
 * 10-million-event file <= 1 s, seek <= 50 ms).
 *
 * The recording is synthetic but shaped as recorder.c writes one, with the
 * real encoder: replay_gen.c (10,000 probe ids on 8 threads, ids reused
 * by ~40,000 coroutines over ~60 s of trace time for 10 M events, births,
 * symbols, stacks, losses, the end).
 *
 * Timed in this process, warm (the file was just written and synced):
 *   index     heph_file_open alone (map, walk and decode every packet, sort
 *             by start), then closed;
 *   open      replay_open (the same index + replay's grouping); grouping is
 *             open minus index (medians of the repetitions);
 *   screen    what `corotop --replay` does before its first frame: the
 *             open, heph_names_init (the recorded symbols) and the first
 *             snapshot at t0, plus the one at the middle of the recording;
 *             the same through the engine (engine_create in replay mode +
 *             engine_snapshot, which adds the lints);
 *   seek      replay_snapshot at 1000 random moments, and the same through
 *             the engine (engine_replay_seek + engine_snapshot);
 *   cold      the screen again after posix_fadvise(DONTNEED) dropped this
 *             file's pages (and only this file's);
 *   corotop   `corotop --replay FILE -b -n 1 -d 1 -f json >/dev/null`, end
 *             to end, wall time and max RSS.
 * Every line carries others_cores (CPU used by other processes meanwhile).
 *
 * Usage: replay_open [-n EVENTS] [-s SEEKS] [-r REPS] [-o FILE] [-c COROTOP]
 *                    [-k]
 *   defaults: 10,000,000 events, 1000 seeks, 3 repetitions, the file
 *   /tmp/replay_open.PID.heph (deleted at the end unless -k), corotop next
 *   to the bench/ directory this program is in.  With -o naming an
 *   existing file and -k, that file is used as it is (no generation).
 */
#define _GNU_SOURCE
#include "bench.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "engine/heph/hephfile.h"
#include "engine/heph/hephnames.h"
#include "engine/replay/replay.h"
#include "replay_gen.h"

/* Random moments to seek to (xorshift64*). */
static uint64_t rng_state;

static uint64_t rng(void)
{
	uint64_t x = rng_state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	rng_state = x;
	return x * 0x2545F4914F6CDD1Dull;
}

/* ---- measuring ---- */

static double ms_since(uint64_t t0)
{
	return (double)(clock_now_ns(CLOCK_MONOTONIC) - t0) / 1e6;
}

/* kB of VmRSS, RssAnon and RssFile. */
static void rss_kb(long *rss, long *anon, long *file)
{
	char line[256];
	FILE *f = fopen("/proc/self/status", "r");

	*rss = *anon = *file = -1;
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		sscanf(line, "VmRSS: %ld", rss);
		sscanf(line, "RssAnon: %ld", anon);
		sscanf(line, "RssFile: %ld", file);
	}
	fclose(f);
}

static void drop_pages(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED))
		fprintf(stderr, "replay_open: cannot drop %s's pages\n", path);
	if (fd >= 0)
		close(fd);
}

static double median3(double *v, size_t n)
{
	return bench_quantile(v, n, 0.5);
}

/* The screen corotop shows first: open, names, snapshot at t0; then the
 * middle.  Returns the open's ms. */
static double screen(const char *path, const char *tag, int rep, bool keep,
		     struct replay *keep_r)
{
	struct replay r;
	struct heph_names names;
	struct snapshot snap;
	struct bench_load load;
	char err[256];
	double t_open, t_names, t_snap0, t_mid;
	size_t vis0, vismid;
	uint64_t t0;
	long rss, anon, file;

	bench_load_start(&load);
	t0 = clock_now_ns(CLOCK_MONOTONIC);
	if (!replay_open(&r, path, 5000000000ull, err, sizeof(err)))
		bench_die("replay_open: %s", err);
	t_open = ms_since(t0);
	rss_kb(&rss, &anon, &file);
	t0 = clock_now_ns(CLOCK_MONOTONIC);
	heph_names_init(&names, &r.f);
	t_names = ms_since(t0);
	snapshot_init(&snap);
	t0 = clock_now_ns(CLOCK_MONOTONIC);
	replay_snapshot(&r, r.t0, &snap);
	t_snap0 = ms_since(t0);
	vis0 = snap.count;
	t0 = clock_now_ns(CLOCK_MONOTONIC);
	replay_snapshot(&r, r.t0 + (r.t1 - r.t0) / 2, &snap);
	t_mid = ms_since(t0);
	vismid = snap.count;
	printf("replay_open screen %-4s rep=%d open_ms=%.1f names_ms=%.1f "
	       "snap_t0_ms=%.2f snap_mid_ms=%.2f first_screen_ms=%.1f "
	       "first_screen_mid_ms=%.1f events=%zu intervals=%zu "
	       "coroutines=%zu names=%zu problems=%zu visible_t0=%zu "
	       "visible_mid=%zu rss_after_open_mib=%.0f anon_mib=%.0f "
	       "file_mib=%.0f others_cores=%.2f\n",
	       tag, rep, t_open, t_names, t_snap0, t_mid,
	       t_open + t_names + t_snap0, t_open + t_names + t_mid, r.f.nev,
	       r.niv, r.ncoro, names.n, r.f.problems_total, vis0, vismid,
	       (double)rss / 1024, (double)anon / 1024, (double)file / 1024,
	       bench_load_others(&load));
	fflush(stdout);
	snapshot_finish(&snap);
	heph_names_finish(&names);
	if (keep)
		*keep_r = r;
	else
		replay_close(&r);
	return t_open;
}

static void seeks_model(const struct replay *r, unsigned n)
{
	double *ms = malloc(n * sizeof(*ms));
	struct snapshot snap;
	struct bench_load load;
	uint64_t vis = 0;
	struct bench_dist d;

	if (!ms)
		bench_die("out of memory");
	snapshot_init(&snap);
	rng_state = 0xC0FFEE1234567ull;
	bench_load_start(&load);
	for (unsigned i = 0; i < n; i++) {
		uint64_t t = r->t0 + rng() % (r->t1 - r->t0 + 1);
		uint64_t t0 = clock_now_ns(CLOCK_MONOTONIC);

		replay_snapshot(r, t, &snap);
		ms[i] = ms_since(t0);
		vis += snap.count;
	}
	d = bench_dist(ms, n);
	printf("replay_open seek model n=%u p50_ms=%.2f p90_ms=%.2f "
	       "p99_ms=%.2f max_ms=%.2f mean_ms=%.2f visible_mean=%.0f "
	       "others_cores=%.2f\n",
	       n, d.p50, d.p90, d.p99, d.max, d.mean, (double)vis / n,
	       bench_load_others(&load));
	fflush(stdout);
	snapshot_finish(&snap);
	free(ms);
}

/* The engine in replay mode, as corotop runs it: first screen, seeks. */
static void engine_path(const char *path, unsigned n)
{
	struct engine_config cfg;
	struct engine_replay_info ri;
	struct snapshot snap;
	struct bench_load load;
	struct bench_dist d;
	double *ms = malloc(n * sizeof(*ms)), t_create, t_snap;
	char err[256];
	struct engine *e;
	uint64_t t0;

	if (!ms)
		bench_die("out of memory");
	engine_config_defaults(&cfg);
	cfg.replay_path = path;
	snapshot_init(&snap);
	bench_load_start(&load);
	t0 = clock_now_ns(CLOCK_MONOTONIC);
	e = engine_create(&cfg, err, sizeof(err));
	if (!e)
		bench_die("engine_create (replay): %s", err);
	t_create = ms_since(t0);
	t0 = clock_now_ns(CLOCK_MONOTONIC);
	engine_snapshot(e, &snap);
	t_snap = ms_since(t0);
	printf("replay_open screen engine create_ms=%.1f snapshot_ms=%.2f "
	       "first_screen_ms=%.1f visible=%zu others_cores=%.2f\n",
	       t_create, t_snap, t_create + t_snap, snap.count,
	       bench_load_others(&load));
	engine_replay_info(e, &ri);
	rng_state = 0xC0FFEE7654321ull;
	bench_load_start(&load);
	for (unsigned i = 0; i < n; i++) {
		uint64_t t = ri.t0 + rng() % (ri.t1 - ri.t0 + 1);

		t0 = clock_now_ns(CLOCK_MONOTONIC);
		engine_replay_seek(e, t);
		engine_snapshot(e, &snap);
		ms[i] = ms_since(t0);
	}
	d = bench_dist(ms, n);
	printf("replay_open seek engine n=%u p50_ms=%.2f p90_ms=%.2f "
	       "p99_ms=%.2f max_ms=%.2f mean_ms=%.2f others_cores=%.2f\n",
	       n, d.p50, d.p90, d.p99, d.max, d.mean, bench_load_others(&load));
	fflush(stdout);
	snapshot_finish(&snap);
	engine_destroy(e);
	free(ms);
}

/* corotop --replay FILE -b -n 1 -d 1 -f json >/dev/null, end to end. */
static void corotop_e2e(const char *corotop, const char *path, const char *tag,
			int rep)
{
	char *argv[] = {(char *)corotop,
			"--replay",
			(char *)path,
			"-b",
			"-n",
			"1",
			"-d",
			"1",
			"-f",
			"json",
			NULL};
	struct bench_load load;
	struct rusage ru;
	uint64_t t0;
	int status;
	pid_t pid;

	fflush(stdout);
	bench_load_start(&load);
	t0 = clock_now_ns(CLOCK_MONOTONIC);
	pid = fork();
	if (pid < 0)
		bench_die("fork: %s", strerror(errno));
	if (!pid) {
		int fd = open("/dev/null", O_WRONLY);

		if (fd < 0 || dup2(fd, STDOUT_FILENO) < 0)
			_exit(127);
		unsetenv("CTP_SHM_PATH");
		execv(corotop, argv);
		_exit(127);
	}
	if (wait4(pid, &status, 0, &ru) != pid)
		bench_die("wait4: %s", strerror(errno));
	/* bench_load_others subtracts our own CPU, not the child's: add it. */
	double wall = ms_since(t0);
	double child = (double)ru.ru_utime.tv_sec * 1e3 +
		       (double)ru.ru_utime.tv_usec / 1e3 +
		       (double)ru.ru_stime.tv_sec * 1e3 +
		       (double)ru.ru_stime.tv_usec / 1e3;
	double others = bench_load_others(&load) - child / wall;

	printf("replay_open corotop %-4s rep=%d wall_ms=%.1f cpu_ms=%.1f "
	       "maxrss_mib=%.0f exit=%d others_cores=%.2f\n",
	       tag, rep, wall, child, (double)ru.ru_maxrss / 1024,
	       WIFEXITED(status) ? WEXITSTATUS(status) : -1,
	       others > 0 ? others : 0);
	fflush(stdout);
}

static void usage(void)
{
	fprintf(stderr, "usage: replay_open [-n EVENTS] [-s SEEKS] [-r REPS] "
			"[-o FILE] [-c COROTOP] [-k]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	uint64_t events = 10000000;
	unsigned seeks = 1000, reps = 3;
	bool keep = false, given;
	char path[512] = "", corotop[600] = "", self[512];
	double idx[16], opn[16], t_gen;
	struct replay r;
	struct stat st;
	struct bench_load load;
	int c;

	while ((c = getopt(argc, argv, "n:s:r:o:c:k")) != -1) {
		switch (c) {
		case 'n':
			events = strtoull(optarg, NULL, 10);
			break;
		case 's':
			seeks = (unsigned)atoi(optarg);
			break;
		case 'r':
			reps = (unsigned)atoi(optarg);
			break;
		case 'o':
			snprintf(path, sizeof(path), "%s", optarg);
			break;
		case 'c':
			snprintf(corotop, sizeof(corotop), "%s", optarg);
			break;
		case 'k':
			keep = true;
			break;
		default:
			usage();
		}
	}
	if (optind != argc || events < 1000 || !seeks || !reps || reps > 16)
		usage();
	if (!*path)
		snprintf(path, sizeof(path), "/tmp/replay_open.%d.heph",
			 (int)getpid());
	if (!*corotop) {
		ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
		char *slash;

		self[n > 0 ? n : 0] = 0;
		slash = strrchr(self, '/');
		if (slash)
			*slash = 0;
		snprintf(corotop, sizeof(corotop), "%s/../corotop", self);
	}
	printf("replay_open nproc=%d events=%llu seeks=%u reps=%u file=%s\n",
	       bench_ncpu(), (unsigned long long)events, seeks, reps, path);
	given = keep && !stat(path, &st);
	if (!given) {
		uint64_t t0 = clock_now_ns(CLOCK_MONOTONIC);

		bench_load_start(&load);
		replay_gen_write(path, events);
		t_gen = ms_since(t0);
		printf("replay_open gen secs=%.2f (incl. fdatasync) "
		       "others_cores=%.2f\n",
		       t_gen / 1e3, bench_load_others(&load));
	}
	/* Warm: the index alone, then the whole open, alternating. */
	for (unsigned i = 0; i < reps; i++) {
		struct heph_file f;
		char err[256];
		uint64_t t0;

		bench_load_start(&load);
		t0 = clock_now_ns(CLOCK_MONOTONIC);
		if (!heph_file_open(&f, path, err, sizeof(err)))
			bench_die("heph_file_open: %s", err);
		idx[i] = ms_since(t0);
		printf("replay_open index warm rep=%u heph_file_open_ms=%.1f "
		       "events=%zu bytes=%zu others_cores=%.2f\n",
		       i + 1, idx[i], f.nev, f.size, bench_load_others(&load));
		heph_file_close(&f);
		opn[i] = screen(path, "warm", (int)i + 1, i + 1 == reps, &r);
	}
	printf("replay_open split warm index_ms=%.1f open_ms=%.1f "
	       "grouping_ms=%.1f (medians of %u)\n",
	       median3(idx, reps), median3(opn, reps),
	       median3(opn, reps) - median3(idx, reps), reps);
	seeks_model(&r, seeks);
	replay_close(&r);
	engine_path(path, seeks);
	drop_pages(path);
	screen(path, "cold", 1, false, NULL);
	if (access(corotop, X_OK)) {
		printf("replay_open corotop skipped: no %s (-c PATH)\n",
		       corotop);
	} else {
		for (unsigned i = 0; i < reps; i++)
			corotop_e2e(corotop, path, "warm", (int)i + 1);
		drop_pages(path);
		corotop_e2e(corotop, path, "cold", 1);
	}
	if (!keep && unlink(path) < 0)
		fprintf(stderr, "replay_open: %s: %s\n", path, strerror(errno));
	return 0;
}
