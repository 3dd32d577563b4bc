/*
 * late: the probe's own ppt buffer, "corotop", and the rendezvous through
 * which a program started without corotop becomes traced.
 *
 * The buffer is an ordinary ppt client buffer (ppt.c) whose JSON carries
 * the tag corotop=rendezvous/1, so any ppt agent can attach it and read
 * its one frame type, "probe" {pid, stations, traced}, saved once per
 * attach.  corotop's agent (corotop -p PID) also puts a corotop_rendezvous
 * in the control segment: the paths of the cTP region it created, its
 * station count, and the stack captures asked for.  The probe then maps
 * that region exactly as it would have from the CTP_* environment
 * (probe_attach_region) and the table fills: coroutines opened before get
 * a station at their next transition.
 *
 * Who runs this.  The record path reads _ppt_hmem_corotop (relaxed) and
 * compares it with probe_late_seen, the value last handled; on a change
 * it calls probe_late_poll, which lets one thread at a time (a try-lock:
 * the others go on untraced, they never wait) run the client's
 * attach/detach check.  Its hooks map the region (attached) or retire it
 * (detached: agent gone, _hmem back to 0).
 *
 * Retiring.  Other threads may be inside a record or a put while the
 * agent detaches, so nothing is unmapped: live goes to 0, the attachment
 * is unpublished, the sampler stops, the CallTrace and cTP mappings are
 * replaced in place by private zero pages (a late writer scribbles there,
 * never faults), and the socket is shut down but its descriptor kept (a
 * concurrent wake must not write to a descriptor number the program
 * reuses).  A region that came from the environment is never retired
 * here: the engine that launched the program owns it.
 */
#define _GNU_SOURCE
#include "ppt_internal.h"
#include "probe_internal.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "corotop/ppt.h"

COROTOP_PPT_BUFFER(corotop);

int probe_late_seen;

struct late_frame {
	int32_t pid;
	int32_t stations; /* stations of the region mapped, 0: none */
	int32_t traced;	  /* 1: through this rendezvous, 2: already by the
			     environment, 0: not traced (see error) */
	int32_t error;	  /* why not: an errno (ENOENT: the region's path
			     is not visible here, e.g. another mount
			     namespace), or 0: no rendezvous (another agent) */
};

static const struct corotop_ppt_member late_members[] = {
	{"pid", COROTOP_PPT_INT, offsetof(struct late_frame, pid)},
	{"stations", COROTOP_PPT_INT, offsetof(struct late_frame, stations)},
	{"traced", COROTOP_PPT_INT, offsetof(struct late_frame, traced)},
	{"error", COROTOP_PPT_INT, offsetof(struct late_frame, error)},
};

static const struct corotop_ppt_frame_type late_types[] = {
	{"probe", late_members, 4},
};

/* Serializes probe_late_poll; the hooks run under it. */
static _Atomic int late_busy;
/* The live attachment came from a rendezvous (ours to retire). */
static bool late_owns;
/* What the next saved frame says. */
static struct late_frame late_hello;
static bool late_pending_hello;

/* A rendezvous copied out of the segment and checked: the agent's memory
 * is not ours to trust, and it could change under us. */
static bool late_rendezvous(const void *seg, size_t size,
			    struct corotop_rendezvous *r)
{
	if (size < COROTOP_RDV_OFFSET + sizeof(*r))
		return false;
	memcpy(r, (const unsigned char *)seg + COROTOP_RDV_OFFSET, sizeof(*r));
	if (r->magic != COROTOP_RDV_MAGIC ||
	    r->version != COROTOP_RDV_VERSION || r->size < sizeof(*r) ||
	    r->max_stations == 0 || r->max_stations > CTP_MAX_STATIONS_LIMIT)
		return false;
	r->shm_path[sizeof(r->shm_path) - 1] = '\0';
	r->sock_path[sizeof(r->sock_path) - 1] = '\0';
	return r->shm_path[0] == '/';
}

static void late_attached(struct corotop_ppt_buffer *b, const void *seg,
			  size_t size, void *ctx)
{
	struct corotop_rendezvous r;

	(void)b;
	(void)ctx;
	late_hello = (struct late_frame){.pid = (int32_t)probe_pid};
	late_pending_hello = true;
	if (!late_rendezvous(seg, size, &r)) {
		/* A segment big enough for one but with a bad one: say so. */
		late_hello.error =
			size >= COROTOP_RDV_OFFSET + sizeof(r) ? EPROTO : 0;
		return;
	}
	if (probe_region()) {
		late_hello.traced = 2;
		return;
	}
	errno = 0;
	if (!probe_attach_region(r.shm_path,
				 r.sock_path[0] ? r.sock_path : NULL,
				 r.max_stations, true)) {
		late_hello.error = errno ? errno : EINVAL;
		return;
	}
	late_owns = true;
	late_hello.traced = 1;
	late_hello.stations = (int32_t)r.max_stations;
	probe_parked_set(r.flags & COROTOP_RDV_PARKED_STACKS);
	if (r.sample_hz)
		(void)corotop_sampler_start(r.sample_hz);
}

static void late_detached(struct corotop_ppt_buffer *b, void *ctx)
{
	(void)b;
	(void)ctx;
	if (late_owns)
		probe_retire();
	late_owns = false;
}

static const struct ppt_client_hooks late_hooks = {
	.attached = late_attached,
	.detached = late_detached,
};

void probe_late_init(void)
{
	const char *off = getenv("COROTOP_LATE_ATTACH");

	/* Opted out: no description, so no agent attaches (it says the
	 * buffer is not initialized). */
	if (off && !strcmp(off, "0"))
		return;
	(void)ppt_client_init(&corotop, late_types, 1, 0, COROTOP_RDV_TAG_VALUE,
			      &late_hooks);
}

void probe_late_poll(int hmem)
{
	int idle = 0;

	/* acquire: pairs with the release below; the winner sees what the
	 * previous poll did. */
	if (!atomic_compare_exchange_strong_explicit(&late_busy, &idle, 1,
						     memory_order_acquire,
						     memory_order_relaxed))
		return;
	(void)ppt_client_poll(&corotop);
	/* Saved outside the hooks: the client's own lock is free now. */
	if (late_pending_hello) {
		late_pending_hello = false;
		corotop_ppt_save_(&corotop, 0, &late_hello);
	}
	/* relaxed: a hint; every poll re-reads _hmem under the lock. */
	__atomic_store_n(&probe_late_seen, hmem, __ATOMIC_RELAXED);
	atomic_store_explicit(&late_busy, 0, memory_order_release);
}

/* ThreadSanitizer's dynamic annotations (its runtime defines them). */
#if defined(__SANITIZE_THREAD__)
#define LATE_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define LATE_TSAN 1
#endif
#endif
#ifdef LATE_TSAN
void AnnotateIgnoreWritesBegin(const char *file, int line);
void AnnotateIgnoreWritesEnd(const char *file, int line);
#endif

/*
 * Replace a retired mapping in place by private zero pages.  The kernel
 * swaps the pages under any thread still inside the mapping: its atomic
 * loads and stores land on the old pages or on the new ones, never on a
 * hole, and what it reads there only steers writes that stay inside the
 * mapping (indexes are bounded by counts kept outside it, in struct
 * probe_region and the CallTrace view).  So the mmap is no store of ours
 * to those bytes -- but TSan models it as one (a plain write of the whole
 * range by this thread) and reports it against every recorder and put
 * still inside.  With this thread's writes ignored for the one call, TSan's
 * mmap interceptor forgets the range's history instead, which is what the
 * kernel does too.  Nothing else is hidden: every later access to the zero
 * pages is checked as usual.
 */
void probe_zero_pages(void *addr, size_t len)
{
#ifdef LATE_TSAN
	AnnotateIgnoreWritesBegin(__FILE__, __LINE__);
#endif
	(void)mmap(addr, len, PROT_READ | PROT_WRITE,
		   MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
#ifdef LATE_TSAN
	AnnotateIgnoreWritesEnd(__FILE__, __LINE__);
#endif
}

void probe_late_atfork_child(void)
{
	struct probe_region *r = probe_region();

	/* The ppt client forgot the parent's attachment (ppt.c); start over
	 * with nothing seen and the lock free. */
	__atomic_store_n(&probe_late_seen, 0, __ATOMIC_RELAXED);
	atomic_store_explicit(&late_busy, 0, memory_order_relaxed);
	late_pending_hello = false;
	if (!late_owns || !r)
		return;
	/* The region is the parent's rendezvous, not ours: the child goes
	 * untraced (corotop -p can attach it on its own).  Alone in the
	 * child, so no sampler stop (its mutex may be held by a thread that
	 * does not exist here; sampler_atfork_child already has no timers). */
	late_owns = false;
	__atomic_store_n(&corotop_probe_live_, 0, __ATOMIC_RELEASE);
	atomic_store_explicit(&probe_cur, NULL, memory_order_release);
	probe_parked_set(false);
	probe_calltrace_retire();
	probe_zero_pages(r->hdr, r->map_size);
	if (r->sock >= 0)
		close(r->sock); /* the child's copy only */
	r->sock = -1;
	r->retired_ns = probe_now();
	r->retired_next = probe_retired;
	probe_retired = r;
}

void probe_retire(void)
{
	struct probe_region *r = probe_region();

	if (!r)
		return;
	corotop_sampler_stop();
	probe_parked_configure(false);
	__atomic_store_n(&corotop_probe_live_, 0, __ATOMIC_RELEASE);
	/* release: pairs with probe_region's acquire. */
	atomic_store_explicit(&probe_cur, NULL, memory_order_release);
	probe_calltrace_retire();
	probe_zero_pages(r->hdr, r->map_size);
	if (r->sock >= 0)
		shutdown(r->sock, SHUT_RDWR);
	/* r stays allocated: a recorder may still hold it. */
	r->retired_ns = probe_now();
	r->retired_next = probe_retired;
	probe_retired = r;
}
