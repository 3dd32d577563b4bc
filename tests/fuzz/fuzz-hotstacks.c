/*
 * fuzz-hotstacks: the hot-stacks aggregate and the parked store against
 * rotation unions made of arbitrary bytes -- frames and tags as a hostile
 * or broken target can put them (the traceset already bounded counts and
 * offsets; values are anything).
 *
 * The input drives a few rounds on tiny bounds (8 stacks, 8 pairs, 4
 * parked): each round builds a union (ids, weights, 0..20 frames from a
 * small alphabet so stacks repeat, sometimes a tag, sometimes garbage with
 * bit 63), resolved owners, a parked list, a time step, and now and then a
 * zero or a new window.  Nothing may crash or read out of bounds, and:
 *   - the bounds hold (stacks, pairs, parked);
 *   - weight taken in == totals kept + weight evicted (since the last zero
 *     the aggregate's own books balance);
 *   - top lists are sorted, percentages in 0..100, %total >= %self;
 *   - a parked id that was listed and put is found with its frames.
 *
 * Built as a libFuzzer target with clang (-Dfuzz=true) and, always, with
 * tests/fuzz/driver.c, which replays a seeded pseudo-random corpus.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/calltrace/hotstacks.h"
#include "engine/calltrace/parked.h"

#define FUZZ_TRACES 24u

static uint64_t fuzz_byte(const uint8_t *data, size_t size, size_t *pos)
{
	return *pos < size ? data[(*pos)++] : 0;
}

static uint64_t fuzz_frame(uint64_t b)
{
	switch (b & 3) {
	case 0:
		return CT_TAG_CORO | (b >> 2); /* a tag in the middle */
	case 1:
		return 0x8000000000000000ull | b; /* garbage with bit 63 */
	default:
		return 0x1000 + (b >> 2) % 6; /* six frames: stacks repeat */
	}
}

static void fuzz_check_top(struct hotstacks *h, uint64_t coro, enum hot_order o,
			   uint64_t now)
{
	static struct hot_stack out[16];
	size_t n = hotstacks_top(h, coro, o, now, out, 16);

	for (size_t i = 0; i < n; i++) {
		double a = o == HOT_BY_TOTAL ? (double)out[i].total
					     : out[i].weight;

		if (out[i].nframes > CT_MAX_FRAMES || out[i].self_pct < 0 ||
		    out[i].self_pct > 100.0001 ||
		    out[i].total_pct + 1e-6 < out[i].self_pct ||
		    out[i].total_pct > 100.0001)
			abort();
		if (i && a > (o == HOT_BY_TOTAL ? (double)out[i - 1].total
						: out[i - 1].weight))
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hotstacks_config c;
	struct hotstacks_stats st;
	struct hotstacks *h;
	struct parked *p;
	struct traceset sets[2], *u = &sets[0], *prev = &sets[1];
	uint64_t owner[FUZZ_TRACES], parked[2 * FUZZ_TRACES], now = 1;
	uint64_t f[CT_MAX_FRAMES], back[CT_MAX_FRAMES];
	struct hot_frame nf[16];
	size_t pos = 0;

	hotstacks_config_defaults(&c);
	c.window_s = 1 + (unsigned)fuzz_byte(data, size, &pos) % 60;
	c.half_life_s = (unsigned)fuzz_byte(data, size, &pos) % 20;
	c.max_stacks = 8;
	c.max_coro = 8;
	h = hotstacks_create(&c);
	p = parked_create(4, NULL, NULL);
	if (!h || !p)
		abort();
	traceset_init(u, FUZZ_TRACES, FUZZ_TRACES * 24);
	traceset_init(prev, FUZZ_TRACES, FUZZ_TRACES * 24);
	for (int round = 0; round < 6 && pos < size; round++) {
		size_t ntr = fuzz_byte(data, size, &pos) % FUZZ_TRACES, np = 0;
		uint64_t before, kept = 0;

		struct traceset *t = prev;

		/* The last round's union becomes the previous one; some of its
		 * ids are listed (a coroutine harvested parked only after the
		 * rotation that collected its stack). */
		prev = u;
		u = t;
		for (size_t i = 0; i < prev->n; i++)
			if (fuzz_byte(data, size, &pos) & 1)
				parked[np++] = prev->e[i].id;
		traceset_clear(u);
		for (size_t i = 0; i < ntr; i++) {
			uint64_t b = fuzz_byte(data, size, &pos);
			uint32_t n = (uint32_t)(b % 21);
			uint64_t id = (uint64_t)(round + 1) << 32 | i;

			for (uint32_t k = 0; k < n; k++)
				f[k] = fuzz_frame(fuzz_byte(data, size, &pos));
			if (n && (b & 0x40))
				f[n - 1] = (b & 0x80 ? CT_TAG_THREAD
						     : CT_TAG_CORO) |
					   (b >> 2);
			traceset_add(u, id, b & 0x20 ? 0 : b % 7, 1, f, n);
			owner[i] = b & 0x10 ? b % 4 : 0;
			if (b & 0x08)
				parked[np++] = id;
		}
		traceset_seal(u);
		now += fuzz_byte(data, size, &pos) * 250000000ull;
		hotstacks_stats(h, &st);
		before = st.weight;
		hotstacks_ingest(h, u, owner, now);
		parked_update(p, u, prev, parked, np); /* ids ascend */
		hotstacks_stats(h, &st);
		if (st.stacks > 8 || st.coro_entries > 8)
			abort();
		if (st.weight < before)
			abort();
		/* Books: everything taken in is kept or counted evicted. */
		{
			static struct hot_stack all[16];
			size_t n =
				hotstacks_top(h, 0, HOT_BY_TOTAL, now, all, 16);

			for (size_t i = 0; i < n; i++)
				kept += all[i].total;
			if (!st.zeroed_ns &&
			    kept + st.evicted_weight != st.weight)
				abort();
		}
		for (uint64_t coro = 0; coro < 4; coro++) {
			fuzz_check_top(h, coro, HOT_BY_WINDOW, now);
			fuzz_check_top(h, coro, HOT_BY_TOTAL, now);
		}
		/* A listed, untagged parked trace is kept with its frames,
		 * unless the store was full. */
		for (size_t i = 0; i < u->n + prev->n; i++) {
			const struct traceset_entry *e =
				i < u->n ? &u->e[i] : &prev->e[i - u->n];
			size_t n = parked_frames(p, e->id, back, CT_MAX_FRAMES);

			if (n && (n != e->nframes ||
				  memcmp(back, e->frames, n * sizeof(*back))))
				abort();
		}
		while (hotstacks_new_frames(h, nf, 16))
			;
		switch (fuzz_byte(data, size, &pos) % 8) {
		case 0:
			hotstacks_zero(h, now);
			break;
		case 1:
			hotstacks_set_window(
				h, (unsigned)fuzz_byte(data, size, &pos) % 90,
				(unsigned)fuzz_byte(data, size, &pos) % 30);
			break;
		default:
			break;
		}
	}
	traceset_finish(&sets[0]);
	traceset_finish(&sets[1]);
	parked_destroy(p);
	hotstacks_destroy(h);
	return 0;
}
