/*
 * probe_internal: state shared by the probe's translation units.  Never
 * installed; the public API is include/corotop/probe.h.
 */
#ifndef COROTOP_PROBE_INTERNAL_H
#define COROTOP_PROBE_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "corotop/ctp.h"
#include "corotop/probe.h"

struct probe {
	struct ctp_header *hdr;
	struct ctp_station *stations;
	uint32_t max;
	uint32_t hx_flags; /* copy of hdr->ext.flags, read once at attach */
	bool has_ext;	   /* the region carries corotop's header extension */
	/* The engine's membarrier orders our stores: no fence needed (M). */
	bool asym;
	/* Dirty hint words (CTP_HX_DIRTY), or NULL. */
	_Atomic uint64_t *dirty;
	uint32_t dirty_shift;
	uint32_t dirty_bits;
	size_t map_size;
	int sock;
	/* Process-wide statistics (relaxed; nobody orders against them). */
	_Atomic uint64_t untraced;
	_Atomic uint64_t opened;
	_Atomic uint64_t recycled;
	_Atomic uint64_t wakes;
};

extern struct probe probe_global;
/* Bumped by every attach: stations taken under an older attachment point
 * into a mapping that no longer exists and must never be written. */
extern uint32_t probe_attach;
extern __thread uint64_t probe_tid_cache
	__attribute__((tls_model("initial-exec")));

/* Our pid, cached at load and refreshed in a forked child. */
extern uint32_t probe_pid;

uint64_t probe_tid_slow(void);
void probe_wake(void);

/* calltrace.c: attach to the CallTrace region the cTP header announces
 * (nothing when it announces none), and detach from it. */
void probe_calltrace_attach(const char *shm_path, struct ctp_header *hdr);
void probe_calltrace_detach(void);

static inline uint64_t probe_tid(void)
{
	uint64_t t = probe_tid_cache;

	return COROTOP_LIKELY(t) ? t : probe_tid_slow();
}

/* Owner id of this thread in CallTrace protection slots: pid << 32 | tid. */
static inline uint64_t probe_owner(void)
{
	return ((uint64_t)probe_pid << 32) | (uint32_t)probe_tid();
}

#endif
