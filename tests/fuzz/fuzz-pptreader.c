/*
 * fuzz-pptreader: the ppt reader and frame decoder against data blocks made
 * of arbitrary bytes -- what a hostile or broken client can leave in the
 * shared memory the agent polls.
 *
 * The input chooses one of a few hand-built descriptions (one type of every
 * member type; two types with a discriminator; intervals; one that lies:
 * members past the frame, columns naming members that do not exist, unknown
 * types), a ring of 1..16 frames, the first index, lookahead and stall
 * time, then the block's bytes.  Each slot is either raw input or a frame
 * made plausible (whole, torn or zero, with an index near the cursor), so
 * that delivery, loss, stalls and torn frames are all reached and not only
 * "nothing there".  Then a sequence of polls, each possibly preceded by an
 * edit of a slot (a writer at work), a rebase to a smaller ring, or time
 * passing.  Nothing may crash or read outside the block, and:
 *   - delivered + lost + torn == the indexes the cursor moved over;
 *   - lost + torn never exceed what a writer could have written: the
 *     reader's initial credit plus one per nanosecond of poll clock;
 *   - a delivered frame's copy has front == back == its index, and indexes
 *     follow the cursor's path: measured from where the poll began, each
 *     is further than the last and short of where the poll ended (not by
 *     serial order: a resync moves the cursor 2^31 or more at once);
 *   - the type, values and their text, for people and for JSON, of every
 *     frame delivered are computed without fault, the lengths returned
 *     being the strings' lengths.
 *
 * Built as a libFuzzer target with clang (-Dfuzz=true) and, always, with
 * tests/fuzz/driver.c, which replays a seeded pseudo-random corpus.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzzin.h"
#include "engine/ppt/pptframe.h"
#include "engine/ppt/pptreader.h"

#define FZ_MAX_FRAMES 16u
#define FZ_POLLS 48

/* ---- the descriptions ---- */

static struct ppt_member fz_mem(enum ppt_mtype t, enum ppt_interval iv,
				uint32_t off)
{
	return (struct ppt_member){.name = "m",
				   .type = t,
				   .kind = PPT_K_MEMBER,
				   .interval = iv,
				   .counter = -1,
				   .offset = off,
				   .size = 4};
}

static struct ppt_column fz_col(enum ppt_mtype t, uint16_t b, int e)
{
	return (struct ppt_column){.name = "c",
				   .type = t,
				   .interval = e >= 0,
				   .begin = b,
				   .end = e >= 0 ? (uint16_t)e : b};
}

static struct ppt_member one_m[6], two_m[3], iv_m[8], lie_m[4];
static struct ppt_column one_c[6], two_c[3], iv_c[4], lie_c[5];
static struct ppt_layout one_l, two_l[2], iv_l, lie_l[2];
static struct ppt_desc fz_desc[4];

static void fz_descs(void)
{
	static int done;

	if (done)
		return;
	done = 1;
	/* one: front 0 | int 4 | time 8 | double 24 | counter 32 | float 40
	 * | byte 44 | back 48 */
	one_m[0] = fz_mem(PPT_T_INT, PPT_I_NONE, 4);
	one_m[1] = fz_mem(PPT_T_TIME, PPT_I_NONE, 8);
	one_m[2] = fz_mem(PPT_T_DOUBLE, PPT_I_NONE, 24);
	one_m[3] = fz_mem(PPT_T_COUNTER, PPT_I_NONE, 32);
	one_m[4] = fz_mem(PPT_T_FLOAT, PPT_I_NONE, 40);
	one_m[5] = fz_mem(PPT_T_BYTE, PPT_I_NONE, 44);
	for (uint16_t k = 0; k < 6; k++)
		one_c[k] = fz_col(one_m[k].type, k, -1);
	one_l = (struct ppt_layout){
		.members = one_m, .nmembers = 6, .cols = one_c, .ncols = 6};
	fz_desc[0] = (struct ppt_desc){.frame_size = 52,
				       .back_off = 48,
				       .type_off = UINT32_MAX,
				       .types = &one_l,
				       .ntypes = 1};
	/* two: front 0 | type 4 | (int 8) or (double 8, byte 16) | back 20 */
	two_m[0] = fz_mem(PPT_T_INT, PPT_I_NONE, 8);
	two_m[1] = fz_mem(PPT_T_DOUBLE, PPT_I_NONE, 8);
	two_m[2] = fz_mem(PPT_T_BYTE, PPT_I_NONE, 16);
	two_c[0] = fz_col(PPT_T_INT, 0, -1);
	two_c[1] = fz_col(PPT_T_DOUBLE, 0, -1);
	two_c[2] = fz_col(PPT_T_BYTE, 1, -1);
	two_l[0] = (struct ppt_layout){
		.members = two_m, .nmembers = 1, .cols = two_c, .ncols = 1};
	two_l[1] = (struct ppt_layout){.members = two_m + 1,
				       .nmembers = 2,
				       .cols = two_c + 1,
				       .ncols = 2};
	fz_desc[1] = (struct ppt_desc){.frame_size = 24,
				       .back_off = 20,
				       .type_off = 4,
				       .types = two_l,
				       .ntypes = 2};
	/* iv: time 4/20, int 36/40, counter 44/52, double 60/68 (timeval),
	 * unaligned on purpose; back 76 */
	iv_m[0] = fz_mem(PPT_T_TIME, PPT_I_BEGIN, 4);
	iv_m[1] = fz_mem(PPT_T_TIME, PPT_I_END, 20);
	iv_m[2] = fz_mem(PPT_T_INT, PPT_I_BEGIN, 36);
	iv_m[3] = fz_mem(PPT_T_INT, PPT_I_END, 40);
	iv_m[4] = fz_mem(PPT_T_COUNTER, PPT_I_BEGIN, 44);
	iv_m[5] = fz_mem(PPT_T_COUNTER, PPT_I_END, 52);
	iv_m[6] = fz_mem(PPT_T_DOUBLE, PPT_I_BEGIN, 60);
	iv_m[7] = fz_mem(PPT_T_DOUBLE, PPT_I_END, 68);
	for (uint16_t k = 0; k < 4; k++)
		iv_c[k] = fz_col(iv_m[2 * k].type, 2 * k, 2 * k + 1);
	iv_l = (struct ppt_layout){
		.members = iv_m, .nmembers = 8, .cols = iv_c, .ncols = 4};
	fz_desc[2] = (struct ppt_desc){.timeval = true,
				       .frame_size = 80,
				       .back_off = 76,
				       .type_off = UINT32_MAX,
				       .types = &iv_l,
				       .ntypes = 1};
	/* lies: members past the frame, columns past the members, a type
	 * outside the enum, an interval of two different types. */
	lie_m[0] = fz_mem(PPT_T_TIME, PPT_I_NONE, 10);
	lie_m[1] = fz_mem(PPT_T_COUNTER, PPT_I_NONE, UINT32_MAX - 2);
	lie_m[2] = fz_mem((enum ppt_mtype)77, PPT_I_NONE, 8);
	lie_m[3] = fz_mem(PPT_T_DOUBLE, PPT_I_END, 12);
	lie_c[0] = fz_col(PPT_T_TIME, 0, -1);
	lie_c[1] = fz_col(PPT_T_COUNTER, 1, 3);
	lie_c[2] = fz_col(PPT_T_INT, 2, -1);
	lie_c[3] = fz_col(PPT_T_INT, 9, 300);
	lie_c[4] = fz_col(PPT_T_DOUBLE, 3, 0);
	lie_l[0] = (struct ppt_layout){
		.members = lie_m, .nmembers = 4, .cols = lie_c, .ncols = 5};
	lie_l[1] = (struct ppt_layout){
		.members = lie_m, .nmembers = 0, .cols = lie_c, .ncols = 5};
	fz_desc[3] = (struct ppt_desc){.frame_size = 20,
				       .back_off = 16,
				       .type_off = 4,
				       .types = lie_l,
				       .ntypes = 2};
}

/* ---- the block ---- */

/* Make slot s plausible: whole, torn, or zero, with an index near c. */
static void fz_slot(uint8_t *block, const struct ppt_desc *d, uint32_t s,
		    uint32_t c, uint8_t how)
{
	uint8_t *f = block + (size_t)s * d->frame_size;
	uint32_t i = c + (uint32_t)(how >> 2) % 40 - 8, b;

	switch (how & 3) {
	case 0:
		return; /* raw bytes */
	case 1:
		b = i; /* whole */
		break;
	case 2:
		b = i - 1; /* torn */
		break;
	default:
		i = b = 0;
		break;
	}
	memcpy(f + d->front_off, &i, 4);
	memcpy(f + d->back_off, &b, 4);
}

static uint64_t fz_span(uint32_t first, uint32_t cursor)
{
	uint32_t d = cursor - first;

	return d - (first != 0 && (uint32_t)(0u - first) < d);
}

static void fz_frame(const struct ppt_desc *d, const uint8_t *f)
{
	static struct ppt_value v[PPTDESC_MAX_MEMBERS];
	char text[96];
	int type = pptframe_type(d, f);
	size_t n;

	(void)pptframe_front(d, f);
	(void)pptframe_back(d, f);
	n = pptframe_decode(d, type, f, v, PPTDESC_MAX_MEMBERS);
	if (type < 0 && n != 0)
		abort();
	for (size_t k = 0; k < n; k++) {
		if (pptframe_format(&v[k], text, sizeof(text)) != strlen(text))
			abort();
		if (pptframe_json(&v[k], text, sizeof(text)) != strlen(text))
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_in in = {.d = data, .n = size};
	const struct ppt_desc *d;
	struct pptreader r;
	uint8_t *block, *buf;
	uint32_t idx[4], first;
	uint64_t nframes, now = 0, base = 0;
	uint8_t flags = fz_u8(&in), misalign;
	size_t fs;

	fz_descs();
	d = &fz_desc[flags & 3];
	fs = d->frame_size;
	nframes = 1 + fz_u8(&in) % FZ_MAX_FRAMES;
	misalign = (flags & 8) ? 1 : 0;
	block = calloc(1, nframes * fs + misalign);
	buf = malloc(4 * fs);
	if (!block || !buf)
		abort();
	first = fz_u32(&in);
	if (!(flags & 16))
		first = 1 + first % 64;
	pptreader_init(&r, block + misalign, nframes, (uint32_t)fs,
		       d->front_off, d->back_off, first);
	r.lookahead = fz_u8(&in) % 80;
	r.stall_ns = (uint64_t)fz_u8(&in) * 1000;
	for (size_t k = 0; k < nframes * fs; k++)
		block[misalign + k] = fz_u8(&in);
	for (uint32_t s = 0; s < nframes; s++)
		fz_slot(block + misalign, d, s, r.cursor, fz_u8(&in));
	if (flags & 4)
		(void)pptreader_skip_existing(&r);
	first = r.cursor;

	for (int p = 0; p < FZ_POLLS && in.pos < in.n; p++) {
		uint8_t cmd = fz_u8(&in);
		uint32_t c0, gone = 0;
		size_t got;

		if (cmd & 4) {
			/* Two reads in sequence: as arguments of one call
			 * their order would be the compiler's choice. */
			uint32_t s = (uint32_t)(fz_u8(&in) % nframes);
			uint8_t how = fz_u8(&in);

			fz_slot(block + misalign, d, s, r.cursor, how);
		}
		if ((cmd & 0xc8) == 0xc8) {
			/* A resize (here: the same memory, fewer frames). */
			pptreader_rebase(&r, block + misalign,
					 fz_u8(&in) % (nframes + 1));
		}
		if ((cmd & 0x30) == 0x30) {
			/* skip_existing moves the cursor unaccounted. */
			(void)pptreader_skip_existing(&r);
			base = r.st.delivered + r.st.lost + r.st.torn;
			first = r.cursor;
		}
		now += (uint64_t)(cmd >> 4) * 400;
		c0 = r.cursor;
		got = pptreader_poll(&r, now, buf, idx, cmd & 3);
		if (got > (size_t)(cmd & 3))
			abort();
		if (r.st.delivered + r.st.lost + r.st.torn - base !=
		    fz_span(first, r.cursor))
			abort();
		if (r.st.lost + r.st.torn > PPTREADER_CREDIT_MAX + now)
			abort();
		for (size_t k = 0; k < got; k++) {
			const uint8_t *f = buf + k * fs;

			if (pptframe_front(d, f) != idx[k] ||
			    pptframe_back(d, f) != idx[k] || idx[k] == 0)
				abort();
			if ((k && idx[k] - c0 <= gone) ||
			    idx[k] - c0 >= r.cursor - c0)
				abort();
			gone = idx[k] - c0;
			fz_frame(d, f);
		}
	}
	/* And the decoder on raw input bytes, as any frame. */
	if (size >= fs)
		fz_frame(d, data + size - fs);
	free(block);
	free(buf);
	return 0;
}
