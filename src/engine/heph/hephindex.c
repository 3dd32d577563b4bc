/*
 * hephindex: the index of a Heph trace file -- its events, options and
 * problems in struct heph_file (hephfile.h) -- built by one walk over its
 * packets.  The walk is the part that reads the untrusted bytes and must
 * not be made slow or fooled by them; hephfile.c maps the file, calls it
 * and reads events back through what it built.
 *
 * The walk reads the packets once from byte 0:
 *
 *   metadata  counted; the last `epoch` option (a u64) is kept; options we
 *             do not know are counted and passed over by their size, as the
 *             format wants (other writers may put metadata anywhere);
 *   event     one struct heph_ref in file order: where the packet is, its
 *             stream, counter, substream and times (decoded in full once,
 *             so that every later decode of it succeeds on the same bytes);
 *   bad       a problem is recorded with the packet's byte offset, then the
 *             bytes are scanned from the next one on for either magic that
 *             starts a packet which decodes; what lies between is counted in
 *             skipped_bytes.  A scan gives up after RESYNC_MAX bytes with no
 *             packet (and reading stops there, with a problem saying so);
 *   short     a packet whose size runs past the end of the file is a lie if
 *             a good packet follows it (a problem, and reading carries on
 *             there), and otherwise the file is truncated inside it
 *             (truncated, a problem, and reading stops).
 *
 * A compressed file (a zstd frame at byte 0: --record FILE.zst) is walked
 * frame by frame instead (heph_index_build_zst, hephzst.c): each frame's
 * Heph bytes are a window the same packet walk reads, offsets in the index
 * are offsets in the Heph bytes, the options kept are copied into an arena
 * that stands in for the map, and heph_file_event decompresses the one
 * frame an event is in (a cache of HEPH_ZST_CACHE frames).
 *
 * A file of heph_file_split_min bytes or more, on a machine with two
 * CPUs, is walked in two halves at once: the second starts at the first
 * offset past the middle where packets decode one after the other; the
 * first stops there.  If the first does not land on that offset (it began
 * inside a packet after all, or a lie took the first half's walk past it)
 * the second's work is dropped and the first reads on alone, so what is
 * found is what one walk finds (the resync budget is per half).  Each
 * walk of a mapped file asks for the next RA_CHUNK bytes when it is
 * within RA_AHEAD of what it asked for (madvise WILLNEED), so that a
 * cold file's reads overlap the decoding.
 *
 * Bounds against a file that lies: at most HEPHFILE_MAX_EVENTS events (2^28,
 * 12 GiB of index) are kept; packets that fail to decode and the scans for
 * the next packet together decode at most RESYNC_BUDGET bytes (as the
 * packets' sizes say), so a file made of magics and lies can not make
 * opening quadratic: past that, reading stops with a problem.
 */
#define _GNU_SOURCE
#include "engine/heph/hephindex.h"

#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/grow.h"
#include "engine/heph/hephfile.h"
#include "engine/heph/hephzst.h"

#define HEPHFILE_MAX_EVENTS (1u << 28)
#define RESYNC_MAX (1u << 20)		    /* garbage bytes before giving up */
#define RESYNC_BUDGET ((uint64_t)256 << 20) /* bytes of bad packets decoded */
#define SPLIT_BUDGET ((uint64_t)64 << 20)   /* bytes split_find decodes */
#define RA_CHUNK ((size_t)32 << 20)	    /* read ahead by this much ... */
#define RA_AHEAD ((size_t)128 << 20) /* ... when within this of the end */
#define HEPHFILE_ARENA_MAX ((size_t)1 << 30) /* a compressed file's options */

/* The state of one walk over the bytes [from, to) of map (a packet that
 * starts before `to` is read whole, wherever it ends).  map is the file's
 * bytes, or (a compressed file) one frame's: base is the offset of map[0]
 * in the Heph bytes, which the index and the problems give. */
struct walk {
	struct heph_file *f;
	const uint8_t *map;
	size_t size;
	uint64_t base;
	size_t cap;	 /* of f->ev */
	uint64_t budget; /* left for resync decodes */
	size_t from, to;
	size_t end; /* where the walk stopped: the next packet's offset */
	size_t ra;  /* a mapped file: read ahead up to here (0: do not) */
	bool stop;
	bool frame; /* map is one frame: its end is not the file's */
	bool halt;  /* stop for good (a bound of the whole file was hit) */
	/* A compressed file: the metadata packets kept, one after the other
	 * (they become f->map; f->meta_off are offsets in it). */
	uint8_t *arena;
	size_t arena_len, arena_cap;
};

size_t heph_file_split_min = (size_t)64 << 20;
void (*heph_file_split_hook)(void);
void (*heph_file_frame_hook)(void);

__attribute__((format(printf, 3, 4))) static void
problem_add(struct heph_file *f, uint64_t off, const char *fmt, ...)
{
	va_list ap;
	struct heph_problem *p;

	f->problems_total++;
	if (f->nproblems >= HEPHFILE_PROBLEMS)
		return;
	p = &f->problems[f->nproblems++];
	p->off = off;
	va_start(ap, fmt);
	vsnprintf(p->what, sizeof(p->what), fmt, ap);
	va_end(ap);
}

static enum heph_desc desc_kind(const struct heph_packet *pk)
{
	if (pk->desc_len == 7 && !memcmp(pk->desc, "running", 7))
		return HEPH_DESC_RUNNING;
	if (pk->desc_len == 9 && !memcmp(pk->desc, "suspended", 9))
		return HEPH_DESC_SUSPENDED;
	if (pk->desc_len == 4 && !memcmp(pk->desc, "lost", 4))
		return HEPH_DESC_LOST;
	return HEPH_DESC_OTHER;
}

static bool event_add(struct walk *w, uint64_t off,
		      const struct heph_packet *pk)
{
	struct heph_file *f = w->f;
	struct heph_ref *r;

	off += w->base;

	if (f->nev >= HEPHFILE_MAX_EVENTS) {
		problem_add(f, off,
			    "more than %u events: reading stopped here (split "
			    "the recording)",
			    HEPHFILE_MAX_EVENTS);
		return false;
	}
	if (!grow_array_max((void **)&f->ev, &w->cap, f->nev + 1,
			    HEPHFILE_MAX_EVENTS, sizeof(*f->ev))) {
		problem_add(f, off,
			    "out of memory for the index after %zu "
			    "events: reading stopped here",
			    f->nev);
		return false;
	}
	if (f->nev && pk->start < f->ev[f->nev - 1].start)
		f->in_order = false;
	if (!f->nev || pk->start > f->max_start)
		f->max_start = pk->start;
	r = &f->ev[f->nev++];
	r->off = off;
	r->start = pk->start;
	r->end = pk->end;
	r->substream = pk->substream;
	r->stream = pk->stream;
	r->counter = pk->counter;
	r->size = pk->size;
	r->kind = desc_kind(pk);
	if (f->nev == 1 || pk->start < f->first_start)
		f->first_start = pk->start;
	if (f->nev == 1 || pk->end > f->last_end)
		f->last_end = pk->end;
	return true;
}

/* Where an option other than epoch was, for readers of their own options
 * (hephnames.c); the first HEPHFILE_META_MAX, doubling as they come.  A
 * compressed file's are copied into the arena (at most HEPHFILE_ARENA_MAX
 * bytes of them), and the offset kept is the copy's. */
static void meta_keep(struct walk *w, size_t off, const struct heph_packet *pk)
{
	struct heph_file *f = w->f;
	uint64_t at = w->base + off;

	if (f->nmeta_off >= HEPHFILE_META_MAX)
		return;
	if (w->frame) {
		if (w->arena_len + pk->size > HEPHFILE_ARENA_MAX ||
		    !grow_array((void **)&w->arena, &w->arena_cap,
				w->arena_len + pk->size, 1))
			return;
		/* f owns it from the start: a fault in the walk (the file
		 * shrank) leaves f to the caller's heph_file_close. */
		f->map = w->arena;
		at = w->arena_len;
	}
	if (!grow_array_max((void **)&f->meta_off, &f->cap_meta_off,
			    f->nmeta_off + 1, HEPHFILE_META_MAX,
			    sizeof(*f->meta_off)))
		return;
	if (w->frame) {
		memcpy(w->arena + w->arena_len, w->map + off, pk->size);
		w->arena_len += pk->size;
	}
	f->meta_off[f->nmeta_off++] = at;
}

static void meta_add(struct walk *w, size_t off, const struct heph_packet *pk)
{
	struct heph_file *f = w->f;

	f->nmeta++;
	if (pk->option_len != 5 || memcmp(pk->option, "epoch", 5)) {
		f->unknown_options++;
		meta_keep(w, off, pk);
		return;
	}
	if (pk->value_len != 8) {
		problem_add(f, w->base + off,
			    "epoch option with a %u-byte value (want a u64, "
			    "8 bytes): ignored",
			    pk->value_len);
		return;
	}
	f->have_epoch = true;
	f->epoch_ns = heph_be64(pk->value);
}

enum resync_end {
	RESYNC_FOUND,
	RESYNC_EOF,	/* nothing up to the end */
	RESYNC_LIMIT,	/* nothing in RESYNC_MAX bytes */
	RESYNC_BUDGET_, /* RESYNC_BUDGET spent */
};

/* Charge the decoding of a packet that says it is size bytes long. */
static bool budget_take(struct walk *w, uint64_t size)
{
	if (size > w->budget)
		return false;
	w->budget -= size;
	return true;
}

/* The offset of the next packet that decodes, from `from` on (*at). */
static enum resync_end resync(struct walk *w, size_t from, size_t *at)
{
	const uint8_t *m = w->map;
	size_t size = w->size;
	size_t lim = size - from > RESYNC_MAX ? from + RESYNC_MAX : size;
	struct heph_packet pk;

	for (size_t o = from; o < lim && size - o >= 8; o++) {
		uint32_t magic, psize;

		if (m[o] != 0x75 && m[o] != 0xC1)
			continue;
		magic = heph_be32(m + o);
		if (magic != HEPH_META_MAGIC && magic != HEPH_EVENT_MAGIC)
			continue;
		psize = heph_be32(m + o + 4);
		if (psize > size - o || psize > HEPH_PACKET_MAX)
			continue;
		if (!budget_take(w, psize))
			return RESYNC_BUDGET_;
		if (heph_decode(m + o, size - o, &pk, NULL, 0) == HEPH_OK) {
			*at = o;
			return RESYNC_FOUND;
		}
	}
	return lim < size ? RESYNC_LIMIT : RESYNC_EOF;
}

/* What decoding the bytes at off may have walked: as far as the size
 * says when a magic starts them (within the file), 8 bytes otherwise
 * (garbage: the decoder looked at the magic and stopped). */
static uint64_t decode_cost(const uint8_t *map, size_t size, size_t off)
{
	size_t left = size - off;
	uint32_t magic, said;

	if (left < 8)
		return left;
	magic = heph_be32(map + off);
	said = heph_be32(map + off + 4);
	if (magic != HEPH_META_MAGIC && magic != HEPH_EVENT_MAGIC)
		return 8;
	return said < left ? said : left;
}

/*
 * The packet at off did not decode (st, err): say so and find the next.
 * A failed decode may have walked as far as the packet's size said, so it
 * is charged to the budget too: lying packets close together can not make
 * the walk quadratic either.  Garbage costs what was looked at.
 */
static size_t walk_recover(struct walk *w, size_t off, enum heph_status st,
			   const char *err)
{
	struct heph_file *f = w->f;
	size_t left = w->size - off, next = 0;
	uint64_t at = w->base + off;
	enum resync_end end = budget_take(w, decode_cost(w->map, w->size, off))
				      ? resync(w, off + 1, &next)
				      : RESYNC_BUDGET_;

	/* The outcome first: what[] may cut the end of err. */
	switch (end) {
	case RESYNC_FOUND:
		f->skipped_bytes += next - off;
		problem_add(f, at, "%zu bytes skipped%s: %s", next - off,
			    st == HEPH_SHORT ? " (the size lied)" : "", err);
		return next;
	case RESYNC_EOF:
		if (w->frame) { /* the frame ends, the file goes on */
			f->skipped_bytes += left;
			problem_add(f, at,
				    "%zu bytes skipped to the end of their "
				    "zstd frame: %s",
				    left, err);
		} else if (st == HEPH_SHORT) {
			f->truncated = true;
			problem_add(f, at, "truncated: %s", err);
		} else {
			f->skipped_bytes += left;
			problem_add(f, at, "%zu bytes skipped to the end: %s",
				    left, err);
		}
		break;
	case RESYNC_LIMIT:
		if (st == HEPH_SHORT && !w->frame) {
			f->truncated = true;
			problem_add(f, at, "truncated: %s", err);
		} else {
			problem_add(f, at,
				    "no packet in the next %u KiB, reading "
				    "stopped: %s",
				    RESYNC_MAX >> 10, err);
		}
		break;
	case RESYNC_BUDGET_:
		w->halt = true;
		problem_add(f, at,
			    "too many lying packets, reading stopped (%llu MiB "
			    "of them decoded): %s",
			    (unsigned long long)(RESYNC_BUDGET >> 20), err);
		break;
	}
	w->stop = true;
	return w->size;
}

/* Ask the kernel for the next RA_CHUNK bytes of the file, so that the
 * disk reads while this walk decodes (a walk of a cold file otherwise
 * waits for each fault's own read-ahead). */
static void read_ahead(struct walk *w)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t at = w->ra & ~(page - 1);
	size_t n = w->size - at < RA_CHUNK ? w->size - at : RA_CHUNK;

	madvise((void *)(uintptr_t)(w->map + at), n, MADV_WILLNEED);
	w->ra = at + n;
}

static void walk_packets(struct walk *w)
{
	size_t off = w->from;
	struct heph_packet pk;
	char err[160];

	while (off < w->to && off < w->size && !w->stop) {
		enum heph_status st;

		if (w->ra && off + RA_AHEAD > w->ra && w->ra < w->size)
			read_ahead(w);
		/* The hardware prefetcher loses the thread at page ends. */
		if (w->size - off > 4096)
			__builtin_prefetch(w->map + off + 4096);
		st = heph_decode(w->map + off, w->size - off, &pk, err,
				 sizeof(err));

		if (st != HEPH_OK) {
			off = walk_recover(w, off, st, err);
			continue;
		}
		if (pk.kind == HEPH_META)
			meta_add(w, off, &pk);
		else if (!event_add(w, off, &pk)) {
			w->stop = w->halt = true; /* said why; not again */
			break;
		}
		off += pk.size;
	}
	w->end = off;
}

/* ---- two halves at once ---- */

/* Where the second half starts: the first offset from `from` on where a
 * packet decodes and the next ones follow it, packet after packet (or the
 * file ends exactly); 0 when there is none within RESYNC_MAX bytes. */
static size_t split_find(const struct heph_file *f, size_t from)
{
	const uint8_t *p = f->map;
	size_t size = f->size;
	uint64_t budget = SPLIT_BUDGET;
	struct heph_packet pk;

	for (size_t at = from; at < size && at - from < RESYNC_MAX; at++) {
		size_t off = at;
		int k;

		if (p[at] != 0x75 && p[at] != 0xC1)
			continue;
		for (k = 0; k < 16 && off < size; k++) {
			uint64_t cost = decode_cost(p, size, off);

			/* Lies that chain to one huge packet: no split. */
			if (cost > budget)
				return 0;
			budget -= cost;
			if (heph_decode(p + off, size - off, &pk, NULL, 0) !=
			    HEPH_OK)
				break;
			off += pk.size;
		}
		if (k == 16 || off == size)
			return at;
	}
	return 0;
}

struct half {
	struct walk w;
	pthread_t th;
	bool faulted; /* the file shrank under it (SIGBUS) */
};

/*
 * A mapped file may shrink while it is read (replay of a file still being
 * written), and a read past its end faults.  One walk leaves that to the
 * caller's SIGBUS guard; two must not leave either thread in the middle
 * of its walk.  While they run, this handler sends a fault in either
 * walking thread to its escape here, and any other to the handler that
 * was there before.  The escape leaves the handler by siglongjmp, so the
 * handler runs with SA_NODEFER and the landing pads save the signal mask
 * (sigsetjmp(jb, 1)): SIGBUS must not stay blocked in the thread after
 * the escape, or the raise() that hands the fault to the caller's guard
 * would stay pending and the next fault would kill the process.
 */
static __thread sigjmp_buf *split_escape;
static struct sigaction split_old;

static void split_sigbus(int sig, siginfo_t *si, void *uc)
{
	if (split_escape)
		siglongjmp(*split_escape, 1);
	if (split_old.sa_flags & SA_SIGINFO) {
		split_old.sa_sigaction(sig, si, uc);
	} else if (split_old.sa_handler != SIG_DFL &&
		   split_old.sa_handler != SIG_IGN) {
		split_old.sa_handler(sig);
	} else {
		signal(sig, SIG_DFL);
		raise(sig);
	}
}

static void *half_main(void *arg)
{
	struct half *h = arg;
	sigjmp_buf jb;

	if (sigsetjmp(jb, 1)) {
		split_escape = NULL;
		h->faulted = true;
		return NULL;
	}
	split_escape = &jb;
	walk_packets(&h->w);
	split_escape = NULL;
	return NULL;
}

/* The first half, in this thread, under the same escape: true when the
 * file shrank under it. */
static bool first_half(struct walk *w)
{
	sigjmp_buf jb;

	if (sigsetjmp(jb, 1)) {
		split_escape = NULL;
		return true;
	}
	split_escape = &jb;
	walk_packets(w);
	split_escape = NULL;
	return false;
}

/* Append the second half's findings (b) to the first's (f), in file order.
 * False when memory runs out (f is then as the first half left it). */
static bool half_merge(struct heph_file *f, struct heph_file *b)
{
	size_t n = f->nev + b->nev, nm = f->nmeta_off + b->nmeta_off;
	struct heph_ref *ev;
	uint64_t *meta;

	if (n > HEPHFILE_MAX_EVENTS || nm > HEPHFILE_META_MAX)
		return false;
	/* Grow only (the first half's walk may go on with them after a
	 * failure here). */
	if (nm > f->cap_meta_off) {
		meta = realloc(f->meta_off, nm * sizeof(*meta));
		if (!meta)
			return false;
		f->meta_off = meta;
		f->cap_meta_off = nm;
	}
	/* The last step that can fail: once it succeeded the merge is done
	 * and the first half's walk does not go on. */
	ev = realloc(f->ev, (n ? n : 1) * sizeof(*ev));
	if (!ev)
		return false;
	f->ev = ev;
	if (b->nev)
		memcpy(f->ev + f->nev, b->ev, b->nev * sizeof(*ev));
	if (b->nmeta_off)
		memcpy(f->meta_off + f->nmeta_off, b->meta_off,
		       b->nmeta_off * sizeof(*f->meta_off));
	f->nmeta_off = nm;
	if (b->nev) {
		if (!f->nev || b->first_start < f->first_start)
			f->first_start = b->first_start;
		if (!f->nev || b->last_end > f->last_end)
			f->last_end = b->last_end;
		if (!f->nev || b->max_start > f->max_start)
			f->max_start = b->max_start;
		f->in_order =
			f->in_order && b->in_order &&
			(!f->nev || f->ev[f->nev - 1].start <= b->ev[0].start);
	}
	f->nev = n;
	if (b->have_epoch) { /* the last one wins */
		f->have_epoch = true;
		f->epoch_ns = b->epoch_ns;
	}
	f->nmeta += b->nmeta;
	f->unknown_options += b->unknown_options;
	for (size_t i = 0; i < b->nproblems && f->nproblems < HEPHFILE_PROBLEMS;
	     i++)
		f->problems[f->nproblems++] = b->problems[i];
	f->problems_total += b->problems_total;
	f->skipped_bytes += b->skipped_bytes;
	f->truncated = b->truncated;
	return true;
}

/* Walk f's bytes, in two halves on two threads when the file is large:
 * the first half stops where the second begins; if it does not land
 * there exactly (the second began inside a packet) or stopped reading,
 * the second half's work is thrown away and the first goes on alone, so
 * the outcome is the single walk's. */
void heph_index_build(struct heph_file *f, bool mapped)
{
	struct walk w = {.f = f,
			 .map = f->map,
			 .size = f->size,
			 .budget = RESYNC_BUDGET,
			 .to = f->size,
			 .ra = mapped ? 1 : 0};
	struct half b = {0};
	struct heph_file fb;
	struct sigaction sa = {.sa_sigaction = split_sigbus,
			       .sa_flags = SA_SIGINFO | SA_NODEFER};
	bool two = false, guarded = false, faulted = false;
	size_t split = 0;

	if (f->size >= heph_file_split_min && sysconf(_SC_NPROCESSORS_ONLN) > 1)
		split = split_find(f, f->size / 2);
	if (split && heph_file_split_hook)
		heph_file_split_hook();
	if (split) {
		memset(&fb, 0, sizeof(fb));
		fb.map = f->map;
		fb.size = f->size;
		fb.in_order = true;
		b.w = (struct walk){.f = &fb,
				    .map = f->map,
				    .size = f->size,
				    .budget = RESYNC_BUDGET,
				    .from = split,
				    .to = f->size,
				    .ra = mapped ? split : 0};
		sigemptyset(&sa.sa_mask);
		guarded = mapped && !sigaction(SIGBUS, &sa, &split_old);
		two = (guarded || !mapped) &&
		      !pthread_create(&b.th, NULL, half_main, &b);
		if (guarded && !two)
			sigaction(SIGBUS, &split_old, NULL);
	}
	if (two) {
		w.to = split;
		faulted = first_half(&w);
		pthread_join(b.th, NULL);
		if (guarded)
			sigaction(SIGBUS, &split_old, NULL);
		if (!faulted && !b.faulted && w.end == split && !w.stop &&
		    half_merge(f, &fb))
			w.end = b.w.end;
		else /* alone from where the first half is */
			two = false;
		heph_file_close(&fb);
		if (faulted) { /* as one walk would: the caller's guard */
			raise(SIGBUS);
			w.stop = true;
		}
	} else {
		walk_packets(&w);
	}
	if (!two && w.end < f->size && !w.stop) {
		w.from = w.end;
		w.to = f->size;
		walk_packets(&w);
	}
}

/* ---- a compressed file ---- */

/*
 * Frame after frame (hephzst.c decompresses each into a bounded buffer),
 * each frame's Heph bytes walked as a window of their own: a packet never
 * spans two frames (recfile.c writes whole packets), so one cut by its
 * frame's end is a problem, not a truncation, and reading goes on with
 * the next frame.  Offsets in the index are offsets in the Heph bytes.
 * The options kept are copied into an arena that becomes f->map.
 */
/* The factor of HEPHFILE_ZST_RATIO in effect (COROTOP_ZST_RATIO). */
static uint64_t zst_ratio(void)
{
	const char *env = getenv("COROTOP_ZST_RATIO");
	char *end = NULL;
	unsigned long long r = env ? strtoull(env, &end, 10) : 0;

	return env && end != env && !*end && r > 0 && r <= 1000000
		       ? (uint64_t)r
		       : HEPHFILE_ZST_RATIO;
}

/* False, with why, when the file decompresses to more than its ratio
 * allows (refused: the walk would hold an index of all of it). */
bool heph_index_build_zst(struct heph_file *f, struct heph_zst *zs, char *err,
			  size_t errlen)
{
	struct walk w = {.f = f, .budget = RESYNC_BUDGET, .frame = true};
	const uint64_t ratio = zst_ratio();
	const uint64_t cap = ratio * (uint64_t)zs->zsize + HEPHFILE_ZST_FLOOR;
	const uint8_t *p;
	uint64_t uoff, at;
	char why[200];
	size_t n;

	while (!w.halt) {
		enum heph_zst_step st =
			heph_zst_next(zs, &p, &n, &uoff, &at, why, sizeof(why));

		if (st == HEPH_ZST_END)
			break;
		if (st == HEPH_ZST_FRAME && uoff + n > cap) {
			snprintf(
				err, errlen,
				"the compressed trace (%zu bytes) decompresses "
				"to more than %llu times its size plus %llu "
				"MiB: refused, as a decompression bomb would "
				"be "
				"(a recording compresses about 7 times).  To "
				"read it all the same, set COROTOP_ZST_RATIO "
				"to "
				"a larger factor",
				zs->zsize, (unsigned long long)ratio,
				(unsigned long long)(HEPHFILE_ZST_FLOOR >> 20));
			f->map = w.arena;
			return false;
		}
		if (st != HEPH_ZST_FRAME) {
			problem_add(f, uoff, "file byte %llu: %s",
				    (unsigned long long)at, why);
			if (st == HEPH_ZST_CUT) {
				f->truncated = zs->truncated;
				break;
			}
			continue;
		}
		w.map = p;
		w.size = n;
		w.base = uoff;
		w.from = 0;
		w.to = n;
		w.stop = false;
		walk_packets(&w);
		if (heph_file_frame_hook)
			heph_file_frame_hook();
	}
	if (!w.halt && !heph_zst_seek_check(zs, why, sizeof(why)))
		problem_add(f, zs->usize, "%s", why);
	f->map = w.arena;
	f->size = w.arena_len;
	return true;
}
