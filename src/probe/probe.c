/*
 * probe: the process-wide attachment of a traced program to its cTP region.
 *
 * At load time (or on the first corotop_probe_init call) the probe reads the
 * three CTP_* environment variables the upstream SDKs read, maps the region
 * read-write and validates magic, version and size before it trusts a byte
 * of it.  It also connects to the engine's Unix socket, non-blocking.  When
 * anything is missing or wrong it stays untraced and remembers why, so that
 * corotop_probe_status() can tell a person.
 *
 * This file also owns the wake side of the sleep contract (probe_wake), the
 * process-wide counters and the cached thread id and pid (both refreshed in
 * a forked child).  When the cTP header announces a CallTrace region, the
 * probe attaches to it too (calltrace.c), and then switches on what the
 * environment asks for: parked stacks (COROTOP_PARKED_STACKS, perthread.c) and
 * the sampler (COROTOP_SAMPLE_HZ, sampler.c).
 */
#define _GNU_SOURCE
#include "probe/census.h"
#include "probe/probe_internal.h"
#include "probe/registry.h"
#include "probe/station.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <linux/futex.h>
#include <linux/membarrier.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/auxv.h>
#include <unistd.h>

COROTOP_API int corotop_probe_live_;
struct probe probe_global;
struct probe_region *_Atomic probe_cur;
struct probe_region probe_env_region;
struct probe_region *probe_retired;
uint32_t probe_attach;
__thread uint64_t probe_tid_cache __attribute__((tls_model("initial-exec")));
uint32_t probe_pid;
uint64_t probe_image;

static char probe_why[160] = "not initialized";

static void probe_fail(const char *fmt, const char *arg)
{
	snprintf(probe_why, sizeof(probe_why), fmt, arg);
}

uint64_t probe_tid_slow(void)
{
	probe_tid_cache = (uint64_t)syscall(SYS_gettid);
	return probe_tid_cache;
}

static bool probe_parse_max(const char *s, uint32_t *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || v == 0 || v > CTP_MAX_STATIONS_LIMIT)
		return false;
	*out = (uint32_t)v;
	return true;
}

static int probe_connect(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -1;
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 &&
	    errno != EINPROGRESS) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Map and validate the region; fills r (not yet published). */
/* A retired region's range of exactly `size` bytes, retired long enough
 * ago (PROBE_REUSE_GRACE_NS), or NULL. */
static void *probe_reuse_range(uint64_t size)
{
	uint64_t now = probe_now();

	for (struct probe_region *o = probe_retired; o; o = o->retired_next)
		if (!o->reused && o->map_size == size &&
		    now - o->retired_ns >= PROBE_REUSE_GRACE_NS) {
			o->reused = true;
			return o->hdr;
		}
	return NULL;
}

/*
 * The size to map: the spec's, plus the deep area when the engine announced
 * one (ctp.h) that the file really holds.  Read with pread before mapping,
 * so nothing is mapped that could fault.  Sets *depth (0: no deep area).
 */
static uint64_t probe_map_size(int fd, uint32_t max, uint64_t file_size,
			       uint32_t *depth, uint32_t *stride)
{
	uint64_t size = ctp_region_size(max), off;
	struct ctp_header hx;
	struct ctp_deep d;

	*depth = *stride = 0;
	if (pread(fd, &hx, sizeof(hx), 0) != (ssize_t)sizeof(hx) ||
	    hx.ext.magic != CTP_HX_MAGIC || !(hx.ext.flags & CTP_HX_DEEP) ||
	    hx.max_stations != max)
		return size;
	off = ctp_deep_offset(max);
	if (pread(fd, &d, sizeof(d), (off_t)off) != (ssize_t)sizeof(d) ||
	    !(*stride = ctp_deep_stride(&d)) || d.stations != max ||
	    off + ctp_deep_size(max, *stride) > file_size) {
		*stride = 0;
		return size;
	}
	*depth = d.depth;
	return off + ctp_deep_size(max, *stride);
}

static bool probe_map(struct probe_region *r, const char *path, uint32_t max)
{
	uint64_t size = ctp_region_size(max);
	struct ctp_header *hdr;
	uint32_t depth, stride;
	void *reuse;
	struct stat st;
	int fd;

	fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) {
		probe_fail("cannot open %s", path);
		return false;
	}
	/* A short file would SIGBUS the target on first touch: refuse it. */
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    (uint64_t)st.st_size < size) {
		close(fd);
		probe_fail("%s is not a regular file of the size "
			   "CTP_MAX_STATIONS implies",
			   path);
		return false;
	}
	size = probe_map_size(fd, max, (uint64_t)st.st_size, &depth, &stride);
	/* Over a range an earlier late attach left (P2 in rendezvous.c). */
	reuse = probe_reuse_range(size);
	hdr = mmap(reuse, size, PROT_READ | PROT_WRITE,
		   MAP_SHARED | (reuse ? MAP_FIXED : 0), fd, 0);
	close(fd);
	if (hdr == MAP_FAILED) {
		probe_fail("cannot map %s", path);
		return false;
	}
	if (hdr->magic != CTP_MAGIC || hdr->version != CTP_VERSION ||
	    hdr->max_stations < max) {
		munmap(hdr, size);
		probe_fail("%s is not a cTP v1 region of that size", path);
		return false;
	}
	r->hdr = hdr;
	r->stations = (struct ctp_station *)((char *)hdr + CTP_HEADER_SIZE);
	r->max = max;
	r->map_size = size;
	if (hdr->ext.magic == CTP_HX_MAGIC && hdr->ext.version >= 1) {
		r->has_ext = true;
		r->hx_flags = hdr->ext.flags;
	}
	if (depth) {
		r->deep = (struct ctp_deep *)(void *)((char *)hdr +
						      ctp_deep_offset(max));
		r->deep_rings = (struct ctp_epoch *)(void *)((char *)r->deep +
							     CTP_DEEP_HEADER);
		r->depth = depth;
		r->stride = stride;
		r->hub_depth = stride > depth ? stride : 0;
	}
	if ((r->hx_flags & CTP_HX_DIRTY) && hdr->ext.dirty_shift < 32) {
		r->dirty = hdr->ext.dirty;
		r->dirty_shift = hdr->ext.dirty_shift;
		r->dirty_bits = CTP_HX_DIRTY_WORDS * 64;
	}
	/* The asymmetric fence only covers processes that registered. */
	r->asym_fence =
		(r->hx_flags & CTP_HX_ASYM_FENCE) &&
		syscall(SYS_membarrier,
			MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED, 0, 0) == 0;
	if (r->has_ext)
		probe_calltrace_attach(path, hdr);
	return true;
}

bool probe_attach_region(const char *shm, const char *sock, uint32_t max,
			 bool late)
{
	/* Late attachments are never freed (a recorder may hold one): one
	 * each.  The environment's is the static one. */
	struct probe_region *r =
		late ? calloc(1, sizeof(*r))
		     : memset(&probe_env_region, 0, sizeof(probe_env_region));

	if (!r) {
		probe_fail("%s", "out of memory");
		return false;
	}
	if (!probe_map(r, shm, max)) {
		if (late)
			free(r);
		return false;
	}
	r->sock = sock ? probe_connect(sock) : -1;
	probe_why[0] = '\0';
	/* Before the region is published: a context counted untracked
	 * meanwhile is in the count it copies. */
	probe_process_station(r);
	/* Never 0, so a zeroed corotop_coro never matches. */
	if (++probe_attach == 0)
		probe_attach = 1;
	r->attach = probe_attach;
	/* release: a recorder that loads r sees it complete. */
	atomic_store_explicit(&probe_cur, r, memory_order_release);
	/* release: a thread that sees live also sees the mapping.  Pairs
	 * with the acquire loads in corotop_probe_init/_shutdown (below) and
	 * corotop_sampler_start (sampler.c); probe.h's relaxed hint load is
	 * only a filter, corotop_coro_record_ re-reads probe_cur with
	 * acquire. */
	__atomic_store_n(&corotop_probe_live_, 1, __ATOMIC_RELEASE);
	/* Stack captures (perthread.c, sampler.c), from the environment. */
	probe_parked_configure(probe_calltrace_attached());
	return true;
}

COROTOP_API bool corotop_probe_init(void)
{
	const char *shm, *sock, *maxs;
	uint32_t max;

	/* acquire: pairs with probe_attach_region's release store; live
	 * means the region is mapped and probe_cur set. */
	if (__atomic_load_n(&corotop_probe_live_, __ATOMIC_ACQUIRE))
		return true;
	/* secure_getenv: a set-user-ID or set-group-ID program must not
	 * open, map or connect to what whoever runs it names. */
	if (getauxval(AT_SECURE)) {
		probe_fail("%s", "a set-user-ID or set-group-ID program: "
				 "CTP_* settings are ignored");
		return false;
	}
	shm = secure_getenv(CTP_ENV_SHM);
	sock = secure_getenv(CTP_ENV_SOCK);
	maxs = secure_getenv(CTP_ENV_MAX);
	if (!shm || !sock || !maxs) {
		probe_fail("%s", "CTP_SHM_PATH, CTP_SOCK_PATH or "
				 "CTP_MAX_STATIONS not set");
		return false;
	}
	if (!probe_parse_max(maxs, &max)) {
		probe_fail("CTP_MAX_STATIONS=%s is not a station count", maxs);
		return false;
	}
	if (!probe_attach_region(shm, sock, max, false))
		return false;
	probe_maps_copy(shm);
	sampler_autostart();
	return true;
}

COROTOP_API void corotop_probe_shutdown(void)
{
	struct probe_region *r = probe_region();

	/* acquire: pairs with probe_attach_region's release store. */
	if (!__atomic_load_n(&corotop_probe_live_, __ATOMIC_ACQUIRE) || !r)
		return;
	/* No handler may put into the region once it is unmapped. */
	corotop_sampler_stop();
	probe_parked_configure(false);
	/* release: pairs with the acquire loads of live (init, sampler
	 * start); a thread that sees 0 goes no further than probe_cur,
	 * cleared next with its own release. */
	__atomic_store_n(&corotop_probe_live_, 0, __ATOMIC_RELEASE);
	/* release: pairs with probe_region's acquire. */
	atomic_store_explicit(&probe_cur, NULL, memory_order_release);
	probe_calltrace_detach();
	if (r->sock >= 0)
		close(r->sock);
	munmap(r->hdr, r->map_size);
	if (r != &probe_env_region)
		free(r);
	else
		memset(r, 0, sizeof(*r));
	/* Counters run from 0 again for the next attachment. */
	memset(&probe_global, 0, sizeof(probe_global));
	probe_fail("%s", "shut down");
}

COROTOP_API const char *corotop_probe_status(void)
{
	return probe_why;
}

COROTOP_API void corotop_probe_stats(struct corotop_probe_stats *out)
{
	out->untraced = atomic_load_explicit(&probe_global.untraced,
					     memory_order_relaxed);
	out->opened = atomic_load_explicit(&probe_global.opened,
					   memory_order_relaxed);
	out->recycled = atomic_load_explicit(&probe_global.recycled,
					     memory_order_relaxed);
	out->wakes =
		atomic_load_explicit(&probe_global.wakes, memory_order_relaxed);
}

void probe_wake(struct probe_region *r)
{
	struct ctp_header *hdr = r->hdr;
	uint32_t one = 1;

	/* acq_rel (O): only one writer wins the right to wake. */
	if (!atomic_compare_exchange_strong_explicit(
		    &hdr->tracer_sleeping, &one, 0, memory_order_acq_rel,
		    memory_order_relaxed))
		return;
	atomic_fetch_add_explicit(&probe_global.wakes, 1, memory_order_relaxed);
	/* Shared (not private) futex: the waiter is another process. */
	if (r->hx_flags & CTP_HX_FUTEX)
		syscall(SYS_futex, &hdr->tracer_sleeping, FUTEX_WAKE, 1, NULL,
			NULL, 0);
	/* Engines without the extension (the upstream Go engine) block on
	 * the socket.  MSG_NOSIGNAL: a dead engine must not SIGPIPE us. */
	else if (r->sock >= 0)
		(void)send(r->sock, "1", 1, MSG_DONTWAIT | MSG_NOSIGNAL);
}

/* A process-wide count into its field of the station (a CAS maximum: the
 * count only grows, so whichever store is last, the largest stays). */
static void probe_raise(_Atomic uint64_t *f, _Atomic uint64_t *count)
{
	uint64_t have, want;

	/* relaxed: statistics. */
	want = atomic_load_explicit(count, memory_order_relaxed);
	have = atomic_load_explicit(f, memory_order_relaxed);
	while (have < want && !atomic_compare_exchange_weak_explicit(
				      f, &have, want, memory_order_relaxed,
				      memory_order_relaxed))
		;
}

/* The process's interposer counts (untracked contexts, unseen switches)
 * into its station. */
static void probe_untracked_to(struct probe_region *r)
{
	struct ctp_station_ext *x;

	if (!r || !r->proc_station)
		return;
	x = &r->stations[r->proc_station - 1].ext;
	probe_raise(&x->contexts_untracked, &probe_global.contexts_untracked);
	probe_raise(&x->switches_unseen, &probe_global.switches_unseen);
}

void probe_process_station(struct probe_region *r)
{
	struct station_who who = {0};
	bool recycled;
	uint32_t idx;

	r->proc_station = 0;
	if (!r->has_ext)
		return; /* a foreign engine's region: no such stations */
	idx = station_take(r, &recycled);
	if (idx == FREELIST_EMPTY)
		return;
	snprintf(who.name, sizeof(who.name), "%s",
		 program_invocation_short_name);
	station_header(r, idx, 0, probe_image, station_next_n(r, idx),
		       CTP_STX_PROCESS, NULL, &who);
	r->proc_station = idx + 1;
	probe_untracked_to(r);
	station_publish(r, idx);
}

COROTOP_API void corotop_probe_context_untracked_(void)
{
	/* relaxed: a statistic. */
	atomic_fetch_add_explicit(&probe_global.contexts_untracked, 1,
				  memory_order_relaxed);
	probe_untracked_to(probe_region());
}

COROTOP_API void corotop_probe_switch_unseen_(void)
{
	/* relaxed: a statistic. */
	atomic_fetch_add_explicit(&probe_global.switches_unseen, 1,
				  memory_order_relaxed);
	probe_untracked_to(probe_region());
}

/* A forked child is a new process with one thread: new pid, new tid. */
static void probe_atfork_child(void)
{
	probe_tid_cache = 0;
	probe_pid = (uint32_t)getpid();
	tscclock_atfork_child();
	sampler_atfork_child();
	registry_atfork_child();
	census_atfork_child();
	probe_late_atfork_child();
	probe_doorbell_atfork_child();
	/* A process of its own (docs/WIRE.md, "Processes"): a new image, and
	 * in the region from the environment, which the child shares with
	 * its parent, a new attachment -- each coroutine takes a station of
	 * its own at its next record instead of writing its parent's (whose
	 * stations the child never closes either), and the child publishes
	 * its own process station. */
	probe_image = probe_now();
	if (probe_region() == &probe_env_region) {
		if (++probe_attach == 0)
			probe_attach = 1;
		probe_env_region.attach = probe_attach;
		probe_process_station(&probe_env_region);
	}
}

__attribute__((constructor)) static void probe_autoinit(void)
{
	probe_pid = (uint32_t)getpid();
	tscclock_init();
	probe_image = probe_now();
	pthread_atfork(NULL, NULL, probe_atfork_child);
	/* Before any coroutine opens: the census's list of them. */
	(void)registry_init();
	corotop_probe_init();
	/* The probe's own ppt buffer: corotop -p finds us through it. */
	probe_late_init();
}
