/*
 * pptmap: where a ppt client maps the agent's SysV segments, and how it
 * lets go of them while other threads may still be writing frames there.
 *
 * Letting go.  shmdt would leave a hole that a writer still inside a save
 * (it loaded the block before the detach) faults on.  Instead the segment's
 * pages are replaced in place by private anonymous ones (mmap MAP_FIXED):
 * the shm attachment ends (the agent's segment can go away), and a late
 * writer scribbles on zero pages of its own.  The address range stays ours.
 *
 * Reuse.  Retired ranges are kept in a small table; a later attach maps its
 * segment over the smallest retired range it fits in (shmat SHM_REMAP), so
 * repeated attach/detach cycles of the same sizes reuse the same few
 * ranges instead of growing the address space.  The rest of a range a
 * smaller segment does not cover stays anonymous.  A range is never
 * unmapped while the client lives (ppt_map_finish does that), so any
 * (base, frame count) a writer ever loaded stays inside mapped memory.
 * When the table is full, the smallest retired range is forgotten: it stays
 * mapped, costing address space but no memory.
 *
 * All of this runs under the client's transition lock.
 */
#define _GNU_SOURCE
#include "probe/ppt_internal.h"

#include "wire/shmfresh.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <unistd.h>

static size_t page_round(size_t n)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);

	return (n + pg - 1) / pg * pg;
}

/* Replace [addr, addr+len) by private zero pages. */
static bool map_anon(void *addr, size_t len)
{
	return mmap(addr, len, PROT_READ | PROT_WRITE,
		    MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1,
		    0) != MAP_FAILED;
}

/* The smallest idle range of at least len bytes, or -1. */
static int map_best_fit(const struct ppt_maps *m, size_t len)
{
	int best = -1;

	for (unsigned i = 0; i < PPT_MAP_RANGES; i++) {
		const struct ppt_range *r = &m->r[i];

		if (r->addr && !r->busy && r->len >= len &&
		    (best < 0 || r->len < m->r[best].len))
			best = (int)i;
	}
	return best;
}

/* A table slot for a new range: an empty one, else the smallest idle
 * range is forgotten (left mapped); -1 when every slot is busy. */
static int map_slot(struct ppt_maps *m)
{
	int victim = -1;

	for (unsigned i = 0; i < PPT_MAP_RANGES; i++) {
		struct ppt_range *r = &m->r[i];

		if (!r->addr)
			return (int)i;
		if (!r->busy && (victim < 0 || r->len < m->r[victim].len))
			victim = (int)i;
	}
	return victim;
}

void *ppt_map_attach(struct ppt_maps *m, int id, size_t size)
{
	size_t len = page_round(size);
	int i = map_best_fit(m, len);
	void *p;

	if (i >= 0) {
		struct ppt_range *r = &m->r[i];

		p = shmat(id, r->addr, SHM_REMAP);
		if (p != (void *)-1) {
			r->busy = true;
			return p;
		}
		/* A failed remap may have left a hole: cover it again so a
		 * stale writer still finds the range mapped. */
		int err = errno;

		(void)map_anon(r->addr, r->len);
		errno = err;
		if (err != ENOMEM)
			return NULL;
	}
	p = shm_attach_fresh(id, len, 0);
	if (p == (void *)-1)
		return NULL;
	i = map_slot(m);
	if (i < 0) {
		/* Cannot happen (a client has at most three segments busy);
		 * untracked, it could not be retired safely later. */
		shmdt(p);
		errno = ENOSPC;
		return NULL;
	}
	m->r[i] = (struct ppt_range){.addr = p, .len = len, .busy = true};
	return p;
}

bool ppt_map_retire(struct ppt_maps *m, void *addr)
{
	for (unsigned i = 0; i < PPT_MAP_RANGES; i++) {
		struct ppt_range *r = &m->r[i];

		if (r->addr != addr || !r->busy)
			continue;
		if (map_anon(r->addr, r->len)) {
			r->busy = false;
			return true;
		}
		/* Still attached: forget the range rather than unmap it
		 * under a writer. */
		memset(r, 0, sizeof(*r));
		return false;
	}
	return false;
}

void ppt_map_finish(struct ppt_maps *m)
{
	for (unsigned i = 0; i < PPT_MAP_RANGES; i++)
		if (m->r[i].addr)
			munmap(m->r[i].addr, m->r[i].len);
	memset(m, 0, sizeof(*m));
}
