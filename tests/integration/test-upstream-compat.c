/*
 * test-upstream-compat: corotop against the cTP programs already out in the
 * world, in both directions (UPSTREAM-FACTS.md).
 *
 * Concept.  Compatibility is a property of bytes in a shared file and of
 * the order they are written in, so each side is played by a separate
 * process that knows nothing of the other's code:
 *
 *   upstream SDK -> our engine
 *     upstream_writer.c writes like the shipped C++/Rust SDKs (per-slot +1/+2
 *     seqs, slot = event_count % 8, gettid per event, no station extension,
 *     plain is_dead, socket-only wakes) into a region our engine created.
 *     The engine must deliver every event, in order, with the slot-style
 *     event numbers, lose nothing, never recycle such a station (upstream
 *     never reuses one) and never write into its bytes; the writer's socket
 *     wakes must reach it (the writer waits for the engine to sleep, so
 *     one is certain, and for the engine to read it).
 *
 *   our probe -> upstream Go engine
 *     This test plays the Go engine: it lays the region out as that engine
 *     does (a plain file; magic, version, max_stations; no header extension:
 *     every reserved byte zero), listens on the socket, and reads slots the
 *     Go way (acquire seq, skip odd or <= last_seen, copy, re-check).  The
 *     writer (writer.c, the real probe) attaches through the environment.
 *     All events must be readable that way; the probe must not use a free
 *     list the region does not advertise (even when the bytes where it would
 *     live are not zero); it must wake the "Go engine" with the byte '1' on
 *     the socket exactly when tracer_sleeping == 1; and it must not write
 *     into the header's reserved bytes, which belong to the foreign engine.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "wire/freelist.h"
#include "engine/ctp/harvest.h"
#include "engine/engine.h"
#include "../common/itest.h"

#ifndef ITEST_WRITER
#error "ITEST_WRITER must name the writer program"
#endif

/* ---- upstream SDK -> our engine ---- */

static void test_upstream_sdk_into_our_engine(void **state)
{
	enum { M = 8, K = 300 };
	/* 2 ms after every round of 8 events; after every 400 events the
	 * writer waits until the engine is asleep, wakes it over the socket
	 * and waits until the engine read the byte (forced, upstream_writer.c
	 * WAKE_EVERY); and each round waits for the engine to deliver the one
	 * before (it_pace), so no ring can lap however slow the machine. */
	char ackfd[16];
	char *argv[] = {ITEST_UPSTREAM_WRITER,
			"seq",
			"8",
			"300",
			"8",
			"2000",
			"400",
			ackfd,
			NULL};
	int p[2];
	struct engine_config cfg;
	/* static: a failed test's teardown still reaches them */
	static struct it_pace pace;
	struct it_events *colp = &pace.col;
	unsigned next_e[M] = {0};
	uint32_t station[M];
	struct ctp_header *hdr;
	static struct it_run r;
	size_t size;
	int fd;

	(void)state;
	memset(&pace, 0, sizeof(pace));
	it_events_init(&pace.col);
	assert_int_equal(pipe(p), 0);
	fcntl(p[1], F_SETFD, FD_CLOEXEC); /* the writer keeps p[0] only */
	snprintf(ackfd, sizeof(ackfd), "%d", p[0]);
	pace.ack_w = p[1];
	pace.per_round = M;
	engine_config_defaults(&cfg);
	cfg.argv = argv;
	cfg.stations = 32;
	cfg.linger_ns = 600ull * 1000000000u;
	cfg.event_hook = it_pace_hook;
	cfg.hook_ctx = &pace;
	if (!it_run_target(&cfg, 60000, &r))
		fail_msg("engine: %s", r.err);
	close(p[0]);
	close(p[1]);
	if (!r.exited || r.exit_code != 0)
		fail_msg("upstream writer: exit %d %s", r.exit_code, r.err);
	/* Lost events here mean the engine slept through a socket wake and
	 * only woke at its own bound ("timeouts"). */
	print_message("upstream -> engine: harvested %zu, lost %llu, "
		      "socket wake bytes %llu, sleeps %llu, sleeps ended by "
		      "the bound %llu\n",
		      colp->n, (unsigned long long)r.snap.t.lost,
		      (unsigned long long)r.stats.uds_bytes,
		      (unsigned long long)r.stats.sleeps,
		      (unsigned long long)r.stats.timeouts);

	assert_int_equal(colp->n, M * K);
	assert_int_equal(r.snap.t.events, M * K);
	assert_int_equal(r.snap.t.lost, 0);
	assert_int_equal(r.snap.t.untraced, 0);
	for (size_t i = 0; i < colp->n; i++) {
		const struct harvest_event *ev = &colp->ev[i];
		uint64_t c = IT_ADDR_CORO(ev->addr);
		uint64_t e = IT_ADDR_EVENT(ev->addr);

		assert_true(c < M);
		assert_int_equal(e, next_e[c]);
		if (e == 0)
			station[c] = ev->station;
		assert_int_equal(ev->station, station[c]);
		/* Slot style: the k-th write to slot s is event 8(k-1)+s. */
		assert_int_equal(ev->n, e);
		assert_int_equal(ev->seq, 2 * (e / CTP_SLOTS) + 2);
		assert_int_equal(ev->probe_id, IT_PROBE_ID(c));
		assert_int_equal(ev->is_active, e & 1);
		assert_int_equal(ev->tid, (uint64_t)r.snap.target.pid);
		next_e[c]++;
	}
	for (unsigned c = 0; c < M; c++) {
		const struct model_coro *mc =
			it_find_coro(&r.snap, IT_PROBE_ID(c));

		assert_int_equal(next_e[c], K);
		assert_non_null(mc);
		assert_int_equal(mc->state, MODEL_DEAD); /* plain is_dead */
		assert_int_equal(mc->switches, K);
	}
	/* Upstream writers only know the socket: their wakes arrived (the
	 * writer forced at least one and saw it read before going on). */
	assert_true(r.stats.uds_bytes >= 1);

	/* Upstream stations are never reused, so never recycled, and the
	 * engine wrote nothing into them. */
	assert_int_equal(r.snap.t.recycled, 0);
	fd = open(engine_shm_path(r.e), O_RDONLY);
	assert_true(fd >= 0);
	size = (size_t)ctp_region_size(32);
	hdr = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	assert_true(hdr != MAP_FAILED);
	assert_int_equal((uint32_t)atomic_load(&hdr->ext.free_head), 0);
	/* M coroutine stations and the process station of the preload
	 * corotop started the writer with (docs/WIRE.md, "Processes") --
	 * none in a sanitizer build, whose corotop never preloads. */
	assert_int_equal(atomic_load(&hdr->allocated_count),
			 M + (it_sanitized() ? 0 : 1));
	for (unsigned c = 0; c < M; c++) {
		const struct ctp_station *s =
			(const struct ctp_station *)((const char *)hdr +
						     CTP_HEADER_SIZE) +
			station[c];

		for (size_t b = 0; b < sizeof(s->flexible); b++)
			assert_int_equal(s->flexible[b], 0);
	}
	munmap(hdr, size);
	it_run_finish(&r);
	it_events_free(&pace.col);
}

/* ---- our probe -> a region laid out by the upstream Go engine ---- */

struct goreg {
	char dir[256];
	char shm[300];
	char sock[300];
	struct ctp_header *hdr;
	struct ctp_station *st;
	size_t size;
	uint32_t max;
	int lfd;  /* listening socket */
	int conn; /* the probe's connection, once accepted */
	pid_t pid;
	int ctl, ack; /* writer ctl mode pipes (our ends) */
};

/* The region in use, so a failed test's teardown removes it. */
static struct goreg *goreg_current;
static unsigned *go_count; /* the Go-style reader's tallies */

static void goreg_create(struct goreg *g, uint32_t max)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd;

	memset(g, 0, sizeof(*g));
	g->lfd = g->conn = g->ctl = g->ack = -1;
	goreg_current = g;
	snprintf(g->dir, sizeof(g->dir), "/tmp/itest-go.XXXXXX");
	assert_true(strlen(g->dir) + 20 <
		    sizeof(((struct sockaddr_un *)0)->sun_path));
	assert_non_null(mkdtemp(g->dir));
	snprintf(g->shm, sizeof(g->shm), "%s/corotracer.shm", g->dir);
	snprintf(g->sock, sizeof(g->sock), "%s/corotracer.sock", g->dir);
	g->max = max;
	g->size = (size_t)ctp_region_size(max);
	/* A plain file, as the Go engine makes it. */
	fd = open(g->shm, O_RDWR | O_CREAT | O_EXCL, 0600);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)g->size), 0);
	g->hdr = mmap(NULL, g->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	assert_true(g->hdr != MAP_FAILED);
	g->st = (struct ctp_station *)((char *)g->hdr + CTP_HEADER_SIZE);
	/* Magic, version, max_stations; nothing in the reserved bytes. */
	g->hdr->magic = CTP_MAGIC;
	g->hdr->version = CTP_VERSION;
	g->hdr->max_stations = max;
	g->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(g->lfd >= 0);
	memcpy(sa.sun_path, g->sock, strlen(g->sock) + 1);
	assert_int_equal(bind(g->lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(g->lfd, 8), 0);
}

/* Start the writer with the Go engine's environment (ctl: with pipes). */
static void goreg_spawn(struct goreg *g, char **argv, bool ctl)
{
	int c[2] = {-1, -1}, a[2] = {-1, -1};
	char max[16];

	if (ctl) {
		assert_int_equal(pipe2(c, O_CLOEXEC), 0);
		assert_int_equal(pipe2(a, O_CLOEXEC), 0);
	}
	snprintf(max, sizeof(max), "%u", g->max);
	g->pid = fork();
	assert_true(g->pid >= 0);
	if (g->pid == 0) {
		char *ctl_argv[] = {ITEST_WRITER, "ctl", "10", "11", NULL};

		setenv(CTP_ENV_SHM, g->shm, 1);
		setenv(CTP_ENV_SOCK, g->sock, 1);
		setenv(CTP_ENV_MAX, max, 1);
		if (ctl) {
			/* Fixed numbers for the writer's argv.  Go through
			 * fds >= 100 first: the pipe may already sit on 10 or
			 * 11, and dup2 onto itself keeps close-on-exec. */
			int cr = fcntl(c[0], F_DUPFD, 100);
			int aw = fcntl(a[1], F_DUPFD, 100);

			if (cr < 0 || aw < 0 || dup2(cr, 10) < 0 ||
			    dup2(aw, 11) < 0)
				_exit(126);
			argv = ctl_argv;
		}
		execv(argv[0], argv);
		_exit(127);
	}
	if (ctl) {
		close(c[0]);
		close(a[1]);
		g->ctl = c[1];
		g->ack = a[0];
	}
}

static void goreg_accept(struct goreg *g)
{
	struct pollfd p = {.fd = g->lfd, .events = POLLIN};

	/* The probe connects when it attaches, at load time. */
	assert_int_equal(poll(&p, 1, 60000), 1);
	g->conn = accept4(g->lfd, NULL, NULL, SOCK_CLOEXEC);
	assert_true(g->conn >= 0);
}

/* Send one ctl command and wait for its acknowledgement. */
static void goreg_cmd(struct goreg *g, char cmd)
{
	struct pollfd p = {.fd = g->ack, .events = POLLIN};
	char k = 0;

	assert_int_equal(write(g->ctl, &cmd, 1), 1);
	if (cmd == 'q')
		return;
	assert_int_equal(poll(&p, 1, 60000), 1);
	assert_int_equal(read(g->ack, &k, 1), 1);
	assert_int_equal(k, 'k');
}

static void goreg_quit(struct goreg *g, char *stats, size_t len)
{
	int status;

	goreg_cmd(g, 'q');
	assert_true(it_read_line(g->ack, stats, len, 60000) > 0);
	assert_int_equal(it_wait_pid(g->pid, 60000, &status), 0);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	g->pid = 0;
}

static void goreg_destroy(struct goreg *g)
{
	int status;

	if (g->pid > 0) {
		kill(g->pid, SIGKILL);
		waitpid(g->pid, &status, 0);
	}
	if (g->ctl >= 0)
		close(g->ctl);
	if (g->ack >= 0)
		close(g->ack);
	if (g->conn >= 0)
		close(g->conn);
	if (g->lfd >= 0)
		close(g->lfd);
	if (g->hdr && g->hdr != MAP_FAILED)
		munmap(g->hdr, g->size);
	unlink(g->shm);
	unlink(g->sock);
	rmdir(g->dir);
	if (goreg_current == g)
		goreg_current = NULL;
}

static int teardown_goreg(void **state)
{
	(void)state;
	if (goreg_current)
		goreg_destroy(goreg_current);
	free(go_count);
	go_count = NULL;
	return 0;
}

static unsigned long stats_field(const char *stats, const char *key)
{
	const char *p = strstr(stats, key);

	assert_non_null(p);
	return strtoul(p + strlen(key), NULL, 10);
}

static void assert_reserved_zero(const struct ctp_header *hdr)
{
	for (size_t b = 0; b < sizeof(hdr->_reserved); b++) {
		if (hdr->_reserved[b])
			print_error("header reserved byte 0x%zx (offset 0x%zx "
				    "in the header) is 0x%02x, not 0\n",
				    b,
				    b + offsetof(struct ctp_header, _reserved),
				    hdr->_reserved[b]);
		assert_int_equal(hdr->_reserved[b], 0);
	}
}

/*
 * One pass of the Go engine's reader over every allocated station.  Calls
 * seen() for each new complete copy.  Returns the copies taken.
 */
static size_t go_scan(struct goreg *g, uint64_t (*last_seen)[CTP_SLOTS],
		      unsigned *count, unsigned ncoro, unsigned k)
{
	uint32_t alloc = atomic_load_explicit(&g->hdr->allocated_count,
					      memory_order_acquire);
	size_t got = 0;

	if (alloc > g->max)
		alloc = g->max;
	for (uint32_t i = 0; i < alloc; i++) {
		for (unsigned s = 0; s < CTP_SLOTS; s++) {
			struct ctp_epoch *e = &g->st[i].slots[s];
			uint64_t seq, again, addr, c, ev;
			uint8_t active;

			seq = atomic_load_explicit(&e->seq,
						   memory_order_acquire);
			if ((seq & 1) || seq <= last_seen[i][s])
				continue;
			addr = __atomic_load_n(&e->addr, __ATOMIC_RELAXED);
			active = __atomic_load_n(&e->is_active,
						 __ATOMIC_RELAXED);
			atomic_thread_fence(memory_order_acquire);
			again = atomic_load_explicit(&e->seq,
						     memory_order_relaxed);
			if (again != seq)
				continue;
			last_seen[i][s] = seq;
			c = IT_ADDR_CORO(addr);
			ev = IT_ADDR_EVENT(addr);
			assert_true(c < ncoro && ev < k);
			assert_int_equal(active, ev & 1);
			assert_int_equal(__atomic_load_n(&g->st[i].probe_id,
							 __ATOMIC_RELAXED),
					 IT_PROBE_ID(c));
			/* Exactly once. */
			assert_int_equal(count[c * k + ev], 0);
			count[c * k + ev]++;
			got++;
		}
	}
	return got;
}

static void test_probe_into_go_region_read_go_style(void **state)
{
	enum { M = 8, K = 300, MAX = 16 };
	/* The writer waits for a byte on ackfd after every round of M events
	 * (one per coroutine), and this reader writes one for each round it
	 * has read whole: the writer is never more than a round ahead, so a
	 * polling reader with no loss accounting is never lapped, however
	 * slow the machine or whichever process it runs first. */
	char ackfd[16];
	char *argv[] = {ITEST_WRITER, "seq", "8", "300", "8", "0", ackfd, NULL};
	uint64_t last_seen[MAX][CTP_SLOTS] = {{0}};
	unsigned *count = go_count = calloc(M * K, sizeof(*count));
	uint64_t end = it_now() + 60000000000ull;
	size_t got = 0, acked = 0, stalled = 0;
	static struct goreg g; /* static: reachable from the teardown */
	int status = 0, p[2];
	bool exited = false;

	(void)state;
	assert_non_null(count);
	assert_int_equal(pipe(p), 0);
	fcntl(p[1], F_SETFD, FD_CLOEXEC); /* the writer keeps p[0] only */
	snprintf(ackfd, sizeof(ackfd), "%d", p[0]);
	goreg_create(&g, MAX);
	goreg_spawn(&g, argv, false);
	close(p[0]);
	goreg_accept(&g);
	/* The Go engine polls; loop until the writer is gone, then once more
	 * so nothing written last is missed. */
	while (it_now() < end) {
		bool done = exited;

		if (!exited && waitpid(g.pid, &status, WNOHANG) == g.pid) {
			exited = true;
			g.pid = 0;
		}
		/* Every 50 rounds the reader stalls for 100 ms before it
		 * reads, as a descheduled one does: the writer must wait for
		 * it, not lap it (paced by time, 5 ms a round, it wrote 20
		 * rounds into 8 slots meanwhile). */
		if (got && got % (50 * M) == 0 && got / M != stalled) {
			stalled = got / M;
			it_sleep_ms(100);
		}
		got += go_scan(&g, last_seen, count, M, K);
		for (; acked + M <= got; acked += M)
			assert_int_equal(write(p[1], "k", 1), 1);
		if (done)
			break;
		it_sleep_us(50);
	}
	close(p[1]);
	print_message("probe -> Go-style reader: %zu of %d events read\n", got,
		      M * K);
	assert_true(exited);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0); /* 77: probe not attached */
	assert_int_equal(got, M * K);
	for (unsigned i = 0; i < M * K; i++)
		assert_int_equal(count[i], 1);
	/* One fresh station per coroutine, nothing in the reserved bytes. */
	assert_int_equal(atomic_load(&g.hdr->allocated_count), M);
	assert_int_equal(atomic_load(&g.hdr->tracer_sleeping), 0);
	assert_reserved_zero(g.hdr);
	for (unsigned c = 0; c < M; c++)
		assert_int_equal(atomic_load(&g.st[c].is_dead), 1);
	goreg_destroy(&g);
	free(count);
	go_count = NULL;
}

static void test_probe_wakes_go_engine_over_socket(void **state)
{
	struct pollfd p;
	char stats[256], byte = 0;
	static struct goreg g; /* static: reachable from the teardown */

	(void)state;
	goreg_create(&g, 16);
	goreg_spawn(&g, NULL, true);
	goreg_accept(&g);
	goreg_cmd(&g, 'o');
	/* Engine awake: a write must not send anything. */
	goreg_cmd(&g, 'w');
	p = (struct pollfd){.fd = g.conn, .events = POLLIN};
	assert_int_equal(poll(&p, 1, 100), 0);
	for (int round = 0; round < 3; round++) {
		/* The Go engine goes to sleep on the socket... */
		atomic_store(&g.hdr->tracer_sleeping, 1);
		goreg_cmd(&g, 'w');
		/* ...and the probe's next write wakes it with one '1'. */
		p = (struct pollfd){.fd = g.conn, .events = POLLIN};
		assert_int_equal(poll(&p, 1, 60000), 1);
		assert_int_equal(read(g.conn, &byte, 1), 1);
		assert_int_equal(byte, '1');
		assert_int_equal(atomic_load(&g.hdr->tracer_sleeping), 0);
		/* Exactly one byte per sleep. */
		goreg_cmd(&g, 'w');
		assert_int_equal(poll(&p, 1, 50), 0);
	}
	/* A second coroutine after the first died: a fresh station, since
	 * this region has no free list. */
	goreg_cmd(&g, 'c');
	goreg_cmd(&g, 'o');
	goreg_cmd(&g, 'w');
	goreg_quit(&g, stats, sizeof(stats));
	print_message("writer: %s\n", stats);
	assert_int_equal(stats_field(stats, "wakes="), 3);
	assert_int_equal(stats_field(stats, "recycled="), 0);
	assert_int_equal(stats_field(stats, "untraced="), 0);
	assert_int_equal(atomic_load(&g.hdr->allocated_count), 2);
	assert_int_equal(g.st[0].probe_id, IT_PROBE_ID(0));
	assert_int_equal(g.st[1].probe_id, IT_PROBE_ID(1));
	assert_reserved_zero(g.hdr);
	goreg_destroy(&g);
}

static void test_probe_ignores_free_list_without_extension(void **state)
{
	char stats[256];
	static struct goreg g; /* static: reachable from the teardown */
	uint64_t stale;

	(void)state;
	goreg_create(&g, 16);
	/* Bytes where corotop's free list would live say "station 1 is
	 * free", but no extension magic: they mean nothing here. */
	stale = freelist_pack(5, 2);
	atomic_store(&g.hdr->ext.free_head, stale);
	goreg_spawn(&g, NULL, true);
	goreg_accept(&g);
	goreg_cmd(&g, 'o');
	goreg_cmd(&g, 'w');
	goreg_cmd(&g, 'c');
	goreg_cmd(&g, 'o');
	goreg_cmd(&g, 'w');
	goreg_cmd(&g, 'c');
	goreg_quit(&g, stats, sizeof(stats));
	assert_int_equal(stats_field(stats, "recycled="), 0);
	assert_int_equal(stats_field(stats, "opened="), 2);
	/* Both coroutines took fresh stations through the cursor, in order:
	 * station 0 for the first (a pop would have given it station 1). */
	assert_int_equal(atomic_load(&g.hdr->allocated_count), 2);
	assert_int_equal(g.st[0].probe_id, IT_PROBE_ID(0));
	assert_int_equal(g.st[1].probe_id, IT_PROBE_ID(1));
	assert_int_equal(atomic_load(&g.hdr->ext.free_head), stale);
	goreg_destroy(&g);
}

static void test_probe_leaves_foreign_reserved_bytes_alone(void **state)
{
	char stats[256];
	static struct goreg g; /* static: reachable from the teardown */

	(void)state;
	/* Two stations, four coroutines: two must go untraced, silently, as
	 * with the upstream SDKs (UPSTREAM-FACTS: "new coroutines go untraced
	 * without any error").  The region is the Go engine's: corotop may
	 * count that in its own process, not in the foreign header. */
	goreg_create(&g, 2);
	goreg_spawn(&g, NULL, true);
	goreg_accept(&g);
	for (int i = 0; i < 4; i++)
		goreg_cmd(&g, 'o');
	goreg_cmd(&g, 'w');
	goreg_quit(&g, stats, sizeof(stats));
	print_message("writer: %s\n", stats);
	assert_int_equal(stats_field(stats, "opened="), 2);
	assert_true(stats_field(stats, "untraced=") >= 2);
	assert_true(atomic_load(&g.hdr->allocated_count) >= 2);
	assert_reserved_zero(g.hdr);
	goreg_destroy(&g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_upstream_sdk_into_our_engine,
					  it_teardown_run),
		cmocka_unit_test_teardown(
			test_probe_into_go_region_read_go_style,
			teardown_goreg),
		cmocka_unit_test_teardown(
			test_probe_wakes_go_engine_over_socket, teardown_goreg),
		cmocka_unit_test_teardown(
			test_probe_ignores_free_list_without_extension,
			teardown_goreg),
		cmocka_unit_test_teardown(
			test_probe_leaves_foreign_reserved_bytes_alone,
			teardown_goreg),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
