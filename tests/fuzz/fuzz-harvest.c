/*
 * fuzz-harvest: the harvester against regions made of arbitrary bytes.
 *
 * The input is split into an initial image of a small region (header plus
 * FUZZ_STATIONS stations plus a deep area of FUZZ_DEPTH epochs a station,
 * rings FUZZ_HUB_DEPTH apart: a hub's, CTP_STX_HUB) and a tail of edit commands
 * that overwrite bytes between scans, which is how a hostile or buggy writer
 * looks to us.  The harvester's clock moves 40 ms a scan, so stations of no
 * known style get decided too.  The harvester must never crash, hang or read
 * outside the mapping, and its accounting must stay consistent: delivered
 * events per station strictly increase, the sink's counts agree with the
 * harvester's, and per occupancy delivered + lost never exceeds the numbers
 * walked.  At each open, who the occupant is (harvest_who) is read as the
 * engine does: its name must come out NUL-terminated within bounds, printable
 * ASCII only.
 *
 * Built as a libFuzzer target with clang (-Dfuzz=true) and, always, with
 * tests/fuzz/driver.c, which replays a seeded pseudo-random corpus in the
 * normal test suite.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/ctp/harvest.h"

#define FUZZ_STATIONS 4
#define FUZZ_SCANS 16
#define FUZZ_DEPTH 16u
/* Rings lie this far apart, a hub's (CTP_STX_HUB) length. */
#define FUZZ_HUB_DEPTH (4 * FUZZ_DEPTH)

struct fuzz_sink_state {
	const struct harvest *h;
	uint64_t events;
	uint64_t lost;
	uint64_t last_n[FUZZ_STATIONS];
	/* This occupancy's deliveries and losses (saturating). */
	uint64_t got[FUZZ_STATIONS], gone[FUZZ_STATIONS];
	int seen[FUZZ_STATIONS];
};

static uint64_t fuzz_ns;

static uint64_t fuzz_clock(void)
{
	return fuzz_ns;
}

static void fuzz_on_open(void *ctx, uint32_t st, uint64_t id, uint64_t birth)
{
	struct fuzz_sink_state *s = ctx;

	struct harvest_who who;
	size_t n;

	(void)id;
	(void)birth;
	if (st >= FUZZ_STATIONS)
		abort();
	harvest_who(s->h, st, &who);
	n = strnlen(who.name, sizeof(who.name));
	if (n >= sizeof(who.name))
		abort();
	for (size_t k = 0; k < n; k++)
		if (who.name[k] < 0x20 || who.name[k] > 0x7e)
			abort();
	s->seen[st] = 0;
	s->got[st] = s->gone[st] = 0;
}

static void fuzz_on_event(void *ctx, const struct harvest_event *ev)
{
	struct fuzz_sink_state *s = ctx;

	if (ev->station >= FUZZ_STATIONS)
		abort();
	/* Within one occupancy, event numbers strictly increase. */
	if (s->seen[ev->station] && ev->n <= s->last_n[ev->station])
		abort();
	s->seen[ev->station] = 1;
	s->last_n[ev->station] = ev->n;
	s->events++;
	s->got[ev->station]++;
}

static void fuzz_on_lost(void *ctx, uint32_t st, uint64_t count)
{
	struct fuzz_sink_state *s = ctx;

	if (st >= FUZZ_STATIONS || count == 0)
		abort();
	s->lost += count;
	s->gone[st] = s->gone[st] > UINT64_MAX - count ? UINT64_MAX
						       : s->gone[st] + count;
}

static void fuzz_on_close(void *ctx, uint32_t st)
{
	(void)ctx;
	if (st >= FUZZ_STATIONS)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t stations = CTP_HEADER_SIZE + FUZZ_STATIONS * CTP_STATION_SIZE;
	size_t region =
		stations + (size_t)ctp_deep_size(FUZZ_STATIONS, FUZZ_HUB_DEPTH);
	struct fuzz_sink_state st = {0};
	const struct harvest_sink sink = {
		.open = fuzz_on_open,
		.event = fuzz_on_event,
		.lost = fuzz_on_lost,
		.close = fuzz_on_close,
		.ctx = &st,
	};
	struct harvest h;
	uint8_t *mem;
	size_t image, pos;

	mem = aligned_alloc(CTP_HEADER_SIZE, region);
	if (!mem)
		return 0;
	memset(mem, 0, region);
	/* The first byte picks how much of the input is the initial image. */
	image = size ? (size_t)data[0] * 64 : 0;
	if (image > size - (size ? 1 : 0))
		image = size ? size - 1 : 0;
	if (image > region)
		image = region;
	if (image)
		memcpy(mem, data + 1, image);
	if (!harvest_init(&h, (struct ctp_header *)(void *)mem, FUZZ_STATIONS,
			  true)) {
		free(mem);
		return 0;
	}
	h.clock = fuzz_clock;
	st.h = &h;
	fuzz_ns = 1;
	harvest_set_deep(&h, (struct ctp_deep *)(void *)(mem + stations),
			 FUZZ_DEPTH, FUZZ_HUB_DEPTH);
	pos = 1 + image;
	for (int scan = 0; scan < FUZZ_SCANS; scan++) {
		harvest_scan(&h, &sink);
		fuzz_ns += 40000000;
		for (unsigned i = 0; i < FUZZ_STATIONS; i++) {
			const struct harvest_station *hs = &h.state[i];

			/* Only numbers the walk passed are delivered or
			 * lost (literal give-ups are neither). */
			if (hs->state == HARVEST_LIVE &&
			    st.got[i] + st.gone[i] > hs->expected - hs->first &&
			    st.gone[i] != UINT64_MAX)
				abort();
		}
		/* Edit: 2-byte offset, 1-byte length, bytes. */
		if (pos + 3 <= size) {
			size_t off = ((size_t)data[pos] << 8 | data[pos + 1]) %
				     region;
			size_t len = data[pos + 2] % 16;

			pos += 3;
			if (len > size - pos)
				len = size - pos;
			if (len > region - off)
				len = region - off;
			memcpy(mem + off, data + pos, len);
			pos += len;
		}
	}
	if (st.events != h.count.harvested || st.lost != h.count.lost)
		abort();
	harvest_finish(&h);
	free(mem);
	return 0;
}
