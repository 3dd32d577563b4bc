/*
 * rendezvous: the probe's own ppt buffer, "corotop", and the rendezvous through
 * which a program started without corotop becomes traced.
 *
 * The buffer is an ordinary ppt client buffer (ppt.c) whose JSON carries
 * the tag corotop=rendezvous/1, so any ppt agent can attach it and read
 * its one frame type, "probe" {pid, stations, traced}, saved once per
 * attach.  corotop's agent (corotop -p PID) also puts a corotop_rendezvous
 * in the control segment: the paths of the cTP region it created, its
 * station count, and the stack captures asked for.  The probe then maps
 * that region exactly as it would have from the CTP_* environment
 * (probe_attach_region) and the table fills: every coroutine open at that
 * moment is published at once by the census (census.c, on a thread of its
 * own), before its next event; later ones as they transition.
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
 *
 * An agent that dies without detaching (corotop -p killed with SIGKILL)
 * writes nothing: _hmem keeps naming its segment and the program would
 * stay traced and sampled, 40 MB of its files mapped, for good.  So each
 * late attachment gets a watch: a thread of the probe's, all signals
 * blocked, asleep in poll() on a copy of the connection to the engine's
 * socket (which the kernel hangs up when the agent's process ends,
 * however it ends), or without one on a pidfd of the agent's pid.  It
 * costs the record path nothing, and no signal.  A hang-up from an agent
 * that still runs is a detach under way (corotop closes its connections
 * before it writes _hmem back): the watch then waits on the pidfd, looking
 * every second whether that detach went through.  When the agent is gone
 * and the attachment is still the current one (late_gen), it does what
 * the agent would have: _hmem and _stat back to 0, each only if it still holds
 * the dead agent's value (compare-and-swap: a newer agent's words stay), then
 * runs the client's check itself (probe_late_poll) until the detach went
 * through -- which retires the region as above, zero pages and all, safe
 * under writers and signal handlers still inside it.  A normal detach
 * ends the watch within a second: the generation moved.
 */
#define _GNU_SOURCE
#include "probe/census.h"
#include "probe/ppt_internal.h"
#include "probe/probe_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
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
/* Bumped (release) by every late attach and detach; a watch acts only
 * while it still holds the value its attachment got (acquire). */
static _Atomic uint32_t late_gen;

/* What a watch needs to end its attachment: its own copies. */
struct late_watch {
	int fd;	      /* the socket (or pidfd) it sleeps on; the watch's */
	short events; /* POLLRDHUP (socket) or POLLIN (pidfd) */
	int pidfd;    /* the agent's process, -1: none (or it is fd) */
	uint32_t gen;
	int hmem;      /* _hmem as the agent wrote it */
	int32_t agent; /* _stat as the agent wrote it */
};

/* The watch's tries at the detach: another thread may hold the try-lock
 * (it then sees _hmem at 0 itself), or the process may be forking. */
#define LATE_WATCH_TRIES 2000
#define LATE_WATCH_RETRY_NS 1000000L
/* A hung-up socket whose agent still runs (it is detaching: corotop closes
 * its connections first, or it dropped ours): how often the watch looks
 * whether the detach went through, until the agent exits. */
#define LATE_WATCH_RECHECK_MS 1000

/* The agent is gone: undo its words, then detach as it would have. */
static void late_watch_fire(const struct late_watch *w)
{
	struct timespec pause = {0, LATE_WATCH_RETRY_NS};
	int hmem = w->hmem;
	int32_t agent = w->agent;

	/* acquire: pairs with the release that bumped late_gen. */
	if (atomic_load_explicit(&late_gen, memory_order_acquire) != w->gen)
		return; /* detached already, or attached again */
	/* relaxed, as an agent's process_vm_writev: the client re-reads
	 * _hmem under its lock (B in corotop/ppt.h orders the rest). */
	__atomic_compare_exchange_n(&_ppt_hmem_corotop, &hmem, 0, false,
				    __ATOMIC_RELAXED, __ATOMIC_RELAXED);
	__atomic_compare_exchange_n(&_ppt_stat_corotop.ppt_agent_pid, &agent, 0,
				    false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
	for (int k = 0; k < LATE_WATCH_TRIES; k++) {
		/* A new agent wrote its segment: the record path attaches
		 * it (detaching ours first), not this thread. */
		if (__atomic_load_n(&_ppt_hmem_corotop, __ATOMIC_RELAXED))
			return;
		probe_late_poll(0);
		/* acquire: as above; late_detached bumped it. */
		if (atomic_load_explicit(&late_gen, memory_order_acquire) !=
		    w->gen)
			return;
		nanosleep(&pause, NULL);
	}
}

/* The watch's attachment is still the current one. */
static bool late_watch_current(const struct late_watch *w)
{
	/* acquire: pairs with the release that bumped late_gen. */
	return atomic_load_explicit(&late_gen, memory_order_acquire) == w->gen;
}

static void *late_watch_main(void *arg)
{
	struct late_watch w = *(struct late_watch *)arg;
	struct pollfd p = {.fd = w.fd, .events = w.events};

	free(arg);
	/* EINTR: no handler runs on this thread (all signals blocked), but
	 * a stop/continue can still interrupt the wait. */
	while (poll(&p, 1, -1) < 0 && (errno == EINTR || errno == EAGAIN))
		;
	/* The socket hung up.  An agent that still runs is detaching (or
	 * dropped us): its own detach is the right one, so wait for it, or
	 * for the agent's end. */
	while (w.pidfd >= 0 && late_watch_current(&w)) {
		struct pollfd q = {.fd = w.pidfd, .events = POLLIN};

		if (poll(&q, 1, LATE_WATCH_RECHECK_MS) > 0)
			break; /* the agent exited */
	}
	late_watch_fire(&w);
	if (w.pidfd >= 0)
		close(w.pidfd);
	close(w.fd);
	return NULL;
}

/* Watch the agent of the attachment just made (under late_busy). */
static void late_watch_start(const struct corotop_rendezvous *r)
{
	struct probe_region *reg = probe_region();
	struct late_watch *w = malloc(sizeof(*w));
	sigset_t all, old;
	pthread_attr_t attr;
	pthread_t th;
	int rc;

	if (!w)
		return;
	/* release: pairs with the watches' acquire loads. */
	w->gen = atomic_fetch_add_explicit(&late_gen, 1, memory_order_release) +
		 1;
	w->hmem = __atomic_load_n(&_ppt_hmem_corotop, __ATOMIC_RELAXED);
	w->agent = __atomic_load_n(&_ppt_stat_corotop.ppt_agent_pid,
				   __ATOMIC_RELAXED);
	/* Opened now, while the agent runs: a pidfd names that process,
	 * never one that reuses its pid. */
	w->pidfd =
		r->engine_pid > 0 && r->engine_pid <= INT32_MAX
			? (int)syscall(SYS_pidfd_open, (pid_t)r->engine_pid, 0)
			: -1;
	w->events = POLLRDHUP;
	w->fd = reg && reg->sock >= 0 ? fcntl(reg->sock, F_DUPFD_CLOEXEC, 3)
				      : -1;
	if (w->fd < 0) {
		w->events = POLLIN;
		w->fd = w->pidfd;
		w->pidfd = -1;
	}
	if (w->fd < 0) {
		free(w); /* nothing to watch with: as before watches */
		return;
	}
	if (pthread_attr_init(&attr)) {
		if (w->pidfd >= 0)
			close(w->pidfd);
		close(w->fd);
		free(w);
		return;
	}
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 64 * 1024);
	/* The watch never takes a signal of the program's (nor SIGPROF). */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&th, &attr, late_watch_main, w);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	if (rc) {
		if (w->pidfd >= 0)
			close(w->pidfd);
		close(w->fd);
		free(w);
	}
}

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
	late_watch_start(&r);
	/* Every coroutine open now, published before its next event. */
	census_start(probe_region());
}

static void late_detached(struct corotop_ppt_buffer *b, void *ctx)
{
	(void)b;
	(void)ctx;
	/* release: a watch of this attachment that wakes now does nothing. */
	atomic_fetch_add_explicit(&late_gen, 1, memory_order_release);
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
	const char *off = secure_getenv("COROTOP_LATE_ATTACH");

	/* Opted out: no description, so no agent attaches (it says the
	 * buffer is not initialized). */
	if (off && !strcmp(off, "0"))
		return;
	if (ppt_client_init(&corotop, late_types, 1, 0, COROTOP_RDV_TAG_VALUE,
			    &late_hooks) != 0)
		return;
	/* Traced from the environment already: corotop launched us and
	 * will not attach late.  Else a hung program must hear an agent. */
	/* acquire: pairs with the release that made the probe live.
	 * COROTOP_DOORBELL=0: attach at the next transition only. */
	off = secure_getenv("COROTOP_DOORBELL");
	if (!__atomic_load_n(&corotop_probe_live_, __ATOMIC_ACQUIRE) &&
	    !(off && !strcmp(off, "0")))
		probe_doorbell_start();
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
	/* relaxed: alone in the child; the parent's watch is not here. */
	atomic_fetch_add_explicit(&late_gen, 1, memory_order_relaxed);
	late_pending_hello = false;
	if (!late_owns || !r)
		return;
	/* The region is the parent's rendezvous, not ours: the child goes
	 * untraced (corotop -p can attach it on its own).  Alone in the
	 * child, so no sampler stop (its mutex may be held by a thread that
	 * does not exist here; sampler_atfork_child already has no timers). */
	late_owns = false;
	/* release: pairs with the acquire loads of live (probe.c's init and
	 * shutdown, sampler.c's start); alone in the child, it orders the
	 * retire before any later attach of this process. */
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
	/* release: pairs with the acquire loads of live (probe.c's init and
	 * shutdown, sampler.c's start): who sees 0 does not use the region
	 * retired below. */
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
