/*
 * dirty: the dirty hint (CTP_HX_DIRTY) on the engine side.  Probes set one
 * bit per group of 2^dirty_shift stations in ctp_header_ext.dirty[];
 * harvest_dirty_collect exchanges the words with 0 and harvest_scan_marked
 * visits only the marked, allocated groups.  The hint is only usable with
 * our extension magic, the flag and a sane shift.  Built like test-harvest
 * (harvest.c compiled in, fixture from harvest-fixture.h).
 */
#include "harvest-fixture.h"

/* ---- dirty hint (CTP_HX_DIRTY) ---- */

/* The harvester reads the hint's header words once, at init (the region is
 * untrusted); tests that change them start a fresh harvester. */
static void reinit(struct fx *f)
{
	harvest_finish(&f->h);
	assert_true(harvest_init(&f->h, f->hdr, NST, true));
}

static void mark(struct fx *f, uint32_t group)
{
	atomic_fetch_or(&f->hdr->ext.dirty[group / 64], 1ull << (group % 64));
}

static void test_has_dirty_requires_extension(void **state)
{
	struct fx *f = *state;

	assert_false(harvest_has_dirty(&f->h)); /* flag not set */
	f->hdr->ext.flags |= CTP_HX_DIRTY;
	reinit(f);
	assert_true(harvest_has_dirty(&f->h));
	f->hdr->ext.dirty_shift = 31;
	reinit(f);
	assert_true(harvest_has_dirty(&f->h));
	f->hdr->ext.dirty_shift = 32; /* would shift groups out of range */
	reinit(f);
	assert_false(harvest_has_dirty(&f->h));
	f->hdr->ext.dirty_shift = 0;
	f->hdr->ext.magic = 0; /* foreign region: reserved bytes mean nothing */
	reinit(f);
	assert_false(harvest_has_dirty(&f->h));
}

static void test_dirty_collect_and_scan_marked(void **state)
{
	struct fx *f = *state;
	uint64_t marks[CTP_HX_DIRTY_WORDS];

	f->hdr->ext.flags |= CTP_HX_DIRTY;
	reinit(f);
	assert_false(harvest_dirty_collect(&f->h, marks));
	for (unsigned w = 0; w < CTP_HX_DIRTY_WORDS; w++)
		assert_true(marks[w] == 0);
	for (uint32_t i = 0; i < NST; i++) {
		ours_open(f, i, 0x10 + i, 0);
		ours_write(f, i, 0);
		ours_write(f, i, 1);
	}
	mark(f, 1);
	mark(f, 3);
	mark(f, 64 * CTP_HX_DIRTY_WORDS - 1); /* far past allocated */
	assert_true(harvest_dirty_collect(&f->h, marks));
	assert_true(marks[0] == 0xA);
	assert_true(marks[CTP_HX_DIRTY_WORDS - 1] == 1ull << 63);
	for (unsigned w = 0; w < CTP_HX_DIRTY_WORDS; w++) /* exchanged */
		assert_true(atomic_load(&f->hdr->ext.dirty[w]) == 0);
	assert_int_equal(harvest_scan_marked(&f->h, marks, &f->sink), 4);
	assert_int_equal(f->r->opens[0] + f->r->opens[2], 0);
	assert_int_equal(f->r->delivered[1] + f->r->delivered[3], 4);
	assert_int_equal(f->h.count.scans, 1);
	/* A full scan still finds the unmarked stations. */
	assert_int_equal(scan(f), 4);

	/* Groups of 2 stations (shift 1), bounded by allocated_count. */
	f->hdr->ext.dirty_shift = 1;
	f->h.dirty_shift = 1; /* as if read at init (state is kept) */
	atomic_store(&f->hdr->allocated_count, 3);
	for (uint32_t i = 0; i < NST; i++)
		ours_write(f, i, 2);
	mark(f, 1); /* stations 2 and 3; 3 is not allocated */
	assert_true(harvest_dirty_collect(&f->h, marks));
	assert_int_equal(harvest_scan_marked(&f->h, marks, &f->sink), 1);
	assert_int_equal(f->r->delivered[2], 3);
	assert_int_equal(f->r->delivered[3], 2);
	assert_int_equal(f->r->delivered[0], 2);
	assert_int_equal(f->r->bad, 0);
}

static void test_saw_upstream(void **state)
{
	struct fx *f = *state;

	ours_open(f, 0, 0xA, 0);
	ours_write(f, 0, 0);
	scan(f);
	assert_false(f->h.saw_upstream);
	up_write(f, 2);
	scan(f);
	assert_true(f->h.saw_upstream);
}

/*
 * Regression: harvest_scan_marked once re-read the group shift from the
 * region on every call (the target can write it) and shifted by it
 * unchecked; a shift >= 64 is undefined behaviour (caught by UBSan).  The
 * shift is now captured and validated at init.
 */
static void test_scan_marked_corrupt_shift(void **state)
{
	struct fx *f = *state;
	uint64_t marks[CTP_HX_DIRTY_WORDS] = {0};

	f->hdr->ext.flags |= CTP_HX_DIRTY;
	reinit(f);
	assert_true(harvest_has_dirty(&f->h));
	ours_open(f, 1, 0xB, 0);
	ours_write(f, 1, 0);
	marks[0] = 1u << 1;
	f->hdr->ext.dirty_shift = 64; /* the target scribbles after start-up */
	assert_true(harvest_scan_marked(&f->h, marks, &f->sink) <= 1);
	assert_int_equal(f->r->opens[0] + f->r->opens[2] + f->r->opens[3], 0);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_has_dirty_requires_extension),
		T(test_dirty_collect_and_scan_marked),
		T(test_saw_upstream),
		T(test_scan_marked_corrupt_shift),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
