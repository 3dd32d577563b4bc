/*
 * pptframe: the values inside one ppt frame.
 *
 * A frame is a byte copy taken from a data block (pptreader.c) and laid out
 * by its buffer's description (pptdesc.h): seqnos at front_off and back_off,
 * a 1-based type discriminator at type_off when the buffer has several frame
 * types, then members at their offsets.  This file turns those bytes into
 * one typed value per column of the frame's layout:
 *
 *   member type    plain column       interval column (end - begin)
 *   int, byte      PPT_V_INT          PPT_V_DELTA
 *   counter        PPT_V_UINT         PPT_V_DELTA
 *   float, double  PPT_V_FLOAT        PPT_V_FLOAT
 *   time           PPT_V_TIME (ns)    PPT_V_DURATION (ns, may be negative)
 *
 * and formats a value for people (a table cell) or for JSON.
 *
 * Everything here is untrusted: the frame came out of another process's
 * memory and a description can be hand-made.  Values are read with memcpy
 * (members are packed, so may be unaligned), a member or discriminator that
 * does not fit inside frame_size reads as zero, and time arithmetic
 * saturates rather than overflowing: a timespec of {INT64_MAX, 999999999}
 * is INT64_MAX ns, not undefined behaviour.  Integer deltas are computed
 * modulo 2^64 and then taken as signed, so a counter that wrapped still
 * gives its small increment.
 */
#include "engine/ppt/pptframe.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/duration.h"

#define NS_PER_SEC 1000000000ll
/* 2000-01-01T00:00:00Z: a time past it is shown as a time of day. */
#define PPTFRAME_REALTIME_NS (946684800ll * NS_PER_SEC)

/* Bytes a member of each type occupies in the frame. */
static uint32_t mtype_size(enum ppt_mtype t)
{
	switch (t) {
	case PPT_T_INT:
	case PPT_T_FLOAT:
		return 4;
	case PPT_T_BYTE:
		return 1;
	case PPT_T_DOUBLE:
	case PPT_T_COUNTER:
		return 8;
	case PPT_T_TIME:
		return 16;
	}
	return 0;
}

/* Copy len bytes at off out of the frame, or zeros when they do not fit. */
static void frame_read(const struct ppt_desc *d, const void *frame,
		       uint32_t off, void *out, uint32_t len)
{
	if (len == 0 || off > d->frame_size || d->frame_size - off < len) {
		memset(out, 0, len);
		return;
	}
	memcpy(out, (const unsigned char *)frame + off, len);
}

static uint32_t frame_u32(const struct ppt_desc *d, const void *frame,
			  uint32_t off)
{
	uint32_t v;

	frame_read(d, frame, off, &v, sizeof(v));
	return v;
}

uint32_t pptframe_front(const struct ppt_desc *d, const void *frame)
{
	return frame_u32(d, frame, d->front_off);
}

uint32_t pptframe_back(const struct ppt_desc *d, const void *frame)
{
	return frame_u32(d, frame, d->back_off);
}

int pptframe_type(const struct ppt_desc *d, const void *frame)
{
	uint32_t disc;

	if (d->ntypes == 0 || !d->types)
		return -1;
	if (d->type_off == UINT32_MAX)
		return 0;
	if (d->type_off > d->frame_size || d->frame_size - d->type_off < 4)
		return -1;
	disc = frame_u32(d, frame, d->type_off);
	if (disc < 1 || disc > d->ntypes || disc > PPTDESC_MAX_TYPES)
		return -1;
	return (int)(disc - 1);
}

/* ---- saturating int64 arithmetic (times) ---- */

static int64_t sat_add(int64_t a, int64_t b)
{
	if (b > 0 && a > INT64_MAX - b)
		return INT64_MAX;
	if (b < 0 && a < INT64_MIN - b)
		return INT64_MIN;
	return a + b;
}

static int64_t sat_sub(int64_t a, int64_t b)
{
	if (b < 0 && a > INT64_MAX + b)
		return INT64_MAX;
	if (b > 0 && a < INT64_MIN + b)
		return INT64_MIN;
	return a - b;
}

static int64_t sat_mul(int64_t a, int64_t m) /* m > 0 */
{
	if (a > INT64_MAX / m)
		return INT64_MAX;
	if (a < INT64_MIN / m)
		return INT64_MIN;
	return a * m;
}

/* A timespec (or timeval when d->timeval) as ns. */
static int64_t member_time(const struct ppt_desc *d, const void *frame,
			   uint32_t off)
{
	int64_t tv[2];

	frame_read(d, frame, off, tv, sizeof(tv));
	return sat_add(sat_mul(tv[0], NS_PER_SEC),
		       d->timeval ? sat_mul(tv[1], 1000) : tv[1]);
}

/* The raw value of one member: ints as int64, counters as uint64 (in i's
 * bits via u), floats as double, times as ns. */
static struct ppt_value member_value(const struct ppt_desc *d,
				     const void *frame,
				     const struct ppt_member *m)
{
	struct ppt_value v = {.kind = PPT_V_INT};
	int32_t i32;
	uint8_t u8;
	float f32;
	double f64;

	switch (m->type) {
	case PPT_T_INT:
		frame_read(d, frame, m->offset, &i32, sizeof(i32));
		v.v.i = i32;
		break;
	case PPT_T_BYTE:
		frame_read(d, frame, m->offset, &u8, sizeof(u8));
		v.v.i = u8;
		break;
	case PPT_T_FLOAT:
		frame_read(d, frame, m->offset, &f32, sizeof(f32));
		v.kind = PPT_V_FLOAT;
		v.v.f = f32;
		break;
	case PPT_T_DOUBLE:
		frame_read(d, frame, m->offset, &f64, sizeof(f64));
		v.kind = PPT_V_FLOAT;
		v.v.f = f64;
		break;
	case PPT_T_TIME:
		v.kind = PPT_V_TIME;
		v.v.i = member_time(d, frame, m->offset);
		break;
	case PPT_T_COUNTER:
		frame_read(d, frame, m->offset, &v.v.u, sizeof(v.v.u));
		v.kind = PPT_V_UINT;
		break;
	default:
		v.v.i = 0; /* a type this decoder does not know */
		break;
	}
	return v;
}

static struct ppt_value column_value(const struct ppt_desc *d,
				     const struct ppt_layout *l,
				     const void *frame,
				     const struct ppt_column *c)
{
	struct ppt_value a, b, v = {.kind = PPT_V_INT};

	if (c->begin >= l->nmembers || c->end >= l->nmembers ||
	    mtype_size(l->members[c->begin].type) == 0)
		return v; /* a column the layout does not back: zero */
	a = member_value(d, frame, &l->members[c->begin]);
	if (!c->interval)
		return a;
	b = member_value(d, frame, &l->members[c->end]);
	if (a.kind != b.kind)
		return v; /* begin and end of different types: no interval */
	switch (a.kind) {
	case PPT_V_TIME:
		v.kind = PPT_V_DURATION;
		v.v.i = sat_sub(b.v.i, a.v.i);
		break;
	case PPT_V_FLOAT:
		v.kind = PPT_V_FLOAT;
		v.v.f = b.v.f - a.v.f;
		break;
	case PPT_V_UINT:
		/* Modulo 2^64, then signed: a wrapped counter's increment. */
		v.kind = PPT_V_DELTA;
		v.v.i = (int64_t)(b.v.u - a.v.u);
		break;
	default:
		v.kind = PPT_V_DELTA;
		v.v.i = (int64_t)((uint64_t)b.v.i - (uint64_t)a.v.i);
		break;
	}
	return v;
}

size_t pptframe_decode(const struct ppt_desc *d, int type, const void *frame,
		       struct ppt_value *out, size_t max)
{
	const struct ppt_layout *l;
	size_t n;

	if (type < 0 || (uint32_t)type >= d->ntypes || !d->types)
		return 0;
	l = &d->types[type];
	if (!l->cols)
		return 0;
	n = l->ncols < max ? l->ncols : max;
	for (size_t i = 0; i < n; i++)
		out[i] = column_value(d, l, frame, &l->cols[i]);
	return n;
}

/* ---- text ---- */

/* snprintf's result as the length actually in buf. */
static size_t put_len(int r, size_t n)
{
	if (n == 0 || r < 0)
		return 0;
	return (size_t)r < n ? (size_t)r : n - 1;
}

static size_t put_str(char *buf, size_t n, const char *s)
{
	return put_len(snprintf(buf, n, "%s", s), n);
}

/* |i| as uint64 without overflowing on INT64_MIN. */
static uint64_t magnitude(int64_t i)
{
	return i < 0 ? 0 - (uint64_t)i : (uint64_t)i;
}

static size_t format_float(double f, char *buf, size_t n)
{
	if (isnan(f))
		return put_str(buf, n, "nan");
	if (isinf(f))
		return put_str(buf, n, f < 0 ? "-inf" : "inf");
	return put_len(snprintf(buf, n, "%.6g", f), n);
}

static size_t format_duration(int64_t ns, char *buf, size_t n)
{
	char d[32];

	duration_format(d, sizeof(d), magnitude(ns));
	return put_len(snprintf(buf, n, "%s%s", ns < 0 ? "-" : "", d), n);
}

/* Past 2000-01-01 a realtime clock: the UTC time of day; else a clock
 * since some start (monotonic, process CPU time): seconds. */
static size_t format_time(int64_t ns, char *buf, size_t n)
{
	uint64_t m = magnitude(ns), s = m / NS_PER_SEC, frac = m % NS_PER_SEC;

	if (ns > PPTFRAME_REALTIME_NS) {
		uint64_t day = s % 86400;

		return put_len(snprintf(buf, n,
					"%02" PRIu64 ":%02" PRIu64 ":%02" PRIu64
					".%09" PRIu64,
					day / 3600, day / 60 % 60, day % 60,
					frac),
			       n);
	}
	return put_len(snprintf(buf, n, "%s%" PRIu64 ".%09" PRIu64 "s",
				ns < 0 ? "-" : "", s, frac),
		       n);
}

size_t pptframe_format(const struct ppt_value *v, char *buf, size_t n)
{
	switch (v->kind) {
	case PPT_V_INT:
		return put_len(snprintf(buf, n, "%" PRId64, v->v.i), n);
	case PPT_V_UINT:
		return put_len(snprintf(buf, n, "%" PRIu64, v->v.u), n);
	case PPT_V_FLOAT:
		return format_float(v->v.f, buf, n);
	case PPT_V_TIME:
		return format_time(v->v.i, buf, n);
	case PPT_V_DURATION:
		return format_duration(v->v.i, buf, n);
	case PPT_V_DELTA:
		return put_len(snprintf(buf, n, "%+" PRId64, v->v.i), n);
	}
	return put_str(buf, n, "?");
}

/* "%.17g" in C's syntax whatever LC_NUMERIC says (the UI sets the
 * locale, which may spell the decimal point "," or as several bytes): any
 * run of bytes that is not a digit, sign or exponent is the point. */
static size_t json_double(double f, char *buf, size_t n)
{
	char tmp[64];
	size_t len = 0;
	int r = snprintf(tmp, sizeof(tmp), "%.17g", f);

	for (int i = 0; i < r && (size_t)i < sizeof(tmp) - 1; i++) {
		char c = tmp[i];

		if (!(c >= '0' && c <= '9') && c != '-' && c != '+' &&
		    c != 'e') {
			c = '.';
			while (i + 1 < r && (size_t)i + 1 < sizeof(tmp) - 1 &&
			       !(tmp[i + 1] >= '0' && tmp[i + 1] <= '9'))
				i++;
		}
		tmp[len++] = c;
	}
	tmp[len] = '\0';
	return put_str(buf, n, tmp);
}

size_t pptframe_json(const struct ppt_value *v, char *buf, size_t n)
{
	switch (v->kind) {
	case PPT_V_UINT:
		return put_len(snprintf(buf, n, "%" PRIu64, v->v.u), n);
	case PPT_V_FLOAT:
		if (!isfinite(v->v.f))
			return put_str(buf, n, "null");
		return json_double(v->v.f, buf, n);
	case PPT_V_INT:
	case PPT_V_TIME:
	case PPT_V_DURATION:
	case PPT_V_DELTA:
		return put_len(snprintf(buf, n, "%" PRId64, v->v.i), n);
	}
	return put_str(buf, n, "null");
}
