/*
 * probe-name: a coroutine's optional name (corotop_coro_open_named), from
 * the probe's registry to the station's header, read back through the
 * engine's mapping of a real region (as test-probe does):
 *   - copied at open: the caller's buffer may change or go at once;
 *     static: the pointer is kept and read when a station is taken;
 *   - cut at COROTOP_NAME_MAX - 1 bytes, never inside a UTF-8 character;
 *   - the station's ext carries the name NUL-padded and the address of
 *     the struct corotop_coro, at open when traced, at the first record
 *     after a late attach, and from the census walk; a station reused by
 *     an unnamed coroutine carries no name;
 *   - the census reads a static name without faulting: a string that
 *     ends a page, or whose memory is gone, never crashes the walk;
 *   - what a coroutine is (COROTOP_CORO_DISPATCHER, _ROOT) is in the
 *     station's flags, at open and from the census.
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

#include <sys/mman.h>
#include <unistd.h>

#include "corotop/probe.h"
#include "engine/ctp/region.h"
#include "wire/freelist.h"
#include "probe/census.h"
#include "probe/probe_internal.h"
#include "probe/registry.h"

#include "probe-fixture.h"

static void attach(struct region *r, uint32_t max, uint32_t flags)
{
	probe_fixture_attach(r, max, flags);
}

/* The station's name is exactly `want`, NUL-padded to the end. */
static void assert_station_name(const struct ctp_station *s, const char *want)
{
	size_t n = strlen(want);

	assert_true(n < CTP_STX_NAME_LEN);
	assert_memory_equal(s->ext.name, want, n);
	for (size_t k = n; k < CTP_STX_NAME_LEN; k++)
		assert_int_equal(s->ext.name[k], 0);
}

static void test_copy_and_static(void **state)
{
	char buf[32] = "conn-7", out[COROTOP_NAME_MAX];
	static char shared[32] = "acceptor";
	struct corotop_coro a, b, c;

	(void)state;
	clear_env();
	corotop_coro_open_named(&a, 1, buf, COROTOP_NAME_COPY);
	corotop_coro_open_named(&b, 2, shared, COROTOP_NAME_STATIC);
	corotop_coro_open_named(&c, 3, "", COROTOP_NAME_STATIC);
	memcpy(buf, "gone!!", 7);
	memcpy(shared, "listener", 9);
	/* The copy kept what was given; the static one reads it now. */
	assert_int_equal(registry_name(a.reg, out, false), 6);
	assert_string_equal(out, "conn-7");
	assert_int_equal(registry_name(b.reg, out, true), 8);
	assert_string_equal(out, "listener");
	assert_int_equal(registry_name(c.reg, out, false), 0);
	for (size_t k = 0; k < sizeof(out); k++)
		assert_int_equal(out[k], 0);
	corotop_coro_close(&a);
	corotop_coro_close(&b);
	corotop_coro_close(&c);
	/* The slot's next coroutine has no name of the old one. */
	corotop_coro_open(&a, 4);
	assert_int_equal(registry_name(a.reg, out, false), 0);
	corotop_coro_close(&a);
}

static void test_cut(void **state)
{
	char long_name[80], out[COROTOP_NAME_MAX];
	/* 45 ASCII bytes, then "é" (2 bytes) ends at byte 47: kept whole;
	 * then "€" (3 bytes) at 45..47 straddles the cut: dropped whole. */
	char fits[64], straddles[64];
	struct corotop_coro c;

	(void)state;
	clear_env();
	memset(long_name, 'x', sizeof(long_name) - 1);
	long_name[sizeof(long_name) - 1] = '\0';
	corotop_coro_open_named(&c, 1, long_name, COROTOP_NAME_COPY);
	assert_int_equal(registry_name(c.reg, out, false),
			 COROTOP_NAME_MAX - 1);
	assert_int_equal(out[COROTOP_NAME_MAX - 1], 0);
	corotop_coro_close(&c);

	memset(fits, 'a', 45);
	memcpy(fits + 45, "\xc3\xa9zz", 5);
	assert_int_equal(registry_name_len(fits, sizeof(fits)), 47);
	memset(straddles, 'a', 45);
	memcpy(straddles + 45, "\xe2\x82\xac", 4);
	assert_int_equal(registry_name_len(straddles, sizeof(straddles)), 45);
	/* Exactly 47 bytes: whole. */
	memset(straddles + 45, 'b', 2);
	straddles[47] = '\0';
	assert_int_equal(registry_name_len(straddles, sizeof(straddles)), 47);
	/* Garbage of continuation bytes backs up at most three. */
	memset(straddles, 0x80, 60);
	assert_int_equal(registry_name_len(straddles, 60), 44);
	/* A static name is cut the same way. */
	corotop_coro_open_named(&c, 1, long_name, COROTOP_NAME_STATIC);
	assert_int_equal(registry_name(c.reg, out, true), COROTOP_NAME_MAX - 1);
	corotop_coro_close(&c);
}

static void test_traced_station_carries_name(void **state)
{
	struct corotop_coro c, d;
	struct ctp_station *s;

	(void)state;
	attach(&R, P0 + 2, CTP_HX_FREELIST);
	s = station(&R, P0);
	corotop_coro_open_named(&c, 0x10, "worker-1", COROTOP_NAME_STATIC);
	assert_int_equal(c.index, P0);
	assert_station_name(s, "worker-1");
	assert_true(s->ext.coro == (uint64_t)(uintptr_t)&c);
	corotop_coro_resume(&c, 1);
	corotop_coro_close(&c);
	/* The engine would recycle it: hand it back as the harvest does. */
	freelist_push(R.hdr, station(&R, 0), P0);
	corotop_coro_open(&d, 0x11);
	assert_int_equal(d.index, P0);
	assert_station_name(s, "");
	assert_true(s->ext.coro == (uint64_t)(uintptr_t)&d);
	corotop_coro_close(&d);
}

/* Opened untraced, traced from its first record after the attach. */
static void test_late_claim_carries_name(void **state)
{
	char buf[16] = "late-one";
	struct corotop_coro c;
	struct ctp_station *s;

	(void)state;
	clear_env();
	corotop_coro_open_named(&c, 0x20, buf, COROTOP_NAME_COPY);
	buf[0] = 'X';
	attach(&R, 2, CTP_HX_FREELIST);
	corotop_coro_resume(&c, 1);
	assert_non_null(c.station);
	s = station(&R, c.index);
	assert_station_name(s, "late-one");
	assert_true(s->ext.coro == (uint64_t)(uintptr_t)&c);
	corotop_coro_close(&c);
}

/* The census publishes a coroutine parked before the attach: its name,
 * also a static one at the very end of a page, and none (no fault) when
 * the static name's memory is gone. */
static void test_census_carries_name(void **state)
{
	long page = sysconf(_SC_PAGESIZE);
	char *map = mmap(NULL, (size_t)page * 2, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *edge, *gone;
	struct corotop_coro a, b, c;
	bool seen[3] = {false, false, false};

	(void)state;
	assert_true(map != MAP_FAILED);
	/* "edge" and its NUL are the page's last five bytes; the next page
	 * is unmapped. */
	assert_int_equal(munmap(map + page, (size_t)page), 0);
	edge = map + page - 5;
	memcpy(edge, "edge", 5);
	gone = mmap(NULL, (size_t)page, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(gone != MAP_FAILED);
	memcpy(gone, "gone", 5);

	clear_env();
	corotop_coro_open_named(&a, 0x31, "parked-a", COROTOP_NAME_COPY);
	corotop_coro_open_named(&b, 0x32, edge, COROTOP_NAME_STATIC);
	corotop_coro_open_named(&c, 0x33, gone, COROTOP_NAME_STATIC);
	corotop_coro_resume(&a, 1);
	corotop_coro_suspend(&a, 2);
	/* Breaks the contract on purpose: the walk must survive it. */
	assert_int_equal(munmap(gone, (size_t)page), 0);
	attach(&R, 8, CTP_HX_FREELIST);
	census_walk(&probe_env_region);
	for (uint32_t i = 0; i < atomic_load(&R.hdr->allocated_count); i++) {
		struct ctp_station *s = station(&R, i);

		if (s->probe_id == 0x31) {
			assert_station_name(s, "parked-a");
			assert_true(s->ext.coro == (uint64_t)(uintptr_t)&a);
			seen[0] = true;
		} else if (s->probe_id == 0x32) {
			assert_station_name(s, "edge");
			assert_true(s->ext.coro == (uint64_t)(uintptr_t)&b);
			seen[1] = true;
		} else if (s->probe_id == 0x33) {
			assert_station_name(s, "");
			assert_true(s->ext.coro == (uint64_t)(uintptr_t)&c);
			seen[2] = true;
		}
	}
	assert_true(seen[0] && seen[1] && seen[2]);
	corotop_coro_close(&a);
	corotop_coro_close(&b);
	corotop_coro_close(&c);
	munmap(map, (size_t)page);
}

/* What a coroutine is (COROTOP_CORO_DISPATCHER, COROTOP_CORO_ROOT) is in
 * the header of the station it takes, traced at open and from the census
 * walk, with the hub flag unchanged; a plain coroutine's carries neither,
 * nor does the next occupant's of a dispatcher's station. */
static void test_station_carries_kind(void **state)
{
	const uint32_t kinds = CTP_STX_DISPATCHER | CTP_STX_ROOT;
	struct corotop_coro d, r, c, p;
	struct ctp_station *s;

	(void)state;
	attach(&R, P0 + 4, CTP_HX_FREELIST);
	corotop_coro_open_named(&d, 0x40, "disp",
				COROTOP_NAME_STATIC | COROTOP_CORO_DISPATCHER);
	corotop_coro_open_named(&r, 0x41, "root",
				COROTOP_NAME_STATIC | COROTOP_CORO_HUB |
					COROTOP_CORO_ROOT);
	corotop_coro_open(&c, 0x42);
	assert_int_equal(station(&R, d.index)->ext.flags & kinds,
			 CTP_STX_DISPATCHER);
	assert_int_equal(station(&R, r.index)->ext.flags & kinds, CTP_STX_ROOT);
	assert_int_equal(station(&R, c.index)->ext.flags & kinds, 0);
	s = station(&R, d.index);
	corotop_coro_resume(&d, 1);
	corotop_coro_close(&d);
	freelist_push(R.hdr, station(&R, 0), d.index);
	corotop_coro_open(&p, 0x43);
	assert_true(station(&R, p.index) == s);
	assert_int_equal(s->ext.flags & kinds, 0);
	corotop_coro_close(&p);
	corotop_coro_close(&r);
	corotop_coro_close(&c);
}

/* The census publishes what a coroutine parked before the attach is. */
static void test_census_carries_kind(void **state)
{
	const uint32_t kinds = CTP_STX_DISPATCHER | CTP_STX_ROOT;
	struct corotop_coro d, c;
	bool seen[2] = {false, false};

	(void)state;
	clear_env();
	corotop_coro_open_named(&d, 0x51, "disp",
				COROTOP_NAME_STATIC | COROTOP_CORO_DISPATCHER);
	corotop_coro_open(&c, 0x52);
	corotop_coro_resume(&d, 1);
	corotop_coro_suspend(&d, 2);
	attach(&R, 8, CTP_HX_FREELIST);
	census_walk(&probe_env_region);
	for (uint32_t i = 0; i < atomic_load(&R.hdr->allocated_count); i++) {
		struct ctp_station *s = station(&R, i);

		if (s->probe_id == 0x51) {
			assert_int_equal(s->ext.flags & kinds,
					 CTP_STX_DISPATCHER);
			seen[0] = true;
		} else if (s->probe_id == 0x52) {
			assert_int_equal(s->ext.flags & kinds, 0);
			seen[1] = true;
		}
	}
	assert_true(seen[0] && seen[1]);
	corotop_coro_close(&d);
	corotop_coro_close(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_copy_and_static, teardown),
		cmocka_unit_test_teardown(test_cut, teardown),
		cmocka_unit_test_teardown(test_traced_station_carries_name,
					  teardown),
		cmocka_unit_test_teardown(test_late_claim_carries_name,
					  teardown),
		cmocka_unit_test_teardown(test_census_carries_name, teardown),
		cmocka_unit_test_teardown(test_station_carries_kind, teardown),
		cmocka_unit_test_teardown(test_census_carries_kind, teardown),
	};

	if (getenv(CTP_ENV_SHM) || getenv(CTP_ENV_SOCK) ||
	    getenv(CTP_ENV_MAX)) {
		fprintf(stderr, "test-probe-name: run without CTP_* set\n");
		return 77; /* skip */
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
