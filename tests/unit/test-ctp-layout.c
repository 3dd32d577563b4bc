/*
 * test-ctp-layout: the cTP wire contract in include/corotop/ctp.h.  Sizes,
 * offsets and alignments are checked at compile time (a padding change fails
 * the build) and again at run time with offsetof so a failure names the field.
 * The byte order of the magics, the region size arithmetic and both seq
 * numbering styles (station: 2n+1/2n+2; upstream slot: k-th write to slot s
 * is seq 2k, event 8(k-1)+s) are checked against hand-computed values.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "corotop/ctp.h"
#include "corotop/probe.h"

/* Compile-time copies of the facts checked at run time below. */
_Static_assert(offsetof(struct ctp_header, ext) == 0x18, "ext at reserved");
_Static_assert(offsetof(struct ctp_station, ext) == 0x240, "stx at flexible");
_Static_assert(sizeof(struct ctp_header_ext) == 40 + 8 * CTP_HX_DIRTY_WORDS,
	       "header ext size");
_Static_assert(sizeof(struct ctp_station_ext) == 208, "station ext size");

static void test_epoch_layout(void **state)
{
	(void)state;
	assert_int_equal(sizeof(struct ctp_epoch), 64);
	assert_int_equal(_Alignof(struct ctp_epoch), 64);
	assert_int_equal(offsetof(struct ctp_epoch, timestamp), 0x00);
	assert_int_equal(offsetof(struct ctp_epoch, tid), 0x08);
	assert_int_equal(offsetof(struct ctp_epoch, addr), 0x10);
	assert_int_equal(offsetof(struct ctp_epoch, seq), 0x18);
	assert_int_equal(offsetof(struct ctp_epoch, reserved), 0x20);
	assert_int_equal(sizeof(((struct ctp_epoch *)0)->reserved), 31);
	assert_int_equal(offsetof(struct ctp_epoch, is_active), 0x3F);
	assert_int_equal(sizeof(((struct ctp_epoch *)0)->seq), 8);
}

static void test_header_layout(void **state)
{
	(void)state;
	assert_int_equal(sizeof(struct ctp_header), CTP_HEADER_SIZE);
	assert_int_equal(_Alignof(struct ctp_header), 1024);
	assert_int_equal(offsetof(struct ctp_header, magic), 0x00);
	assert_int_equal(offsetof(struct ctp_header, version), 0x08);
	assert_int_equal(offsetof(struct ctp_header, max_stations), 0x0C);
	assert_int_equal(offsetof(struct ctp_header, allocated_count), 0x10);
	assert_int_equal(offsetof(struct ctp_header, tracer_sleeping), 0x14);
	assert_int_equal(sizeof(((struct ctp_header *)0)->tracer_sleeping), 4);
	assert_int_equal(offsetof(struct ctp_header, _reserved), 0x18);
	assert_int_equal(sizeof(((struct ctp_header *)0)->_reserved), 1000);
	assert_int_equal(offsetof(struct ctp_header, ext), 0x18);
}

static void test_header_ext_layout(void **state)
{
	(void)state;
	assert_int_equal(offsetof(struct ctp_header_ext, magic), 0);
	assert_int_equal(offsetof(struct ctp_header_ext, version), 4);
	assert_int_equal(offsetof(struct ctp_header_ext, size), 8);
	assert_int_equal(offsetof(struct ctp_header_ext, flags), 12);
	assert_int_equal(offsetof(struct ctp_header_ext, free_head), 16);
	assert_int_equal(offsetof(struct ctp_header_ext, untraced), 24);
	assert_int_equal(offsetof(struct ctp_header_ext, engine_pid), 32);
	assert_int_equal(offsetof(struct ctp_header_ext, dirty_shift), 36);
	assert_int_equal(offsetof(struct ctp_header_ext, dirty), 40);
	assert_int_equal(sizeof(((struct ctp_header_ext *)0)->dirty),
			 8 * CTP_HX_DIRTY_WORDS);
	assert_int_equal(sizeof(struct ctp_header_ext), 936);
	/* The dirty bitmap covers 7168 groups and stays inside _reserved. */
	assert_int_equal(CTP_HX_DIRTY_WORDS * 64, 7168);
	assert_true(0x18 + sizeof(struct ctp_header_ext) <= CTP_HEADER_SIZE);
	assert_int_equal((0x18 + offsetof(struct ctp_header_ext, dirty)) % 8,
			 0);
	/* free_head is 8-aligned in the region: header is 1 KiB aligned. */
	assert_int_equal(
		(0x18 + offsetof(struct ctp_header_ext, free_head)) % 8, 0);
}

static void test_station_layout(void **state)
{
	(void)state;
	assert_int_equal(sizeof(struct ctp_station), CTP_STATION_SIZE);
	assert_int_equal(_Alignof(struct ctp_station), 1024);
	assert_int_equal(offsetof(struct ctp_station, probe_id), 0x000);
	assert_int_equal(offsetof(struct ctp_station, birth_ts), 0x008);
	assert_int_equal(offsetof(struct ctp_station, is_dead), 0x010);
	assert_int_equal(sizeof(((struct ctp_station *)0)->is_dead), 1);
	assert_int_equal(offsetof(struct ctp_station, _pad), 0x011);
	assert_int_equal(offsetof(struct ctp_station, slots), 0x040);
	assert_int_equal(sizeof(((struct ctp_station *)0)->slots),
			 CTP_SLOTS * 64);
	for (unsigned k = 0; k < CTP_SLOTS; k++)
		assert_int_equal(offsetof(struct ctp_station, slots) + k * 64,
				 0x40 + k * 0x40);
	assert_int_equal(offsetof(struct ctp_station, flexible), 0x240);
	assert_int_equal(sizeof(((struct ctp_station *)0)->flexible), 448);
	assert_int_equal(offsetof(struct ctp_station, ext), 0x240);
}

static void test_station_ext_layout(void **state)
{
	(void)state;
	assert_int_equal(offsetof(struct ctp_station_ext, magic), 0);
	assert_int_equal(offsetof(struct ctp_station_ext, flags), 4);
	assert_int_equal(offsetof(struct ctp_station_ext, gen), 8);
	assert_int_equal(offsetof(struct ctp_station_ext, first_n), 16);
	assert_int_equal(offsetof(struct ctp_station_ext, next_n), 24);
	assert_int_equal(offsetof(struct ctp_station_ext, next_free), 32);
	assert_int_equal(offsetof(struct ctp_station_ext, census), 40);
	assert_int_equal(offsetof(struct ctp_census, sp), 0);
	assert_int_equal(offsetof(struct ctp_census, fp), 8);
	assert_int_equal(offsetof(struct ctp_census, pc), 16);
	assert_int_equal(offsetof(struct ctp_census, stack_lo), 24);
	assert_int_equal(offsetof(struct ctp_census, stack_hi), 32);
	assert_int_equal(offsetof(struct ctp_station_ext, coro), 80);
	assert_int_equal(offsetof(struct ctp_station_ext, name), 88);
	assert_int_equal(sizeof(((struct ctp_station_ext *)0)->name),
			 CTP_STX_NAME_LEN);
	assert_int_equal(CTP_STX_NAME_LEN, COROTOP_NAME_MAX);
	assert_int_equal(offsetof(struct ctp_station_ext, pid), 136);
	assert_int_equal(offsetof(struct ctp_station_ext, image), 144);
	assert_int_equal(offsetof(struct ctp_station_ext, contexts_untracked),
			 152);
	assert_int_equal(offsetof(struct ctp_station_ext, switches_unseen),
			 160);
	assert_int_equal(offsetof(struct ctp_station_ext, entry), 168);
	assert_int_equal(offsetof(struct ctp_station_ext, saved_kind), 176);
	assert_int_equal(offsetof(struct ctp_station_ext, saved_at), 184);
	assert_int_equal(offsetof(struct ctp_station_ext, saved_ts), 192);
	assert_int_equal(offsetof(struct ctp_station_ext, made_for), 200);
	assert_int_equal(CTP_SAVED_FCONTEXT, 1);
	assert_int_equal(sizeof(struct ctp_station_ext), 208);
	assert_int_equal(CTP_STX_PROCESS, 8);
	/* The probe's per-coroutine state is embedded by schedulers: ABI. */
	assert_int_equal(sizeof(struct corotop_coro), 144);
}

/* Bytes as they appear in the file, on the little-endian targets we ship. */
static void test_magic_bytes(void **state)
{
	static struct ctp_header h;
	static struct ctp_station s;
	const unsigned char *b = (const unsigned char *)&h;

	(void)state;
	memset(&h, 0, sizeof(h));
	memset(&s, 0, sizeof(s));
	h.magic = CTP_MAGIC;
	h.version = CTP_VERSION;
	h.max_stations = 0x01020304;
	h.ext.magic = CTP_HX_MAGIC;
	s.ext.magic = CTP_STX_MAGIC;
	assert_memory_equal(b, "RCRTOROC", 8); /* "COROTRCR" as a LE u64 */
	assert_int_equal(b[8], 1);
	assert_int_equal(b[0x0C], 0x04);
	assert_int_equal(b[0x0F], 0x01);
	assert_memory_equal(b + 0x18, "CTX1", 4);
	assert_memory_equal((const unsigned char *)&s + 0x240, "STX1", 4);
	/* Extension flags are distinct bits. */
	assert_int_equal(CTP_HX_FREELIST | CTP_HX_FUTEX | CTP_HX_ASYM_FENCE |
				 CTP_HX_DIRTY,
			 15);
}

static void test_region_size(void **state)
{
	(void)state;
	assert_true(ctp_region_size(0) == 1024);
	assert_true(ctp_region_size(1) == 2048);
	assert_true(ctp_region_size(128) == 1024 + 128 * 1024);
	assert_true(ctp_region_size(CTP_MAX_STATIONS_LIMIT) ==
		    1024 + (1ull << 30));
	/* 64-bit arithmetic: no wrap at 32 bits. */
	assert_true(ctp_region_size(UINT32_MAX) ==
		    1024ull + (uint64_t)UINT32_MAX * 1024ull);
	assert_int_equal(CTP_MAX_STATIONS_LIMIT, 1048576);
}

/* A deep header's ring stride: DEP1's depth, DEP2's hub_depth; 0 (no deep
 * ring) for every header that lies about either. */
static void test_deep_stride(void **state)
{
	struct ctp_deep d = {.magic = CTP_DEEP_MAGIC, .depth = 64};

	(void)state;
	assert_int_equal(offsetof(struct ctp_deep, hub_depth), 16);
	assert_int_equal(ctp_deep_stride(&d), 64);
	d.hub_depth = 1024; /* ignored without DEP2 and its flag */
	assert_int_equal(ctp_deep_stride(&d), 64);
	d.flags = CTP_DEEP_HUBS; /* the flag under DEP1: a lie */
	assert_int_equal(ctp_deep_stride(&d), 0);
	d.magic = CTP_DEEP_MAGIC_HUBS;
	assert_int_equal(ctp_deep_stride(&d), 1024);
	d.flags = 0; /* DEP2 without its flag */
	assert_int_equal(ctp_deep_stride(&d), 0);
	d.flags = CTP_DEEP_HUBS;
	d.hub_depth = 64; /* no longer than depth */
	assert_int_equal(ctp_deep_stride(&d), 0);
	d.hub_depth = 1000; /* not a power of two */
	assert_int_equal(ctp_deep_stride(&d), 0);
	d.hub_depth = 2 * CTP_DEEP_MAX;
	assert_int_equal(ctp_deep_stride(&d), 0);
	d.hub_depth = 128;
	d.depth = 48; /* depth not a power of two */
	assert_int_equal(ctp_deep_stride(&d), 0);
	assert_int_equal(ctp_deep_size(4, 128), CTP_DEEP_HEADER + 4 * 128 * 64);
}

static void test_station_style_seq(void **state)
{
	(void)state;
	for (uint64_t n = 0; n < 4096; n++) {
		unsigned slot = (unsigned)(n % CTP_SLOTS);

		assert_true(ctp_event_seq(n) == 2 * n + 2);
		/* in progress: odd 2n+1 */
		assert_true(ctp_seq_event(2 * n + 1, slot, 1) == n);
		/* complete: even 2n+2 */
		assert_true(ctp_seq_event(2 * n + 2, slot, 1) == n);
		assert_true(ctp_seq_event(ctp_event_seq(n), slot, 1) == n);
		/* The slot does not change the station-style number. */
		assert_true(ctp_seq_event(2 * n + 2, (slot + 3) % 8, 1) == n);
	}
	assert_true(ctp_seq_event(1, 0, 1) == 0);
	assert_true(ctp_seq_event(2, 0, 1) == 0);
	assert_true(ctp_seq_event(3, 1, 1) == 1);
	assert_true(ctp_seq_event(18, 0, 1) == 8);
	/* Largest even seq: event 2^63 - 2, no wrap to a small number. */
	assert_true(ctp_seq_event(UINT64_MAX - 1, 0, 1) == (1ull << 63) - 2);
	assert_true(ctp_event_seq((1ull << 63) - 2) == UINT64_MAX - 1);
}

static void test_slot_style_seq(void **state)
{
	(void)state;
	for (unsigned s = 0; s < CTP_SLOTS; s++) {
		for (uint64_t k = 1; k <= 512; k++) {
			uint64_t n = 8 * (k - 1) + s;

			/* k-th write to slot s: +1 (odd) then +2 (even). */
			assert_true(ctp_seq_event(2 * k, s, 0) == n);
			assert_true(ctp_seq_event(2 * k - 1, s, 0) == n);
		}
	}
	/* Hand-computed values. */
	assert_true(ctp_seq_event(2, 0, 0) == 0);
	assert_true(ctp_seq_event(2, 7, 0) == 7);
	assert_true(ctp_seq_event(4, 0, 0) == 8);
	assert_true(ctp_seq_event(4, 3, 0) == 11);
	assert_true(ctp_seq_event(6, 2, 0) == 18);
	assert_true(ctp_seq_event(5, 2, 0) == 18);
}

static void test_seq_zero_never_written(void **state)
{
	(void)state;
	for (unsigned s = 0; s < CTP_SLOTS; s++) {
		assert_true(ctp_seq_event(0, s, 1) == UINT64_MAX);
		assert_true(ctp_seq_event(0, s, 0) == UINT64_MAX);
	}
	/* The smallest written seqs are never mistaken for "never written". */
	assert_true(ctp_seq_event(1, 0, 0) != UINT64_MAX);
	assert_true(ctp_seq_event(1, 0, 1) != UINT64_MAX);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_epoch_layout),
		cmocka_unit_test(test_header_layout),
		cmocka_unit_test(test_header_ext_layout),
		cmocka_unit_test(test_station_layout),
		cmocka_unit_test(test_station_ext_layout),
		cmocka_unit_test(test_magic_bytes),
		cmocka_unit_test(test_region_size),
		cmocka_unit_test(test_deep_stride),
		cmocka_unit_test(test_station_style_seq),
		cmocka_unit_test(test_slot_style_seq),
		cmocka_unit_test(test_seq_zero_never_written),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
