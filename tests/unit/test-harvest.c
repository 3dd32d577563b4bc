/*
 * harvest: the seqlock reader (src/engine/ctp/harvest.c, built here with
 * HARVEST_TEST_HOOKS) against scripted writer states.  A region lives in an
 * aligned buffer; the test plays the probe by writing slots directly, in the
 * corotop station style or the upstream per-slot style, and the hook
 * harvest_test_after_copy plays a writer racing the reader mid-copy.  Every
 * delivered payload is checked against what was written for its n, per
 * station n must strictly increase, and delivered + lost == written.  A
 * census station's first event (and only it) is flagged census.
 */
#include "harvest-fixture.h"

/* ---- basic seqlock reading ---- */

static void test_odd_seq_skipped_until_complete(void **state)
{
	struct fx *f = *state;

	ours_open(f, 0, 0xA, 0);
	ours_write(f, 0, 0);
	ours_write(f, 0, 1);
	ours_begin(f, 0, 2);
	assert_int_equal(scan(f), 2);
	assert_string_equal(logstr(f->r, 0), "O E0 E1");
	assert_int_equal(scan(f), 0); /* still in progress */
	ours_end(f, 0, 2);
	assert_int_equal(scan(f), 1);
	assert_string_equal(logstr(f->r, 0), "O E0 E1 E2");
	assert_int_equal(f->h.count.lost, 0);
	assert_int_equal(f->h.count.harvested, 3);
	assert_int_equal(f->r->bad, 0);
}

static void test_unchanged_seq_not_redelivered(void **state)
{
	struct fx *f = *state;

	ours_open(f, 1, 0xB, 0);
	for (uint64_t n = 0; n < 5; n++)
		ours_write(f, 1, n);
	assert_int_equal(scan(f), 5);
	for (int i = 0; i < 3; i++)
		assert_int_equal(scan(f), 0);
	assert_int_equal(harvest_station_scan(&f->h, 1, &f->sink), 0);
	assert_int_equal(f->r->delivered[1], 5);
	assert_int_equal(f->h.count.harvested, 5);
	assert_int_equal(f->h.count.scans, 4);
	assert_int_equal(f->r->opens[1], 1);
	assert_int_equal(f->r->bad, 0);
}

/* Hook: the writer starts (or finishes) event n + 8 in the slot being read. */
static uint64_t hook_n;
static int hook_complete;
static int hook_calls;

static void hook_overwrite(struct ctp_epoch *e)
{
	uint64_t n = hook_n;

	if (hook_calls++ || e != &F->st[0].slots[n % CTP_SLOTS])
		return;
	if (hook_complete)
		ours_write(F, 0, n);
	else
		ours_begin(F, 0, n);
}

static void test_torn_copy_discarded_and_lost(void **state)
{
	struct fx *f = *state;

	ours_open(f, 0, 0xA, 0);
	for (uint64_t n = 0; n < 8; n++)
		ours_write(f, 0, n);
	hook_n = 8, hook_complete = 0, hook_calls = 0;
	harvest_test_after_copy = hook_overwrite;
	assert_int_equal(scan(f), 7);
	assert_int_equal(f->h.count.torn, 1);
	/* Event 0 was overwritten while we copied it: lost, never delivered
	 * with a half-written payload. */
	assert_string_equal(logstr(f->r, 0), "O L1 E1 E2 E3 E4 E5 E6 E7");
	harvest_test_after_copy = NULL;
	ours_end(f, 0, 8);
	assert_int_equal(scan(f), 1);
	assert_int_equal(f->r->last_n[0], 8);
	assert_int_equal(f->r->delivered[0] + f->r->lost[0], 9);
	assert_int_equal(f->h.count.lost, 1);
	assert_int_equal(f->r->bad, 0);
}

static void test_torn_by_complete_write_delivers_new_event(void **state)
{
	struct fx *f = *state;

	ours_open(f, 0, 0xA, 0);
	for (uint64_t n = 0; n < 8; n++)
		ours_write(f, 0, n);
	hook_n = 8, hook_complete = 1, hook_calls = 0;
	harvest_test_after_copy = hook_overwrite;
	/* The torn slot is looked at again at once: it now holds a complete
	 * event 8, so event 0 is lost and the same pass delivers 1..8, with
	 * event 8's payload, not the copy of event 0. */
	assert_int_equal(scan(f), 8);
	assert_int_equal(f->h.count.torn, 1);
	harvest_test_after_copy = NULL;
	assert_int_equal(scan(f), 0);
	assert_string_equal(logstr(f->r, 0), "O L1 E1 E2 E3 E4 E5 E6 E7 E8");
	assert_int_equal(f->r->bad, 0);
}

static void test_lapped_ring(void **state)
{
	struct fx *f = *state;

	ours_open(f, 0, 0xA, 0);
	assert_int_equal(scan(f), 0);
	for (uint64_t n = 0; n < 20; n++)
		ours_write(f, 0, n);
	for (int i = 0; i < 20; i++)
		up_write(f, 1);
	assert_int_equal(scan(f), 16);
	assert_string_equal(logstr(f->r, 0),
			    "O L12 E12 E13 E14 E15 E16 E17 E18 E19");
	assert_string_equal(logstr(f->r, 1),
			    "O L12 E12 E13 E14 E15 E16 E17 E18 E19");
	assert_int_equal(f->h.count.lost, 24);
	assert_int_equal(f->h.count.harvested, 16);
	/* Lapped by far more than a ring (and than any walk bound): the gap
	 * is counted at once and the newest 8 still arrive in this scan. */
	for (uint64_t n = 20; n < 1020; n++)
		ours_write(f, 0, n);
	assert_int_equal(harvest_station_scan(&f->h, 0, &f->sink), 8);
	assert_int_equal(f->r->lost[0], 12 + 992);
	assert_int_equal(f->r->last_n[0], 1019);
	assert_int_equal(f->r->bad, 0);
}

/* ---- randomised exact loss accounting ---- */

static uint64_t rng;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static void random_run(struct fx *f, uint64_t seed)
{
	uint64_t written[NST] = {0};
	bool pending[NST] = {false};

	rng = seed;
	for (uint32_t i = 0; i < 3; i++)
		ours_open(f, i, 0x100 + i, 0);
	for (int round = 0; round < 3000; round++) {
		for (uint32_t i = 0; i < NST; i++) {
			uint64_t burst = rnd() % 8 ? rnd() % 10 : rnd() % 40;

			if (pending[i]) { /* finish the in-progress write */
				ours_end(f, i, written[i]++);
				pending[i] = false;
			}
			for (uint64_t b = 0; b < burst; b++) {
				if (i == 3)
					up_write(f, i);
				else
					ours_write(f, i, written[i]);
				written[i]++;
			}
			if (i != 3 && rnd() % 4 == 0) {
				ours_begin(f, i, written[i]);
				pending[i] = true;
			}
		}
		scan(f);
	}
	for (uint32_t i = 0; i < 3; i++)
		if (pending[i])
			ours_end(f, i, written[i]++);
	scan(f);
	assert_int_equal(scan(f), 0);
	assert_int_equal(f->r->bad, 0);
	uint64_t tot_d = 0, tot_l = 0;
	for (uint32_t i = 0; i < NST; i++) {
		assert_int_equal(f->r->delivered[i] + f->r->lost[i],
				 written[i]);
		assert_int_equal(f->r->last_n[i], written[i] - 1);
		assert_true(f->r->delivered[i] > 0);
		tot_d += f->r->delivered[i];
		tot_l += f->r->lost[i];
	}
	assert_true(tot_l > 0); /* the run did exercise loss */
	assert_int_equal(f->h.count.harvested, tot_d);
	assert_int_equal(f->h.count.lost, tot_l);
}

static void test_random_interleaving_seed1(void **state)
{
	random_run(*state, 0x9E3779B97F4A7C15ull);
}

static void test_random_interleaving_seed2(void **state)
{
	random_run(*state, 12345);
}

/* ---- upstream stations and detection ---- */

static void test_upstream_slot_style_in_n_order(void **state)
{
	struct fx *f = *state;

	assert_int_equal(scan(f), 0);
	assert_int_equal(f->r->opens[0], 0); /* allocated, never written */
	for (int i = 0; i < 5; i++)
		up_write(f, 0);
	assert_int_equal(scan(f), 5);
	assert_int_equal(f->h.state[0].style, HARVEST_STYLE_SEQLOCK);
	for (int i = 0; i < 6; i++)
		up_write(f, 0);
	assert_int_equal(scan(f), 6);
	/* n order across the ring's wrap: slots 5 6 7 0 1 2. */
	assert_string_equal(logstr(f->r, 0),
			    "O E0 E1 E2 E3 E4 E5 E6 E7 E8 E9 E10");
	/* Raw seqs: event 8 is the 2nd write to slot 0. */
	assert_true(atomic_load(&f->st[0].slots[0].seq) == 4);
	assert_true(atomic_load(&f->st[0].slots[3].seq) == 2);
	atomic_store(&f->st[0].is_dead, 1);
	assert_int_equal(scan(f), 0);
	assert_int_equal(f->r->closes[0], 1);
	/* Upstream stations are never recycled. */
	assert_true(atomic_load(&f->hdr->ext.free_head) == 0);
	assert_int_equal(scan(f), 0);
	assert_int_equal(f->r->closes[0], 1);
	assert_int_equal(f->r->bad, 0);
}

static void test_upstream_probe_id_written_late(void **state)
{
	struct fx *f = *state;

	up_write(f, 2); /* the SDK writes the header after taking the slot */
	f->r->pid[2] = 0;
	assert_int_equal(scan(f), 1);
	assert_true(f->r->pid[2] == 0);
	f->st[2].probe_id = 0x77;
	up_write(f, 2);
	f->r->pid[2] = 0x77; /* what the event must now carry */
	assert_int_equal(scan(f), 1);
	assert_int_equal(f->r->bad, 0);
	assert_int_equal(f->r->opens[2], 1);
}

static void test_magic_without_gen_not_opened(void **state)
{
	struct fx *f = *state;

	f->st[0].ext.magic = CTP_STX_MAGIC;
	f->st[0].ext.flags = CTP_STX_SEQ_STATION;
	f->st[0].probe_id = 0xC;
	for (uint64_t n = 0; n < 3; n++)
		ours_write(f, 0, n);
	assert_int_equal(scan(f), 0);
	assert_int_equal(f->r->opens[0], 0);
	assert_int_equal(f->h.state[0].state, HARVEST_EMPTY);
	atomic_store(&f->st[0].ext.gen, 1); /* the opener publishes (G) */
	assert_int_equal(scan(f), 3);
	assert_string_equal(logstr(f->r, 0), "O E0 E1 E2");
	assert_true(f->r->pid[0] == 0xC);
	assert_int_equal(f->r->bad, 0);
}

static void test_detect_ours_vs_upstream(void **state)
{
	struct fx *f = *state;

	ours_open(f, 0, 0xA, 0);
	for (uint64_t n = 0; n < 6; n++)
		ours_write(f, 0, n);
	for (int i = 0; i < 6; i++)
		up_write(f, 1);
	/* Station 2 allocated and silent; station 3 beyond allocated_count. */
	ours_open(f, 3, 0xD, 0);
	ours_write(f, 3, 0);
	atomic_store(&f->hdr->allocated_count, 3);
	assert_int_equal(scan(f), 12);
	assert_string_equal(logstr(f->r, 0), "O E0 E1 E2 E3 E4 E5");
	assert_string_equal(logstr(f->r, 1), "O E0 E1 E2 E3 E4 E5");
	assert_int_equal(f->h.state[0].style, HARVEST_STYLE_STATION);
	assert_int_equal(f->h.state[1].style, HARVEST_STYLE_SEQLOCK);
	assert_int_equal(f->r->opens[2] + f->r->opens[3], 0);
	/* harvest_allocated is bounded by the mapped count. */
	atomic_store(&f->hdr->allocated_count, 1000);
	assert_int_equal(harvest_allocated(&f->h), NST);
	ours_open(f, 2, 0xC, 0);
	ours_write(f, 2, 0);
	assert_int_equal(scan(f), 2);
	assert_int_equal(f->h.state[2].style, HARVEST_STYLE_STATION);
	assert_int_equal(f->r->opens[3], 1);
	assert_int_equal(f->r->bad, 0);
}

/* ---- death and recycling ---- */

static void test_dead_delivers_all_then_closes(void **state)
{
	struct fx *f = *state;
	uint64_t h0;

	ours_open(f, 1, 0xA, 0);
	for (uint64_t n = 0; n < 5; n++)
		ours_write(f, 1, n);
	ours_close(f, 1, 5);
	assert_int_equal(scan(f), 5);
	assert_string_equal(logstr(f->r, 1), "O E0 E1 E2 E3 E4 C");
	/* recycle: pushed onto the free list as index + 1. */
	h0 = atomic_load(&f->hdr->ext.free_head);
	assert_int_equal((uint32_t)h0, 2);
	assert_int_equal(f->h.count.recycled, 1);
	/* Never pushed twice, never closed twice. */
	assert_int_equal(scan(f), 0);
	assert_true(atomic_load(&f->hdr->ext.free_head) == h0);
	assert_int_equal(f->r->closes[1], 1);
	assert_int_equal(f->h.count.closed, 1);
}

static void hook_die(struct ctp_epoch *e)
{
	if (hook_calls++ || e != &F->st[0].slots[7])
		return;
	/* While slot 7 is copied the writer records event 8 into slot 0
	 * (already read this pass) and dies. */
	ours_write(F, 0, 8);
	ours_close(F, 0, 9);
}

static void test_dead_flag_read_before_final_pass(void **state)
{
	struct fx *f = *state;

	ours_open(f, 0, 0xA, 0);
	for (uint64_t n = 0; n < 7; n++)
		ours_write(f, 0, n);
	assert_int_equal(scan(f), 7);
	ours_write(f, 0, 7);
	hook_calls = 0;
	harvest_test_after_copy = hook_die;
	/* Event 8 and the flag land mid-pass: the pass may deliver event 8,
	 * but it read the flag before it began, so it must not close. */
	assert_int_equal(scan(f), 2);
	harvest_test_after_copy = NULL;
	assert_int_equal(f->r->closes[0], 0); /* must not close yet */
	assert_int_equal(scan(f), 0);
	assert_string_equal(logstr(f->r, 0), "O E0 E1 E2 E3 E4 E5 E6 E7 E8 C");
	assert_int_equal(f->r->bad, 0);
}

static void test_no_recycle_when_not_owner(void **state)
{
	struct fx *f = *state;

	harvest_finish(&f->h);
	assert_true(harvest_init(&f->h, f->hdr, NST, false));
	ours_open(f, 0, 0xA, 0);
	ours_write(f, 0, 0);
	ours_close(f, 0, 1);
	assert_int_equal(scan(f), 1);
	assert_int_equal(f->r->closes[0], 1);
	assert_true(atomic_load(&f->hdr->ext.free_head) == 0);
	assert_int_equal(f->h.count.recycled, 0);
}

static void test_recycled_station_new_generation(void **state)
{
	struct fx *f = *state;
	uint32_t idx;

	ours_open(f, 0, 0xA, 0);
	for (uint64_t n = 0; n < 5; n++)
		ours_write(f, 0, n);
	ours_close(f, 0, 5);
	assert_int_equal(scan(f), 5);
	/* The probe pops it and a new coroutine starts at old next_n. */
	idx = freelist_pop(f->hdr, f->st, NST);
	assert_int_equal(idx, 0);
	ours_open(f, 0, 0xB, f->st[0].ext.next_n);
	assert_true(atomic_load(&f->st[0].ext.gen) == 2);
	for (uint64_t n = 5; n < 8; n++)
		ours_write(f, 0, n);
	assert_int_equal(scan(f), 3);
	assert_string_equal(logstr(f->r, 0), "O E0 E1 E2 E3 E4 C O E5 E6 E7");
	assert_true(f->r->pid[0] == 0xB);
	/* The new occupant laps its ring: losses counted for it alone. */
	for (uint64_t n = 8; n < 18; n++)
		ours_write(f, 0, n);
	ours_close(f, 0, 18);
	assert_int_equal(scan(f), 8);
	assert_int_equal(f->r->lost[0], 2);
	assert_int_equal(f->r->closes[0], 2);
	assert_int_equal(f->h.count.recycled, 2);
	assert_int_equal((uint32_t)atomic_load(&f->hdr->ext.free_head), 1);
	assert_int_equal(f->r->bad, 0); /* no event carried 0xA after reopen */
}

static void test_reopen_without_death(void **state)
{
	struct fx *f = *state;

	ours_open(f, 0, 0xA, 0);
	ours_write(f, 0, 0);
	assert_int_equal(scan(f), 1);
	ours_write(f, 0, 1);
	ours_write(f, 0, 2);
	/* A foreign engine recycled it: a new generation while we think the
	 * old occupant lives.  The scan delivers the old occupant's tail,
	 * closes it, then opens the new one at its first_n. */
	ours_open(f, 0, 0xC, 100);
	ours_write(f, 0, 100);
	assert_int_equal(scan(f), 3);
	assert_string_equal(logstr(f->r, 0), "O E0 E1 E2 C O E100");
	assert_true(f->r->pid[0] == 0xC);
	assert_int_equal(f->h.state[0].expected, 101);
	assert_int_equal(f->r->bad, 0);
}

/* ---- reading a ring back (engine_watch's seed) ---- */

static void test_recent_ring_readback(void **state)
{
	struct fx *f = *state;
	struct harvest_event ev[CTP_SLOTS];
	unsigned got;

	ours_open(f, 0, 0xA, 0);
	for (uint64_t n = 0; n < 11; n++)
		ours_write(f, 0, n);
	assert_int_equal(scan(f), 8); /* 0..2 lost, 3..10 delivered */
	ours_write(f, 0, 11);	      /* written, not harvested yet */
	ours_begin(f, 0, 12);	      /* in progress in slot 4 */
	got = harvest_station_recent(&f->h, 0, 0xA, ev);
	/* Slots hold 8..11 and 5..7 complete, 12 half written (4 gone): the
	 * delivered ones, oldest first, never 11 (not delivered yet). */
	assert_int_equal(got, 6);
	for (unsigned i = 0; i < got; i++) {
		uint64_t n = 5 + i;

		assert_true(ev[i].n == n);
		assert_true(ev[i].ts == pl(0, n, 0));
		assert_true(ev[i].addr == pl(0, n, 2));
		assert_true(ev[i].probe_id == 0xA && ev[i].station == 0);
	}
	/* Another occupant's probe id, or a station out of range: none. */
	assert_int_equal(harvest_station_recent(&f->h, 0, 0xB, ev), 0);
	assert_int_equal(harvest_station_recent(&f->h, NST, 0xA, ev), 0);
	assert_int_equal(harvest_station_recent(&f->h, 1, 0, ev), 0);
	/* Read-only: the scan still delivers 11 and 12 exactly once. */
	ours_end(f, 0, 12);
	assert_int_equal(scan(f), 2);
	assert_int_equal(f->r->bad, 0);
}

static void test_recent_ring_new_occupant(void **state)
{
	struct fx *f = *state;
	struct harvest_event ev[CTP_SLOTS];

	ours_open(f, 0, 0xA, 0);
	for (uint64_t n = 0; n < 6; n++)
		ours_write(f, 0, n);
	ours_close(f, 0, 6);
	assert_int_equal(scan(f), 6);
	/* Closed, not reopened: the dead occupant's ring is still its own. */
	assert_int_equal(harvest_station_recent(&f->h, 0, 0xA, ev), 6);
	/* Reopened, first_n 6: the new occupant sees only its own events,
	 * even though slots 0..1 still hold 0xA's. */
	freelist_pop(f->hdr, f->st, NST);
	ours_open(f, 0, 0xB, 6);
	ours_write(f, 0, 6);
	ours_write(f, 0, 7);
	assert_int_equal(scan(f), 2);
	assert_int_equal(harvest_station_recent(&f->h, 0, 0xA, ev), 0);
	assert_int_equal(harvest_station_recent(&f->h, 0, 0xB, ev), 2);
	assert_true(ev[0].n == 6 && ev[1].n == 7);
}

static void test_recent_ring_upstream(void **state)
{
	struct fx *f = *state;
	struct harvest_event ev[CTP_SLOTS];

	for (int i = 0; i < 20; i++)
		up_write(f, 3);
	f->st[3].probe_id = 0;
	assert_true(scan(f) > 0);
	assert_int_equal(
		harvest_station_recent(&f->h, 3, f->h.state[3].probe_id, ev),
		8);
	for (unsigned i = 0; i < 8; i++)
		assert_true(ev[i].n == 12 + i);
}

/* ---- garbage and lying seqs ---- */

/* harvested + lost accounted for a station equals the distance walked. */
static void assert_accounting(struct fx *f, uint32_t i, uint64_t first)
{
	assert_true(f->r->delivered[i] + f->r->lost[i] ==
		    f->h.state[i].expected - first);
}

static void test_garbage_seqs_bounded(void **state)
{
	struct fx *f = *state;
	uint64_t lost1;

	f->r->no_payload_check = true;
	ours_open(f, 0, 0xA, 0);
	for (unsigned k = 0; k < CTP_SLOTS; k++)
		atomic_store(&f->st[0].slots[k].seq, UINT64_MAX - 1);
	assert_true(scan(f) <= CTP_SLOTS);
	lost1 = f->h.count.lost;
	/* Lying seqs cost O(1): the walk stays within what was claimed. */
	assert_true(f->h.state[0].expected <= (1ull << 63));
	assert_accounting(f, 0, 0);
	for (int i = 0; i < 1000; i++)
		assert_int_equal(scan(f), 0);
	assert_true(f->h.count.lost == lost1); /* no repeated accounting */

	/* Wrong congruence: slot k claims event k + 1. */
	ours_open(f, 1, 0xB, 0);
	for (unsigned k = 0; k < CTP_SLOTS; k++)
		atomic_store(&f->st[1].slots[k].seq, ctp_event_seq(k + 1));
	assert_int_equal(scan(f), 0); /* nothing matches its slot */
	assert_true(f->r->lost[1] <= 9);
	assert_accounting(f, 1, 0);
	lost1 = f->r->lost[1];
	for (int i = 0; i < 100; i++)
		scan(f);
	assert_true(f->r->lost[1] == lost1);
	assert_int_equal(f->r->delivered[1], 0);
}

static void test_garbage_fuzz(void **state)
{
	struct fx *f = *state;
	static const uint64_t special[] = {0,
					   1,
					   2,
					   3,
					   UINT64_MAX,
					   UINT64_MAX - 1,
					   UINT64_MAX - 2,
					   1ull << 62,
					   1ull << 63};

	f->r->no_payload_check = true;
	rng = 0xC0FFEE;
	ours_open(f, 0, 0xA, 0);
	for (int it = 0; it < 20000; it++) {
		for (uint32_t i = 0; i < 2; i++) {
			unsigned k = (unsigned)(rnd() % CTP_SLOTS);
			uint64_t v, r = rnd();

			switch (r % 4) {
			case 0:
				v = special[rnd() % 9];
				break;
			case 1:
				v = rnd();
				break;
			default: /* plausible, near the station's cursor */
				v = 2 * (f->h.state[i].expected + rnd() % 24) +
				    (rnd() % 3 == 0);
				break;
			}
			atomic_store(&f->st[i].slots[k].seq, v);
		}
		f->r->have_last[0] = f->r->have_last[1] = false;
		fx_now_ns += 1000000; /* undecided styles get decided */
		assert_true(harvest_station_scan(&f->h, 0, &f->sink) <=
			    CTP_SLOTS);
		assert_true(harvest_station_scan(&f->h, 1, &f->sink) <=
			    CTP_SLOTS);
		assert_accounting(f, 0, 0);
	}
	/* Station 1 (no magic) was read as upstream throughout. */
	assert_int_equal(f->h.state[1].style, HARVEST_STYLE_SEQLOCK);
	assert_int_equal(f->r->opens[0], 1);
}

static void test_null_sink_callbacks(void **state)
{
	struct fx *f = *state;
	struct harvest_sink none = {0};

	ours_open(f, 0, 0xA, 0);
	for (uint64_t n = 0; n < 12; n++)
		ours_write(f, 0, n);
	ours_close(f, 0, 12);
	assert_int_equal(harvest_scan(&f->h, &none), 8);
	assert_int_equal(f->h.count.lost, 4);
	assert_int_equal(f->h.count.closed, 1);
	assert_int_equal(f->h.count.opened, 1);
}

/* A census station (src/probe/census.c): its first event is flagged and
 * carries the header's ctp_census; the occupant's next events are not. */
static void test_census_first_event(void **state)
{
	struct fx *f = *state;
	struct ctp_station *s = &f->st[1];

	s->ext.census = (struct ctp_census){1, 2, 3, 4, 5};
	ours_open(f, 1, 0xCE, 10);
	s->ext.flags |= CTP_STX_CENSUS;
	ours_write(f, 1, 10);
	assert_int_equal(scan(f), 1);
	assert_int_equal(f->h.count.census, 1);
	ours_write(f, 1, 11);
	ours_write(f, 1, 12);
	assert_int_equal(scan(f), 2);
	assert_int_equal(f->h.count.census, 1);
	assert_string_equal(logstr(f->r, 1), "O E10 E11 E12");
	assert_int_equal(f->r->bad, 0);
	assert_int_equal(census_seen.n, 10);
	assert_int_equal(census_seen.where.fp, 2);
	assert_int_equal(census_seen.where.stack_hi, 5);
	/* A plain station: never census. */
	ours_open(f, 2, 0xCF, 0);
	ours_write(f, 2, 0);
	assert_int_equal(scan(f), 1);
	assert_int_equal(f->h.count.census, 1);
}

/* Who occupies a station (harvest_who): the header's coro and name, as
 * untrusted bytes -- a name without a NUL is cut at 47 bytes, bytes that
 * are not printable ASCII read '?', a NUL ends it, another writer's
 * station has none, and a copy the next occupant raced is dropped. */
static void test_who_hostile_names(void **state)
{
	struct fx *f = *state;
	struct ctp_station *s = &f->st[0];
	struct harvest_who who;
	char want[CTP_STX_NAME_LEN];

	memset(s->ext.name, 'A', sizeof(s->ext.name)); /* no NUL at all */
	s->ext.coro = 0x7f0000001000ull;
	ours_open(f, 0, 0x1, 0);
	ours_write(f, 0, 0);
	assert_int_equal(scan(f), 1);
	harvest_who(&f->h, 0, &who);
	memset(want, 'A', sizeof(want) - 1);
	want[sizeof(want) - 1] = '\0';
	assert_string_equal(who.name, want);
	assert_true(who.coro == 0x7f0000001000ull);

	/* Escapes, DEL, UTF-8 and a NUL with garbage after it. */
	memset(s->ext.name, 0, sizeof(s->ext.name));
	memcpy(s->ext.name,
	       "a\x1b[2Jb\x7f\xc3\xa9"
	       "c\0zzz",
	       14);
	ours_close(f, 0, 1);
	assert_int_equal(scan(f), 0); /* recycled */
	ours_open(f, 0, 0x2, 1);
	ours_write(f, 0, 1);
	assert_int_equal(scan(f), 1);
	harvest_who(&f->h, 0, &who);
	assert_string_equal(who.name, "a?[2Jb???c");

	/* The generation moved since the harvest opened it: nothing. */
	atomic_fetch_add(&s->ext.gen, 1);
	harvest_who(&f->h, 0, &who);
	assert_string_equal(who.name, "");
	assert_true(who.coro == 0);

	/* Another writer's station (no magic): no name, whatever it holds. */
	memcpy(f->st[1].ext.name, "upstream", 9);
	up_write(f, 1);
	scan(f);
	harvest_who(&f->h, 1, &who);
	assert_string_equal(who.name, "");
	/* Out of range. */
	harvest_who(&f->h, NST, &who);
	assert_string_equal(who.name, "");
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_odd_seq_skipped_until_complete),
		T(test_unchanged_seq_not_redelivered),
		T(test_torn_copy_discarded_and_lost),
		T(test_torn_by_complete_write_delivers_new_event),
		T(test_lapped_ring),
		T(test_random_interleaving_seed1),
		T(test_random_interleaving_seed2),
		T(test_upstream_slot_style_in_n_order),
		T(test_upstream_probe_id_written_late),
		T(test_magic_without_gen_not_opened),
		T(test_detect_ours_vs_upstream),
		T(test_dead_delivers_all_then_closes),
		T(test_dead_flag_read_before_final_pass),
		T(test_no_recycle_when_not_owner),
		T(test_recycled_station_new_generation),
		T(test_reopen_without_death),
		T(test_recent_ring_readback),
		T(test_recent_ring_new_occupant),
		T(test_recent_ring_upstream),
		T(test_garbage_seqs_bounded),
		T(test_garbage_fuzz),
		T(test_null_sink_callbacks),
		T(test_census_first_event),
		T(test_who_hostile_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
