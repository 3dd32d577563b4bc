/*
 * probe: libcorotop-probe (static build) against real region files.  Each
 * test creates a region with the engine's region_create, points the CTP_*
 * environment at it, attaches with corotop_probe_init() (the constructor
 * already ran once at load, with no environment) and then reads the station
 * bytes the probe wrote through the engine's own mapping: seqs, payload,
 * tid, timestamps, is_dead, next_n, gen.  Also: running out of stations,
 * retry after the engine frees one, wakeups, refusing bad regions, and
 * what a transition keeps in the coroutine's struct, traced or not.
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
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "wire/freelist.h"
#include "corotop/probe.h"
#include "engine/ctp/region.h"
#include "probe/probe_internal.h"

#include "probe-fixture.h"

/* The region of the running test: static, so teardown can remove it when an
 * assertion leaves the test early. */
static int loaded_live = -1;
static char loaded_status[200];

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t my_tid(void)
{
	return (uint64_t)syscall(SYS_gettid);
}

/* A region of `max` stations with extension flags, probe attached. */
static void attach(struct region *r, uint32_t max, uint32_t flags)
{
	probe_fixture_attach(r, max, flags);
	assert_int_equal(corotop_probe_live_, 1);
	assert_string_equal(corotop_probe_status(), "");
}

static struct corotop_probe_stats stats(void)
{
	struct corotop_probe_stats s;

	corotop_probe_stats(&s);
	return s;
}

static void test_loaded_without_env(void **state)
{
	(void)state;
	/* The constructor ran at load; main() made sure no CTP_* was set. */
	assert_int_equal(loaded_live, 0);
	assert_true(strlen(loaded_status) > 0);
	assert_non_null(strstr(loaded_status, "CTP_"));
}

static void test_missing_env_records_are_noops(void **state)
{
	struct corotop_coro c;
	struct corotop_probe_stats before = stats(), after;

	(void)state;
	clear_env();
	setenv(CTP_ENV_SHM, "/nonexistent", 1); /* only one of three */
	assert_false(corotop_probe_init());
	assert_int_equal(corotop_probe_live_, 0);
	assert_true(strlen(corotop_probe_status()) > 0);
	corotop_coro_open(&c, 42);
	assert_null(c.station);
	assert_true(c.probe_id == 42);
	corotop_coro_resume(&c, 1);
	corotop_coro_suspend(&c, 2);
	corotop_coro_close(&c);
	after = stats();
	assert_memory_equal(&before, &after, sizeof(before));
}

/* Records the suspend from a frame of its own, so the frame record the
 * probe keeps can be checked against it. */
static __attribute__((noinline)) void park_here(struct corotop_coro *c)
{
	corotop_coro_suspend(c, 0x22);
	__asm__ volatile("" ::: "memory"); /* not a tail call */
}

/* Untraced, a transition only keeps itself in the struct (census.c reads
 * it at a late attach): when, on which thread, where, the state, and at a
 * suspend the caller's frame record.  Traced, the same, with the event's
 * own time. */
static void test_untraced_keeps_state(void **state)
{
	struct corotop_coro c;
	struct corotop_probe_stats before = stats(), after;
	uint64_t t0 = now_ns(), t1;
	struct ctp_station *s;

	(void)state;
	clear_env();
	corotop_coro_open(&c, 7);
	assert_true(c.birth_ts >= t0 && c.birth_ts <= now_ns());
	assert_true(c.reg != 0);
	assert_int_equal(c.last_ts, 0);
	corotop_coro_resume(&c, 0x11);
	t1 = now_ns();
	assert_true(c.last_ts >= c.birth_ts && c.last_ts <= t1);
	assert_int_equal(c.last_active, 1);
	assert_int_equal(c.last_addr, 0x11);
	assert_true(c.last_tid == my_tid());
	park_here(&c);
	assert_int_equal(c.last_active, 0);
	assert_int_equal(c.last_addr, 0x22);
	/* The return address into park_here, its frame above the probe's. */
	assert_true(c.park_pc > (uint64_t)(uintptr_t)park_here &&
		    c.park_pc < (uint64_t)(uintptr_t)park_here + 256);
	assert_true(c.park_fp >= c.park_sp && c.park_sp != 0);
	corotop_coro_close(&c);
	assert_int_equal(c.reg, 0);
	after = stats();
	assert_memory_equal(&before, &after, sizeof(before));
	/* Traced: the note carries the event's own time. */
	attach(&R, 4, CTP_HX_FREELIST);
	s = station(&R, P0);
	corotop_coro_open(&c, 8);
	corotop_coro_resume(&c, 0x33);
	assert_true(c.last_ts == s->slots[0].timestamp);
	assert_int_equal(c.last_addr, 0x33);
	corotop_coro_close(&c);
	corotop_probe_shutdown();
	region_finish(&R);
}

static void test_init_attaches_and_is_idempotent(void **state)
{

	(void)state;
	attach(&R, 4, CTP_HX_FREELIST);
	/* Again, even with a broken environment: a no-op that stays live. */
	setenv(CTP_ENV_MAX, "garbage", 1);
	assert_true(corotop_probe_init());
	assert_string_equal(corotop_probe_status(), "");
	corotop_probe_shutdown();
	assert_int_equal(corotop_probe_live_, 0);
	assert_string_equal(corotop_probe_status(), "shut down");
	region_finish(&R);
}

static void test_record_writes_station(void **state)
{
	struct corotop_coro c;
	struct ctp_station *s;
	uint64_t t0, t1, prev_ts = 0;

	(void)state;
	attach(&R, 4, CTP_HX_FREELIST);
	s = station(&R, P0);
	t0 = now_ns();
	corotop_coro_open(&c, 0x1234);
	/* The probe has its own mapping of the file: compare by index. */
	assert_non_null(c.station);
	assert_int_equal(c.index, P0);
	assert_int_equal(atomic_load(&R.hdr->allocated_count), P0 + 1);
	assert_true(s->probe_id == 0x1234);
	assert_true(s->birth_ts >= t0 && s->birth_ts <= now_ns());
	assert_int_equal(s->ext.magic, CTP_STX_MAGIC);
	assert_int_equal(s->ext.flags, CTP_STX_SEQ_STATION);
	assert_true(atomic_load(&s->ext.gen) == 1);
	assert_true(s->ext.first_n == 0);
	assert_int_equal(atomic_load(&s->is_dead), 0);
	for (uint64_t n = 0; n < 10; n++)
		corotop_coro_record(&c, (int)(n % 2 == 0), 0x1000 + n);
	t1 = now_ns();
	/* Slot k holds the newest n with n % 8 == k: 8, 9, 2..7. */
	for (uint64_t n = 2; n < 10; n++) {
		struct ctp_epoch *e = &s->slots[n % CTP_SLOTS];

		assert_true(atomic_load(&e->seq) == 2 * n + 2);
		assert_true(e->addr == 0x1000 + n);
		assert_int_equal(e->is_active, n % 2 == 0);
		assert_true(e->tid == my_tid());
		assert_true(e->timestamp >= s->birth_ts && e->timestamp <= t1);
		assert_true(e->timestamp >= prev_ts); /* monotonic in n */
		prev_ts = e->timestamp;
	}
	assert_true(c.n == 10);
	corotop_coro_close(&c);
	assert_null(c.station);
	assert_int_equal(atomic_load(&s->is_dead), 1);
	assert_true(s->ext.next_n == 10);
	assert_true(stats().opened == 1);
	assert_true(stats().untraced == 0);
	corotop_probe_shutdown();
	region_finish(&R);
}

/* The event flags byte of event n on station s (slots[]). */
static uint8_t ev_flags(const struct ctp_station *s, uint64_t n)
{
	return s->slots[n % CTP_SLOTS].reserved[CTP_EPOCH_FLAGS_OFFSET];
}

/* Long waits (issue 16): corotop_coro_suspend_long marks its own suspend
 * only; corotop_coro_set_long_waits marks every suspend until turned off;
 * a resume never carries the mark; a reused slot loses an earlier mark;
 * open forgets the setting; untraced, the struct keeps the answer for the
 * census; a switch marks from's suspend by from's setting. */
static void test_long_wait_flags(void **state)
{
	struct corotop_coro c, d;
	struct ctp_station *s;

	(void)state;
	clear_env();
	corotop_coro_open(&c, 5);
	corotop_coro_resume(&c, 0x1);
	corotop_coro_suspend_long(&c, 0x2);
	assert_int_equal(c.last_long, 1);
	assert_int_equal(c.long_next, 0);
	corotop_coro_resume(&c, 0x3);
	assert_int_equal(c.last_long, 0);
	corotop_coro_close(&c);

	attach(&R, 4, CTP_HX_FREELIST);
	s = station(&R, P0);
	corotop_coro_open(&c, 6);
	corotop_coro_resume(&c, 0x1);	    /* 0 */
	corotop_coro_suspend_long(&c, 0x2); /* 1: marked */
	corotop_coro_resume(&c, 0x3);	    /* 2 */
	corotop_coro_suspend(&c, 0x4);	    /* 3: the mark was spent */
	assert_int_equal(ev_flags(s, 0), 0);
	assert_int_equal(ev_flags(s, 1), CTP_EPF_LONG_WAIT);
	assert_int_equal(ev_flags(s, 2), 0);
	assert_int_equal(ev_flags(s, 3), 0);
	corotop_coro_set_long_waits(&c, true);
	corotop_coro_resume(&c, 0x5);	  /* 4 */
	corotop_coro_suspend(&c, 0x6);	  /* 5: marked */
	corotop_coro_resume(&c, 0x7);	  /* 6 */
	corotop_coro_suspend_pc(&c, 0x8); /* 7: marked */
	assert_int_equal(ev_flags(s, 4), 0);
	assert_int_equal(ev_flags(s, 5), CTP_EPF_LONG_WAIT);
	assert_int_equal(ev_flags(s, 6), 0);
	assert_int_equal(ev_flags(s, 7), CTP_EPF_LONG_WAIT);
	corotop_coro_set_long_waits(&c, false);
	corotop_coro_resume(&c, 0x9);  /* 8 */
	corotop_coro_suspend(&c, 0xa); /* 9, in slot 1 that held a mark */
	assert_true(atomic_load(&s->slots[1].seq) == ctp_event_seq(9));
	assert_int_equal(ev_flags(s, 9), 0);
	corotop_coro_suspend_long_pc(&c, 0xb); /* 10 */
	assert_int_equal(ev_flags(s, 10), CTP_EPF_LONG_WAIT);
	assert_true(s->slots[10 % CTP_SLOTS].addr == 0xc);
	/* A switch: from's suspend by from's setting, to's resume never. */
	corotop_coro_open(&d, 7);
	corotop_coro_set_long_waits(&c, true);
	corotop_coro_switch_(&c, &d, 0xd); /* c: 11 */
	assert_int_equal(ev_flags(s, 11), CTP_EPF_LONG_WAIT);
	assert_int_equal(station(&R, d.index)->slots[0].is_active, 1);
	assert_int_equal(
		station(&R, d.index)->slots[0].reserved[CTP_EPOCH_FLAGS_OFFSET],
		0);
	corotop_coro_close(&d);
	/* A context of its own: every event says so, with the other flags;
	 * a declared stack implies it. */
	corotop_coro_set_context(&c);
	corotop_coro_resume(&c, 0xe); /* c: 12 */
	assert_int_equal(ev_flags(s, 12), CTP_EPF_CONTEXT);
	corotop_coro_suspend(&c, 0xf); /* c: 13 */
	assert_int_equal(ev_flags(s, 13), CTP_EPF_CONTEXT | CTP_EPF_LONG_WAIT);
	/* Open forgets the settings. */
	corotop_coro_close(&c);
	corotop_coro_open(&c, 8);
	assert_int_equal(c.settings, 0);
	corotop_coro_set_stack(&c, (void *)0x10000, (void *)0x20000);
	corotop_coro_resume(&c, 0x10);
	assert_int_equal(
		station(&R, c.index)->slots[0].reserved[CTP_EPOCH_FLAGS_OFFSET],
		CTP_EPF_CONTEXT);
	corotop_coro_close(&c);
	corotop_probe_shutdown();
	region_finish(&R);
}

static void test_probe_id_zero_uses_address(void **state)
{
	struct corotop_coro c;

	(void)state;
	attach(&R, 2, 0);
	corotop_coro_open(&c, 0);
	assert_true(station(&R, P0)->probe_id == (uint64_t)(uintptr_t)&c);
	corotop_probe_shutdown();
	region_finish(&R);
}

static void *thread_record(void *arg)
{
	corotop_coro_resume(arg, 7);
	return (void *)(uintptr_t)my_tid();
}

static void test_tid_of_recording_thread(void **state)
{
	struct corotop_coro c;
	pthread_t th;
	void *ret;

	(void)state;
	attach(&R, 2, 0);
	corotop_coro_open(&c, 5);
	corotop_coro_resume(&c, 1);
	assert_int_equal(pthread_create(&th, NULL, thread_record, &c), 0);
	assert_int_equal(pthread_join(th, &ret), 0);
	assert_true(station(&R, P0)->slots[0].tid == my_tid());
	assert_true(station(&R, P0)->slots[1].tid == (uint64_t)(uintptr_t)ret);
	assert_true(station(&R, P0)->slots[1].tid != my_tid());
	corotop_probe_shutdown();
	region_finish(&R);
}

static void test_untraced_when_stations_run_out(void **state)
{
	struct corotop_coro a, b, c;
	uint64_t u0;

	(void)state;
	attach(&R, P0 + 2, CTP_HX_FREELIST);
	corotop_coro_open(&a, 1);
	corotop_coro_open(&b, 2);
	assert_non_null(a.station);
	assert_non_null(b.station);
	assert_true(stats().untraced == 0);
	corotop_coro_open(&c, 3);
	assert_null(c.station);
	u0 = stats().untraced;
	assert_true(u0 == 0); /* untraced counts transitions, not opens */
	for (int i = 0; i < 3; i++)
		corotop_coro_resume(&c, 0);
	assert_true(stats().untraced == u0 + 3);
	assert_true(atomic_load(&R.hdr->ext.untraced) == stats().untraced);
	/* A full region does not keep bumping the allocation cursor. */
	assert_int_equal(atomic_load(&R.hdr->allocated_count), P0 + 2);
	assert_true(stats().opened == 2);
	corotop_probe_shutdown();
	region_finish(&R);
}

static void test_untraced_retries_after_free(void **state)
{
	struct corotop_coro a, b, c;
	struct ctp_station *s0;

	(void)state;
	attach(&R, P0 + 2, CTP_HX_FREELIST);
	s0 = station(&R, P0);
	corotop_coro_open(&a, 0xA);
	corotop_coro_open(&b, 0xB);
	corotop_coro_open(&c, 0xC);
	assert_null(c.station);
	for (int i = 0; i < 3; i++)
		corotop_coro_resume(&a, 0);
	corotop_coro_close(&a);
	/* The engine harvested it and recycles it (K). */
	freelist_push(R.hdr, station(&R, 0), P0);
	corotop_coro_suspend(&c, 0x77);
	assert_non_null(c.station);
	assert_int_equal(c.index, P0);
	assert_true(s0->probe_id == 0xC);
	assert_true(atomic_load(&s0->ext.gen) == 2);
	assert_true(s0->ext.first_n == 3); /* continues a's numbering */
	assert_int_equal(atomic_load(&s0->is_dead), 0);
	assert_true(atomic_load(&s0->slots[3].seq) == ctp_event_seq(3));
	assert_true(s0->slots[3].addr == 0x77);
	assert_true(stats().recycled == 1);
	assert_true(stats().opened == 3);
	assert_int_equal((uint32_t)atomic_load(&R.hdr->ext.free_head), 0);
	corotop_probe_shutdown();
	region_finish(&R);
}

static void test_no_freelist_without_extension_flag(void **state)
{
	struct corotop_coro a, c;

	(void)state;
	attach(&R, P0 + 1, 0); /* engine does not recycle: never pop */
	corotop_coro_open(&a, 0xA);
	corotop_coro_close(&a);
	freelist_push(R.hdr, station(&R, 0), P0);
	corotop_coro_open(&c, 0xC);
	corotop_coro_resume(&c, 0);
	assert_null(c.station);
	assert_true(stats().recycled == 0);
	corotop_probe_shutdown();
	region_finish(&R);
}

/*
 * Regression (fixed; was src/probe/coro.c:119-125, coro_untraced): with a
 * region created by another engine (no ctp_header_ext magic) the probe still
 * does fetch_add(&hdr->ext.untraced), writing into ctp_header._reserved, bytes
 * ctp.h says a corotop probe leaves alone there ("behaves exactly like the
 * upstream SDKs").  Fixed: coro_untraced checks the header
 * extension (as probe_map does for hx_flags).
 */
static void test_foreign_region_reserved_untouched(void **state)
{
	struct corotop_coro a, c;
	static const uint8_t zero[1000];

	(void)state;
	assert_true(region_create(&R, 1, 0, (char[128]){0}, 128));
	memset(R.hdr->_reserved, 0, sizeof(R.hdr->_reserved));
	set_env(R.shm_path, R.sock_path, "1");
	assert_true(corotop_probe_init());
	corotop_coro_open(&a, 0xA);
	corotop_coro_open(&c, 0xC);
	corotop_coro_resume(&c, 0);
	assert_true(stats().untraced >= 1);
	assert_memory_equal(R.hdr->_reserved, zero, sizeof(zero));
	corotop_probe_shutdown();
	region_finish(&R);
}

static void test_wake_through_socket(void **state)
{
	struct corotop_coro c;
	char byte = 0;
	int fd;

	(void)state;
	attach(&R, 2, CTP_HX_FREELIST); /* no FUTEX: the socket is used */
	fd = accept4(R.listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	assert_true(fd >= 0);
	corotop_coro_open(&c, 1);
	corotop_coro_resume(&c, 0); /* engine awake: no wake */
	assert_true(stats().wakes == 0);
	assert_int_equal(recv(fd, &byte, 1, 0), -1);
	atomic_store(&R.hdr->tracer_sleeping, 1);
	corotop_coro_suspend(&c, 0);
	assert_int_equal(atomic_load(&R.hdr->tracer_sleeping), 0);
	assert_true(stats().wakes == 1);
	assert_int_equal(recv(fd, &byte, 1, 0), 1);
	assert_int_equal(byte, '1');
	/* close also wakes a sleeping engine. */
	atomic_store(&R.hdr->tracer_sleeping, 1);
	corotop_coro_close(&c);
	assert_int_equal(atomic_load(&R.hdr->tracer_sleeping), 0);
	assert_true(stats().wakes == 2);
	close(fd);
	corotop_probe_shutdown();
	region_finish(&R);
}

static void test_wake_futex_no_socket_byte(void **state)
{
	struct corotop_coro c;
	char byte;
	int fd;

	(void)state;
	attach(&R, 2, CTP_HX_FREELIST | CTP_HX_FUTEX);
	fd = accept4(R.listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	assert_true(fd >= 0);
	corotop_coro_open(&c, 1);
	atomic_store(&R.hdr->tracer_sleeping, 1);
	corotop_coro_resume(&c, 0);
	assert_int_equal(atomic_load(&R.hdr->tracer_sleeping), 0);
	assert_true(stats().wakes == 1);
	assert_int_equal(recv(fd, &byte, 1, 0), -1);
	assert_int_equal(errno, EAGAIN);
	close(fd);
	corotop_probe_shutdown();
	region_finish(&R);
}

static uint64_t dirty0(void)
{
	return atomic_load(&R.hdr->ext.dirty[0]);
}

static void test_dirty_marks(void **state)
{
	struct corotop_coro c[7], d;

	(void)state;
	attach(&R, 12, CTP_HX_FREELIST | CTP_HX_DIRTY);
	assert_int_equal(R.hdr->ext.dirty_shift, 0);
	/* The process station (0) was published: marked. */
	assert_true(dirty0() == 1u);
	atomic_store(&R.hdr->ext.dirty[0], 0);
	for (int i = 0; i < 6; i++)
		corotop_coro_open(&c[i], 1 + (uint64_t)i); /* open marks (P) */
	assert_true(dirty0() == 0x7E);
	atomic_store(&R.hdr->ext.dirty[0], 0); /* the engine collects */
	corotop_coro_resume(&c[4], 0);
	assert_true(dirty0() == 1u << (P0 + 4));
	corotop_coro_suspend(&c[4], 0); /* already set: stays as is */
	assert_true(dirty0() == 1u << (P0 + 4));
	atomic_store(&R.hdr->ext.dirty[0], 0);
	corotop_coro_close(&c[2]);
	assert_true(dirty0() == 1u << (P0 + 2));
	for (unsigned w = 1; w < CTP_HX_DIRTY_WORDS; w++)
		assert_true(atomic_load(&R.hdr->ext.dirty[w]) == 0);
	/* Groups of 4 stations: the new attach's process station is 7
	 * (group 1), the coroutine's 8 (group 2). */
	corotop_probe_shutdown();
	R.hdr->ext.dirty_shift = 2;
	atomic_store(&R.hdr->ext.dirty[0], 0);
	assert_true(corotop_probe_init());
	assert_true(dirty0() == 1u << 1);
	atomic_store(&R.hdr->ext.dirty[0], 0);
	corotop_coro_open(&c[6], 7);
	assert_int_equal(c[6].index, 8);
	assert_true(dirty0() == 1u << 2);
	/* An unusable shift disables marking, it does not mark wild bits. */
	corotop_probe_shutdown();
	R.hdr->ext.dirty_shift = 40;
	atomic_store(&R.hdr->ext.dirty[0], 0);
	assert_true(corotop_probe_init());
	/* (c[] point into the old mapping now: use a fresh coroutine.) */
	corotop_coro_open(&d, 8);
	corotop_coro_resume(&d, 0);
	assert_int_equal(d.index, 10);
	for (unsigned w = 0; w < CTP_HX_DIRTY_WORDS; w++)
		assert_true(atomic_load(&R.hdr->ext.dirty[w]) == 0);
	corotop_probe_shutdown();
	region_finish(&R);
}

static void test_no_dirty_marks_without_flag(void **state)
{
	struct corotop_coro c;

	(void)state;
	attach(&R, 4, CTP_HX_FREELIST);
	corotop_coro_open(&c, 1);
	corotop_coro_resume(&c, 0);
	corotop_coro_close(&c);
	for (unsigned w = 0; w < CTP_HX_DIRTY_WORDS; w++)
		assert_true(atomic_load(&R.hdr->ext.dirty[w]) == 0);
	corotop_probe_shutdown();
	region_finish(&R);
}

/* A region file written by hand: header saying `max`, `bytes` long. */
static void make_file(const char *path, uint64_t magic, uint32_t version,
		      uint32_t max, uint64_t bytes)
{
	struct ctp_header h;
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);

	assert_true(fd >= 0);
	memset(&h, 0, sizeof(h));
	h.magic = magic;
	h.version = version;
	h.max_stations = max;
	assert_int_equal(ftruncate(fd, (off_t)bytes), 0);
	assert_int_equal(
		pwrite(fd, &h, bytes < sizeof(h) ? bytes : sizeof(h), 0),
		(ssize_t)(bytes < sizeof(h) ? bytes : sizeof(h)));
	close(fd);
}

static void expect_refused(const char *shm, const char *max, const char *why)
{
	corotop_probe_shutdown();
	set_env(shm, "/nonexistent.sock", max);
	assert_false(corotop_probe_init());
	assert_int_equal(corotop_probe_live_, 0);
	if (!strstr(corotop_probe_status(), why))
		fail_msg("status '%s' lacks '%s'", corotop_probe_status(), why);
}

static void test_validation_refuses(void **state)
{
	char dir[] = "/tmp/ctp-probe-test.XXXXXX", p[5][128];
	struct corotop_coro c;

	(void)state;
	assert_non_null(mkdtemp(dir));
	for (int i = 0; i < 5; i++)
		snprintf(p[i], sizeof(p[i]), "%s/f%d", dir, i);
	make_file(p[0], 0x1122334455667788ull, 1, 4, ctp_region_size(4));
	expect_refused(p[0], "4", "not a cTP v1 region");
	make_file(p[1], CTP_MAGIC, 2, 4, ctp_region_size(4));
	expect_refused(p[1], "4", "not a cTP v1 region");
	make_file(p[2], CTP_MAGIC, 1, 4, ctp_region_size(2)); /* short */
	expect_refused(p[2], "4", "not a regular file of the size");
	make_file(p[3], CTP_MAGIC, 1, 2, ctp_region_size(4)); /* header < env */
	expect_refused(p[3], "4", "not a cTP v1 region");
	expect_refused(p[4], "4", "cannot open"); /* missing */
	assert_int_equal(symlink(p[3], p[4]), 0);
	expect_refused(p[4], "2", "cannot open"); /* O_NOFOLLOW */
	expect_refused(dir, "2", "cannot open");  /* a directory */
	expect_refused(p[3], "0", "not a station count");
	expect_refused(p[3], "abc", "not a station count");
	expect_refused(p[3], "2x", "not a station count");
	expect_refused(p[3], "", "not a station count");
	expect_refused(p[3], "1048577", "not a station count");
	/* Refused means untraced: nothing is written to the file. */
	corotop_coro_open(&c, 9);
	corotop_coro_resume(&c, 0);
	assert_null(c.station);
	/* The same file with a consistent count attaches. */
	corotop_probe_shutdown();
	set_env(p[3], "/nonexistent.sock", "2");
	assert_true(corotop_probe_init());
	corotop_probe_shutdown();
	for (int i = 0; i < 5; i++)
		unlink(p[i]);
	rmdir(dir);
}

/*
 * Regression (fixed; was src/probe/coro.c:174-190, corotop_coro_close): close
 * does not check that the probe is still attached.  A coroutine opened before
 * corotop_probe_shutdown() keeps c->station pointing into the mapping that
 * shutdown munmap()ed, and its close stores next_n and is_dead there:
 * SIGSEGV (or a write into whatever got mapped at that address).  probe.h
 * promises later records are untraced after shutdown.  (The same stale
 * pointer is written by corotop_coro_record_ if the probe is initialised
 * again later: the inline live check passes and c->station is not NULL.)
 * Run in a child so the crash is reported as a failure.
 */
/* ---- deep rings (ctp.h R/S/T/U) ---- */

/* Busy-wait: the probe's intervals are measured on CLOCK_MONOTONIC. */
static void it_spin_ns(uint64_t ns)
{
	struct timespec a, b;

	clock_gettime(CLOCK_MONOTONIC, &a);
	do
		clock_gettime(CLOCK_MONOTONIC, &b);
	while ((uint64_t)(b.tv_sec - a.tv_sec) * 1000000000u +
		       (uint64_t)b.tv_nsec - (uint64_t)a.tv_nsec <
	       ns);
}

static struct ctp_deep *deep_hdr(struct region *r)
{
	return r->deep;
}

static struct ctp_epoch *deep_ring(struct region *r, uint32_t i)
{
	return (struct ctp_epoch *)(void *)((char *)r->deep + CTP_DEEP_HEADER) +
	       (size_t)i * (r->hub_depth ? r->hub_depth : r->depth);
}

static void attach_deep(struct region *r, uint32_t max, uint32_t depth)
{
	char err[256], maxs[16];

	assert_true(region_create_deep(r, max, CTP_HX_FREELIST, depth, err,
				       sizeof(err)));
	snprintf(maxs, sizeof(maxs), "%u", max);
	set_env(r->shm_path, r->sock_path, maxs);
	assert_true(corotop_probe_init());
}

/* The probe writes its events into the station's deep ring, event n in
 * epoch n % depth with station-style seqs, and leaves slots[] alone. */
static void test_deep_ring_written(void **state)
{
	struct corotop_coro c;
	struct ctp_station *s;

	(void)state;
	attach_deep(&R, 4, 64);
	corotop_coro_open(&c, 0xD1);
	s = station(&R, c.index);
	assert_true(s->ext.flags & CTP_STX_DEEP);
	for (unsigned n = 0; n < 100; n++)
		corotop_coro_suspend(&c, 0x1000 + n);
	for (unsigned k = 0; k < CTP_SLOTS; k++)
		assert_true(atomic_load(&s->slots[k].seq) == 0);
	for (unsigned n = 36; n < 100; n++) {
		struct ctp_epoch *e = &deep_ring(&R, c.index)[n % 64];

		assert_true(atomic_load(&e->seq) == ctp_event_seq(n));
		assert_true(e->addr == 0x1000 + n);
	}
	corotop_coro_close(&c);
}

/* An engine that keeps up (a pass began after the writer's events) gets no
 * wake; one that is late and waiting in its pacing pause (kick == 1) gets
 * exactly one, half a ring in, and not another within PROBE_LAP_WAKE_NS. */
static void test_deep_ring_lap_wake(void **state)
{
	struct ctp_deep *d;
	struct corotop_coro c;
	uint64_t w0;
	struct timespec ts;

	(void)state;
	attach_deep(&R, 4, 64);
	d = deep_hdr(&R);
	corotop_coro_open(&c, 0xD2);
	assert_true(c.lap_check == c.n + 32);
	/* Keeping up: the engine published a pass after every record. */
	w0 = stats().wakes;
	atomic_store(&d->kick, 1);
	for (unsigned n = 0; n < 200; n++) {
		corotop_coro_resume(&c, 0);
		clock_gettime(CLOCK_MONOTONIC, &ts);
		atomic_store(&d->pass_ns, (uint64_t)ts.tv_sec * 1000000000u +
						  (uint64_t)ts.tv_nsec + 1);
		/* The thread reads pass_ns at most every 20 us. */
		it_spin_ns(PROBE_PASS_REFRESH_NS + 1000);
	}
	assert_true(stats().wakes == w0);
	assert_true(atomic_load(&d->kick) == 1);
	/* Late: no pass from now on.  Within a ring the writer is half a
	 * ring past a point no pass has covered, and kicks. */
	for (unsigned n = 0; n < 64; n++)
		corotop_coro_resume(&c, 0);
	assert_true(stats().wakes > w0);
	assert_true(atomic_load(&d->kick) == 0);
	/* A kick word nobody waits on (0) costs no wake. */
	w0 = stats().wakes;
	it_spin_ns(PROBE_LAP_WAKE_NS + 1000);
	for (unsigned n = 0; n < 64; n++)
		corotop_coro_resume(&c, 0);
	assert_true(stats().wakes == w0);
	corotop_coro_close(&c);
}

/* A region without a deep area: the spec's slots, and no lap checks. */
static void test_no_deep_ring_without_flag(void **state)
{
	struct corotop_coro c;

	(void)state;
	attach(&R, 4, CTP_HX_FREELIST);
	assert_null(R.deep);
	corotop_coro_open(&c, 0xD3);
	assert_false(station(&R, c.index)->ext.flags & CTP_STX_DEEP);
	assert_true(c.lap_check == UINT64_MAX);
	corotop_coro_suspend(&c, 0x42);
	assert_true(atomic_load(&station(&R, c.index)->slots[0].seq) ==
		    ctp_event_seq(0));
	corotop_coro_close(&c);
}

static void test_close_after_shutdown(void **state)
{
	struct corotop_coro c;
	int status;
	pid_t pid;

	(void)state;
	attach(&R, 2, CTP_HX_FREELIST);
	corotop_coro_open(&c, 1);
	corotop_coro_resume(&c, 0);
	corotop_probe_shutdown();
	corotop_coro_resume(&c, 0); /* inline wrapper: a no-op */
	assert_true(atomic_load(&station(&R, P0)->slots[1].seq) == 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		signal(SIGSEGV, SIG_DFL); /* not cmocka's handler: just die */
		signal(SIGBUS, SIG_DFL);
		corotop_coro_close(&c);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	region_finish(&R);
	if (!WIFEXITED(status))
		fail_msg("corotop_coro_close after shutdown killed the "
			 "process with signal %d",
			 WTERMSIG(status));
	if (WEXITSTATUS(status) != 0) /* ASan turns a SEGV into exit 1 */
		fail_msg("corotop_coro_close after shutdown crashed (exit %d)",
			 WEXITSTATUS(status));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_loaded_without_env),
		cmocka_unit_test_teardown(test_missing_env_records_are_noops,
					  teardown),
		cmocka_unit_test_teardown(test_untraced_keeps_state, teardown),
		cmocka_unit_test_teardown(test_init_attaches_and_is_idempotent,
					  teardown),
		cmocka_unit_test_teardown(test_record_writes_station, teardown),
		cmocka_unit_test_teardown(test_long_wait_flags, teardown),
		cmocka_unit_test_teardown(test_probe_id_zero_uses_address,
					  teardown),
		cmocka_unit_test_teardown(test_tid_of_recording_thread,
					  teardown),
		cmocka_unit_test_teardown(test_untraced_when_stations_run_out,
					  teardown),
		cmocka_unit_test_teardown(test_untraced_retries_after_free,
					  teardown),
		cmocka_unit_test_teardown(
			test_no_freelist_without_extension_flag, teardown),
		cmocka_unit_test_teardown(
			test_foreign_region_reserved_untouched, teardown),
		cmocka_unit_test_teardown(test_wake_through_socket, teardown),
		cmocka_unit_test_teardown(test_wake_futex_no_socket_byte,
					  teardown),
		cmocka_unit_test_teardown(test_dirty_marks, teardown),
		cmocka_unit_test_teardown(test_no_dirty_marks_without_flag,
					  teardown),
		cmocka_unit_test_teardown(test_validation_refuses, teardown),
		cmocka_unit_test_teardown(test_close_after_shutdown, teardown),
		cmocka_unit_test_teardown(test_deep_ring_written, teardown),
		cmocka_unit_test_teardown(test_deep_ring_lap_wake, teardown),
		cmocka_unit_test_teardown(test_no_deep_ring_without_flag,
					  teardown),
	};

	loaded_live = corotop_probe_live_;
	snprintf(loaded_status, sizeof(loaded_status), "%s",
		 corotop_probe_status());
	if (getenv(CTP_ENV_SHM) || getenv(CTP_ENV_SOCK) ||
	    getenv(CTP_ENV_MAX)) {
		fprintf(stderr, "test-probe: run without CTP_* set\n");
		return 77; /* skip */
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
