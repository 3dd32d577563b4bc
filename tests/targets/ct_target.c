/*
 * ct-target: a traced program that stores known call stacks through the
 * real probe (corotop_calltrace_put), for the hot-stacks integration and
 * e2e tests.  No sampler needed: the stacks and their tag frames are made
 * by hand, exactly as the sampler and the parked-stack capture would store
 * them (corotop/calltrace.h, "Tag frames"; ctp.h, CTP_EPOCH_TRACE_OFFSET).
 *
 *   ct-target hot PHASES GAP_MS
 *       Coroutines 0 and 1 (IT_PROBE_ID) open; each phase puts
 *         A = {ct_a1, ct_a2, ct_a3} tagged coroutine 0     weight 5
 *         A tagged coroutine 1                              weight 7
 *         A tagged coroutine 0 with the wrong generation    weight 11
 *         B = {ct_b1, ct_b2} untagged                       weight 3
 *       and switches both coroutines (which wakes the engine), then waits
 *       GAP_MS; after the last phase it waits GAP_MS more, closes both and
 *       exits 0.  Expected: A 23 and B 3 per phase in all; coroutine 0
 *       A 5, coroutine 1 A 7 per phase.
 *   ct-target park OUTFD CTLFD
 *       Coroutine 0 opens, puts its parked stack P = {ct_c1, ct_c2, ct_c3}
 *       (weight 0), writes a suspend event carrying P's trace id by hand
 *       (the probe's seqlock, plus the trace word), prints "parked ID" on
 *       OUTFD, and stays parked until the test writes a byte to CTLFD (or
 *       closes it): no clock decides how long the test may look.  Then it
 *       puts P again and prints "again ID" (the same id if the engine
 *       preserved it), resumes, closes and exits.
 *   ct-target park-late OUTFD CTLFD
 *       The same, but after putting P it prints "put ID" and waits for a
 *       byte (or EOF) on CTLFD before the suspend event: the test lets a
 *       rotation collect P first, the one race between a put and its park
 *       that the engine's cadence must survive.
 *   ct-target truncate OUTFD CTLFD
 *       Puts A, waits 500 ms, truncates the CallTrace file to 0 bytes
 *       (prints "truncated"), then switches coroutine 0 every 10 ms (never
 *       putting again: its own mapping would fault) until a byte or EOF on
 *       CTLFD, and exits.
 *
 *   ct-target truncate-snap OUTFD CTLFD
 *       With the sampler on (the engine's --sample): coroutine 0 burns
 *       300 ms of CPU (samples go to the snapshot ring), the sampler is
 *       stopped, the snapshot ring's file truncated to 0 bytes (prints
 *       "truncated"), then coroutine 0 switches every 10 ms until a byte or
 *       EOF on CTLFD.
 *
 *   ct-target real GAP_MS
 *       Puts its own stack, target_real -> real_mid -> real_leaf (the
 *       leaf's entry as the exact pc, then two return addresses), weight
 *       4, waits GAP_MS so the engine names the frames while it lives, and
 *       exits 0.
 *
 *   ct-target junk OUTFD CTLFD
 *       Puts {ct_a1, ct_a2, 0xa0d0a, ct_a3} tagged coroutine 0, weight
 *       5, and parks coroutine 0 at {ct_c1, 0x74736574, ct_c2} (the
 *       bytes of an HTTP request and of a DNS name, what a frame-pointer
 *       walk through code without frame pointers finds), prints "parked
 *       ID" on OUTFD and stays parked until a byte or EOF on CTLFD: the
 *       engine keeps {ct_a1, ct_a2} and {ct_c1}, and counts two stops.
 * The frames ct_X are addresses inside this program's functions of those
 * names (their entry + 1): the engine keeps only frames in the target's
 * code, and names these.
 * Exit 77: the probe or the CallTrace region did not attach.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "corotop/calltrace.h"
#include "corotop/ctp.h"
#include "corotop/probe.h"
#include "../common/itest.h"

#define TAG(c, gen_off)                                                        \
	(CT_TAG_CORO | ((uint64_t)(uint16_t)(coro_gen(c) + (gen_off)) << 32) | \
	 (uint64_t)(c)->index)

static uint64_t coro_gen(const struct corotop_coro *c)
{
	/* relaxed: this thread's own probe bumped it (open); nothing else
	 * is read through it. */
	return atomic_load_explicit(&c->station->ext.gen, memory_order_relaxed);
}

static int need(bool ok, const char *what)
{
	if (ok)
		return 0;
	fprintf(stderr, "ct-target: %s\n", what);
	return 77;
}

/* Frames for the stored stacks: functions of their own, never called. */
#define CT_FN(name)                                                            \
	__attribute__((noinline, used)) void name(void);                       \
	__attribute__((noinline, used)) void name(void)                        \
	{                                                                      \
		__asm__ volatile("nop; nop; nop; nop");                        \
	}
CT_FN(ct_a1)
CT_FN(ct_a2)
CT_FN(ct_a3)
CT_FN(ct_b1)
CT_FN(ct_b2)
CT_FN(ct_c1)
CT_FN(ct_c2)
CT_FN(ct_c3)
#define AT(fn) ((uint64_t)(uintptr_t)(fn) + 1)

static uint64_t put(const uint64_t *f, unsigned n, uint64_t w)
{
	uint64_t id = corotop_calltrace_put(f, n, w);

	if (id == 0 || id == COROTOP_CALLTRACE_DROPPED) {
		fprintf(stderr, "ct-target: put returned %" PRIu64 "\n", id);
		exit(id ? 1 : 77);
	}
	return id;
}

static void switch_both(struct corotop_coro *c, unsigned n, uint64_t addr)
{
	for (unsigned i = 0; i < n; i++) {
		corotop_coro_resume(&c[i], addr);
		corotop_coro_suspend(&c[i], addr + 1);
	}
}

static int target_hot(unsigned phases, unsigned gap_ms)
{
	struct corotop_coro c[2];
	uint64_t a[4] = {AT(ct_a1), AT(ct_a2), AT(ct_a3), 0},
		 b[2] = {AT(ct_b1), AT(ct_b2)};

	for (unsigned i = 0; i < 2; i++) {
		corotop_coro_open(&c[i], IT_PROBE_ID(i));
		if (!c[i].station)
			return need(false, "no station");
	}
	for (unsigned p = 0; p < phases; p++) {
		a[3] = TAG(&c[0], 0);
		put(a, 4, 5);
		a[3] = TAG(&c[1], 0);
		put(a, 4, 7);
		a[3] = TAG(&c[0], 1); /* an earlier or later occupant */
		put(a, 4, 11);
		put(b, 2, 3);
		switch_both(c, 2, 0x1000 + p * 16);
		it_sleep_ms(gap_ms);
	}
	it_sleep_ms(gap_ms);
	for (unsigned i = 0; i < 2; i++)
		corotop_coro_close(&c[i]);
	return 0;
}

/* A suspend event carrying trace id `trace`, written like the probe's
 * record (ctp.h A/B/C) with the trace word in the reserved bytes. */
/* Where event n of c goes: its deep ring when the station says so (the
 * engine announced one, ctp.h), else the spec's slots. */
static struct ctp_epoch *park_slot(struct corotop_coro *c, uint64_t n)
{
	const struct ctp_header *hdr;
	const struct ctp_deep *d;
	struct ctp_epoch *ring;

	if (!(c->station->ext.flags & CTP_STX_DEEP))
		return &c->station->slots[n % CTP_SLOTS];
	hdr = (const struct ctp_header
		       *)(const void *)((const char *)c->station -
					CTP_HEADER_SIZE -
					(size_t)c->index * CTP_STATION_SIZE);
	d = (const struct ctp_deep *)(const void *)((const char *)hdr +
						    ctp_deep_offset(
							    hdr->max_stations));
	ring = (struct ctp_epoch *)(void *)((char *)d + CTP_DEEP_HEADER);
	/* Rings lie ctp_deep_stride apart (hub_depth in a DEP2 region); this
	 * coroutine is no hub: it writes the first depth epochs of its own. */
	return &ring[(size_t)c->index * ctp_deep_stride(d) +
		     (n & (d->depth - 1))];
}

static void park_event(struct corotop_coro *c, uint64_t addr, uint64_t trace)
{
	uint64_t n = c->n++;
	struct ctp_epoch *e = park_slot(c, n);

	/* (A) odd seq, then the payload after a release fence. */
	atomic_store_explicit(&e->seq, 2 * n + 1, memory_order_release);
	atomic_thread_fence(memory_order_release);
	__atomic_store_n(&e->timestamp, it_now(), __ATOMIC_RELAXED);
	__atomic_store_n(&e->tid, (uint64_t)syscall(SYS_gettid),
			 __ATOMIC_RELAXED);
	__atomic_store_n(&e->addr, addr, __ATOMIC_RELAXED);
	memcpy(&e->reserved[CTP_EPOCH_TRACE_OFFSET], &trace, sizeof(trace));
	__atomic_store_n(&e->is_active, 0, __ATOMIC_RELAXED);
	/* (C) even seq: the event is complete. */
	atomic_store_explicit(&e->seq, ctp_event_seq(n), memory_order_release);
}

/* True once the test wrote a byte to ctl or closed it (or ctl is broken:
 * waiting on would never end); false after timeout_ms (-1: no bound). */
static bool told(int ctl, int timeout_ms)
{
	struct pollfd p = {.fd = ctl, .events = POLLIN};
	ssize_t n;
	char c;
	int r;

	do
		r = poll(&p, 1, timeout_ms);
	while (r < 0 && errno == EINTR);
	if (r == 0)
		return false;
	if (r < 0)
		perror("ct-target: poll CTLFD");
	else
		do
			n = read(ctl, &c, 1);
		while (n < 0 && errno == EINTR);
	return true;
}

static int target_park(int out, int ctl, bool late)
{
	uint64_t p[3] = {AT(ct_c1), AT(ct_c2), AT(ct_c3)}, id, again;
	struct corotop_coro c;

	corotop_coro_open(&c, IT_PROBE_ID(0));
	if (!c.station)
		return need(false, "no station");
	corotop_coro_resume(&c, 0x2000);
	id = put(p, 3, 0);
	if (late) {
		/* The test lets a rotation collect P before the park. */
		dprintf(out, "put %" PRIu64 "\n", id);
		told(ctl, -1);
	}
	park_event(&c, 0x2001, id);
	dprintf(out, "parked %" PRIu64 "\n", id);
	/* Parked for as long as the test looks: its death closes CTLFD. */
	told(ctl, -1);
	again = put(p, 3, 0);
	dprintf(out, "again %" PRIu64 "\n", again);
	corotop_coro_resume(&c, 0x2002);
	corotop_coro_close(&c);
	return 0;
}

/* The CallTrace file named in our cTP header, truncated to nothing. */
static int target_truncate_file(void)
{
	const char *shm = getenv(CTP_ENV_SHM);
	const char *slash = shm ? strrchr(shm, '/') : NULL;
	struct ctp_calltrace_desc d;
	char path[4096];
	void *hdr;
	int fd;

	if (!slash)
		return -1;
	fd = open(shm, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	hdr = mmap(NULL, CTP_HEADER_SIZE, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (hdr == MAP_FAILED)
		return -1;
	memcpy(&d, ctp_calltrace_desc(hdr), sizeof(d));
	munmap(hdr, CTP_HEADER_SIZE);
	d.name[CTP_CT_NAME_MAX - 1] = '\0';
	snprintf(path, sizeof(path), "%.*s/%s", (int)(slash - shm), shm,
		 d.name);
	fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0 || ftruncate(fd, 0) != 0)
		return -1;
	close(fd);
	return 0;
}

static int target_truncate(int out, int ctl)
{
	uint64_t a[3] = {AT(ct_a1), AT(ct_a2), AT(ct_a3)};
	struct corotop_coro c;
	unsigned i = 0;

	corotop_coro_open(&c, IT_PROBE_ID(0));
	if (!c.station)
		return need(false, "no station");
	put(a, 3, 1);
	switch_both(&c, 1, 0x3000);
	it_sleep_ms(500);
	if (target_truncate_file() != 0) {
		perror("ct-target: truncate");
		return 1;
	}
	dprintf(out, "truncated\n");
	do
		switch_both(&c, 1, 0x3010 + (i++ % 64) * 2);
	while (!told(ctl, 10));
	corotop_coro_close(&c);
	return 0;
}

/* The snapshot ring next to the CallTrace file, truncated to nothing. */
static int target_truncate_snap(int out, int ctl)
{
	const char *shm = getenv(CTP_ENV_SHM);
	const char *slash = shm ? strrchr(shm, '/') : NULL;
	volatile uint64_t spin = 0;
	struct corotop_coro c;
	char path[4096];
	uint64_t end;
	unsigned i = 0;
	int fd;

	corotop_coro_open(&c, IT_PROBE_ID(0));
	if (!c.station || !slash)
		return need(false, "no station");
	corotop_coro_resume(&c, 0x4000);
	for (end = it_now() + 300000000u; it_now() < end;)
		spin = spin + 1;
	corotop_coro_suspend(&c, 0x4002);
	/* Our own handler would write into what is truncated next. */
	corotop_sampler_stop();
	snprintf(path, sizeof(path), "%.*s/snapshots.shm", (int)(slash - shm),
		 shm);
	fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0 || ftruncate(fd, 0) != 0) {
		perror("ct-target: truncate snapshots.shm");
		return 1;
	}
	close(fd);
	dprintf(out, "truncated\n");
	do
		switch_both(&c, 1, 0x4010 + (i++ % 64) * 2);
	while (!told(ctl, 10));
	corotop_coro_close(&c);
	return 0;
}

static int target_junk(int out, int ctl)
{
	uint64_t a[5] = {AT(ct_a1), AT(ct_a2), 0xa0d0a, AT(ct_a3), 0};
	uint64_t p[3] = {AT(ct_c1), 0x74736574, AT(ct_c2)}, id;
	struct corotop_coro c;

	corotop_coro_open(&c, IT_PROBE_ID(0));
	if (!c.station)
		return need(false, "no station");
	a[4] = TAG(&c, 0);
	put(a, 5, 5);
	corotop_coro_resume(&c, 0x5000);
	id = put(p, 3, 0);
	park_event(&c, 0x5001, id);
	dprintf(out, "parked %" PRIu64 "\n", id);
	told(ctl, -1);
	corotop_coro_resume(&c, 0x5002);
	corotop_coro_close(&c);
	return 0;
}

/* Real frames: no inlining, no tail calls (the empty asm after each call
 * keeps the caller's frame), so the return addresses are where they seem. */
__attribute__((noinline)) static uint64_t real_leaf(uint64_t *f)
{
	f[0] = (uint64_t)(uintptr_t)&real_leaf;
	f[1] = (uint64_t)(uintptr_t)__builtin_return_address(0);
	return put(f, 3, 4);
}

__attribute__((noinline)) static uint64_t real_mid(uint64_t *f)
{
	uint64_t id;

	f[2] = (uint64_t)(uintptr_t)__builtin_return_address(0);
	id = real_leaf(f);
	__asm__ volatile("" ::: "memory");
	return id;
}

__attribute__((noinline)) static int target_real(unsigned gap_ms)
{
	uint64_t f[3];

	real_mid(f);
	__asm__ volatile("" ::: "memory");
	it_sleep_ms(gap_ms);
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	unsigned a = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 0) : 0;
	unsigned b = argc > 3 ? (unsigned)strtoul(argv[3], NULL, 0) : 0;
	int rc = need(corotop_probe_live_, "probe not attached");

	if (rc)
		return rc;
	if (!strcmp(mode, "hot"))
		return target_hot(a, b);
	if (!strcmp(mode, "park") || !strcmp(mode, "park-late"))
		return target_park((int)a, (int)b, !strcmp(mode, "park-late"));
	if (!strcmp(mode, "truncate"))
		return target_truncate((int)a, (int)b);
	if (!strcmp(mode, "truncate-snap"))
		return target_truncate_snap((int)a, (int)b);
	if (!strcmp(mode, "real"))
		return target_real(a);
	if (!strcmp(mode, "junk"))
		return target_junk((int)a, (int)b);
	fprintf(stderr, "ct-target: unknown mode '%s'\n", mode);
	return 2;
}
