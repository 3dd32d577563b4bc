/*
 * pptreader: a cursor over a ppt data block, the ring of frames a client
 * writes while the agent reads it.
 *
 * The client takes frame index i from a 32-bit counter that starts at 1 and
 * wraps (skipping 0) and writes slot i % nframes as a seqlock (corotop/ppt.h,
 * (D)): both seqnos 0, release fence, front = i, release fence, body,
 * release fence, back = i.  The reader (C) loads back with acquire, copies
 * the frame, issues an acquire fence and loads front: front == back == i
 * means the copy is frame i as its writer completed it.
 *
 * The cursor is the next index owed.  Each poll looks at the cursor's slot:
 *
 *   front == back == cursor        deliver it
 *   front == back, newer (serial)  the frame was overwritten: lost
 *   anything else                  not there yet (an older frame, zeros,
 *                                  or torn): stop, and remember since when
 *
 * A stall lasting stall_ns ends when a whole frame newer than the cursor
 * sits in the next `lookahead` slots: the writer of the cursor's frame died
 * or stalls, and the frame is counted torn (if the slot was last seen with
 * front == cursor but another back: half written) or lost.  So every index
 * is accounted exactly once, delivered + lost + torn, which is what lets
 * the agent report "N frames lost" and mean it.
 *
 * Index order is serial arithmetic on 32 bits: a is newer than b when
 * (int32_t)(a - b) > 0, which holds across the wrap as long as the two are
 * less than 2^31 apart (a ring is far smaller).
 *
 * The block belongs to another process and may lie: the geometry is
 * checked before each poll (a reader with an impossible geometry delivers
 * nothing), reads stay within nframes * frame_size, unaligned seqnos are
 * read a byte at a time, and a poll does a bounded number of steps
 * however many frames the block claims were lost.
 *
 * Nor may a lying block inflate the loss.  Whole frames of garbage, each
 * "newer" than the cursor by up to 2^31, would walk the cursor round the
 * 32-bit index space again and again, counting 2^32 lost per turn while
 * the cursor barely moves.  No writer saves a frame in less than a
 * nanosecond, so lost + torn spend a credit earned at one index per
 * nanosecond of the poll clock, capped (and starting) at
 * PPTREADER_CREDIT_MAX: more than the largest single jump (3 * 2^30, a
 * resync), less than one turn of the index space.  A jump the credit does
 * not cover waits for a later poll: an honest loss is counted late, never
 * twice, and never more than could have been written.
 *
 * The copy is made of relaxed atomic loads (8, 4 or 1 bytes wide, as the
 * slot's alignment allows) rather than memcpy: the block is written
 * concurrently, and only atomic loads make the seqlock a race-free C11
 * program (and keep ThreadSanitizer quiet in the in-process stress test);
 * on x86-64 and arm64 they are plain loads.
 */
#include "engine/ppt/pptreader.h"

#include <stdatomic.h>
#include <string.h>

#define PPTREADER_LOOKAHEAD 64u
#define PPTREADER_STALL_NS (100ull * 1000 * 1000)
/* Slots looked at per poll, lost ones included: a block claiming 2^31
 * lost frames costs many polls, never one endless one. */
#define PPTREADER_STEPS (1u << 20)

/* a is newer than b. */
static bool serial_newer(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b) > 0;
}

/* The index after i: the writer's counter skips 0. */
static uint32_t index_next(uint32_t i)
{
	i++;
	return i ? i : 1;
}

static bool reader_ok(const struct pptreader *r)
{
	uint32_t fs = r->frame_size;

	return r->base && r->nframes > 0 && fs >= 4 && r->front_off <= fs - 4 &&
	       r->back_off <= fs - 4 && r->nframes <= SIZE_MAX / fs;
}

/* Frame i's slot: (i + shift) % nframes, shift learned by pptreader_sync
 * (0 for corotop's client; the generator's revisions put frame i at
 * (i - 1) % n, or rotate so that the first frame after an attach is in
 * slot 0). */
static const unsigned char *slot_of(const struct pptreader *r, uint32_t i)
{
	return r->base +
	       (size_t)(((uint64_t)i + r->shift) % r->nframes) * r->frame_size;
}

/* A seqno; relaxed unless acquire.  Seqnos are 4-aligned in any block that
 * tells the truth; a lying one gets byte loads (no atomicity to keep). */
static uint32_t seq_load(const unsigned char *p, bool acquire)
{
	unsigned char b[4];
	uint32_t v;

	if (((uintptr_t)p & 3) == 0) {
		const uint32_t *w = (const uint32_t *)(const void *)p;

		return acquire ? __atomic_load_n(w, __ATOMIC_ACQUIRE)
			       : __atomic_load_n(w, __ATOMIC_RELAXED);
	}
	for (int k = 0; k < 4; k++)
		b[k] = __atomic_load_n(p + k, __ATOMIC_RELAXED);
	if (acquire)
		atomic_thread_fence(memory_order_acquire);
	memcpy(&v, b, sizeof(v));
	return v;
}

/* The frame's bytes, as relaxed atomic loads (see the top comment). */
static void frame_copy(unsigned char *dst, const unsigned char *src,
		       uint32_t len)
{
	uintptr_t a = (uintptr_t)src | len;

	if ((a & 7) == 0) {
		for (uint32_t i = 0; i < len; i += 8) {
			uint64_t w = __atomic_load_n(
				(const uint64_t *)(const void *)(src + i),
				__ATOMIC_RELAXED);

			memcpy(dst + i, &w, 8);
		}
	} else if ((a & 3) == 0) {
		for (uint32_t i = 0; i < len; i += 4) {
			uint32_t w = __atomic_load_n(
				(const uint32_t *)(const void *)(src + i),
				__ATOMIC_RELAXED);

			memcpy(dst + i, &w, 4);
		}
	} else {
		for (uint32_t i = 0; i < len; i++)
			dst[i] = __atomic_load_n(src + i, __ATOMIC_RELAXED);
	}
}

/*
 * (C) in corotop/ppt.h.  Reads a slot's seqnos, and its bytes into dst when
 * back says it may be the frame wanted (dst non-NULL and back == want).
 */
static void slot_read(const struct pptreader *r, const unsigned char *slot,
		      unsigned char *dst, uint32_t want, uint32_t *front,
		      uint32_t *back)
{
	/* Acquire: pairs with the writer's release fence before it stores
	 * back, so the body of the frame back names is visible to the copy. */
	*back = seq_load(slot + r->back_off, true);
	if (dst && *back == want)
		frame_copy(dst, slot, r->frame_size);
	/* Acquire fence: pairs with the writer's release fence after it
	 * zeroes the seqnos (multithreaded) or stores front (single): if the
	 * copy saw any byte of a later write, the front load below sees that
	 * write's front (0 or its index), not the one back named. */
	atomic_thread_fence(memory_order_acquire);
	/* Relaxed: ordered by the fence above. */
	*front = seq_load(slot + r->front_off, false);
}

/* Take k indexes of loss from the credit, or none when it is short. */
static bool reader_spend(struct pptreader *r, uint64_t k)
{
	if (r->credit < k)
		return false;
	r->credit -= k;
	return true;
}

/* One index per nanosecond since the last poll, up to the cap.  A clock
 * that went back earns nothing and restarts from there. */
static void reader_earn(struct pptreader *r, uint64_t now_ns)
{
	if (now_ns > r->credit_at) {
		uint64_t add = now_ns - r->credit_at;

		r->credit = add >= PPTREADER_CREDIT_MAX - r->credit
				    ? PPTREADER_CREDIT_MAX
				    : r->credit + add;
	}
	r->credit_at = now_ns;
}

static void reader_advance(struct pptreader *r)
{
	r->cursor = index_next(r->cursor);
	r->stall_torn = false;
}

/*
 * The cursor's slot holds whole frame `front`, newer than the cursor: the
 * cursor's frame was overwritten.  When `front` is a whole ring or more
 * ahead, every index up to front - nframes had its slot reused too: they
 * are counted lost at once, so a saver far ahead is not walked one index
 * per step (the accounting is the same; index 0, never used, is not
 * counted).
 */
static bool reader_lapped(struct pptreader *r, uint32_t front)
{
	uint32_t c = r->cursor, to, k;

	if (r->nframes > UINT32_MAX ||
	    !serial_newer(front - (uint32_t)r->nframes, c)) {
		if (!reader_spend(r, 1))
			return false;
		r->st.lost++;
		reader_advance(r);
		return true;
	}
	to = front - (uint32_t)r->nframes + 1;
	/* [c, to) holds to - c indexes, less index 0 when it wraps past it. */
	k = (uint32_t)(to - c) - (to != 0 && to < c ? 1u : 0u);
	if (!reader_spend(r, k))
		return false;
	r->st.lost += k;
	r->cursor = to ? to : 1;
	r->stall_torn = false;
	return true;
}

/* A whole frame newer than c in the slots of the next indexes. */
static bool newer_ahead(const struct pptreader *r, uint32_t c)
{
	uint64_t look = r->lookahead;
	uint32_t j = c, front, back;

	if (look > r->nframes - 1)
		look = r->nframes - 1;
	for (uint64_t k = 0; k < look; k++) {
		j = index_next(j);
		slot_read(r, slot_of(r, j), NULL, 0, &front, &back);
		if (front == back && front != 0 && serial_newer(front, c))
			return true;
	}
	return false;
}

/* The cursor's frame is not there.  True when the stall rule gives up on
 * it (counted and skipped), false to stop the poll. */
/*
 * The writer can not be more than a ring behind the cursor: whole frames
 * 2^30 and more behind it mean it ran 2^31 frames or more ahead while we
 * did not read (corotop stopped, a suspended machine), so that serial
 * order sees its frames as old ones.  (Frames merely a few rings behind
 * are leftovers in slots no writer came back to, and are ignored.)  Count the
 * indexes it wrote past as lost and go on from the oldest frame the ring holds.
 * One full scan, at most once per stall period.
 */
static bool reader_resync_lapped(struct pptreader *r, uint32_t c)
{
	uint64_t n = r->nframes;
	uint32_t d_min = UINT32_MAX, front, back, to, k;
	bool any = false;

	if (n > (uint64_t)UINT32_MAX / 2)
		return false;
	for (uint64_t s = 0; s < n; s++) {
		uint32_t d;

		slot_read(r, r->base + (size_t)s * r->frame_size, NULL, 0,
			  &front, &back);
		if (front != back || front == 0)
			continue;
		if (front == c || serial_newer(front, c))
			return false; /* the writer is ahead: a plain stall */
		d = c - front;
		if (d <= n)
			return false; /* the ring's last frames: plain */
		if (d <= (1u << 30))
			continue; /* a leftover a writer never came back to */
		any = true;
		if (d < d_min)
			d_min = d; /* smallest distance back: the newest */
	}
	if (!any)
		return false;
	/* The newest is c - d_min; the oldest the ring may hold, n - 1 before
	 * it.  Everything from c up to that was written and is gone. */
	to = c - d_min - (uint32_t)n + 1;
	k = (uint32_t)(to - c) - (to != 0 && to < c ? 1u : 0u);
	if (!reader_spend(r, k))
		return false;
	r->st.lost += k;
	r->cursor = to ? to : 1;
	r->stall_at = 0;
	r->stall_torn = false;
	return true;
}

static bool reader_stall(struct pptreader *r, uint32_t c, uint32_t front,
			 uint32_t back, uint64_t now_ns)
{
	if (r->stall_at != c) {
		r->stall_at = c;
		r->stall_since = now_ns;
	}
	/* Half written: its writer stored front, not back (yet). */
	r->stall_torn = front == c && back != c;
	if (now_ns < r->stall_since || now_ns - r->stall_since < r->stall_ns)
		return false;
	if (!newer_ahead(r, c)) {
		if (now_ns - r->lag_checked < r->stall_ns)
			return false;
		r->lag_checked = now_ns;
		return reader_resync_lapped(r, c);
	}
	if (!reader_spend(r, 1))
		return false;
	if (r->stall_torn)
		r->st.torn++;
	else
		r->st.lost++;
	reader_advance(r);
	return true;
}

void pptreader_init(struct pptreader *r, const void *base, uint64_t nframes,
		    uint32_t frame_size, uint32_t front_off, uint32_t back_off,
		    uint32_t first)
{
	memset(r, 0, sizeof(*r));
	r->base = base;
	r->nframes = nframes;
	r->frame_size = frame_size;
	r->front_off = front_off;
	r->back_off = back_off;
	r->cursor = first ? first : 1;
	r->stall_ns = PPTREADER_STALL_NS;
	r->lookahead = PPTREADER_LOOKAHEAD;
	r->credit = PPTREADER_CREDIT_MAX;
}

uint32_t pptreader_skip_existing(struct pptreader *r)
{
	uint64_t n = r->nframes;
	uint32_t newest = 0, front, back;
	bool found = false;

	if (!reader_ok(r))
		return r->cursor;
	/* Indexes are 32-bit: slots past 2^32 are never written. */
	if (n > (uint64_t)UINT32_MAX + 1)
		n = (uint64_t)UINT32_MAX + 1;
	for (uint64_t s = 0; s < n; s++) {
		slot_read(r, r->base + (size_t)s * r->frame_size, NULL, 0,
			  &front, &back);
		if (front == back && front != 0 &&
		    (!found || serial_newer(front, newest))) {
			newest = front;
			found = true;
		}
	}
	if (found && !serial_newer(r->cursor, newest)) {
		r->cursor = index_next(newest);
		r->stall_at = 0;
		r->stall_torn = false;
	}
	return r->cursor;
}

unsigned pptreader_sync(struct pptreader *r)
{
	uint64_t n = r->nframes, s_new = 0;
	uint32_t newest = 0, oldest, front, back;
	unsigned agree = 0, disagree = 0;
	bool found = false;

	if (!reader_ok(r))
		return 0;
	if (n > (uint64_t)UINT32_MAX + 1)
		n = (uint64_t)UINT32_MAX + 1;
	for (uint64_t s = 0; s < n; s++) {
		slot_read(r, r->base + (size_t)s * r->frame_size, NULL, 0,
			  &front, &back);
		if (front == back && front != 0 &&
		    (!found || serial_newer(front, newest))) {
			newest = front;
			s_new = s;
			found = true;
		}
	}
	if (!found)
		return 0;
	/* The writer's rotation, from where the newest frame is. */
	r->shift = (uint32_t)((s_new + n - newest % n) % n);
	/* Every other whole frame must sit where that rotation puts it; the
	 * oldest of them that the ring can still hold is the cursor. */
	oldest = newest;
	for (uint64_t s = 0; s < n; s++) {
		slot_read(r, r->base + (size_t)s * r->frame_size, NULL, 0,
			  &front, &back);
		if (front != back || front == 0)
			continue;
		if (((uint64_t)front + r->shift) % n != s) {
			disagree++;
			continue;
		}
		agree++;
		if ((uint64_t)(uint32_t)(newest - front) < n &&
		    serial_newer(oldest, front))
			oldest = front;
	}
	if (disagree > agree) {
		r->shift = 0;
		return 0;
	}
	r->cursor = oldest;
	r->stall_at = 0;
	r->stall_torn = false;
	return agree;
}

void pptreader_rebase(struct pptreader *r, const void *base, uint64_t nframes)
{
	r->base = base;
	r->nframes = nframes;
	/* A fresh block: the wait for the cursor's frame starts again. */
	r->stall_at = 0;
	r->stall_torn = false;
}

size_t pptreader_poll(struct pptreader *r, uint64_t now_ns, void *buf,
		      uint32_t *idx, size_t max)
{
	unsigned char *out = buf;
	size_t n = 0;

	if (!reader_ok(r))
		return 0;
	reader_earn(r, now_ns);
	for (uint32_t steps = 0; n < max && steps < PPTREADER_STEPS; steps++) {
		uint32_t c = r->cursor, front, back;
		unsigned char *dst = out ? out + n * r->frame_size : NULL;

		slot_read(r, slot_of(r, c), dst, c, &front, &back);
		if (front == c && back == c) {
			if (idx)
				idx[n] = c;
			n++;
			r->st.delivered++;
			reader_advance(r);
		} else if (front == back && front != 0 &&
			   serial_newer(front, c)) {
			if (!reader_lapped(r, front)) {
				r->st.stalls++; /* out of credit */
				break;
			}
		} else if (!reader_stall(r, c, front, back, now_ns)) {
			r->st.stalls++;
			break;
		}
	}
	return n;
}
