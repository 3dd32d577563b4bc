/*
 * switch: corotop_coro_switch_, the probe call libcorotop-preload makes for
 * each interposed switch -- one coroutine suspends, another resumes, with
 * one clock read for both (static probe, real region files, as in
 * test-probe).
 *
 *   traced     exactly one suspend event on from's station and one resume
 *              on to's, with the same timestamp, the thread, the address,
 *              the right seqs; the structs keep the same; from keeps the
 *              caller's frame record (it parks on its own stack); a run
 *              of switches back and forth leaves every pair of events
 *              with one time, in order;
 *   NULL       from or to NULL: only the other one's event; both NULL:
 *              nothing;
 *   dirty      both stations marked, once when they share a bit;
 *   untraced   both notes kept, with one coarse clock read: the same
 *              last_ts on both, never before either birth, within the
 *              coarse clock's reads around the call; nothing counted;
 *   parked     with parked stacks on, from's suspend carries a trace id
 *              whose first frame is the return address into the caller;
 *              to's resume carries none.
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

#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "corotop/calltrace.h"
#include "corotop/probe.h"
#include "engine/calltrace/rotor.h"
#include "engine/ctp/region.h"

/* The region of the running test (static: teardown removes it when an
 * assertion leaves the test early), and its CallTrace rotor, if any. */
static struct region R;
static struct rotor *RT;

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t my_tid(void)
{
	return (uint64_t)syscall(SYS_gettid);
}

static void clear_env(void)
{
	unsetenv(CTP_ENV_SHM);
	unsetenv(CTP_ENV_SOCK);
	unsetenv(CTP_ENV_MAX);
	unsetenv("COROTOP_PARKED_STACKS");
}

static struct ctp_station *station(uint32_t i)
{
	return (struct ctp_station *)((char *)R.hdr + CTP_HEADER_SIZE) + i;
}

/* A region of `max` stations with extension flags `hx` (and a CallTrace
 * region when `parked`, with parked stacks on), probe attached. */
static void attach(uint32_t max, uint32_t hx, bool parked)
{
	char err[512], maxs[16];

	assert_true(
		region_create(&R, max, CTP_HX_FREELIST | hx, err, sizeof(err)));
	if (parked) {
		struct rotor_config cfg;

		rotor_config_defaults(&cfg);
		cfg.max_traces = 1024;
		cfg.pool_frames = 1024 * 16;
		RT = rotor_create(R.dir, R.hdr, &cfg, err, sizeof(err));
		if (!RT)
			fail_msg("rotor_create: %s", err);
		setenv("COROTOP_PARKED_STACKS", "1", 1);
	}
	snprintf(maxs, sizeof(maxs), "%u", max);
	setenv(CTP_ENV_SHM, R.shm_path, 1);
	setenv(CTP_ENV_SOCK, R.sock_path, 1);
	setenv(CTP_ENV_MAX, maxs, 1);
	assert_true(corotop_probe_init());
	assert_int_equal(corotop_probe_live_, 1);
}

static int teardown(void **state)
{
	(void)state;
	corotop_probe_shutdown();
	clear_env();
	if (RT)
		rotor_destroy(RT);
	RT = NULL;
	if (R.hdr || R.owner)
		region_finish(&R);
	memset(&R, 0, sizeof(R));
	return 0;
}

static struct corotop_probe_stats stats(void)
{
	struct corotop_probe_stats s;

	corotop_probe_stats(&s);
	return s;
}

/* The slot of event n on station i (no deep rings here). */
static struct ctp_epoch *slot(uint32_t i, uint64_t n)
{
	return &station(i)->slots[n % CTP_SLOTS];
}

static uint64_t trace_word(const struct ctp_epoch *e)
{
	uint64_t w;

	memcpy(&w, e->reserved + CTP_EPOCH_TRACE_OFFSET, sizeof(w));
	return w;
}

/* Event n of station i is complete and says this. */
static void check_event(uint32_t i, uint64_t n, int active, uint64_t addr)
{
	struct ctp_epoch *e = slot(i, n);

	assert_true(atomic_load(&e->seq) == ctp_event_seq(n));
	assert_int_equal(e->is_active, active);
	assert_true(e->addr == addr);
	assert_true(e->tid == my_tid());
}

/* Switches from a frame of its own, so the frame record the probe keeps
 * for `from` can be checked against it. */
static __attribute__((noinline)) void
switch_here(struct corotop_coro *from, struct corotop_coro *to, uint64_t addr)
{
	corotop_coro_switch_(from, to, addr);
	__asm__ volatile("" ::: "memory"); /* not a tail call */
}

static bool in_switch_here(uint64_t pc)
{
	return pc > (uint64_t)(uintptr_t)switch_here &&
	       pc < (uint64_t)(uintptr_t)switch_here + 256;
}

static void test_traced_one_event_each(void **state)
{
	struct corotop_coro a, b;
	uint64_t t0, t1, ts;

	(void)state;
	attach(4, 0, false);
	corotop_coro_open(&a, 0xA);
	corotop_coro_open(&b, 0xB);
	/* Station 0 is the process's (CTP_STX_PROCESS). */
	assert_int_equal(a.index, 1);
	assert_int_equal(b.index, 2);
	corotop_coro_resume(&a, 0x10); /* a runs: its event 0 */
	t0 = clock_ns(CLOCK_MONOTONIC);
	switch_here(&a, &b, 0x20);
	t1 = clock_ns(CLOCK_MONOTONIC);
	/* One suspend for a (its event 1), one resume for b (its event 0),
	 * and nothing after either. */
	check_event(a.index, 1, 0, 0x20);
	check_event(b.index, 0, 1, 0x20);
	assert_true(a.n == 2 && b.n == 1);
	assert_true(atomic_load(&slot(a.index, 2)->seq) == 0);
	assert_true(atomic_load(&slot(b.index, 1)->seq) == 0);
	/* One clock read: the same precise time in both events and both
	 * structs. */
	ts = slot(a.index, 1)->timestamp;
	assert_true(slot(b.index, 0)->timestamp == ts);
	assert_true(ts >= t0 && ts <= t1);
	assert_true(a.last_ts == ts && b.last_ts == ts);
	assert_int_equal(a.last_active, 0);
	assert_int_equal(b.last_active, 1);
	assert_true(a.last_addr == 0x20 && b.last_addr == 0x20);
	assert_true(a.last_tid == my_tid() && b.last_tid == my_tid());
	/* a parked on its own stack, in switch_here. */
	assert_true(in_switch_here(a.park_pc));
	assert_true(a.park_fp >= a.park_sp && a.park_sp != 0);
	/* No parked stacks here: no trace word. */
	assert_true(trace_word(slot(a.index, 1)) == 0);
	assert_true(stats().untraced == 0);
	corotop_coro_close(&a);
	corotop_coro_close(&b);
}

/* Back and forth, as a ping-pong: every switch is one suspend and one
 * resume with one time, and the times never go back. */
static void test_traced_ping_pong(void **state)
{
	struct corotop_coro c[2];
	uint64_t prev = 0;

	(void)state;
	attach(4, 0, false);
	corotop_coro_open(&c[0], 1);
	corotop_coro_open(&c[1], 2);
	corotop_coro_resume(&c[0], 0);
	for (unsigned k = 0; k < 6; k++) {
		struct corotop_coro *from = &c[k % 2], *to = &c[(k + 1) % 2];
		uint64_t nf = from->n, nt = to->n;

		corotop_coro_switch_(from, to, 0x100 + k);
		check_event(from->index, nf, 0, 0x100 + k);
		check_event(to->index, nt, 1, 0x100 + k);
		assert_true(from->n == nf + 1 && to->n == nt + 1);
		assert_true(slot(from->index, nf)->timestamp ==
			    slot(to->index, nt)->timestamp);
		assert_true(slot(from->index, nf)->timestamp >= prev);
		prev = slot(from->index, nf)->timestamp;
	}
	corotop_coro_close(&c[0]);
	corotop_coro_close(&c[1]);
}

/* A switch whose other side is not known (the preload's table is full,
 * or a context nobody made) records only the side it has. */
static void test_traced_null_sides(void **state)
{
	struct corotop_coro a, b;

	(void)state;
	attach(4, 0, false);
	corotop_coro_open(&a, 0xA);
	corotop_coro_open(&b, 0xB);
	corotop_coro_switch_(NULL, &a, 0x30); /* a resumes: event 0 */
	check_event(a.index, 0, 1, 0x30);
	assert_true(a.n == 1 && b.n == 0);
	assert_int_equal(a.last_active, 1);
	corotop_coro_switch_(&a, NULL, 0x31); /* a suspends: event 1 */
	check_event(a.index, 1, 0, 0x31);
	assert_true(a.n == 2 && b.n == 0);
	assert_int_equal(a.last_active, 0);
	corotop_coro_switch_(NULL, NULL, 0x32);
	assert_true(a.n == 2 && b.n == 0);
	assert_true(atomic_load(&slot(a.index, 2)->seq) == 0);
	assert_true(atomic_load(&slot(b.index, 0)->seq) == 0);
	assert_int_equal(b.last_ts, 0);
	corotop_coro_close(&a);
	corotop_coro_close(&b);
}

/* Untraced: both notes kept, one coarse clock read shared by both. */
static void test_untraced_notes(void **state)
{
	struct corotop_probe_stats before, after;
	struct corotop_coro a, b;
	uint64_t lo, hi, born;

	(void)state;
	clear_env();
	assert_int_equal(corotop_probe_live_, 0);
	before = stats();
	corotop_coro_open(&a, 0xA);
	corotop_coro_open(&b, 0xB);
	corotop_coro_resume(&a, 0x40);
	lo = clock_ns(CLOCK_MONOTONIC_COARSE);
	switch_here(&a, &b, 0x41);
	hi = clock_ns(CLOCK_MONOTONIC_COARSE);
	born = a.birth_ts > b.birth_ts ? a.birth_ts : b.birth_ts;
	assert_true(a.last_ts == b.last_ts);
	/* The coarse clock (or the later birth, which it may lag). */
	assert_true(a.last_ts >= lo && a.last_ts >= born);
	assert_true(a.last_ts <= (hi > born ? hi : born));
	assert_int_equal(a.last_active, 0);
	assert_int_equal(b.last_active, 1);
	assert_true(a.last_addr == 0x41 && b.last_addr == 0x41);
	assert_true(a.last_tid == my_tid() && b.last_tid == my_tid());
	assert_true(in_switch_here(a.park_pc));
	assert_true(a.park_fp >= a.park_sp && a.park_sp != 0);
	/* Either side alone. */
	corotop_coro_switch_(&b, NULL, 0x42);
	assert_int_equal(b.last_active, 0);
	assert_true(b.last_addr == 0x42);
	assert_int_equal(a.last_active, 0);
	assert_true(a.last_addr == 0x41);
	corotop_coro_switch_(NULL, &a, 0x43);
	assert_int_equal(a.last_active, 1);
	assert_true(a.last_addr == 0x43);
	assert_true(b.last_addr == 0x42);
	corotop_coro_switch_(NULL, NULL, 0x44);
	corotop_coro_close(&a);
	corotop_coro_close(&b);
	/* Untraced notes count nothing (no station was missed). */
	after = stats();
	assert_memory_equal(&before, &after, sizeof(before));
}

static uint64_t dirty0(void)
{
	return atomic_load(&R.hdr->ext.dirty[0]);
}

/* Both stations marked (P): two bits, or one when they share it.  Station
 * 0 is the process's (CTP_STX_PROCESS); each attach takes one. */
static void test_dirty_marks_both(void **state)
{
	struct corotop_coro c[6];

	(void)state;
	attach(12, CTP_HX_DIRTY, false);
	assert_int_equal(R.hdr->ext.dirty_shift, 0);
	for (int i = 0; i < 3; i++)
		corotop_coro_open(&c[i], 1 + (uint64_t)i); /* stations 1..3 */
	atomic_store(&R.hdr->ext.dirty[0], 0); /* the engine collects */
	corotop_coro_switch_(&c[0], &c[2], 0);
	assert_true(dirty0() == (1u << 1 | 1u << 3));
	atomic_store(&R.hdr->ext.dirty[0], 0);
	corotop_coro_switch_(NULL, &c[1], 0);
	assert_true(dirty0() == 1u << 2);
	atomic_store(&R.hdr->ext.dirty[0], 0);
	corotop_coro_switch_(&c[2], NULL, 0);
	assert_true(dirty0() == 1u << 3);
	/* Groups of 4 stations: the new attach's process station is 4,
	 * c[3..5] are 5, 6, 7 -- all in group 1; 7 and 8 (group 2) share
	 * none. */
	corotop_probe_shutdown();
	R.hdr->ext.dirty_shift = 2;
	assert_true(corotop_probe_init());
	for (int i = 3; i < 6; i++) {
		corotop_coro_open(&c[i], 1 + (uint64_t)i);
		assert_int_equal(c[i].index, i + 2);
	}
	atomic_store(&R.hdr->ext.dirty[0], 0);
	corotop_coro_switch_(&c[4], &c[5], 0);
	assert_true(dirty0() == 1u << 1);
	check_event(c[4].index, 0, 0, 0);
	check_event(c[5].index, 0, 1, 0);
	for (int i = 0; i < 6; i++)
		corotop_coro_close(&c[i]);
}

/* Parked stacks on: from's suspend stores the stack it parks on. */
static void test_parked_stack_of_from(void **state)
{
	const struct traceset_entry *e;
	struct corotop_coro a, b;
	uint64_t id;

	(void)state;
	attach(4, 0, true);
	corotop_coro_open(&a, 0xA);
	corotop_coro_open(&b, 0xB);
	corotop_coro_resume(&a, 0);
	switch_here(&a, &b, 0x50);
	check_event(a.index, 1, 0, 0x50);
	check_event(b.index, 0, 1, 0x50);
	id = trace_word(slot(a.index, 1));
	assert_true(id > CT_DROPPED_TRACE_ID);
	assert_true(trace_word(slot(b.index, 0)) == 0);
	assert_true(rotor_rotate(RT, NULL, 0));
	e = traceset_find(rotor_traces(RT), id);
	assert_non_null(e);
	assert_int_equal(e->weight, 0);
	assert_true(e->nframes >= 1);
	assert_true(in_switch_here(e->frames[0]));
	corotop_coro_close(&a);
	corotop_coro_close(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_traced_one_event_each, teardown),
		cmocka_unit_test_teardown(test_traced_ping_pong, teardown),
		cmocka_unit_test_teardown(test_traced_null_sides, teardown),
		cmocka_unit_test_teardown(test_untraced_notes, teardown),
		cmocka_unit_test_teardown(test_dirty_marks_both, teardown),
		cmocka_unit_test_teardown(test_parked_stack_of_from, teardown),
	};

	if (getenv(CTP_ENV_SHM) || getenv(CTP_ENV_SOCK) ||
	    getenv(CTP_ENV_MAX)) {
		fprintf(stderr, "test-switch: run without CTP_* set\n");
		return 77; /* skip */
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
