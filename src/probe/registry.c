/*
 * registry: every coroutine between corotop_coro_open and _close, traced or
 * not, in slots of the probe's own memory, so that the census (census.c)
 * can publish each one once when an agent attaches late.
 *
 * Slots.  A fixed array reserved at load (address space only: REGISTRY_MAX
 * slots of 24 bytes, pages touched as slots are first used), handed out
 * from a tagged free list (a Treiber stack, like the stations') or, when it
 * is empty, from a cursor that only grows: `used` bounds every walk.  A
 * slot holds the coroutine's address and one word:
 *
 *   bit 0   LIVE      open, not yet closed
 *   bit 1   PIN       a walker is looking at it (the slot is not reused)
 *   bit 2   HANDOFF   the walker published it on `station`
 *   8..31   station   the station of a hand-over
 *   32..63  attach    the attachment it was last claimed under (0: none)
 *
 * Names.  Beside each slot, the coroutine's name (corotop_coro_open_named):
 * a copy of at most COROTOP_NAME_MAX - 1 bytes, or the pointer to a static
 * one, written by add before the word's release store.  Another array of
 * REGISTRY_MAX entries of 64 bytes, address space only like the slots.
 * registry_name hands it out when the coroutine takes a station -- its
 * owner, or the census walker, which reads a static name without ever
 * faulting (its owner may close it, and free the string, meanwhile).
 * The entry (corotop_coro_open_entry: the function the context runs)
 * sits there too, a word the station header carries like the name.
 *
 * Attachment numbers (probe_attach) only grow, so "claimed under attach"
 * means: the coroutine has, or is getting, a station in that attachment's
 * region, and nobody may give it another there.
 *
 * Exactly once.  For each attachment A and each coroutine c live when A's
 * walk runs, exactly one of two things happens, decided by one CAS on c's
 * word: c's owner claims it (registry_claim: attach < A -> A, at c's first
 * record, open or close under A) and takes a station itself, or the walker
 * does (registry_hand: the pinned word -> A | HANDOFF | station) and the
 * owner adopts that station at its first record under A.  Both CASes
 * expect a word whose attach is older than A, and each moves it to A, so
 * at most one succeeds; the owner's CAS keeps PIN, so a walker whose pin
 * was overtaken fails its hand and drops the station it prepared (never
 * published).  Hence no coroutine gets two stations in A (published
 * twice), and the walker only skips a live coroutine whose word already
 * says A, i.e. whose owner claimed it (and records itself) -- none is lost.
 * A coroutine opened after the walk's barrier sees the attachment itself
 * (census.c explains the barrier); one closed under a pin is freed by the
 * walker's unpin instead of its owner (remove keeps PIN and leaves the
 * slot alone), so a pinned slot is never reused under the walker: the
 * coroutine it read is the one it hands to.  A word whose attach is newer
 * than the caller's (a stale attachment, a walker overtaken by another
 * attach) is never moved back.
 *
 * The owner's side costs nothing on the record path: add and remove are a
 * free-list CAS each at open and close; claim runs only on the first
 * record under a new attachment (the record path's c->attach check).
 *
 * Memory orders are named at each atomic.  The walker reads the coroutine
 * itself only through census.c's checked copy (the owner may free it at
 * any moment); it relies on the word alone.
 */
#define _GNU_SOURCE
#include "probe/registry.h"

#include "probe/probe_internal.h"
#include "wire/regdesc.h"

#include <stdatomic.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

struct registry_slot {
	_Atomic uint64_t word;
	_Atomic uintptr_t coro;
	_Atomic uint32_t next; /* free list: slot + 1, 0 = end */
	uint32_t pad_;
};

_Static_assert(sizeof(struct registry_slot) == 24, "24-byte slots");

/* A slot's name, beside it (the slots stay 24 bytes): written by add
 * before the word's release store, read by the owner or by a walker that
 * pinned the slot (acquire), so plain accesses.  A pinned slot is never
 * reused, so its name does not change under the walker. */
struct registry_name {
	char text[COROTOP_NAME_MAX]; /* a copied name, NUL-terminated */
	const char *ptr;	     /* a static name (COROTOP_NAME_STATIC) */
	uint64_t entry;		     /* the entry's address, 0 = none */
	uint64_t made_for; /* the function it was made for, 0 = none */
};

_Static_assert(COROTOP_NAME_MAX == CTP_STX_NAME_LEN, "one name length");

#define REGISTRY_NONE UINT32_MAX

static struct registry_slot *registry_slots;
/* REGISTRY_MAX names, or NULL (out of address space: no names). */
static struct registry_name *registry_names;
/* Tagged free-list head: tag << 32 | (slot + 1). */
static _Atomic uint64_t registry_free;
static _Atomic uint32_t registry_used;
/* Statistics (relaxed: nobody orders against them). */
static _Atomic uint64_t registry_live, registry_full, registry_pins;

/* Where a reader outside the process finds the registry: a core's
 * (src/wire/regdesc.h).  Exported (probe.map); never written. */
_Static_assert(sizeof(struct registry_slot) == sizeof(struct regdesc_slot) &&
		       offsetof(struct registry_slot, coro) ==
			       offsetof(struct regdesc_slot, coro),
	       "regdesc.h's slot is the registry's");
_Static_assert(sizeof(struct registry_name) == sizeof(struct regdesc_name) &&
		       offsetof(struct registry_name, ptr) ==
			       offsetof(struct regdesc_name, ptr) &&
		       offsetof(struct registry_name, entry) ==
			       offsetof(struct regdesc_name, entry),
	       "regdesc.h's name is the registry's");
_Static_assert(sizeof(registry_used) == 4, "a 32-bit count");
_Static_assert(REGDESC_CORO_LONG_WAITS == CORO_LONG_WAITS &&
		       REGDESC_CORO_CONTEXT == CORO_CONTEXT &&
		       REGDESC_CORO_HUB == CORO_HUB &&
		       REGDESC_CORO_DISPATCHER == CORO_DISPATCHER &&
		       REGDESC_CORO_ROOT == CORO_ROOT,
	       "regdesc.h's settings are the probe's");
__attribute__((visibility("default"), used))
const struct regdesc corotop_registry_desc_ = {
	.magic = REGDESC_MAGIC,
	.version = REGDESC_VERSION,
	.slot_size = sizeof(struct registry_slot),
	.name_size = sizeof(struct registry_name),
	.coro_size = sizeof(struct corotop_coro),
	.max = REGISTRY_MAX,
	.slots_at = (uint64_t)(uintptr_t)&registry_slots,
	.names_at = (uint64_t)(uintptr_t)&registry_names,
	.used_at = (uint64_t)(uintptr_t)&registry_used,
};

bool registry_init(void)
{
	void *p;

	if (registry_slots)
		return true;
	p = mmap(NULL, (size_t)REGISTRY_MAX * sizeof(struct registry_slot),
		 PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return false;
	registry_slots = p;
	p = mmap(NULL, (size_t)REGISTRY_MAX * sizeof(struct registry_name),
		 PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p != MAP_FAILED)
		registry_names = p;
	return true;
}

size_t registry_name_len(const char *s, size_t len)
{
	size_t n = strnlen(s, len);

	if (n < COROTOP_NAME_MAX)
		return n;
	/* s[n] is the first byte dropped: a continuation byte means the
	 * character it belongs to began before the cut (at most 3 back). */
	n = COROTOP_NAME_MAX - 1;
	for (int k = 0; k < 3 && n && ((unsigned char)s[n] & 0xc0) == 0x80; k++)
		n--;
	return n;
}

/* Up to COROTOP_NAME_MAX bytes at p into buf without ever faulting: two
 * pieces split at p's page end, because process_vm_readv transfers an
 * iovec whole or not at all (a short literal may end a page). */
static size_t registry_read(const char *p, char *buf)
{
	uintptr_t a = (uintptr_t)p;
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	size_t first = (size_t)(page - a % page);
	struct iovec local = {buf, COROTOP_NAME_MAX};
	struct iovec remote[2] = {{(void *)a, COROTOP_NAME_MAX}, {0, 0}};
	ssize_t got;

	if (first < COROTOP_NAME_MAX) {
		remote[0].iov_len = first;
		remote[1] = (struct iovec){(void *)(a + first),
					   COROTOP_NAME_MAX - first};
	}
	got = process_vm_readv(getpid(), &local, 1, remote,
			       remote[1].iov_len ? 2 : 1, 0);
	return got > 0 ? (size_t)got : 0;
}

size_t registry_name(uint32_t reg, char out[COROTOP_NAME_MAX], bool checked)
{
	const struct registry_name *nm;
	char buf[COROTOP_NAME_MAX];
	const char *src;
	size_t n;

	memset(out, 0, COROTOP_NAME_MAX);
	if (!reg || reg > REGISTRY_MAX || !registry_names)
		return 0;
	nm = &registry_names[reg - 1];
	if (!nm->ptr) {
		src = nm->text;
		n = strnlen(src, COROTOP_NAME_MAX - 1);
	} else if (checked) {
		src = buf;
		n = registry_name_len(buf, registry_read(nm->ptr, buf));
	} else {
		src = nm->ptr;
		n = registry_name_len(src, COROTOP_NAME_MAX);
	}
	memcpy(out, src, n);
	return n;
}

static void registry_push(uint32_t i)
{
	/* relaxed: the CAS below publishes the link. */
	uint64_t h = atomic_load_explicit(&registry_free, memory_order_relaxed);
	uint64_t nh;

	do {
		/* relaxed: published by the release CAS (pairs with the
		 * pop's acquire). */
		atomic_store_explicit(&registry_slots[i].next, (uint32_t)h,
				      memory_order_relaxed);
		nh = ((h >> 32) + 1) << 32 | (i + 1);
	} while (!atomic_compare_exchange_weak_explicit(&registry_free, &h, nh,
							memory_order_release,
							memory_order_relaxed));
}

static uint32_t registry_pop(void)
{
	/* acquire: pairs with the push's release CAS; the link is set. */
	uint64_t h = atomic_load_explicit(&registry_free, memory_order_acquire);

	for (;;) {
		uint32_t top = (uint32_t)h, next;
		uint64_t nh;

		if (!top)
			return REGISTRY_NONE;
		/* relaxed: a stale link is rejected by the tagged CAS. */
		next = atomic_load_explicit(&registry_slots[top - 1].next,
					    memory_order_relaxed);
		nh = ((h >> 32) + 1) << 32 | next;
		/* acquire: as the load above (pairs with push). */
		if (atomic_compare_exchange_weak_explicit(
			    &registry_free, &h, nh, memory_order_acquire,
			    memory_order_acquire))
			return top - 1;
	}
}

uint64_t registry_entry(uint32_t reg)
{
	if (!reg || reg > REGISTRY_MAX || !registry_names)
		return 0;
	return registry_names[reg - 1].entry;
}

uint64_t registry_made_for(uint32_t reg)
{
	if (!reg || reg > REGISTRY_MAX || !registry_names)
		return 0;
	return registry_names[reg - 1].made_for;
}

uint32_t registry_add_named(struct corotop_coro *c, const char *name,
			    unsigned flags, uint64_t entry, uint64_t made_for)
{
	uint32_t i;

	if (!registry_slots)
		return 0;
	i = registry_pop();
	if (i == REGISTRY_NONE) {
		/* Load first: a full registry does not keep bumping the
		 * cursor.  relaxed: the slot's word orders what matters. */
		i = atomic_load_explicit(&registry_used, memory_order_relaxed);
		if (i >= REGISTRY_MAX ||
		    (i = atomic_fetch_add_explicit(&registry_used, 1,
						   memory_order_relaxed)) >=
			    REGISTRY_MAX) {
			atomic_fetch_add_explicit(&registry_full, 1,
						  memory_order_relaxed);
			return 0;
		}
	}
	/* relaxed: published by the release store of the word. */
	atomic_store_explicit(&registry_slots[i].coro, (uintptr_t)c,
			      memory_order_relaxed);
	/* Plain stores, published by the same release. */
	if (registry_names) {
		struct registry_name *nm = &registry_names[i];

		nm->ptr = NULL;
		nm->text[0] = '\0';
		nm->entry = entry;
		nm->made_for = made_for;
		if (name && *name && (flags & COROTOP_NAME_STATIC)) {
			nm->ptr = name;
		} else if (name && *name) {
			size_t n = registry_name_len(name, COROTOP_NAME_MAX);

			memcpy(nm->text, name, n);
			nm->text[n] = '\0';
		}
	}
	/* release: pairs with the walker's acquire in registry_pin; a free
	 * slot's word is 0 and nobody else writes it (a walker only CASes
	 * live words), so a plain store. */
	atomic_store_explicit(&registry_slots[i].word, REGISTRY_LIVE,
			      memory_order_release);
	atomic_fetch_add_explicit(&registry_live, 1, memory_order_relaxed);
	return i + 1;
}

uint64_t registry_remove(uint32_t reg)
{
	struct registry_slot *s;
	uint64_t w;

	if (!reg || reg > REGISTRY_MAX || !registry_slots)
		return 0;
	s = &registry_slots[reg - 1];
	/* relaxed: the CAS re-reads it. */
	w = atomic_load_explicit(&s->word, memory_order_relaxed);
	/* acq_rel: release pairs with the walker's hand/unpin CAS (it sees
	 * the coroutine dead and frees the slot after our last use of it);
	 * acquire keeps the owner's later accesses (freeing the coroutine)
	 * after the word changed, which census.c's copy relies on. */
	while (!atomic_compare_exchange_weak_explicit(
		&s->word, &w, w & REGISTRY_PIN, memory_order_acq_rel,
		memory_order_relaxed))
		;
	atomic_fetch_sub_explicit(&registry_live, 1, memory_order_relaxed);
	/* Pinned: the walker's unpin frees it. */
	if (!(w & REGISTRY_PIN))
		registry_push(reg - 1);
	return w;
}

/* a was claimed before b (serial numbers: attach counts wrap at 2^32, and
 * skip 0, which is "never claimed"). */
static bool registry_before(uint32_t a, uint32_t b)
{
	return a == 0 || (int32_t)(a - b) < 0;
}

enum registry_claim registry_claim(uint32_t reg, uint32_t attach,
				   uint32_t *station)
{
	struct registry_slot *s;
	uint64_t w;

	if (!reg || reg > REGISTRY_MAX || !registry_slots)
		return REGISTRY_CLAIM_OWN;
	s = &registry_slots[reg - 1];
	/* acquire: pairs with the walker's release in registry_hand; the
	 * station it hands over is complete. */
	w = atomic_load_explicit(&s->word, memory_order_acquire);
	for (;;) {
		uint32_t a = REGISTRY_ATTACH(w);

		if (a == attach) {
			if (!(w & REGISTRY_HANDOFF))
				return REGISTRY_CLAIM_OWN;
			*station = REGISTRY_STATION(w);
			return REGISTRY_CLAIM_HANDOFF;
		}
		if (!registry_before(a, attach))
			return REGISTRY_CLAIM_STALE;
		/* acq_rel: acquire as above (a hand-over that beat us);
		 * release pairs with the walker's pin and hand CASes,
		 * which then fail.  PIN is kept: the walker owns it. */
		if (atomic_compare_exchange_weak_explicit(
			    &s->word, &w,
			    (w & (REGISTRY_LIVE | REGISTRY_PIN)) |
				    (uint64_t)attach << 32,
			    memory_order_acq_rel, memory_order_acquire))
			return REGISTRY_CLAIM_OWN;
	}
}

uint32_t registry_size(void)
{
	/* relaxed: the census's barrier orders it (census.c). */
	uint32_t n = atomic_load_explicit(&registry_used, memory_order_relaxed);

	return registry_slots ? (n < REGISTRY_MAX ? n : REGISTRY_MAX) : 0;
}

bool registry_pin(uint32_t slot, uint32_t attach, uint64_t *word,
		  struct corotop_coro **c)
{
	struct registry_slot *s;
	uint64_t w;

	if (slot >= registry_size())
		return false;
	s = &registry_slots[slot];
	/* acquire: pairs with registry_add's release (the coroutine's
	 * address is set) and the owner's claim. */
	w = atomic_load_explicit(&s->word, memory_order_acquire);
	for (;;) {
		if (!(w & REGISTRY_LIVE) || (w & REGISTRY_PIN) ||
		    !registry_before(REGISTRY_ATTACH(w), attach))
			return false;
		/* acquire: as above, for the word we pin. */
		if (atomic_compare_exchange_weak_explicit(
			    &s->word, &w, w | REGISTRY_PIN,
			    memory_order_acquire, memory_order_acquire))
			break;
	}
	atomic_fetch_add_explicit(&registry_pins, 1, memory_order_relaxed);
	*word = w | REGISTRY_PIN;
	/* relaxed: ordered by the acquire CAS above, which read the word
	 * registry_add published after storing it (or a later RMW of that
	 * release sequence). */
	*c = (struct corotop_coro *)atomic_load_explicit(&s->coro,
							 memory_order_relaxed);
	return true;
}

void registry_unpin(uint32_t slot)
{
	struct registry_slot *s = &registry_slots[slot];
	/* relaxed: the CAS re-reads it. */
	uint64_t w = atomic_load_explicit(&s->word, memory_order_relaxed);

	/* acq_rel: acquire pairs with remove's release (a slot closed under
	 * the pin is ours to free, after its owner's last use); release
	 * pairs with a later pin or claim. */
	while (!atomic_compare_exchange_weak_explicit(
		&s->word, &w, w & ~REGISTRY_PIN, memory_order_acq_rel,
		memory_order_relaxed))
		;
	atomic_fetch_sub_explicit(&registry_pins, 1, memory_order_relaxed);
	if (!(w & REGISTRY_LIVE))
		registry_push(slot);
}

bool registry_hand(uint32_t slot, uint64_t word, uint32_t attach,
		   uint32_t station)
{
	struct registry_slot *s = &registry_slots[slot];
	uint64_t expect = word;

	/* release: pairs with the owner's acquire in registry_claim; the
	 * station's header and census event, written before, are complete
	 * for the owner that adopts it. */
	if (atomic_compare_exchange_strong_explicit(
		    &s->word, &expect,
		    REGISTRY_LIVE | REGISTRY_HANDOFF |
			    (uint64_t)(station & 0xffffffu) << 8 |
			    (uint64_t)attach << 32,
		    memory_order_release, memory_order_relaxed)) {
		atomic_fetch_sub_explicit(&registry_pins, 1,
					  memory_order_relaxed);
		return true;
	}
	registry_unpin(slot);
	return false;
}

uint64_t registry_word(uint32_t slot)
{
	/* acquire: a test reads what the walker and owners did. */
	return slot < registry_size()
		       ? atomic_load_explicit(&registry_slots[slot].word,
					      memory_order_acquire)
		       : 0;
}

void registry_stats(struct registry_stats *out)
{
	out->used = registry_size();
	out->live = atomic_load_explicit(&registry_live, memory_order_relaxed);
	out->full = atomic_load_explicit(&registry_full, memory_order_relaxed);
	out->pins = atomic_load_explicit(&registry_pins, memory_order_relaxed);
}

void registry_atfork_child(void)
{
	uint32_t n = registry_size();

	/* relaxed: alone in the child. */
	if (!atomic_load_explicit(&registry_pins, memory_order_relaxed))
		return;
	for (uint32_t i = 0; i < n; i++)
		/* relaxed: alone in the child. */
		if (atomic_load_explicit(&registry_slots[i].word,
					 memory_order_relaxed) &
		    REGISTRY_PIN)
			registry_unpin(i);
}
