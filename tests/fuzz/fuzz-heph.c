/*
 * fuzz-heph: the Heph packet decoder and the trace-file walker against
 * arbitrary bytes -- a trace file is whatever another writer (or a disk, or
 * someone) left there.
 *
 * The first input byte picks raw or built.  Raw: the rest of the input is
 * the file.  Built: the rest drives the encoder -- epoch and unknown
 * metadata, events with every attribute the encoder writes, hand-made
 * string arrays, runs of junk, into a buffer whose capacity the input also
 * chooses (so the encoder overflows) -- and then a few byte edits and maybe
 * a cut, so that random inputs reach resync, lying sizes and truncation and
 * not only "bad magic".  Nothing may crash or read outside the bytes, and:
 *   - what the encoder wrote before any edit decodes back as exactly the
 *     packets it said it wrote, end to end;
 *   - an event heph_decode accepts can have every attribute and every
 *     element walked by the accessors (and the walk agrees with nattrs);
 *   - the walker's refs lie inside the bytes, in increasing offset order,
 *     without overlap, and each decodes again to the same fields;
 *   - problems recorded <= HEPHFILE_PROBLEMS <= seen, skipped_bytes <= the
 *     size, by_start is a stable ordering by start, and seek is a lower
 *     bound.
 *
 * Built as a libFuzzer target with clang (-Dfuzz=true) and, always, with
 * tests/fuzz/driver.c, which replays a seeded pseudo-random corpus.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzzin.h"
#include "engine/heph/hephfile.h"

#define FZ_CAP 32768u

/* ---- checking a decoded event ---- */

static void walk_attrs(const struct heph_packet *p)
{
	struct heph_attr a;
	uint32_t pos = 0, n = 0;
	volatile uint64_t sink = 0;

	while (heph_attr_next(p, &pos, &a)) {
		uint8_t base = a.type & (uint8_t)~HEPH_ARRAY;
		uint16_t len;

		n++;
		if (a.name + a.name_len >
			    (const char *)p->attrs + p->attrs_len ||
		    a.value + a.value_len > p->attrs + p->attrs_len)
			abort();
		if (base == HEPH_STR) {
			uint32_t sp = 0, k = 0;
			const char *s;

			while ((s = heph_attr_str_next(&a, &sp, &len))) {
				if (len)
					sink += (uint8_t)s[len - 1];
				k++;
			}
			if (a.type & HEPH_ARRAY ? k != a.count : k != 0)
				abort();
			for (uint16_t i = 0; i < a.count && i < 4; i++)
				if (!heph_attr_str(&a, i, &len))
					abort();
			if (heph_attr_str(&a, a.count, &len))
				abort();
		} else {
			for (uint32_t i = 0; i < a.count; i++) {
				double d = heph_attr_f64(&a, (uint16_t)i);
				uint64_t bits;

				memcpy(&bits, &d, sizeof(bits));
				if (bits != heph_attr_u64(&a, (uint16_t)i) ||
				    (uint64_t)heph_attr_i64(&a, (uint16_t)i) !=
					    bits)
					abort();
				sink += bits;
			}
			if (a.count < 0xffff && (heph_attr_u64(&a, a.count) ||
						 heph_attr_f64(&a, a.count)))
				abort();
		}
	}
	if (n != p->nattrs || pos != p->attrs_len)
		abort();
	(void)sink;
}

static void check_decode(const uint8_t *p, size_t n)
{
	struct heph_packet pk;
	char err[128];

	for (size_t o = 0; o < n && o < 16; o++) {
		enum heph_status st =
			heph_decode(p + o, n - o, &pk, err, sizeof(err));

		if (st != HEPH_OK) {
			/* Every failure says why; the quick and the verbose
			 * attribute checks agree. */
			if (!err[0] || !memchr(err, 0, sizeof(err)) ||
			    strstr(err, "inconsistent"))
				abort();
			continue;
		}
		if (pk.size > n - o || pk.size > HEPH_PACKET_MAX)
			abort();
		if (pk.kind == HEPH_EVENT) {
			if (pk.size < HEPH_EVENT_FIXED ||
			    HEPH_EVENT_FIXED + pk.desc_len + pk.attrs_len !=
				    pk.size)
				abort();
			walk_attrs(&pk);
		} else if (HEPH_META_FIXED + pk.option_len + pk.value_len !=
			   pk.size) {
			abort();
		}
	}
}

/* ---- checking the walker ---- */

/* Walked in two halves (any size splits), the file reads exactly as in
 * one walk: the same events, options, problems and flags. */
static void check_split(const uint8_t *p, size_t n)
{
	struct heph_file a, b;
	char err[128];
	size_t keep = heph_file_split_min;

	heph_file_split_min = SIZE_MAX;
	if (!heph_file_index_bytes(&a, p, n, err, sizeof(err)))
		abort();
	heph_file_split_min = 1;
	if (!heph_file_index_bytes(&b, p, n, err, sizeof(err)))
		abort();
	heph_file_split_min = keep;
	if (a.nev != b.nev || a.nmeta != b.nmeta ||
	    a.unknown_options != b.unknown_options ||
	    a.have_epoch != b.have_epoch || a.epoch_ns != b.epoch_ns ||
	    a.nproblems != b.nproblems ||
	    a.problems_total != b.problems_total ||
	    a.skipped_bytes != b.skipped_bytes || a.truncated != b.truncated ||
	    a.nmeta_off != b.nmeta_off || a.in_order != b.in_order ||
	    (a.nev && (a.first_start != b.first_start ||
		       a.last_end != b.last_end || a.max_start != b.max_start)))
		abort();
	if (a.nev && memcmp(a.ev, b.ev, a.nev * sizeof(*a.ev)))
		abort();
	if (a.nev && memcmp(a.by_start, b.by_start, a.nev * sizeof(uint32_t)))
		abort();
	if (a.nmeta_off &&
	    memcmp(a.meta_off, b.meta_off, a.nmeta_off * sizeof(uint64_t)))
		abort();
	for (size_t i = 0; i < a.nproblems; i++)
		if (a.problems[i].off != b.problems[i].off ||
		    strcmp(a.problems[i].what, b.problems[i].what))
			abort();
	heph_file_close(&a);
	heph_file_close(&b);
}

static void check_file(const uint8_t *p, size_t n)
{
	struct heph_file f;
	struct heph_packet pk;
	char err[128];

	if (!heph_file_index_bytes(&f, p, n, err, sizeof(err)))
		abort(); /* only out of memory */
	if (f.zst) {	 /* zstd frames: fuzz-hephzst's */
		heph_file_close(&f);
		return;
	}
	if (f.nproblems > HEPHFILE_PROBLEMS || f.nproblems > f.problems_total ||
	    (f.problems_total <= HEPHFILE_PROBLEMS &&
	     f.nproblems != f.problems_total) ||
	    f.skipped_bytes > n || (f.truncated && !f.nproblems) ||
	    f.size != n || f.mapped)
		abort();
	for (size_t i = 0; i < f.nev; i++) {
		const struct heph_ref *r = &f.ev[i];

		if (r->off > n || r->size > n - r->off || r->size < 42 ||
		    (i && f.ev[i - 1].off + f.ev[i - 1].size > r->off))
			abort();
		if (!heph_file_event(&f, i, &pk) || pk.start != r->start ||
		    pk.end != r->end || pk.stream != r->stream ||
		    pk.substream != r->substream || pk.counter != r->counter)
			abort();
		walk_attrs(&pk);
		if (r->start < f.first_start || r->end > f.last_end)
			abort();
	}
	if (heph_file_event(&f, f.nev, &pk))
		abort();
	for (size_t i = 1; i < f.nev; i++) {
		const struct heph_ref *a = &f.ev[f.by_start[i - 1]];
		const struct heph_ref *b = &f.ev[f.by_start[i]];

		if (f.by_start[i] >= f.nev || a->start > b->start ||
		    (a->start == b->start &&
		     f.by_start[i - 1] >= f.by_start[i]))
			abort();
	}
	for (size_t i = 0; i < f.nev && i < 8; i++) {
		uint64_t t = f.ev[i].start;
		size_t at = heph_file_seek(&f, t);

		if (at >= f.nev || f.ev[f.by_start[at]].start != t ||
		    (at && f.ev[f.by_start[at - 1]].start >= t))
			abort();
	}
	if (heph_file_seek(&f, UINT64_MAX) > f.nev)
		abort();
	heph_file_close(&f);
}

/* ---- building a trace from the input ---- */

static void put_junk(struct heph_enc *e, struct fz_in *in)
{
	size_t n = fz_u8(in) % 24;

	for (size_t i = 0; i < n && e->len < e->cap; i++)
		e->buf[e->len++] = fz_u8(in);
}

/* A string array the encoder has no call for, by hand (no overflow: the
 * caller checked the room). */
static size_t put_str_array(uint8_t *p, struct fz_in *in)
{
	uint16_t count = fz_u8(in) % 5;
	size_t n = 0;

	p[n++] = 0;
	p[n++] = 1;
	p[n++] = 'S';
	p[n++] = HEPH_ARRAY | HEPH_STR;
	p[n++] = 0;
	p[n++] = (uint8_t)count;
	for (uint16_t i = 0; i < count; i++) {
		uint8_t len = fz_u8(in) % 8;

		p[n++] = 0;
		p[n++] = len;
		memset(p + n, 'a' + i, len);
		n += len;
	}
	return n;
}

/* Returns the events written whole; *clean = bytes before any junk. */
static size_t build(struct heph_enc *e, struct fz_in *in, size_t *clean,
		    size_t *nevents_clean)
{
	static const char *const descs[] = {"running", "suspended", "lost", ""};
	size_t nev = 0;
	bool junk = false;

	*clean = 0;
	*nevents_clean = 0;
	while (in->pos < in->n && !e->overflow) {
		uint8_t op = fz_u8(in);

		switch (op % 6) {
		case 0:
			heph_enc_epoch(e, fz_u64(in));
			break;
		case 1: {
			uint8_t v[5] = {fz_u8(in), 2, 3, 4, 5};

			heph_enc_meta(e, op & 8 ? "epoch" : "x", v, op % 5);
			break;
		}
		case 5:
			put_junk(e, in);
			junk = true;
			break;
		default: {
			uint64_t st = fz_u8(in) % 4 ? fz_u8(in) : fz_u64(in);
			uint64_t stack[16];
			uint16_t nst = fz_u8(in) % 17;

			for (uint16_t i = 0; i < nst; i++)
				stack[i] = fz_u64(in);
			if (!heph_enc_event_begin(
				    e, fz_u8(in) % 3, fz_u8(in), fz_u8(in) % 4,
				    st, st + fz_u8(in), descs[op >> 6]))
				break;
			heph_enc_u64(e, "addr", fz_u64(in));
			if (op & 8)
				heph_enc_i64(e, "d", -(int64_t)fz_u8(in));
			if (op & 16)
				heph_enc_str(e, "symbol", "worker_loop+0x12");
			if (op & 32) {
				double v = (double)fz_u16(in) / 7.0;

				heph_enc_f64(e, "f", v);
				heph_enc_f64_array(e, "fa", &v, 1);
			}
			heph_enc_u64_array(e, "stack", stack, nst);
			if ((op & 4) && e->open && e->cap - e->len >= 64) {
				/* Name, type, count, 4 strings of <= 7. */
				e->len += put_str_array(e->buf + e->len, in);
			}
			if (heph_enc_event_end(e))
				nev++;
			break;
		}
		}
		if (!junk && !e->overflow) {
			*clean = e->len;
			*nevents_clean = nev;
		}
	}
	return nev;
}

/* What the encoder wrote decodes back, packet after packet. */
static void check_clean(const uint8_t *p, size_t n, size_t nev)
{
	struct heph_packet pk;
	size_t off = 0, k = 0;

	while (off < n) {
		if (heph_decode(p + off, n - off, &pk, NULL, 0) != HEPH_OK)
			abort();
		if (pk.kind == HEPH_EVENT) {
			walk_attrs(&pk);
			k++;
		}
		off += pk.size;
	}
	if (off != n || k != nev)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t buf[FZ_CAP];
	struct fz_in in = {data, size, 1};
	struct heph_enc e;
	size_t clean, nclean, n;

	if (size == 0 || !(data[0] & 1)) {
		check_decode(data + !!size, size - !!size);
		check_file(data + !!size, size - !!size);
		check_split(data + !!size, size - !!size);
		return 0;
	}
	/* Capacity: mostly room, sometimes tight (overflow). */
	n = data[0] & 2 ? FZ_CAP : 64 + (size_t)(data[0] >> 2) * 37;
	heph_enc_init(&e, buf, n);
	build(&e, &in, &clean, &nclean);
	check_clean(buf, clean, nclean);
	n = e.len;
	check_file(buf, n);
	/* Edits: a byte here and there, a cut. */
	for (int k = 0; k < 4 && in.pos < in.n && n; k++) {
		size_t at = (size_t)fz_u16(&in) % n;
		uint8_t v = fz_u8(&in);

		if (v & 1)
			buf[at] = v;
		else
			n = at + (v >> 1) % (n - at);
	}
	check_decode(buf, n);
	check_file(buf, n);
	check_split(buf, n);
	return 0;
}
