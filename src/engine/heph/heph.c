/*
 * heph: the packets of the Heph trace format, in memory.
 *
 * Layout (all integers big-endian, ../shared/specs/heph-trace-format.md):
 *
 *   metadata  magic 0x75D11D4D, u32 size, u16 option name length, name,
 *             value (the rest of the packet; `epoch` = u64 ns)
 *   event     magic 0xC1FC1FB7, u32 size, u32 stream, u32 stream counter,
 *             u64 substream, u64 start, u64 end, u16 description length,
 *             description (42 fixed bytes so far), then attributes up to
 *             the packet's end
 *   attribute u16 name length, name, type byte, value: u64 / i64 / f64
 *             (8 bytes), string (u16 length + bytes); type | 0x80 is an
 *             array: u16 count, then that many values of the type.  0x80
 *             alone is invalid.
 *
 * Encoding appends to a caller buffer.  An event is begun (its fixed part
 * and description are written with the size left zero), attributes are
 * appended, and the end writes the size.  Whatever does not fit drops the
 * whole packet: `len` goes back to where it began and `overflow` is set.
 * overflow is sticky -- nothing more is written until the caller flushes
 * and calls heph_enc_init again -- so that packets are never reordered or
 * silently skipped in the middle of a buffer.  A string longer than 65535
 * bytes, an array longer than 65535 elements or a packet that would pass
 * HEPH_PACKET_MAX is refused (false) without touching the buffer or the
 * overflow flag: no buffer could take it, so flushing would not help.
 *
 * Decoding trusts nothing: the magic, the size (at least the fixed part,
 * at most HEPH_PACKET_MAX, at most what is there), and every length and
 * count inside the packet are checked, and an event's attributes are walked
 * to the last byte (an unknown type or bytes left over are errors).  After
 * heph_decode says OK, heph_attr_next walks the same attributes without
 * having to fail.  Text is not checked for UTF-8: bytes are bytes.
 */
#include "engine/heph/heph.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define HEPH_STR_MAX 0xffffu

/* ---- encoding ---- */

void heph_enc_init(struct heph_enc *e, uint8_t *buf, size_t cap)
{
	memset(e, 0, sizeof(*e));
	e->buf = buf;
	e->cap = cap;
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 3; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

/* Drop the open packet (if any) and say the buffer is full. */
static bool enc_overflow(struct heph_enc *e)
{
	if (e->open)
		e->len = e->start;
	e->open = false;
	e->overflow = true;
	return false;
}

/* Room for n more bytes?  Then the write position; else NULL (overflow). */
static uint8_t *enc_room(struct heph_enc *e, size_t n)
{
	if (e->overflow || n > e->cap - e->len) {
		enc_overflow(e);
		return NULL;
	}
	return e->buf + e->len;
}

/* A caller that begins a packet while another is open loses the open one:
 * half a packet never stays in the buffer. */
static void enc_drop_open(struct heph_enc *e)
{
	if (e->open)
		e->len = e->start;
	e->open = false;
}

bool heph_enc_meta(struct heph_enc *e, const char *option, const void *value,
		   size_t value_len)
{
	size_t nlen = strlen(option), size;
	uint8_t *p;

	enc_drop_open(e);
	if (nlen > HEPH_STR_MAX || value_len > HEPH_PACKET_MAX)
		return false;
	size = HEPH_META_FIXED + nlen + value_len;
	if (size > HEPH_PACKET_MAX)
		return false;
	p = enc_room(e, size);
	if (!p)
		return false;
	put32(p, HEPH_META_MAGIC);
	put32(p + 4, (uint32_t)size);
	put16(p + 8, (uint16_t)nlen);
	memcpy(p + 10, option, nlen);
	if (value_len)
		memcpy(p + 10 + nlen, value, value_len);
	e->len += size;
	return true;
}

bool heph_enc_epoch(struct heph_enc *e, uint64_t epoch_ns)
{
	uint8_t v[8];

	put64(v, epoch_ns);
	return heph_enc_meta(e, "epoch", v, sizeof(v));
}

bool heph_enc_event_begin(struct heph_enc *e, uint32_t stream, uint32_t counter,
			  uint64_t substream, uint64_t start, uint64_t end,
			  const char *desc)
{
	size_t dlen = strlen(desc);
	uint8_t *p;

	enc_drop_open(e);
	if (dlen > HEPH_STR_MAX)
		return false;
	p = enc_room(e, HEPH_EVENT_FIXED + dlen);
	if (!p)
		return false;
	put32(p, HEPH_EVENT_MAGIC);
	put32(p + 4, 0); /* written by heph_enc_event_end */
	put32(p + 8, stream);
	put32(p + 12, counter);
	put64(p + 16, substream);
	put64(p + 24, start);
	put64(p + 32, end);
	put16(p + 40, (uint16_t)dlen);
	memcpy(p + 42, desc, dlen);
	e->start = e->len;
	e->len += HEPH_EVENT_FIXED + dlen;
	e->open = true;
	return true;
}

/*
 * Room for an attribute of `vlen` value bytes named `name` in the open
 * packet: writes name and type, returns where the value goes.  NULL when
 * no packet is open, the attribute is refused (too long), or the buffer is
 * full (overflow, packet dropped).
 */
static uint8_t *enc_attr(struct heph_enc *e, const char *name, uint8_t type,
			 size_t vlen)
{
	size_t nlen = strlen(name), n;
	uint8_t *p;

	if (!e->open || nlen > HEPH_STR_MAX)
		return NULL;
	n = 2 + nlen + 1 + vlen;
	if (vlen > HEPH_PACKET_MAX || e->len - e->start + n > HEPH_PACKET_MAX)
		return NULL;
	p = enc_room(e, n);
	if (!p)
		return NULL;
	put16(p, (uint16_t)nlen);
	memcpy(p + 2, name, nlen);
	p[2 + nlen] = type;
	e->len += n;
	return p + 3 + nlen;
}

bool heph_enc_u64(struct heph_enc *e, const char *name, uint64_t v)
{
	uint8_t *p = enc_attr(e, name, HEPH_U64, 8);

	if (p)
		put64(p, v);
	return p != NULL;
}

bool heph_enc_i64(struct heph_enc *e, const char *name, int64_t v)
{
	uint8_t *p = enc_attr(e, name, HEPH_I64, 8);

	if (p)
		put64(p, (uint64_t)v);
	return p != NULL;
}

bool heph_enc_f64(struct heph_enc *e, const char *name, double v)
{
	uint8_t *p = enc_attr(e, name, HEPH_F64, 8);
	uint64_t bits;

	memcpy(&bits, &v, sizeof(bits));
	if (p)
		put64(p, bits);
	return p != NULL;
}

bool heph_enc_str(struct heph_enc *e, const char *name, const char *v)
{
	return heph_enc_strn(e, name, v, strlen(v));
}

bool heph_enc_strn(struct heph_enc *e, const char *name, const char *v,
		   size_t n)
{
	uint8_t *p;

	if (n > HEPH_STR_MAX)
		return false;
	p = enc_attr(e, name, HEPH_STR, 2 + n);
	if (p) {
		put16(p, (uint16_t)n);
		memcpy(p + 2, v, n);
	}
	return p != NULL;
}

bool heph_enc_u64_array(struct heph_enc *e, const char *name, const uint64_t *v,
			size_t n)
{
	uint8_t *p;

	if (n > HEPH_STR_MAX)
		return false;
	p = enc_attr(e, name, HEPH_ARRAY | HEPH_U64, 2 + 8 * n);
	if (!p)
		return false;
	put16(p, (uint16_t)n);
	for (size_t i = 0; i < n; i++)
		put64(p + 2 + 8 * i, v[i]);
	return true;
}

bool heph_enc_f64_array(struct heph_enc *e, const char *name, const double *v,
			size_t n)
{
	uint8_t *p;

	if (n > HEPH_STR_MAX)
		return false;
	p = enc_attr(e, name, HEPH_ARRAY | HEPH_F64, 2 + 8 * n);
	if (!p)
		return false;
	put16(p, (uint16_t)n);
	for (size_t i = 0; i < n; i++) {
		uint64_t bits;

		memcpy(&bits, &v[i], sizeof(bits));
		put64(p + 2 + 8 * i, bits);
	}
	return true;
}

size_t heph_enc_event_end(struct heph_enc *e)
{
	size_t size;

	if (!e->open)
		return 0;
	size = e->len - e->start;
	put32(e->buf + e->start + 4, (uint32_t)size);
	e->open = false;
	return size;
}

/* ---- decoding ---- */

/* The message for the caller (err may be NULL); returns st. */
__attribute__((format(printf, 4, 5))) static enum heph_status
dec_say(enum heph_status st, char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return st;
}

#define dec_fail(err, errlen, ...) dec_say(HEPH_BAD, err, errlen, __VA_ARGS__)

/* Bytes of one value of base type t at p (end = packet end), or 0 when it
 * does not fit.  Strings: 2 + length. */
static uint32_t value_size(uint8_t t, const uint8_t *p, const uint8_t *end)
{
	if (t == HEPH_STR) {
		uint32_t n;

		if (end - p < 2)
			return 0;
		n = 2u + heph_be16(p);
		return n <= (size_t)(end - p) ? n : 0;
	}
	return end - p >= 8 ? 8 : 0;
}

static const char *type_name(uint8_t t)
{
	static const char *const names[] = {"u64", "i64", "f64", "string"};

	t &= (uint8_t)~HEPH_ARRAY;
	return t >= HEPH_U64 && t <= HEPH_STR ? names[t - 1] : "?";
}

/*
 * The attribute at p (end = packet end) into a, or NULL with err: the
 * byte after it.  Every length and count is checked against end.
 */
static const uint8_t *attr_parse(const uint8_t *p, const uint8_t *end,
				 struct heph_attr *a, char *err, size_t errlen)
{
	uint8_t t, base;
	uint32_t n;

	if (end - p < 2) {
		dec_fail(err, errlen,
			 "%td byte(s) left, too few for an "
			 "attribute name length",
			 end - p);
		return NULL;
	}
	a->name_len = heph_be16(p);
	if ((size_t)(end - p - 2) < (size_t)a->name_len + 1) {
		dec_fail(err, errlen,
			 "attribute name of %u bytes (and its type) runs past "
			 "the packet end (%td bytes left)",
			 a->name_len, end - p - 2);
		return NULL;
	}
	a->name = (const char *)p + 2;
	p += 2 + a->name_len;
	t = *p++;
	base = t & (uint8_t)~HEPH_ARRAY;
	a->type = t;
	if (base < HEPH_U64 || base > HEPH_STR) {
		dec_fail(err, errlen,
			 "attribute '%.*s' has type 0x%02x, which is not one "
			 "of 0x01-0x04 (or 0x81-0x84 for arrays)",
			 a->name_len > 40 ? 40 : a->name_len, a->name, t);
		return NULL;
	}
	if (!(t & HEPH_ARRAY)) {
		n = value_size(base, p, end);
		if (!n)
			goto past;
		a->count = 1;
		a->value = base == HEPH_STR ? p + 2 : p;
		a->value_len = base == HEPH_STR ? n - 2 : n;
		return p + n;
	}
	if (end - p < 2)
		goto past;
	a->count = heph_be16(p);
	p += 2;
	a->value = p;
	if (base != HEPH_STR) {
		n = 8u * a->count;
		if ((size_t)(end - p) < n)
			goto past;
	} else {
		/* Each element is at least 2 bytes, so this ends in at most
		 * (end - p) / 2 steps. */
		n = 0;
		for (uint32_t i = 0; i < a->count; i++) {
			uint32_t k = value_size(HEPH_STR, p + n, end);

			if (!k)
				goto past;
			n += k;
		}
	}
	a->value_len = n;
	return p + n;
past:
	dec_fail(err, errlen,
		 "the %s%s value of attribute '%.*s' runs past the packet end",
		 type_name(t), t & HEPH_ARRAY ? " array" : "",
		 a->name_len > 40 ? 40 : a->name_len, a->name);
	return NULL;
}

/* A prefix of fewer than 4 bytes that is the start of a packet? */
static bool magic_prefix(const uint8_t *p, size_t avail)
{
	static const uint8_t meta[4] = {0x75, 0xD1, 0x1D, 0x4D};
	static const uint8_t ev[4] = {0xC1, 0xFC, 0x1F, 0xB7};

	return !memcmp(p, meta, avail) || !memcmp(p, ev, avail);
}

static enum heph_status decode_meta(const uint8_t *p, uint32_t size,
				    struct heph_packet *out, char *err,
				    size_t errlen)
{
	out->option_len = heph_be16(p + 8);
	if (size - HEPH_META_FIXED < out->option_len)
		return dec_fail(err, errlen,
				"metadata option name of %u bytes runs past "
				"the packet end (size %u)",
				out->option_len, size);
	out->option = (const char *)p + HEPH_META_FIXED;
	out->value = p + HEPH_META_FIXED + out->option_len;
	out->value_len = size - HEPH_META_FIXED - out->option_len;
	return HEPH_OK;
}

/*
 * The attributes from p to end, checked as attr_parse does but without
 * filling anything in or saying why: the count, or -1 when one is bad (then
 * attr_parse runs again to tell).  This is the index's inner loop, so it
 * is kept to a few compares per attribute.
 */
static int64_t attrs_count(const uint8_t *p, const uint8_t *end)
{
	int64_t n = 0;

	while (p < end) {
		size_t left = (size_t)(end - p), k;
		uint8_t t;

		if (left < 3 || left - 3 < heph_be16(p))
			return -1;
		p += 2 + heph_be16(p);
		t = *p++;
		left = (size_t)(end - p);
		switch (t) {
		case HEPH_U64:
		case HEPH_I64:
		case HEPH_F64:
			k = 8;
			break;
		case HEPH_STR:
			if (left < 2)
				return -1;
			k = 2u + heph_be16(p);
			break;
		case HEPH_ARRAY | HEPH_U64:
		case HEPH_ARRAY | HEPH_I64:
		case HEPH_ARRAY | HEPH_F64:
			if (left < 2)
				return -1;
			k = 2u + 8u * heph_be16(p);
			break;
		case HEPH_ARRAY | HEPH_STR:
			if (left < 2)
				return -1;
			k = 2;
			for (uint32_t i = heph_be16(p); i > 0; i--) {
				if (left - k < 2)
					return -1;
				k += 2u + heph_be16(p + k);
				if (k > left)
					return -1;
			}
			break;
		default:
			return -1;
		}
		if (k > left)
			return -1;
		p += k;
		n++;
	}
	return n;
}

static enum heph_status decode_event(const uint8_t *p, uint32_t size,
				     struct heph_packet *out, char *err,
				     size_t errlen)
{
	const uint8_t *a, *end = p + size;
	struct heph_attr at;
	char why[200];
	int64_t n;

	out->stream = heph_be32(p + 8);
	out->counter = heph_be32(p + 12);
	out->substream = heph_be64(p + 16);
	out->start = heph_be64(p + 24);
	out->end = heph_be64(p + 32);
	out->desc_len = heph_be16(p + 40);
	if (size - HEPH_EVENT_FIXED < out->desc_len)
		return dec_fail(err, errlen,
				"event description of %u bytes runs past the "
				"packet end (size %u)",
				out->desc_len, size);
	out->desc = (const char *)p + HEPH_EVENT_FIXED;
	a = p + HEPH_EVENT_FIXED + out->desc_len;
	out->attrs = a;
	out->attrs_len = (uint32_t)(end - a);
	n = attrs_count(a, end);
	if (n >= 0) {
		out->nattrs = (uint32_t)n;
		return HEPH_OK;
	}
	out->nattrs = 0;
	while (a < end) {
		const uint8_t *next = attr_parse(a, end, &at, why, sizeof(why));

		if (!next)
			return dec_fail(err, errlen,
					"event attribute %u at packet byte "
					"%td: %s",
					out->nattrs + 1, a - p, why);
		a = next;
		out->nattrs++;
	}
	/* attrs_count and attr_parse disagree: a bug here, not in the data. */
	return dec_fail(err, errlen, "event attributes inconsistent");
}

enum heph_status heph_decode(const uint8_t *p, size_t avail,
			     struct heph_packet *out, char *err, size_t errlen)
{
	uint32_t magic, size, fixed;

	memset(out, 0, sizeof(*out));
	if (err && errlen)
		err[0] = '\0';
	if (avail < 4 && !magic_prefix(p, avail))
		return dec_fail(err, errlen,
				"%zu stray byte(s), not the start of a packet",
				avail);
	if (avail < 8) {
		if (avail >= 4 && !magic_prefix(p, 4))
			goto bad_magic;
		return dec_say(HEPH_SHORT, err, errlen,
			       "%zu byte(s), too few for a packet header (8)",
			       avail);
	}
	magic = heph_be32(p);
	if (magic == HEPH_META_MAGIC) {
		out->kind = HEPH_META;
		fixed = HEPH_META_FIXED;
	} else if (magic == HEPH_EVENT_MAGIC) {
		out->kind = HEPH_EVENT;
		fixed = HEPH_EVENT_FIXED;
	} else {
		goto bad_magic;
	}
	size = heph_be32(p + 4);
	out->size = size;
	if (size < fixed)
		return dec_fail(err, errlen,
				"%s packet size %u is below its fixed part "
				"(%u bytes)",
				magic == HEPH_META_MAGIC ? "metadata" : "event",
				size, fixed);
	if (size > HEPH_PACKET_MAX)
		return dec_fail(err, errlen,
				"packet size %u is past the %u-byte limit "
				"(taken for a lie)",
				size, HEPH_PACKET_MAX);
	if (size > avail)
		return dec_say(HEPH_SHORT, err, errlen,
			       "packet size %u but only %zu byte(s) left", size,
			       avail);
	if (magic == HEPH_META_MAGIC)
		return decode_meta(p, size, out, err, errlen);
	return decode_event(p, size, out, err, errlen);
bad_magic:
	return dec_fail(err, errlen,
			"bad magic 0x%08x (neither 0x%08x nor 0x%08x)",
			heph_be32(p), HEPH_META_MAGIC, HEPH_EVENT_MAGIC);
}

bool heph_attr_next(const struct heph_packet *p, uint32_t *pos,
		    struct heph_attr *a)
{
	const uint8_t *at, *end, *next;

	if (p->kind != HEPH_EVENT || *pos >= p->attrs_len)
		return false;
	at = p->attrs + *pos;
	end = p->attrs + p->attrs_len;
	/* Checked by heph_decode already; checking again costs little and
	 * keeps a hand-made packet from reading out of bounds. */
	next = attr_parse(at, end, a, NULL, 0);
	if (!next) {
		*pos = p->attrs_len;
		return false;
	}
	*pos = (uint32_t)(next - p->attrs);
	return true;
}

/* The 8 bytes of element i of a u64/i64/f64 (array) attribute, or NULL. */
static const uint8_t *attr_elem8(const struct heph_attr *a, uint16_t i)
{
	uint8_t base = a->type & (uint8_t)~HEPH_ARRAY;

	if (base < HEPH_U64 || base > HEPH_F64 || i >= a->count ||
	    (uint32_t)i * 8 + 8 > a->value_len)
		return NULL;
	return a->value + (size_t)i * 8;
}

uint64_t heph_attr_u64(const struct heph_attr *a, uint16_t i)
{
	const uint8_t *v = attr_elem8(a, i);

	return v ? heph_be64(v) : 0;
}

bool heph_packet_u64(const struct heph_packet *p, const char *name, uint64_t *v)
{
	size_t nl = strlen(name);
	struct heph_attr a;
	uint32_t pos = 0;

	while (heph_attr_next(p, &pos, &a))
		if (a.name_len == nl && !memcmp(a.name, name, nl) &&
		    (a.type == HEPH_U64 || a.type == HEPH_I64)) {
			*v = heph_attr_u64(&a, 0);
			return true;
		}
	return false;
}

int64_t heph_attr_i64(const struct heph_attr *a, uint16_t i)
{
	const uint8_t *v = attr_elem8(a, i);

	return v ? (int64_t)heph_be64(v) : 0;
}

double heph_attr_f64(const struct heph_attr *a, uint16_t i)
{
	const uint8_t *v = attr_elem8(a, i);
	uint64_t bits;
	double d;

	if (!v)
		return 0;
	bits = heph_be64(v);
	memcpy(&d, &bits, sizeof(d));
	return d;
}

const char *heph_attr_str_next(const struct heph_attr *a, uint32_t *pos,
			       uint16_t *len)
{
	uint16_t n;

	*len = 0;
	if (a->type != (HEPH_ARRAY | HEPH_STR) || *pos > a->value_len ||
	    a->value_len - *pos < 2)
		return NULL;
	n = heph_be16(a->value + *pos);
	if (a->value_len - *pos - 2 < n)
		return NULL;
	*len = n;
	*pos += 2u + n;
	return (const char *)a->value + *pos - n;
}

const char *heph_attr_str(const struct heph_attr *a, uint16_t i, uint16_t *len)
{
	const char *s = NULL;
	uint32_t pos = 0;

	*len = 0;
	if (a->type == HEPH_STR) {
		if (i)
			return NULL;
		*len = (uint16_t)a->value_len;
		return (const char *)a->value;
	}
	if (a->type != (HEPH_ARRAY | HEPH_STR) || i >= a->count)
		return NULL;
	for (uint32_t k = 0; k <= i; k++) {
		s = heph_attr_str_next(a, &pos, len);
		if (!s)
			return NULL;
	}
	return s;
}
