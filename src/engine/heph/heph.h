/*
 * heph: packets of the Heph trace format
 * (../shared/specs/heph-trace-format.md): big-endian, a metadata packet (magic
 * 0x75D11D4D) sets one option, an event packet (magic 0xC1FC1FB7) is one
 * interval of one (sub)stream with a description and typed attributes. Encoding
 * into memory, decoding from untrusted bytes, and a file reader with an index.
 * See heph.c and hephfile.c.
 *
 * Untrusted: every size, length and count is checked against the bytes
 * there are; a packet that lies is an error naming its offset, never a read
 * past the end.
 */
#ifndef COROTOP_HEPH_H
#define COROTOP_HEPH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define HEPH_META_MAGIC 0x75D11D4Du
#define HEPH_EVENT_MAGIC 0xC1FC1FB7u
#define HEPH_META_FIXED 10u	   /* magic, size, option name length */
#define HEPH_EVENT_FIXED 42u	   /* magic .. description length */
#define HEPH_PACKET_MAX (1u << 24) /* larger sizes are taken for lies */

enum heph_type {
	HEPH_U64 = 0x01,
	HEPH_I64 = 0x02,
	HEPH_F64 = 0x03,
	HEPH_STR = 0x04,
	HEPH_ARRAY = 0x80, /* or-ed with one of the above */
};

/* ---- encoding ---- */

/*
 * An encoder appends packets to a caller-owned buffer; a packet that does
 * not fit sets `overflow` and leaves `len` where the packet began (nothing
 * half written stays).
 */
struct heph_enc {
	uint8_t *buf;
	size_t len, cap;
	size_t start; /* where the open event packet began */
	bool open;
	bool overflow;
};

void heph_enc_init(struct heph_enc *e, uint8_t *buf, size_t cap);
/* A metadata packet `epoch` = ns since the Unix epoch (23 bytes). */
bool heph_enc_epoch(struct heph_enc *e, uint64_t epoch_ns);
/* Any metadata option with a raw value. */
bool heph_enc_meta(struct heph_enc *e, const char *option, const void *value,
		   size_t value_len);
/* An event packet: begin, then attributes, then end (which writes the
 * size).  Strings are UTF-8 of at most 65535 bytes. */
bool heph_enc_event_begin(struct heph_enc *e, uint32_t stream, uint32_t counter,
			  uint64_t substream, uint64_t start, uint64_t end,
			  const char *desc);
bool heph_enc_u64(struct heph_enc *e, const char *name, uint64_t v);
bool heph_enc_i64(struct heph_enc *e, const char *name, int64_t v);
bool heph_enc_f64(struct heph_enc *e, const char *name, double v);
bool heph_enc_str(struct heph_enc *e, const char *name, const char *v);
/* The same with the length given (v need not be NUL-terminated). */
bool heph_enc_strn(struct heph_enc *e, const char *name, const char *v,
		   size_t n);
bool heph_enc_u64_array(struct heph_enc *e, const char *name, const uint64_t *v,
			size_t n);
bool heph_enc_f64_array(struct heph_enc *e, const char *name, const double *v,
			size_t n);
/* Closes the packet; returns its size, or 0 (overflow: dropped). */
size_t heph_enc_event_end(struct heph_enc *e);

/* ---- decoding ---- */

enum heph_kind {
	HEPH_META = 1,
	HEPH_EVENT,
};

struct heph_packet {
	enum heph_kind kind;
	uint32_t size;
	/* HEPH_META */
	const char *option; /* not NUL-terminated */
	uint16_t option_len;
	const uint8_t *value;
	uint32_t value_len;
	/* HEPH_EVENT */
	uint32_t stream, counter;
	uint64_t substream, start, end;
	const char *desc; /* not NUL-terminated */
	uint16_t desc_len;
	const uint8_t *attrs; /* the attribute bytes, checked */
	uint32_t attrs_len;
	uint32_t nattrs;
};

enum heph_status {
	HEPH_OK = 0,
	HEPH_SHORT, /* not enough bytes for the packet (truncated?) */
	HEPH_BAD,   /* a bad magic, a lying size or field: err says */
};

/*
 * Decode the packet at p (avail bytes from there).  The event's attributes
 * are all checked here (names, types, lengths within the packet); an
 * unknown attribute type is an error.  err names the problem (the caller
 * adds the offset).
 */
enum heph_status heph_decode(const uint8_t *p, size_t avail,
			     struct heph_packet *out, char *err, size_t errlen);

/* One attribute; value points at its big-endian bytes (or, for a string,
 * the characters; for an array, the first element -- for an array of
 * strings that is the first element's u16 length). */
struct heph_attr {
	const char *name;
	uint16_t name_len;
	uint8_t type;	/* enum heph_type, maybe | HEPH_ARRAY */
	uint16_t count; /* array length, or 1 */
	const uint8_t *value;
	uint32_t value_len; /* bytes of the whole value */
};

/* The attributes of a decoded event, one by one: *pos starts at 0.
 * False at the end. */
bool heph_attr_next(const struct heph_packet *p, uint32_t *pos,
		    struct heph_attr *a);
/* The first scalar u64 or i64 attribute named `name` of a decoded event
 * into *v (an i64 as its two's complement); false when there is none. */
bool heph_packet_u64(const struct heph_packet *p, const char *name,
		     uint64_t *v);
/* Element i of an array attribute (or the value itself, i = 0). */
uint64_t heph_attr_u64(const struct heph_attr *a, uint16_t i);
int64_t heph_attr_i64(const struct heph_attr *a, uint16_t i);
double heph_attr_f64(const struct heph_attr *a, uint16_t i);
/* Element i of a string (array) attribute: its bytes and length (NULL,
 * *len = 0, when there is none).  O(i) for an array: use the cursor below
 * to go through all of them. */
const char *heph_attr_str(const struct heph_attr *a, uint16_t i, uint16_t *len);
/* The next element of a string array: *pos starts at 0.  NULL at the end. */
const char *heph_attr_str_next(const struct heph_attr *a, uint32_t *pos,
			       uint16_t *len);

/* Big-endian helpers.  heph_be64 is on the index's hot path: one load and
 * a byte swap where the compiler can say so (it does not always see it in
 * the shift loop). */
static inline uint64_t heph_be64(const uint8_t *p)
{
#if defined(__GNUC__) && defined(__BYTE_ORDER__) &&                            \
	__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return __builtin_bswap64(v);
#else
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
#endif
}

static inline uint32_t heph_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

static inline uint16_t heph_be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

#endif
