/*
 * region: the engine's shared-memory file and wake socket
 * (src/engine/ctp/region.c).  region_create must build a private 0700
 * directory holding a 0600 file of exactly the cTP size with a complete
 * header and a listening socket; region_finish must remove all of it.
 * region_open treats a file as untrusted: wrong magic or version, short
 * files, symlinks and non-files are refused, and a lying max_stations is
 * bounded by what the file really holds.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "engine/engine.h"
#include "engine/ctp/region.h"

static char tmp[64];	/* per-test scratch directory */
static struct region R; /* static: teardown cleans up after a failure */

static int setup(void **state)
{
	(void)state;
	snprintf(tmp, sizeof(tmp), "/tmp/ctp-region-test.XXXXXX");
	assert_non_null(mkdtemp(tmp));
	memset(&R, 0, sizeof(R));
	R.listen_fd = -1;
	unsetenv("XDG_RUNTIME_DIR");
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	region_finish(&R);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
	return system(cmd) == 0 ? 0 : -1;
}

static bool gone(const char *path)
{
	struct stat st;

	return lstat(path, &st) < 0 && errno == ENOENT;
}

static void make_file(const char *path, uint64_t magic, uint32_t version,
		      uint32_t max, uint64_t bytes)
{
	struct ctp_header h;
	size_t n = bytes < sizeof(h) ? (size_t)bytes : sizeof(h);
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);

	assert_true(fd >= 0);
	memset(&h, 0, sizeof(h));
	h.magic = magic;
	h.version = version;
	h.max_stations = max;
	assert_int_equal(ftruncate(fd, (off_t)bytes), 0);
	assert_int_equal(pwrite(fd, &h, n, 0), (ssize_t)n);
	close(fd);
}

static void test_create_layout(void **state)
{
	char err[256] = "", base[128];
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	const unsigned char *stb;
	struct stat st;
	int fd;

	(void)state;
	snprintf(base, sizeof(base), "%s/xdg", tmp);
	assert_int_equal(mkdir(base, 0700), 0);
	setenv("XDG_RUNTIME_DIR", base, 1);
	assert_true(region_create(&R, 4, CTP_HX_FREELIST | CTP_HX_FUTEX, err,
				  sizeof(err)));
	assert_true(R.owner);
	assert_int_equal(R.stations, 4);
	assert_int_equal(R.size, ctp_region_size(4));
	assert_memory_equal(R.dir, base, strlen(base)); /* under XDG */
	assert_int_equal(stat(R.dir, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(st.st_mode & 0777, 0700);
	assert_int_equal(lstat(R.shm_path, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(st.st_size, ctp_region_size(4));
	assert_int_equal(lstat(R.sock_path, &st), 0);
	assert_true(S_ISSOCK(st.st_mode));
	assert_int_equal(st.st_mode & 0077, 0);
	/* The header, as a probe reads it. */
	assert_true(R.hdr->magic == CTP_MAGIC);
	assert_int_equal(R.hdr->version, CTP_VERSION);
	assert_int_equal(R.hdr->max_stations, 4);
	assert_int_equal(atomic_load(&R.hdr->allocated_count), 0);
	assert_int_equal(atomic_load(&R.hdr->tracer_sleeping), 0);
	assert_int_equal(R.hdr->ext.magic, CTP_HX_MAGIC);
	assert_int_equal(R.hdr->ext.version, CTP_HX_VERSION);
	assert_int_equal(R.hdr->ext.size, sizeof(struct ctp_header_ext));
	assert_int_equal(R.hdr->ext.flags, CTP_HX_FREELIST | CTP_HX_FUTEX);
	assert_int_equal(R.hdr->ext.engine_pid, (uint32_t)getpid());
	assert_true(atomic_load(&R.hdr->ext.free_head) == 0);
	/* Stations start zeroed and are mapped writable to the end. */
	stb = (const unsigned char *)R.hdr + CTP_HEADER_SIZE;
	for (size_t i = 0; i < 4 * CTP_STATION_SIZE; i++)
		if (stb[i])
			fail_msg("station byte %zu is %u", i, stb[i]);
	((unsigned char *)R.hdr)[R.size - 1] = 1;
	/* The socket listens. */
	assert_true(strlen(R.sock_path) < sizeof(sa.sun_path));
	memcpy(sa.sun_path, R.sock_path, strlen(R.sock_path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	close(fd);
	assert_true(R.listen_fd >= 0);
}

/* Smallest group shift whose 7168-bit dirty map covers every station. */
static void test_create_dirty_shift(void **state)
{
	static const struct {
		uint32_t stations, shift;
	} cases[] = {{1, 0},	 {4, 0},     {7168, 0}, {7169, 1},
		     {14336, 1}, {14337, 2}, {28673, 3}};
	char err[256];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		uint32_t sh;

		assert_true(region_create(&R, cases[i].stations, CTP_HX_DIRTY,
					  err, sizeof(err)));
		sh = R.hdr->ext.dirty_shift;
		if (sh != cases[i].shift)
			fail_msg("%u stations: dirty_shift %u, want %u",
				 cases[i].stations, sh, cases[i].shift);
		/* Every station's group has a bit. */
		assert_true(((cases[i].stations - 1) >> sh) <
			    CTP_HX_DIRTY_WORDS * 64);
		for (unsigned w = 0; w < CTP_HX_DIRTY_WORDS; w++)
			assert_true(atomic_load(&R.hdr->ext.dirty[w]) == 0);
		region_finish(&R);
	}
}

static void test_finish_removes_everything(void **state)
{
	char err[256], dir[256], shm[320], sock[320];

	(void)state;
	assert_true(region_create(&R, 1, 0, err, sizeof(err)));
	snprintf(dir, sizeof(dir), "%s", R.dir);
	snprintf(shm, sizeof(shm), "%s", R.shm_path);
	snprintf(sock, sizeof(sock), "%s", R.sock_path);
	assert_false(gone(shm));
	region_finish(&R);
	assert_true(gone(shm));
	assert_true(gone(sock));
	assert_true(gone(dir));
	assert_null(R.hdr);
	assert_int_equal(R.listen_fd, -1);
	assert_false(R.owner);
}

static void test_create_rejects_counts(void **state)
{
	char err[256] = "";

	(void)state;
	assert_false(region_create(&R, 0, 0, err, sizeof(err)));
	assert_non_null(strstr(err, "out of range"));
	assert_null(R.hdr);
	err[0] = '\0';
	assert_false(region_create(&R, CTP_MAX_STATIONS_LIMIT + 1, 0, err,
				   sizeof(err)));
	assert_non_null(strstr(err, "1048577"));
}

static void test_base_dir_fallback(void **state)
{
	char err[256], base[128];

	(void)state;
	/* Not private (0755): not ours to use, fall back to /tmp. */
	snprintf(base, sizeof(base), "%s/open", tmp);
	assert_int_equal(mkdir(base, 0700), 0);
	assert_int_equal(chmod(base, 0755), 0);
	setenv("XDG_RUNTIME_DIR", base, 1);
	assert_true(region_create(&R, 1, 0, err, sizeof(err)));
	assert_memory_equal(R.dir, "/tmp/corotop.", 13);
	region_finish(&R);
	/* Not a directory. */
	snprintf(base, sizeof(base), "%s/file", tmp);
	make_file(base, 0, 0, 0, 1);
	setenv("XDG_RUNTIME_DIR", base, 1);
	assert_true(region_create(&R, 1, 0, err, sizeof(err)));
	assert_memory_equal(R.dir, "/tmp/corotop.", 13);
	region_finish(&R);
	/* Unset. */
	unsetenv("XDG_RUNTIME_DIR");
	assert_true(region_create(&R, 1, 0, err, sizeof(err)));
	assert_memory_equal(R.dir, "/tmp/corotop.", 13);
}

/*
 * Regression (fixed; was src/engine/ctp/region.c:42 with :54): region_base_dir
 * accepts an XDG_RUNTIME_DIR of up to 199 characters, but the socket
 * "<base>/corotop.XXXXXX/ctp.sock" must fit sockaddr_un.sun_path (108
 * bytes).  With a valid private base of ~90..199 characters region_create
 * fails ("socket path too long") instead of falling back to /tmp, so
 * corotop cannot launch anything.
 */
static void test_long_runtime_dir_still_works(void **state)
{
	char err[256] = "", base[160];

	(void)state;
	snprintf(base, sizeof(base), "%s/", tmp);
	while (strlen(base) < 120)
		strcat(base, "d");
	assert_int_equal(mkdir(base, 0700), 0);
	setenv("XDG_RUNTIME_DIR", base, 1);
	if (!region_create(&R, 1, 0, err, sizeof(err)))
		fail_msg("region_create failed: %s", err);
	assert_true(strlen(R.sock_path) <
		    sizeof(((struct sockaddr_un *)0)->sun_path));
}

static void test_open_created_region(void **state)
{
	char err[256];
	struct region o;
	int status;
	pid_t pid;

	(void)state;
	assert_true(region_create(&R, 3, CTP_HX_FREELIST, err, sizeof(err)));
	assert_true(region_open(&o, R.shm_path, err, sizeof(err)));
	assert_false(o.owner);
	assert_int_equal(o.listen_fd, -1);
	assert_int_equal(o.stations, 3);
	assert_int_equal(o.size, ctp_region_size(3));
	assert_true(o.hdr->magic == CTP_MAGIC);
	/* Shared: the observer sees the owner's writes. */
	atomic_store(&R.hdr->allocated_count, 2);
	assert_int_equal(atomic_load(&o.hdr->allocated_count), 2);
	/* Read-only: a store through the observer mapping faults. */
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		signal(SIGSEGV, SIG_DFL); /* not cmocka's handler: just die */
		((volatile unsigned char *)o.hdr)[CTP_HEADER_SIZE] = 1;
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_false(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	/* Finishing an observer leaves the owner's files alone. */
	region_finish(&o);
	assert_false(gone(R.shm_path));
	assert_false(gone(R.sock_path));
}

/*
 * Deep rings with room for hubs: the header says DEP2 and hub_depth, the
 * file holds 4,096 rings of REGION_HUB_DEPTH epochs, and an observer reads
 * the same.  Where a file that size is not allowed (RLIMIT_FSIZE under it,
 * as e2e-record sets), the region is made without hubs (DEP1), not
 * refused.
 */
static void test_create_hubs(void **state)
{
	char err[256];
	struct rlimit lim, old;
	struct region o;

	(void)state;
	assert_true(region_create_deep(&R, 4096, CTP_HX_FREELIST, 64, err,
				       sizeof(err)));
	assert_int_equal(R.hub_depth, REGION_HUB_DEPTH);
	assert_int_equal(R.deep->magic, CTP_DEEP_MAGIC_HUBS);
	assert_int_equal(R.deep->hub_depth, REGION_HUB_DEPTH);
	assert_int_equal(R.size, ctp_region_size(4096) +
					 ctp_deep_size(4096, REGION_HUB_DEPTH));
	assert_true(region_open(&o, R.shm_path, err, sizeof(err)));
	assert_int_equal(o.depth, 64);
	assert_int_equal(o.hub_depth, REGION_HUB_DEPTH);
	region_finish(&o);
	region_finish(&R);

	/* Too many stations for the budget: shorter hub rings, or none. */
	assert_true(region_create_deep(&R, 131072, CTP_HX_FREELIST, 64, err,
				       sizeof(err)));
	assert_int_equal(R.hub_depth, 0);
	assert_int_equal(R.deep->magic, CTP_DEEP_MAGIC);
	region_finish(&R);

	assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
	lim = (struct rlimit){40u << 20, old.rlim_max};
	signal(SIGXFSZ, SIG_IGN);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
	assert_true(region_create_deep(&R, 4096, CTP_HX_FREELIST, 64, err,
				       sizeof(err)));
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
	signal(SIGXFSZ, SIG_DFL);
	assert_int_equal(R.hub_depth, 0);
	assert_int_equal(R.deep->magic, CTP_DEEP_MAGIC);
	assert_int_equal(R.size,
			 ctp_region_size(4096) + ctp_deep_size(4096, 64));
}

static void expect_open_fails(const char *path, const char *why)
{
	char err[256] = "";
	struct region o;

	assert_false(region_open(&o, path, err, sizeof(err)));
	assert_null(o.hdr);
	if (!strstr(err, why))
		fail_msg("error '%s' lacks '%s'", err, why);
}

static void test_open_rejects(void **state)
{
	char p[6][128];

	(void)state;
	for (int i = 0; i < 6; i++)
		snprintf(p[i], sizeof(p[i]), "%s/f%d", tmp, i);
	make_file(p[0], 0x5452434F5254434Eull, 1, 4, ctp_region_size(4));
	expect_open_fails(p[0], "not a cTP v1 region");
	expect_open_fails(p[0], "0x5452434f5254434e"); /* names the magic */
	make_file(p[1], CTP_MAGIC, 2, 4, ctp_region_size(4));
	expect_open_fails(p[1], "version 2");
	make_file(p[2], CTP_MAGIC, 1, 4, 100); /* shorter than a header */
	expect_open_fails(p[2], "not a cTP region");
	make_file(p[3], CTP_MAGIC, 1, 4, 0);
	expect_open_fails(p[3], "not a cTP region");
	make_file(p[4], CTP_MAGIC, 1, 4, ctp_region_size(4));
	assert_int_equal(symlink(p[4], p[5]), 0);
	expect_open_fails(p[5], "cannot open");	    /* O_NOFOLLOW */
	expect_open_fails(tmp, "not a cTP region"); /* a directory */
	snprintf(p[5], sizeof(p[5]), "%s/missing", tmp);
	expect_open_fails(p[5], "cannot open");
	/* A FIFO with no writer: refused at once, not waited on. */
	unlink(p[5]);
	assert_int_equal(mkfifo(p[5], 0600), 0);
	expect_open_fails(p[5], "not a cTP region");
}

static void expect_stations(uint32_t max, uint64_t bytes, uint32_t want)
{
	char err[256], path[128];
	struct region o;

	snprintf(path, sizeof(path), "%s/lying", tmp);
	make_file(path, CTP_MAGIC, 1, max, bytes);
	if (!region_open(&o, path, err, sizeof(err)))
		fail_msg("region_open: %s", err);
	assert_int_equal(o.stations, want);
	assert_int_equal(o.size, ctp_region_size(want));
	/* Every mapped byte is readable: no SIGBUS past the file. */
	assert_int_equal(((volatile unsigned char *)o.hdr)[o.size - 1], 0);
	region_finish(&o);
}

static void test_open_bounds_lying_max(void **state)
{
	(void)state;
	expect_stations(1000, ctp_region_size(3), 3);
	expect_stations(UINT32_MAX, ctp_region_size(2), 2);
	expect_stations(2, ctp_region_size(3), 2);
	expect_stations(0, ctp_region_size(3), 0);
	expect_stations(8, ctp_region_size(2) + 512, 2); /* partial station */
	expect_stations(8, CTP_HEADER_SIZE, 0);
}

/* The file shrinks after region_open validated and mapped it. */
static void truncate_hook(const char *path)
{
	assert_int_equal(truncate(path, 0), 0);
}

/*
 * An observed region truncated while corotop starts: engine_create reads the
 * mapping (harvest set-up) under its SIGBUS guard and fails with a message;
 * it used to die of SIGBUS before the guard was installed.
 */
static void test_engine_survives_truncation_at_open(void **state)
{
	char path[128], err[256];
	struct engine_config cfg;
	struct engine *e;

	(void)state;
	snprintf(path, sizeof(path), "%s/shrinks.shm", tmp);
	make_file(path, CTP_MAGIC, CTP_VERSION, 8, ctp_region_size(8));
	engine_config_defaults(&cfg);
	cfg.shm_path = path;
	region_open_hook = truncate_hook;
	e = engine_create(&cfg, err, sizeof(err));
	region_open_hook = NULL;
	assert_null(e);
	assert_non_null(strstr(err, "truncated"));
	/* Untouched, the same file opens. */
	make_file(path, CTP_MAGIC, CTP_VERSION, 8, ctp_region_size(8));
	e = engine_create(&cfg, err, sizeof(err));
	assert_non_null(e);
	engine_destroy(e);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_create_layout),
		T(test_create_dirty_shift),
		T(test_finish_removes_everything),
		T(test_create_rejects_counts),
		T(test_base_dir_fallback),
		T(test_long_runtime_dir_still_works),
		T(test_open_created_region),
		T(test_create_hubs),
		T(test_open_rejects),
		T(test_open_bounds_lying_max),
		T(test_engine_survives_truncation_at_open),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
