/*
 * calltrace: the probe's side of the CallTrace region -- attaching to it and
 * corotop_calltrace_put, the store of one stack with a weight.
 *
 * The engine announces the region in the cTP header it shares with us (the
 * ctp_calltrace_desc at CTP_CALLTRACE_DESC_OFFSET): a file name in the same
 * private directory as the cTP region.  probe_map() calls
 * probe_calltrace_attach() once the cTP region is validated; it opens the
 * file O_RDWR|O_NOFOLLOW, requires a regular file of exactly the announced
 * size, maps it and validates the geometry (ct_view_init) before trusting a
 * byte.  Any failure leaves calltrace detached and the cTP side untouched:
 * corotop_calltrace_put then returns 0.
 *
 * Only attach and detach run outside a put; a put itself is ctwriter.h's
 * ct_writer_put: async-signal-safe, no allocation, no lock, no syscall
 * after the first on a thread (gettid, cached).
 *
 * The snapshot ring.  When the CallTrace header announces one (a
 * ct_snap_desc, corotop/snapring.h: the engine asked for CPU samples), it
 * is attached with the region, the same way (same directory, exact size,
 * snap_view_init), and retired with it.  probe_snap_put is the sampler's
 * store of a sample's registers and stack copy; without a ring it says
 * false and the sampler stores its frame-pointer walk in CallTrace.
 */
#define _GNU_SOURCE
#include "wire/ctwriter.h"
#include "wire/snapwriter.h"
#include "probe/probe_internal.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* One attachment's view; retired ones stay allocated (a put in a signal
 * handler may still hold one) and their mapping becomes zero pages. */
struct probe_ct_attachment {
	struct ct_view view;
	void *base;
	size_t size;
	struct snap_view snap;
	void *snap_base; /* NULL: no snapshot ring */
	size_t snap_size;
	struct probe_ct_attachment *retired_next;
	uint64_t retired_ns;
	bool reused;
};

static struct probe_ct_attachment *probe_ct_cur;
static struct probe_ct_attachment *probe_ct_retired;
/* The view, once attached; NULL = detached. */
static struct ct_view *_Atomic probe_ct;
/* The snapshot ring's view, once attached; NULL = none. */
static struct snap_view *_Atomic probe_snap;

static bool probe_ct_name_ok(const char *name)
{
	size_t n = strnlen(name, CTP_CT_NAME_MAX);

	if (n == 0 || n == CTP_CT_NAME_MAX || name[0] == '.')
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '.' || c == '_' ||
		      c == '-'))
			return false;
	}
	return true;
}

/* A retired attachment whose CallTrace range is exactly `size` bytes,
 * retired long enough ago (as probe_reuse_range in probe.c), or NULL. */
static struct probe_ct_attachment *probe_ct_reuse(uint64_t size)
{
	uint64_t now = probe_now();

	for (struct probe_ct_attachment *o = probe_ct_retired; o;
	     o = o->retired_next)
		if (!o->reused && o->size == size &&
		    now - o->retired_ns >= PROBE_REUSE_GRACE_NS) {
			o->reused = true;
			return o;
		}
	return NULL;
}

/* Open `dir`/name (dir: the first dlen bytes of path) for a mapping of
 * exactly `size` bytes: a regular file of that size, not a symlink. */
static int probe_ct_open(const char *path, size_t dlen, const char *name,
			 uint64_t size)
{
	char p[4096];
	struct stat st;
	int fd;

	if (dlen)
		snprintf(p, sizeof(p), "%.*s/%s", (int)dlen, path, name);
	else
		snprintf(p, sizeof(p), "%s", name);
	fd = open(p, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -1;
	/* A short file would SIGBUS us on first touch: exact size only. */
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    (uint64_t)st.st_size != size) {
		close(fd);
		return -1;
	}
	return fd;
}

/* The snapshot ring the CallTrace header of a announces, if any (over
 * the range of `old`, a reused attachment, when it fits). */
static void probe_snap_attach(struct probe_ct_attachment *a, const char *path,
			      size_t dlen,
			      const struct probe_ct_attachment *old)
{
	struct ct_snap_desc d;
	void *base, *reuse;
	int fd;

	memcpy(&d, ct_snap_desc(a->view.hdr), sizeof(d));
	if (d.magic != CT_SNAP_MAGIC || d.version < CT_SNAP_VERSION ||
	    d.size < sizeof(d) || d.region_size < SNAP_HEADER_SIZE)
		return;
	d.name[CT_SNAP_NAME_MAX - 1] = '\0';
	if (!probe_ct_name_ok(d.name))
		return;
	fd = probe_ct_open(path, dlen, d.name, d.region_size);
	if (fd < 0)
		return;
	reuse = old && old->snap_size == d.region_size ? old->snap_base : NULL;
	base = mmap(reuse, d.region_size, PROT_READ | PROT_WRITE,
		    MAP_SHARED | (reuse ? MAP_FIXED : 0), fd, 0);
	close(fd);
	if (base == MAP_FAILED)
		return;
	if (!snap_view_init(&a->snap, base, d.region_size)) {
		munmap(base, d.region_size);
		return;
	}
	a->snap_base = base;
	a->snap_size = d.region_size;
}

void probe_calltrace_attach(const char *shm_path, struct ctp_header *hdr)
{
	struct ctp_calltrace_desc d;
	const char *slash = strrchr(shm_path, '/');
	size_t dlen = slash ? (size_t)(slash - shm_path) : 0;
	struct probe_ct_attachment *a, *old;
	void *base;
	int fd;

	/* Written before the target started; a copy so it can not change
	 * between the checks and the use. */
	memcpy(&d, ctp_calltrace_desc(hdr), sizeof(d));
	if (d.magic != CTP_CT_MAGIC || d.version < CTP_CT_VERSION ||
	    d.size < sizeof(d) || d.region_size < CT_HEADER_SIZE)
		return;
	d.name[CTP_CT_NAME_MAX - 1] = '\0';
	if (!probe_ct_name_ok(d.name))
		return;
	fd = probe_ct_open(shm_path, dlen, d.name, d.region_size);
	if (fd < 0)
		return;
	a = calloc(1, sizeof(*a));
	old = a ? probe_ct_reuse(d.region_size) : NULL;
	base = a ? mmap(old ? old->base : NULL, d.region_size,
			PROT_READ | PROT_WRITE,
			MAP_SHARED | (old ? MAP_FIXED : 0), fd, 0)
		 : MAP_FAILED;
	close(fd);
	if (base == MAP_FAILED) {
		free(a);
		return;
	}
	if (!ct_view_init(&a->view, base, d.region_size)) {
		munmap(base, d.region_size);
		free(a);
		return;
	}
	a->base = base;
	a->size = d.region_size;
	probe_snap_attach(a, shm_path, dlen, old);
	probe_ct_cur = a;
	/* release: a sampler that sees the pointer sees the view. */
	if (a->snap_base)
		atomic_store_explicit(&probe_snap, &a->snap,
				      memory_order_release);
	/* release: a put that sees the pointer sees the view. */
	atomic_store_explicit(&probe_ct, &a->view, memory_order_release);
}

void probe_calltrace_detach(void)
{
	struct probe_ct_attachment *a = probe_ct_cur;

	if (!a)
		return;
	/* release: later puts see NULL (not safe against concurrent puts,
	 * like corotop_probe_shutdown itself). */
	atomic_store_explicit(&probe_ct, NULL, memory_order_release);
	atomic_store_explicit(&probe_snap, NULL, memory_order_release);
	munmap(a->base, a->size);
	if (a->snap_base)
		munmap(a->snap_base, a->snap_size);
	free(a);
	probe_ct_cur = NULL;
}

void probe_calltrace_retire(void)
{
	struct probe_ct_attachment *a = probe_ct_cur;

	if (!a)
		return;
	/* release: pairs with the puts' acquire; a put that loaded the view
	 * before this keeps writing into what becomes zero pages. */
	atomic_store_explicit(&probe_ct, NULL, memory_order_release);
	atomic_store_explicit(&probe_snap, NULL, memory_order_release);
	probe_zero_pages(a->base, a->size);
	if (a->snap_base)
		probe_zero_pages(a->snap_base, a->snap_size);
	a->retired_ns = probe_now();
	a->retired_next = probe_ct_retired;
	probe_ct_retired = a;
	probe_ct_cur = NULL;
}

bool probe_calltrace_attached(void)
{
	/* acquire: pairs with the release in probe_calltrace_attach. */
	return atomic_load_explicit(&probe_ct, memory_order_acquire) != NULL;
}

uint64_t probe_calltrace_put(const uint64_t *frames, unsigned n,
			     uint64_t weight)
{
	/* acquire: pairs with the release in probe_calltrace_attach. */
	const struct ct_view *v =
		atomic_load_explicit(&probe_ct, memory_order_acquire);

	if (COROTOP_UNLIKELY(!v))
		return 0;
	return ct_writer_put(v, probe_owner(), frames, n, weight);
}

COROTOP_API uint64_t corotop_calltrace_put(const uint64_t *frames, unsigned n,
					   uint64_t weight)
{
	return probe_calltrace_put(frames, n, weight);
}

bool probe_snap_put(const struct snap_sample_in *in)
{
	/* acquire: pairs with the release in probe_calltrace_attach. */
	const struct snap_view *v =
		atomic_load_explicit(&probe_snap, memory_order_acquire);

	return v && snap_writer_put(v, in);
}
