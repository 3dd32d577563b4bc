/*
 * framecheck: a frame is believed only if it is a return address into the
 * target's code -- the rule that keeps junk out of WHERE, NAME and addr.
 *
 * Why.  A walk of a stack that was freed and reused (a coroutine that
 * ended by a plain jump, its stack handed to the next one or to malloc)
 * reads whatever lies there now: the bytes of an HTTP request ("\n\r\n",
 * 0xa0d0a), of a DNS name ("test", 0x74736574), a length and a count
 * (0x3000000010).  The walks' own rules (records inside the declared
 * stack, going up, above 64 KiB) let such words through.
 *
 * The rule.  A frame is kept when
 *   1. the address lies in an executable mapping of the target (its
 *      /proc/PID/maps, "x" in the permissions; the call before a return
 *      address -- addr - 1 -- must lie in one);
 *   2. and, unless it is a leaf (an interrupted pc, the first frame of a
 *      sample), a call instruction ends exactly at it: a return address is
 *      where a call returns to.  x86-64: E8 rel32 five bytes before, or
 *      FF /2 (an indirect call) in any of its forms -- through a register
 *      (2 bytes, 3 with REX), through memory with or without a SIB byte
 *      and an 8- or 32-bit displacement, RIP-relative (6 bytes) -- behind
 *      any legacy prefixes (notrack 3E, addr32 67 of a relaxed call) and
 *      a REX: every start from 2 to 15 bytes back is decoded, and one whose
 *      length ends at the address is a call.  aarch64: the 4-byte word
 *      before is BL, BLR or BLRAA/BLRAB/BLRAAZ/BLRABZ.  Elsewhere only (1).
 * A walk stops at the first frame refused, and the frames after it are
 * dropped with it (framecheck_walk); the walk kept counts its stop, by why
 * (framecheck_count): JSON's `frames`, serve's corotop_frames_rejected.
 * A stack a program stored itself through corotop_calltrace_put (its
 * parked stacks, its sampler's frame-pointer walks, a user's own) holds
 * addresses "as the caller chooses": only (1) is asked of its frames
 * (FRAMECHECK_IN_CODE).
 *
 * What it also refuses.  The frame below a context's entry function that
 * a jump, not a call, set up: makecontext's __start_context, Boost's
 * make_fcontext trampoline.  They are the bottom of a complete walk, never
 * a WHERE or a NAME; a walk that reaches them counts as stopped.
 *
 * Cost.  Code does not change while it is mapped, so each verdict on a
 * return address is kept in a cache (open addressing on the address,
 * FRAMECHECK_SLOTS entries, emptied when 3/4 full): a walk's frames are
 * checked once each, then by a lookup.  A miss reads at most 15 bytes of
 * the target's code (one process_vm_readv).  The executable mappings are
 * a sorted array from /proc/PID/maps, read at the first check and again,
 * at most once a second, when an address lies in none (a library loaded
 * since); the cache is emptied when they changed.
 *
 * A core file (framecheck_create_core) is checked the same way: its maps
 * text and its memory (corefile.c, the code read from the mapped files).
 *
 * What it cannot check, it keeps: a process whose maps were never read
 * (gone before the first check), code that cannot be read (an
 * execute-only mapping) -- the mapping check alone there.  A recording or
 * a --shm observer has no process: no framecheck, every frame kept.
 *
 * Thread-safe: one mutex, held for a check (a read of the target's memory
 * at most), never while calling out.
 */
#define _GNU_SOURCE
#include "engine/target/framecheck.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/grow.h"
#include "engine/target/corefile.h"
#include "engine/target/procfs.h"
#include "engine/target/procmem.h"

#define FRAMECHECK_SLOTS 4096u /* cached verdicts (a power of two) */
#define FRAMECHECK_REFRESH_NS 1000000000ull /* maps read again at most */
#define FRAMECHECK_MAPS_MAX (64u << 20)	    /* bytes of /proc/PID/maps */

struct framecheck_range {
	uint64_t start, end;
};

struct framecheck_slot {
	uint64_t addr; /* 0: empty */
	uint8_t verdict;
};

struct framecheck {
	pthread_mutex_t lock;
	pid_t pid;
	struct procmem pm;
	bool pm_open;
	/* The executable mappings, sorted; valid once maps_ok. */
	struct framecheck_range *r;
	size_t nr, cap;
	uint64_t maps_sig;
	bool maps_ok;
	uint64_t maps_at; /* CLOCK_MONOTONIC of the last read; 0: never */
	struct framecheck_slot *slot;
	size_t used;
	struct framecheck_stats st;
};

/* ---- the call instruction before a return address ---------------------- */

static bool x86_legacy_prefix(unsigned char c)
{
	static const unsigned char prefix[] = {0x26, 0x2e, 0x36, 0x3e, 0x64,
					       0x65, 0x66, 0x67, 0xf2, 0xf3};

	return memchr(prefix, c, sizeof(prefix)) != NULL;
}

/* The length of FF /2's ModRM byte at p and what follows it (SIB,
 * displacement), avail bytes there at most; 0 when it is not /2. */
static size_t x86_call_modrm(const unsigned char *p, size_t avail)
{
	unsigned mod = p[0] >> 6, reg = (p[0] >> 3) & 7u, rm = p[0] & 7u;
	size_t len = 1;

	if (reg != 2)
		return 0;
	if (mod == 3)
		return len;
	if (rm == 4) { /* a SIB byte; base 5 with mod 0: disp32 */
		if (avail < 2)
			return 0;
		len++;
		if (mod == 0 && (p[1] & 7u) == 5)
			len += 4;
	} else if (mod == 0 && rm == 5) { /* RIP-relative */
		len += 4;
	}
	if (mod == 1)
		len += 1;
	else if (mod == 2)
		len += 4;
	return len;
}

bool framecheck_call_x86_64(const unsigned char *b, size_t n)
{
	if (n > FRAMECHECK_CODE_BYTES) {
		b += n - FRAMECHECK_CODE_BYTES;
		n = FRAMECHECK_CODE_BYTES;
	}
	/* Each start from the shortest call (FF D0: 2 bytes) back. */
	for (size_t back = 2; back <= n; back++) {
		size_t i = n - back;

		while (i < n && x86_legacy_prefix(b[i]))
			i++;
		if (i < n && (b[i] & 0xf0) == 0x40) /* REX */
			i++;
		if (i >= n)
			continue;
		if (b[i] == 0xe8 && n - i == 5)
			return true;
		if (b[i] == 0xff && n - i >= 2) {
			size_t len = x86_call_modrm(b + i + 1, n - i - 1);

			if (len && 1 + len == n - i)
				return true;
		}
	}
	return false;
}

bool framecheck_call_aarch64(const unsigned char *b, size_t n)
{
	uint32_t insn;

	if (n < 4)
		return false;
	b += n - 4;
	insn = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
	       (uint32_t)b[3] << 24;
	return (insn & 0xfc000000u) == 0x94000000u || /* BL */
	       (insn & 0xfffffc1fu) == 0xd63f0000u || /* BLR */
	       (insn & 0xfefff800u) == 0xd63f0800u;   /* BLRA[AB][Z] */
}

#if defined(__x86_64__)
bool (*const framecheck_call_before)(const unsigned char *,
				     size_t) = framecheck_call_x86_64;
#elif defined(__aarch64__)
bool (*const framecheck_call_before)(const unsigned char *,
				     size_t) = framecheck_call_aarch64;
#else
bool (*const framecheck_call_before)(const unsigned char *, size_t) = NULL;
#endif

/* ---- the executable mappings ------------------------------------------- */

/* Read /proc/PID/maps again (lock held); false when it cannot be read. */
static bool framecheck_read_maps(struct framecheck *fc, uint64_t now)
{
	char path[32];
	size_t len;
	char *maps;
	uint64_t sig = 0xcbf29ce484222325ull;
	const char *end, *line;

	fc->maps_at = now;
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)fc->pid);
	if (fc->pm.core) { /* a core's: its text, copied */
		const char *text = corefile_maps(fc->pm.core, &len);

		maps = len ? strndup(text, len) : NULL;
	} else {
		maps = procfs_slurp(AT_FDCWD, path, FRAMECHECK_MAPS_MAX, &len);
	}
	if (!maps || !len) {
		free(maps);
		return false;
	}
	fc->st.maps_reads++;
	fc->nr = 0;
	end = maps + len;
	for (line = maps; line < end;) {
		const char *nl = memchr(line, '\n', (size_t)(end - line));
		const char *eol = nl ? nl : end;
		struct procfs_maps_line m;

		if (procfs_maps_line(line, (size_t)(eol - line), &m) &&
		    m.exec &&
		    grow_array((void **)&fc->r, &fc->cap, fc->nr + 1,
			       sizeof(*fc->r))) {
			fc->r[fc->nr++] =
				(struct framecheck_range){m.start, m.end};
			sig = (sig ^ m.start ^ m.end << 7 ^ m.inode << 13 ^
			       m.offset) *
			      0x100000001b3ull;
		}
		line = nl ? nl + 1 : end;
	}
	free(maps);
	fc->maps_ok = true;
	if (sig != fc->maps_sig) {
		/* What an address means may have changed. */
		fc->maps_sig = sig;
		memset(fc->slot, 0, FRAMECHECK_SLOTS * sizeof(*fc->slot));
		fc->used = 0;
	}
	return true;
}

/* The mapping holding a, or NULL (lock held; maps are sorted). */
static const struct framecheck_range *framecheck_find(struct framecheck *fc,
						      uint64_t a)
{
	size_t lo = 0, hi = fc->nr;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (a < fc->r[mid].start)
			hi = mid;
		else if (a >= fc->r[mid].end)
			lo = mid + 1;
		else
			return &fc->r[mid];
	}
	return NULL;
}

/* The mapping holding a, the maps read again first when it is in none and
 * they were not read for a second (lock held). */
static const struct framecheck_range *framecheck_range(struct framecheck *fc,
						       uint64_t a)
{
	const struct framecheck_range *r = framecheck_find(fc, a);
	uint64_t now;

	if (r)
		return r;
	now = clock_now_ns(CLOCK_MONOTONIC);
	if (fc->maps_at && now - fc->maps_at < FRAMECHECK_REFRESH_NS)
		return NULL;
	return framecheck_read_maps(fc, now) ? framecheck_find(fc, a) : NULL;
}

/* ---- verdicts ------------------------------------------------------------ */

static size_t framecheck_hash(uint64_t a)
{
	return (size_t)((a * 0x9e3779b97f4a7c15ull) >> 52) &
	       (FRAMECHECK_SLOTS - 1);
}

/* The call check of return address ra in mapping r (lock held). */
static enum framecheck_verdict framecheck_code(struct framecheck *fc,
					       const struct framecheck_range *r,
					       uint64_t ra)
{
	unsigned char code[FRAMECHECK_CODE_BYTES];
	uint64_t from = ra - r->start < FRAMECHECK_CODE_BYTES
				? r->start
				: ra - FRAMECHECK_CODE_BYTES;
	size_t i = framecheck_hash(ra), n = (size_t)(ra - from);
	char err[160];
	enum framecheck_verdict v;

	for (; fc->slot[i].addr; i = (i + 1) & (FRAMECHECK_SLOTS - 1))
		if (fc->slot[i].addr == ra)
			return (enum framecheck_verdict)fc->slot[i].verdict;
	if (!framecheck_call_before || !fc->pm_open)
		return FRAMECHECK_OK;
	fc->st.code_reads++;
	if (!procmem_read(&fc->pm, from, code, n, err, sizeof(err)))
		return FRAMECHECK_OK; /* unreadable code: not cached */
	v = framecheck_call_before(code, n) ? FRAMECHECK_OK
					    : FRAMECHECK_NOT_AFTER_CALL;
	if (fc->used >= FRAMECHECK_SLOTS / 4 * 3) {
		memset(fc->slot, 0, FRAMECHECK_SLOTS * sizeof(*fc->slot));
		fc->used = 0;
		i = framecheck_hash(ra);
	}
	fc->slot[i] = (struct framecheck_slot){ra, (uint8_t)v};
	fc->used++;
	return v;
}

struct framecheck *framecheck_create(pid_t pid)
{
	struct framecheck *fc;
	char err[256];

	if (pid <= 0)
		return NULL;
	fc = calloc(1, sizeof(*fc));
	if (!fc)
		return NULL;
	fc->slot = calloc(FRAMECHECK_SLOTS, sizeof(*fc->slot));
	if (!fc->slot) {
		free(fc);
		return NULL;
	}
	fc->pid = pid;
	fc->pm_open = procmem_open(&fc->pm, pid, err, sizeof(err));
	pthread_mutex_init(&fc->lock, NULL);
	return fc;
}

struct framecheck *framecheck_create_core(const struct corefile *core)
{
	struct framecheck *fc = calloc(1, sizeof(*fc));

	if (!fc)
		return NULL;
	fc->slot = calloc(FRAMECHECK_SLOTS, sizeof(*fc->slot));
	if (!fc->slot) {
		free(fc);
		return NULL;
	}
	procmem_open_core(&fc->pm, core);
	fc->pid = fc->pm.pid;
	fc->pm_open = true;
	pthread_mutex_init(&fc->lock, NULL);
	return fc;
}

void framecheck_destroy(struct framecheck *fc)
{
	if (!fc)
		return;
	if (fc->pm_open)
		procmem_finish(&fc->pm);
	pthread_mutex_destroy(&fc->lock);
	free(fc->r);
	free(fc->slot);
	free(fc);
}

void framecheck_retarget(struct framecheck *fc, pid_t pid)
{
	char err[256];

	if (!fc)
		return;
	pthread_mutex_lock(&fc->lock);
	if (fc->pm_open)
		procmem_finish(&fc->pm);
	fc->pid = pid;
	fc->pm_open = procmem_open(&fc->pm, pid, err, sizeof(err));
	fc->nr = 0;
	fc->maps_ok = false;
	fc->maps_at = 0;
	fc->maps_sig = 0;
	memset(fc->slot, 0, FRAMECHECK_SLOTS * sizeof(*fc->slot));
	fc->used = 0;
	pthread_mutex_unlock(&fc->lock);
}

/* framecheck_frame with the lock held. */
static enum framecheck_verdict framecheck_locked(struct framecheck *fc,
						 uint64_t addr, bool leaf)
{
	const struct framecheck_range *r;
	uint64_t at = leaf ? addr : addr - 1; /* the call's last byte */

	if (!addr)
		return FRAMECHECK_NOT_CODE;
	r = framecheck_range(fc, at);
	if (!fc->maps_ok)
		return FRAMECHECK_OK; /* never read: nothing to check with */
	if (!r)
		return FRAMECHECK_NOT_CODE;
	return leaf ? FRAMECHECK_OK : framecheck_code(fc, r, addr);
}

enum framecheck_verdict framecheck_frame(struct framecheck *fc, uint64_t addr,
					 bool leaf)
{
	enum framecheck_verdict v;

	if (!fc)
		return FRAMECHECK_OK;
	pthread_mutex_lock(&fc->lock);
	v = framecheck_locked(fc, addr, leaf);
	pthread_mutex_unlock(&fc->lock);
	return v;
}

size_t framecheck_walk(struct framecheck *fc, const uint64_t *frames, size_t n,
		       enum framecheck_rule rule, enum framecheck_verdict *why)
{
	size_t k = 0;

	*why = FRAMECHECK_OK;
	if (!fc)
		return n;
	pthread_mutex_lock(&fc->lock);
	for (; k < n; k++) {
		*why = framecheck_locked(
			fc, frames[k],
			rule == FRAMECHECK_IN_CODE ||
				(rule == FRAMECHECK_FROM_PC && k == 0));
		if (*why != FRAMECHECK_OK)
			break;
	}
	pthread_mutex_unlock(&fc->lock);
	return k;
}

void framecheck_count(struct framecheck *fc, enum framecheck_verdict why)
{
	if (!fc || why == FRAMECHECK_OK)
		return;
	pthread_mutex_lock(&fc->lock);
	if (why == FRAMECHECK_NOT_CODE)
		fc->st.not_code++;
	else
		fc->st.not_after_call++;
	pthread_mutex_unlock(&fc->lock);
}

void framecheck_stats(struct framecheck *fc, struct framecheck_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (!fc)
		return;
	pthread_mutex_lock(&fc->lock);
	*out = fc->st;
	pthread_mutex_unlock(&fc->lock);
}
