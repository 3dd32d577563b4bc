/*
 * test-heph: the Heph packet codec (src/engine/heph/heph.c) -- the spec's two
 * examples byte for byte, encoded and decoded; every attribute type
 * (string arrays and i64 arrays built by hand, since corotop never writes
 * them but other writers may); the encoder's overflow and refusals; and a
 * decoding error for every way a packet can lie.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "engine/heph/heph.h"

/* The spec's metadata example: epoch = 1610113734118010000 (23 bytes). */
static const uint8_t golden_epoch[23] = {
	0x75, 0xd1, 0x1d, 0x4d, 0x00, 0x00, 0x00, 0x17, 0x00, 0x05, 0x65, 0x70,
	0x6f, 0x63, 0x68, 0x16, 0x58, 0x45, 0xe9, 0x12, 0x14, 0xec, 0x90,
};

/* The spec's event example (91 bytes): stream 0, counter 0, substream 1,
 * 100..200, "My event", Test = u64 123, Test2 = f64 array {123.456, 789}. */
static const uint8_t golden_event[91] = {
	0xc1, 0xfc, 0x1f, 0xb7, 0x00, 0x00, 0x00, 0x5b, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x64, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0xc8, 0x00, 0x08, 0x4d, 0x79, 0x20, 0x65, 0x76, 0x65,
	0x6e, 0x74, 0x00, 0x04, 0x54, 0x65, 0x73, 0x74, 0x01, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x7b, 0x00, 0x05, 0x54, 0x65, 0x73, 0x74, 0x32,
	0x83, 0x00, 0x02, 0x40, 0x5e, 0xdd, 0x2f, 0x1a, 0x9f, 0xbe, 0x77, 0x40,
	0x88, 0xa8, 0x00, 0x00, 0x00, 0x00, 0x00,
};

/* ---- a byte builder for packets the encoder does not write ---- */

struct bb {
	uint8_t b[1024];
	size_t n;
};

static void bb_u8(struct bb *b, uint8_t v)
{
	b->b[b->n++] = v;
}

static void bb_u16(struct bb *b, uint16_t v)
{
	bb_u8(b, (uint8_t)(v >> 8));
	bb_u8(b, (uint8_t)v);
}

static void bb_u32(struct bb *b, uint32_t v)
{
	bb_u16(b, (uint16_t)(v >> 16));
	bb_u16(b, (uint16_t)v);
}

static void bb_u64(struct bb *b, uint64_t v)
{
	bb_u32(b, (uint32_t)(v >> 32));
	bb_u32(b, (uint32_t)v);
}

static void bb_str(struct bb *b, const char *s)
{
	size_t n = strlen(s);

	bb_u16(b, (uint16_t)n);
	memcpy(b->b + b->n, s, n);
	b->n += n;
}

/* An event header with description desc; the size is set by bb_seal. */
static void bb_event(struct bb *b, const char *desc)
{
	b->n = 0;
	bb_u32(b, HEPH_EVENT_MAGIC);
	bb_u32(b, 0);
	bb_u32(b, 7);
	bb_u32(b, 9);
	bb_u64(b, 11);
	bb_u64(b, 1000);
	bb_u64(b, 2000);
	bb_str(b, desc);
}

static void bb_seal(struct bb *b)
{
	uint32_t n = (uint32_t)b->n;

	b->b[4] = (uint8_t)(n >> 24);
	b->b[5] = (uint8_t)(n >> 16);
	b->b[6] = (uint8_t)(n >> 8);
	b->b[7] = (uint8_t)n;
}

static void bb_attr(struct bb *b, const char *name, uint8_t type)
{
	bb_str(b, name);
	bb_u8(b, type);
}

/* The next attribute, which must be there and be called name. */
static void next_attr(const struct heph_packet *p, uint32_t *pos,
		      struct heph_attr *a, const char *name, uint8_t type)
{
	assert_true(heph_attr_next(p, pos, a));
	assert_int_equal(a->name_len, strlen(name));
	assert_memory_equal(a->name, name, a->name_len);
	assert_int_equal(a->type, type);
}

/* ---- the spec's examples ---- */

static void test_golden_epoch(void **state)
{
	uint8_t buf[64];
	struct heph_enc e;
	struct heph_packet p;
	char err[200];

	(void)state;
	heph_enc_init(&e, buf, sizeof(buf));
	assert_true(heph_enc_epoch(&e, 1610113734118010000ull));
	assert_int_equal(e.len, 23);
	assert_memory_equal(buf, golden_epoch, 23);

	assert_int_equal(heph_decode(golden_epoch, 23, &p, err, sizeof(err)),
			 HEPH_OK);
	assert_int_equal(p.kind, HEPH_META);
	assert_int_equal(p.size, 23);
	assert_int_equal(p.option_len, 5);
	assert_memory_equal(p.option, "epoch", 5);
	assert_int_equal(p.value_len, 8);
	assert_true(heph_be64(p.value) == 1610113734118010000ull);
}

static void test_golden_event(void **state)
{
	uint8_t buf[128];
	const double arr[2] = {123.456, 789.0};
	struct heph_enc e;
	struct heph_packet p;
	struct heph_attr a;
	uint32_t pos = 0;
	char err[200];

	(void)state;
	heph_enc_init(&e, buf, sizeof(buf));
	assert_true(heph_enc_event_begin(&e, 0, 0, 1, 100, 200, "My event"));
	assert_true(heph_enc_u64(&e, "Test", 123));
	assert_true(heph_enc_f64_array(&e, "Test2", arr, 2));
	assert_int_equal(heph_enc_event_end(&e), 91);
	assert_int_equal(e.len, 91);
	assert_memory_equal(buf, golden_event, 91);

	assert_int_equal(heph_decode(golden_event, 91, &p, err, sizeof(err)),
			 HEPH_OK);
	assert_int_equal(p.kind, HEPH_EVENT);
	assert_int_equal(p.size, 91);
	assert_int_equal(p.stream, 0);
	assert_int_equal(p.counter, 0);
	assert_int_equal(p.substream, 1);
	assert_int_equal(p.start, 100);
	assert_int_equal(p.end, 200);
	assert_int_equal(p.desc_len, 8);
	assert_memory_equal(p.desc, "My event", 8);
	assert_int_equal(p.nattrs, 2);
	assert_int_equal(p.attrs_len, 91 - 50);

	next_attr(&p, &pos, &a, "Test", HEPH_U64);
	assert_int_equal(a.count, 1);
	assert_int_equal(a.value_len, 8);
	assert_int_equal(heph_attr_u64(&a, 0), 123);
	next_attr(&p, &pos, &a, "Test2", HEPH_ARRAY | HEPH_F64);
	assert_int_equal(a.count, 2);
	assert_int_equal(a.value_len, 16);
	assert_true(heph_attr_f64(&a, 0) == 123.456);
	assert_true(heph_attr_f64(&a, 1) == 789.0);
	assert_true(heph_attr_f64(&a, 2) == 0); /* past the end */
	assert_false(heph_attr_next(&p, &pos, &a));
	assert_false(heph_attr_next(&p, &pos, &a));
}

/* ---- every type ---- */

static void test_every_type(void **state)
{
	uint8_t buf[512];
	const uint64_t stack[3] = {0x1000, 0xffffffffffffffffull, 0};
	struct heph_enc e;
	struct heph_packet p;
	struct heph_attr a;
	uint32_t pos = 0;
	char err[200];

	(void)state;
	heph_enc_init(&e, buf, sizeof(buf));
	assert_true(heph_enc_event_begin(&e, 0xfffffffe, 0xffffffff, 0,
					 UINT64_MAX, 0, ""));
	assert_true(heph_enc_u64(&e, "u", UINT64_MAX));
	assert_true(heph_enc_i64(&e, "neg", -5));
	assert_true(heph_enc_i64(&e, "min", INT64_MIN));
	assert_true(heph_enc_f64(&e, "f", -0.5));
	assert_true(heph_enc_str(&e, "s", "hello"));
	assert_true(heph_enc_str(&e, "", ""));
	assert_true(heph_enc_u64_array(&e, "stack", stack, 3));
	assert_true(heph_enc_u64_array(&e, "none", NULL, 0));
	assert_true(heph_enc_f64_array(&e, "nof", NULL, 0));
	assert_true(heph_enc_event_end(&e) == e.len);

	assert_int_equal(heph_decode(buf, e.len, &p, err, sizeof(err)),
			 HEPH_OK);
	assert_int_equal(p.stream, 0xfffffffe);
	assert_int_equal(p.counter, 0xffffffff);
	assert_int_equal(p.substream, 0);
	assert_true(p.start == UINT64_MAX);
	assert_int_equal(p.end, 0);
	assert_int_equal(p.desc_len, 0);
	assert_int_equal(p.nattrs, 9);
	next_attr(&p, &pos, &a, "u", HEPH_U64);
	assert_true(heph_attr_u64(&a, 0) == UINT64_MAX);
	next_attr(&p, &pos, &a, "neg", HEPH_I64);
	assert_int_equal(heph_attr_i64(&a, 0), -5);
	next_attr(&p, &pos, &a, "min", HEPH_I64);
	assert_true(heph_attr_i64(&a, 0) == INT64_MIN);
	next_attr(&p, &pos, &a, "f", HEPH_F64);
	assert_true(heph_attr_f64(&a, 0) == -0.5);
	next_attr(&p, &pos, &a, "s", HEPH_STR);
	{
		uint16_t len;
		const char *s = heph_attr_str(&a, 0, &len);

		assert_int_equal(len, 5);
		assert_memory_equal(s, "hello", 5);
		assert_null(heph_attr_str(&a, 1, &len));
		assert_int_equal(heph_attr_u64(&a, 0), 0); /* not a number */
	}
	next_attr(&p, &pos, &a, "", HEPH_STR);
	assert_int_equal(a.value_len, 0);
	next_attr(&p, &pos, &a, "stack", HEPH_ARRAY | HEPH_U64);
	assert_int_equal(a.count, 3);
	assert_int_equal(heph_attr_u64(&a, 0), 0x1000);
	assert_true(heph_attr_u64(&a, 1) == 0xffffffffffffffffull);
	assert_int_equal(heph_attr_u64(&a, 2), 0);
	next_attr(&p, &pos, &a, "none", HEPH_ARRAY | HEPH_U64);
	assert_int_equal(a.count, 0);
	assert_int_equal(a.value_len, 0);
	assert_int_equal(heph_attr_u64(&a, 0), 0);
	next_attr(&p, &pos, &a, "nof", HEPH_ARRAY | HEPH_F64);
	assert_int_equal(a.count, 0);
	assert_false(heph_attr_next(&p, &pos, &a));
}

/* Arrays of strings and of i64, and an empty string array, by hand. */
static void test_hand_made_arrays(void **state)
{
	struct bb b;
	struct heph_packet p;
	struct heph_attr a;
	uint32_t pos = 0, sp = 0;
	uint16_t len;
	const char *s;
	char err[200];

	(void)state;
	bb_event(&b, "x");
	bb_attr(&b, "names", HEPH_ARRAY | HEPH_STR);
	bb_u16(&b, 3);
	bb_str(&b, "alpha");
	bb_str(&b, "");
	bb_str(&b, "gamma!");
	bb_attr(&b, "deltas", HEPH_ARRAY | HEPH_I64);
	bb_u16(&b, 2);
	bb_u64(&b, (uint64_t)-1);
	bb_u64(&b, 42);
	bb_attr(&b, "nostr", HEPH_ARRAY | HEPH_STR);
	bb_u16(&b, 0);
	bb_seal(&b);

	assert_int_equal(heph_decode(b.b, b.n, &p, err, sizeof(err)), HEPH_OK);
	assert_int_equal(p.nattrs, 3);
	assert_int_equal(p.stream, 7);
	assert_int_equal(p.counter, 9);
	assert_int_equal(p.substream, 11);
	next_attr(&p, &pos, &a, "names", HEPH_ARRAY | HEPH_STR);
	assert_int_equal(a.count, 3);
	assert_int_equal(a.value_len, 2 + 5 + 2 + 2 + 6);
	s = heph_attr_str(&a, 0, &len);
	assert_int_equal(len, 5);
	assert_memory_equal(s, "alpha", 5);
	s = heph_attr_str(&a, 1, &len);
	assert_non_null(s);
	assert_int_equal(len, 0);
	s = heph_attr_str(&a, 2, &len);
	assert_int_equal(len, 6);
	assert_memory_equal(s, "gamma!", 6);
	assert_null(heph_attr_str(&a, 3, &len));
	assert_int_equal(len, 0);
	/* The cursor gives the same three. */
	s = heph_attr_str_next(&a, &sp, &len);
	assert_memory_equal(s, "alpha", len);
	s = heph_attr_str_next(&a, &sp, &len);
	assert_int_equal(len, 0);
	s = heph_attr_str_next(&a, &sp, &len);
	assert_int_equal(len, 6);
	assert_memory_equal(s, "gamma!", 6);
	assert_null(heph_attr_str_next(&a, &sp, &len));
	next_attr(&p, &pos, &a, "deltas", HEPH_ARRAY | HEPH_I64);
	assert_int_equal(heph_attr_i64(&a, 0), -1);
	assert_int_equal(heph_attr_i64(&a, 1), 42);
	next_attr(&p, &pos, &a, "nostr", HEPH_ARRAY | HEPH_STR);
	assert_int_equal(a.count, 0);
	assert_null(heph_attr_str(&a, 0, &len));
	assert_false(heph_attr_next(&p, &pos, &a));
}

/* ---- the encoder's limits ---- */

static void test_overflow(void **state)
{
	uint8_t buf[128], snap[128];
	const uint64_t stack[16] = {1};
	struct heph_enc e;

	(void)state;
	memset(buf, 0xaa, sizeof(buf));
	heph_enc_init(&e, buf, 100);
	assert_true(heph_enc_epoch(&e, 5));
	assert_int_equal(e.len, 23);
	memcpy(snap, buf, sizeof(buf));

	/* The header fits, the stack does not: the packet is dropped. */
	assert_true(heph_enc_event_begin(&e, 1, 2, 3, 4, 5, "running"));
	assert_true(heph_enc_u64(&e, "addr", 9));
	assert_false(heph_enc_u64_array(&e, "stack", stack, 16));
	assert_true(e.overflow);
	assert_int_equal(e.len, 23);
	assert_false(e.open);
	assert_false(heph_enc_u64(&e, "seq", 1));
	assert_int_equal(heph_enc_event_end(&e), 0);
	assert_int_equal(e.len, 23);
	assert_memory_equal(buf, snap, 23);
	assert_int_equal(buf[100], 0xaa); /* nothing past cap */

	/* Sticky: a small packet that would fit is not written after it. */
	assert_false(heph_enc_epoch(&e, 6));
	assert_int_equal(e.len, 23);

	/* A metadata packet that does not fit: the buffer is unchanged. */
	heph_enc_init(&e, buf, 30);
	memcpy(snap, buf, sizeof(buf));
	assert_true(heph_enc_meta(&e, "x", "ab", 2));
	assert_int_equal(e.len, 13);
	assert_false(heph_enc_epoch(&e, 7));
	assert_true(e.overflow);
	assert_int_equal(e.len, 13);
	assert_memory_equal(buf + 13, snap + 13, sizeof(buf) - 13);

	/* An event whose header does not fit. */
	heph_enc_init(&e, buf, 41);
	memcpy(snap, buf, sizeof(buf));
	assert_false(heph_enc_event_begin(&e, 0, 0, 0, 0, 0, ""));
	assert_true(e.overflow);
	assert_int_equal(e.len, 0);
	assert_memory_equal(buf, snap, sizeof(buf));

	/* Exactly full is not an overflow. */
	heph_enc_init(&e, buf, 23);
	assert_true(heph_enc_epoch(&e, 1610113734118010000ull));
	assert_false(e.overflow);
	assert_memory_equal(buf, golden_epoch, 23);
}

static void test_refusals(void **state)
{
	static uint8_t buf[1 << 18];
	static char big[70000];
	static uint64_t many[65536];
	struct heph_enc e;
	struct heph_packet p;
	size_t n;

	(void)state;
	memset(big, 'a', sizeof(big) - 1);
	heph_enc_init(&e, buf, sizeof(buf));
	/* Too long a description: no packet is begun. */
	assert_false(heph_enc_event_begin(&e, 0, 0, 0, 0, 0, big));
	assert_false(e.open);
	assert_int_equal(e.len, 0);
	assert_false(heph_enc_u64(&e, "a", 1)); /* no packet open */
	assert_false(heph_enc_meta(&e, big, "", 0));
	/* Too long a string, array or name: that attribute only. */
	assert_true(heph_enc_event_begin(&e, 0, 0, 0, 0, 0, "d"));
	assert_false(heph_enc_str(&e, "s", big));
	assert_false(heph_enc_u64(&e, big, 1));
	assert_false(heph_enc_u64_array(&e, "a", many, 65536));
	assert_false(e.overflow);
	assert_true(heph_enc_u64(&e, "ok", 1));
	n = heph_enc_event_end(&e);
	assert_int_equal(n, 42 + 1 + 2 + 2 + 1 + 8);
	assert_int_equal(heph_decode(buf, n, &p, NULL, 0), HEPH_OK);
	assert_int_equal(p.nattrs, 1);
	/* Beginning again while a packet is open drops the open one. */
	heph_enc_init(&e, buf, sizeof(buf));
	assert_true(heph_enc_event_begin(&e, 0, 0, 0, 0, 0, "half"));
	assert_true(heph_enc_event_begin(&e, 0, 0, 0, 0, 0, "whole"));
	assert_int_equal(heph_enc_event_end(&e), 47);
	assert_int_equal(e.len, 47);
}

/* ---- decoding errors ---- */

static void expect(const uint8_t *b, size_t n, enum heph_status want,
		   const char *msg)
{
	struct heph_packet p;
	char err[200];

	assert_int_equal(heph_decode(b, n, &p, err, sizeof(err)), want);
	if (!strstr(err, msg))
		fail_msg("error '%s' does not say '%s'", err, msg);
}

static void test_errors_header(void **state)
{
	uint8_t b[200];
	struct bb k;

	(void)state;
	memcpy(b, golden_event, 91);
	b[3] ^= 1;
	expect(b, 91, HEPH_BAD, "bad magic 0xc1fc1fb6");
	expect(b, 6, HEPH_BAD, "bad magic"); /* short, but not a packet */
	expect((const uint8_t *)"\x12\x34", 2, HEPH_BAD, "stray");
	/* Short: a size past the bytes there are, or a header cut. */
	expect(golden_event, 90, HEPH_SHORT, "size 91 but only 90");
	expect(golden_event, 7, HEPH_SHORT, "too few for a packet header");
	expect(golden_event, 2, HEPH_SHORT, "too few");
	expect(golden_epoch, 22, HEPH_SHORT, "size 23 but only 22");
	expect(golden_epoch, 0, HEPH_SHORT, "0 byte");
	/* Sizes below the fixed part. */
	memcpy(b, golden_event, 91);
	b[7] = 41;
	expect(b, 91, HEPH_BAD, "event packet size 41 is below");
	memcpy(b, golden_epoch, 23);
	b[7] = 9;
	expect(b, 23, HEPH_BAD, "metadata packet size 9 is below");
	/* Past HEPH_PACKET_MAX: bad (a lie), not short, whatever is there. */
	memcpy(b, golden_event, 91);
	b[4] = 0x01;
	b[7] = 0x01;
	expect(b, 91, HEPH_BAD, "16777217 is past the 16777216-byte limit");
	/* A metadata option name past the packet. */
	k.n = 0;
	bb_u32(&k, HEPH_META_MAGIC);
	bb_u32(&k, 14);
	bb_u16(&k, 5);
	bb_u32(&k, 0x65706f63);
	expect(k.b, k.n, HEPH_BAD, "option name of 5 bytes runs past");
	/* An option with an empty value is fine. */
	k.b[7] = 15;
	bb_u8(&k, 'h');
	expect(k.b, k.n, HEPH_OK, "");
}

static void test_errors_event(void **state)
{
	uint8_t b[200];
	struct bb k;

	(void)state;
	/* The description past the packet. */
	bb_event(&k, "");
	bb_seal(&k);
	k.b[41] = 1;
	expect(k.b, k.n, HEPH_BAD, "description of 1 bytes runs past");
	/* An attribute name past the packet. */
	bb_event(&k, "d");
	bb_u16(&k, 100);
	bb_u32(&k, 0x41424344);
	bb_seal(&k);
	expect(k.b, k.n, HEPH_BAD,
	       "attribute 1 at packet byte 43: attribute "
	       "name of 100 bytes");
	/* Unknown types, and the bare array marker. */
	bb_event(&k, "d");
	bb_attr(&k, "ok", HEPH_U64);
	bb_u64(&k, 1);
	bb_attr(&k, "t", 0x05);
	bb_u64(&k, 1);
	bb_seal(&k);
	expect(k.b, k.n, HEPH_BAD,
	       "attribute 2 at packet byte 56: attribute "
	       "'t' has type 0x05");
	k.b[k.n - 9] = 0x80;
	expect(k.b, k.n, HEPH_BAD, "type 0x80");
	k.b[k.n - 9] = 0x85;
	expect(k.b, k.n, HEPH_BAD, "type 0x85");
	k.b[k.n - 9] = 0x00;
	expect(k.b, k.n, HEPH_BAD, "type 0x00");
	k.b[k.n - 9] = HEPH_I64;
	expect(k.b, k.n, HEPH_OK, "");
	/* A scalar or string value past the packet. */
	bb_event(&k, "d");
	bb_attr(&k, "v", HEPH_F64);
	bb_u32(&k, 0);
	bb_seal(&k);
	expect(k.b, k.n, HEPH_BAD, "the f64 value of attribute 'v' runs past");
	bb_event(&k, "d");
	bb_attr(&k, "s", HEPH_STR);
	bb_u16(&k, 3);
	bb_u16(&k, 0x4142);
	bb_seal(&k);
	expect(k.b, k.n, HEPH_BAD, "the string value of attribute 's'");
	/* Array counts past the packet. */
	bb_event(&k, "d");
	bb_attr(&k, "a", HEPH_ARRAY | HEPH_U64);
	bb_u16(&k, 3);
	bb_u64(&k, 1);
	bb_u64(&k, 2);
	bb_seal(&k);
	expect(k.b, k.n, HEPH_BAD, "the u64 array value of attribute 'a'");
	bb_event(&k, "d");
	bb_attr(&k, "a", HEPH_ARRAY | HEPH_STR);
	bb_u16(&k, 2);
	bb_str(&k, "one");
	bb_seal(&k);
	expect(k.b, k.n, HEPH_BAD, "the string array value of attribute 'a'");
	bb_event(&k, "d");
	bb_attr(&k, "a", HEPH_ARRAY | HEPH_STR);
	bb_u8(&k, 0); /* half a count */
	bb_seal(&k);
	expect(k.b, k.n, HEPH_BAD, "string array value");
	/* Trailing bytes after the last attribute. */
	memcpy(b, golden_event, 91);
	b[7] = 94;
	memcpy(b + 91, "xyz", 3);
	expect(b, 94, HEPH_BAD, "attribute 3 at packet byte 91");
	b[7] = 92;
	expect(b, 94, HEPH_BAD, "1 byte(s) left, too few");
	/* Bytes past the packet's size are not the packet's. */
	b[7] = 91;
	expect(b, 94, HEPH_OK, "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_golden_epoch),
		cmocka_unit_test(test_golden_event),
		cmocka_unit_test(test_every_type),
		cmocka_unit_test(test_hand_made_arrays),
		cmocka_unit_test(test_overflow),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_errors_header),
		cmocka_unit_test(test_errors_event),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
