/*
 * style: which writing style a foreign cTP station follows
 * (include/corotop/ctp.h) -- the shipped SDKs' per-slot seqlock, or the
 * literal seqs of a writer that follows the spec's text.  A corotop probe
 * marks its own stations (the station extension); every other station is
 * told apart from what its seqs show, per station: literal seqs sit in slot
 * seq % 8, and seqlock slots count their writes in step (slot 0 leads,
 * every other slot is at most one write behind it).  A real writer of one
 * style breaks the other's rule at its first event.  A station that shows
 * neither (or both) stays undecided: the harvester opens its coroutine and
 * counts nothing; after HARVEST_DECIDE_NS it takes the most likely style.
 */
#include "engine/ctp/style.h"

#include <stdatomic.h>

#include "common/hash.h"
#include "engine/ctp/harvest.h"

/*
 * Evidence from one read of a foreign station's eight seqs, in the order
 * slot 0, slots 1..7, slot 0 again (a, v[1..7], b).  Returns false when
 * every seq was 0.
 *   - literal: a written slot k holds seq == k (mod 8), at all times;
 *   - seqlock: slot k has started w_k = (seq + 1) / 2 writes; the writer
 *     fills slots 0, 1, ..., 7, 0, ... so w_k is w_0 or w_0 - 1.  Seqs only
 *     grow, so reading slot 0 before and after the others gives
 *     w(a) - 1 <= w_k <= w(b) however the writer moved meanwhile.
 * Odd seqs that stay put across reads at least a millisecond apart are
 * literal writes (a seqlock's odd window lasts nanoseconds).
 */
static bool style_read(struct harvest *h, uint32_t i,
		       struct harvest_station *st)
{
	struct ctp_epoch *slots = h->stations[i].slots;
	uint64_t v[CTP_SLOTS], b, wa, wb, odd = 0, now;
	bool any = false;

	for (unsigned k = 0; k < CTP_SLOTS; k++)
		/* acquire pairs with the writer's release (C). */
		v[k] = atomic_load_explicit(&slots[k].seq,
					    memory_order_acquire);
	/* acquire: as above. */
	b = atomic_load_explicit(&slots[0].seq, memory_order_acquire);
	wa = (v[0] + 1) / 2;
	wb = (b + 1) / 2;
	for (unsigned k = 0; k < CTP_SLOTS; k++) {
		uint64_t w = (v[k] + 1) / 2;

		/* An unwritten slot counts for seqlock (w = 0), not for
		 * literal: a literal writer reaches slot 0 last. */
		if (k && (w + 1 < wa || w > wb))
			st->evidence |= HARVEST_EV_NOT_SEQLOCK;
		if (!v[k])
			continue;
		any = true;
		if (v[k] % CTP_SLOTS != k)
			st->evidence |= HARVEST_EV_NOT_LITERAL;
		if (v[k] & 1)
			odd = odd * HASH_GOLDEN + v[k] * 8 + k;
	}
	if (b && b % CTP_SLOTS != 0)
		st->evidence |= HARVEST_EV_NOT_LITERAL;
	if (!any && !b)
		return false;
	if (odd) {
		now = h->clock();
		if (odd == st->odd_sig && now - st->odd_ns >= 1000000u)
			st->evidence |= HARVEST_EV_ODD_STABLE;
		else if (odd != st->odd_sig) {
			st->odd_sig = odd;
			st->odd_ns = now;
		}
	}
	return true;
}

/* Decide a foreign station's style when the evidence allows. */
void style_classify(struct harvest *h, uint32_t i, struct harvest_station *st)
{
	unsigned ev;

	if (!style_read(h, i, st))
		return;
	ev = st->evidence & (HARVEST_EV_NOT_LITERAL | HARVEST_EV_NOT_SEQLOCK);
	if (ev == HARVEST_EV_NOT_LITERAL) {
		st->style = HARVEST_STYLE_SEQLOCK;
	} else if (ev == HARVEST_EV_NOT_SEQLOCK) {
		st->style = HARVEST_STYLE_LITERAL;
	} else {
		/* Neither rule broken (or both: not a writer we know). */
		uint64_t now = h->clock();

		if (!st->seen_ns) {
			st->seen_ns = now ? now : 1;
			return;
		}
		if (now - st->seen_ns < HARVEST_DECIDE_NS)
			return;
		st->style = ev == 0 && (st->evidence & HARVEST_EV_ODD_STABLE)
				    ? HARVEST_STYLE_LITERAL
				    : HARVEST_STYLE_SEQLOCK;
	}
	h->count.styles[st->style]++;
}
