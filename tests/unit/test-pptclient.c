/*
 * pptclient: the probe's ppt client (src/probe/ppt*.c), with the test as a
 * fake agent in the same process: it creates SysV segments (IPC_PRIVATE,
 * 0600, marked IPC_RMID at once so nothing outlives the test), writes a
 * control block, stores the id in _ppt_hmem_NAME, saves frames, and reads
 * the frames' bytes at the exact offsets of the layout the JSON describes.
 * Covered (the layout and JSON are test-pptlayout.c): static and dynamic
 * attach, detach and reuse of the address ranges, resize, segments
 * that lie, counters, the internal hooks and poll, and 4 threads saving
 * while the test reads like an agent.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <errno.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <sys/shm.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "corotop/ppt.h"
#include "ppt-demo-types.h"
#include "probe/ppt_internal.h"

COROTOP_PPT_BUFFER(demo);
COROTOP_PPT_BUFFER(one);
COROTOP_PPT_BUFFER(hk);
COROTOP_PPT_BUFFER(stress);

/* The example (frame size 64): tests/common/ppt-demo-types.h. */

#define CTL_START 448u /* sizeof(struct ppt_control) rounded up to 64 */

/* ---- the fake agent's segments ---- */

#define MAX_SEGS 32
static int seg_ids[MAX_SEGS];
static void *seg_maps[MAX_SEGS];
static unsigned nsegs;

/* A zeroed segment of `size` bytes, mapped here; removed at teardown.
 * Never id 0, which means "none" in _hmem and data_block_hmem (a fresh
 * IPC namespace hands out 0 first: keep it aside and take the next). */
static int seg_create(size_t size, void **map)
{
	int id = shmget(IPC_PRIVATE, size, IPC_CREAT | 0600);
	void *p;

	if (id == 0) {
		shmctl(id, IPC_RMID, NULL);
		id = shmget(IPC_PRIVATE, size, IPC_CREAT | 0600);
	}

	assert_true(id >= 0);
	p = shmat(id, NULL, 0);
	/* Marked for removal now: it goes when the last attach does, even
	 * if the test dies. */
	shmctl(id, IPC_RMID, NULL);
	assert_true(p != (void *)-1);
	assert_true(nsegs < MAX_SEGS);
	seg_ids[nsegs] = id;
	seg_maps[nsegs++] = p;
	*map = p;
	return id;
}

static unsigned long nattch(int id)
{
	struct shmid_ds ds;

	assert_int_equal(shmctl(id, IPC_STAT, &ds), 0);
	return (unsigned long)ds.shm_nattch;
}

/* A control segment of `size` bytes naming data segment data_id. */
static struct ppt_control *ctl_create(size_t size, uint64_t data_id, int *id)
{
	struct ppt_control *ctl;

	*id = seg_create(size, (void **)&ctl);
	if (size >= sizeof(*ctl)) {
		ctl->control_blk_sz = sizeof(*ctl);
		ctl->data_block_hmem = data_id;
	}
	return ctl;
}

static int setup(void **state)
{
	(void)state;
	return corotop_ppt_buffer_init(&demo, demo_types, 2, 0);
}

static int teardown(void **state)
{
	(void)state;
	_ppt_hmem_demo = _ppt_hmem_one = _ppt_hmem_hk = _ppt_hmem_stress = 0;
	corotop_ppt_buffer_finish(&demo);
	corotop_ppt_buffer_finish(&one);
	corotop_ppt_buffer_finish(&hk);
	corotop_ppt_buffer_finish(&stress);
	for (unsigned i = 0; i < nsegs; i++)
		shmdt(seg_maps[i]);
	nsegs = 0;
	return 0;
}

static struct corotop_ppt_stats stats(const struct corotop_ppt_buffer *b)
{
	struct corotop_ppt_stats s;

	corotop_ppt_stats(b, &s);
	return s;
}

static uint32_t u32_at(const uint8_t *f, size_t off)
{
	uint32_t v;

	memcpy(&v, f + off, sizeof(v));
	return v;
}

static void save_tick(int32_t count)
{
	struct tick t = {count, count * 0.5, {{count, 2}, {count + 1, 4}}};

	corotop_ppt_save(&demo, 0, &t);
}

static void save_io(int32_t fd)
{
	struct io o = {fd, {{10, 11, 12}, {20, 21, 22}}};

	corotop_ppt_save(&demo, 1, &o);
}

/* Frame `slot` of tick holds index idx and count. */
static void check_tick(const uint8_t *base, uint32_t slot, uint32_t idx,
		       int32_t count)
{
	const uint8_t *f = base + (size_t)slot * 64;
	struct timespec ts;
	double load;
	int32_t c;

	assert_int_equal(u32_at(f, 0), idx);
	assert_int_equal(u32_at(f, 4), 1);
	memcpy(&ts, f + 16, sizeof(ts));
	assert_true(ts.tv_sec == count && ts.tv_nsec == 2);
	memcpy(&ts, f + 32, sizeof(ts));
	assert_true(ts.tv_sec == count + 1 && ts.tv_nsec == 4);
	memcpy(&load, f + 48, sizeof(load));
	assert_true(load == count * 0.5);
	memcpy(&c, f + 56, sizeof(c));
	assert_int_equal(c, count);
	assert_int_equal(u32_at(f, 60), idx);
}

static void check_io(const uint8_t *base, uint32_t slot, uint32_t idx,
		     int32_t fd)
{
	const uint8_t *f = base + (size_t)slot * 64;
	static const uint64_t want[6] = {10, 20, 11, 21, 12, 22};
	uint64_t v;
	int32_t x;

	assert_int_equal(u32_at(f, 0), idx);
	assert_int_equal(u32_at(f, 4), 2);
	for (unsigned i = 0; i < 6; i++) {
		memcpy(&v, f + 8 + 8 * i, sizeof(v));
		assert_true(v == want[i]);
	}
	memcpy(&x, f + 56, sizeof(x));
	assert_int_equal(x, fd);
	assert_int_equal(u32_at(f, 60), idx);
}

/* One type of one byte (12-byte frames); the layout says resize, the
 * agent creates a static segment: the client follows the agent. */
static void test_single_type_static(void **state)
{
	static const struct corotop_ppt_member m[] = {
		{"b", COROTOP_PPT_BYTE, 0}};
	static const struct corotop_ppt_frame_type t[] = {{"only", m, 1}};
	struct ppt_control *ctl;
	const uint8_t *f;
	uint8_t v = 0xab;
	int id;

	(void)state;
	assert_int_equal(
		corotop_ppt_buffer_init(&one, t, 1, COROTOP_PPT_RESIZE), 0);
	/* Frames start at 440 rounded up to 12. */
	ctl = ctl_create(444 + 12 * 4, 0, &id);
	_ppt_hmem_one = id;
	corotop_ppt_save(&one, 0, &v);
	assert_int_equal(ctl->data_block_sz, 4);
	f = (const uint8_t *)ctl + 444 + 12;
	assert_int_equal(u32_at(f, 0), 1);
	assert_int_equal(f[4], 0xab);
	assert_int_equal(u32_at(f, 8), 1);
}

static void test_unattached(void **state)
{
	(void)state;
	assert_int_equal(corotop_ppt_frame_size(&demo), 64);
	/* No agent: nothing happens, nothing is counted. */
	save_tick(1);
	assert_int_equal(demo.live, 0);
	assert_true(stats(&demo).saved == 0);
	assert_false(ppt_client_poll(&demo));
	assert_int_equal(stats(&demo).attaches, 0);
}

/* ---- static layout ---- */

static void test_static_attach(void **state)
{
	struct ppt_control *ctl;
	const uint8_t *base;
	struct corotop_ppt_stats s;
	int id;

	(void)state;
	ctl = ctl_create(CTL_START + 64 * 10, 0, &id);
	base = (const uint8_t *)ctl + CTL_START;
	_ppt_hmem_demo = id;
	save_tick(7);
	assert_int_equal(demo.live, 1);
	assert_true(ctl->data_block_sz == 10);
	assert_true(ctl->data_block != 0);
	assert_true(ctl->client_flags == PPT_CLIENT_FLAG_ATTACHED);
	assert_int_equal(nattch(id), 2);
	check_tick(base, 1, 1, 7);
	save_io(5);
	check_io(base, 2, 2, 5);
	s = stats(&demo);
	assert_true(s.saved == 2 && s.attaches == 1 && s.attached == 1);
	assert_true(s.nframes == 10 && s.failures == 0 && s.counters == 0);
	/* Around the ring: index 11 overwrites slot 1. */
	for (int i = 3; i <= 11; i++)
		save_tick(100 + i);
	check_tick(base, 1, 11, 111);
	check_tick(base, 0, 10, 110);
	check_io(base, 2, 2, 5);
	assert_true(stats(&demo).saved == 11);
	/* Out-of-range type: ignored. */
	corotop_ppt_save(&demo, 2, &s);
	assert_true(stats(&demo).saved == 11);
}

static unsigned maps_lines(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	unsigned n = 0;
	int ch;

	assert_non_null(f);
	while ((ch = fgetc(f)) != EOF)
		n += ch == '\n';
	fclose(f);
	return n;
}

static void test_detach_and_reuse(void **state)
{
	struct ppt_control *ctl;
	uint8_t *base, snap[64 * 10];
	uint64_t addr;
	unsigned lines = 0;
	int id;

	(void)state;
	ctl = ctl_create(CTL_START + 64 * 10, 0, &id);
	base = (uint8_t *)ctl + CTL_START;
	_ppt_hmem_demo = id;
	save_tick(1);
	addr = ctl->data_block;
	_ppt_hmem_demo = 0;
	memcpy(snap, base, sizeof(snap));
	save_tick(2); /* detaches, writes nothing */
	assert_int_equal(demo.live, 0);
	assert_memory_equal(snap, base, sizeof(snap));
	assert_true(stats(&demo).detaches == 1 && stats(&demo).attached == 0);
	assert_true(stats(&demo).saved == 1);
	assert_true(ctl->client_flags == 0);
	assert_int_equal(nattch(id), 1);
	/* The client's old range is still mapped: a late writer can't
	 * fault. */
	memset((void *)(uintptr_t)addr, 0x5a, 64);
	save_tick(3);
	assert_memory_equal(snap, base, sizeof(snap));
	/* Attach again: the same range is reused, indexes go on. */
	for (int cycle = 0; cycle < 50; cycle++) {
		_ppt_hmem_demo = id;
		save_tick(cycle);
		assert_int_equal(demo.live, 1);
		assert_true(ctl->data_block == addr);
		check_tick(base, (uint32_t)(cycle + 2) % 10,
			   (uint32_t)cycle + 2, cycle);
		_ppt_hmem_demo = 0;
		assert_false(ppt_client_poll(&demo));
		assert_int_equal(nattch(id), 1);
		if (cycle == 1)
			lines = maps_lines();
	}
	/* Repeated cycles do not grow the address space.  (Fewer lines is
	 * fine: ASan's allocator gives mappings back at any moment; it did
	 * so by 4 lines once, in CI.) */
	assert_true(maps_lines() <= lines);
	assert_true(stats(&demo).attaches == 51);
	assert_true(stats(&demo).detaches == 51);
}

/* _hmem moves to another segment: detach, then attach that one. */
static void test_switch_segment(void **state)
{
	struct ppt_control *a, *b;
	int ida, idb;

	(void)state;
	a = ctl_create(CTL_START + 64 * 4, 0, &ida);
	b = ctl_create(CTL_START + 64 * 8, 0, &idb);
	_ppt_hmem_demo = ida;
	save_tick(1);
	_ppt_hmem_demo = idb;
	save_tick(2);
	assert_int_equal(nattch(ida), 1);
	assert_int_equal(nattch(idb), 2);
	assert_true(b->data_block_sz == 8 && a->client_flags == 0);
	check_tick((uint8_t *)b + CTL_START, 2, 2, 2);
	assert_true(stats(&demo).attaches == 2 && stats(&demo).detaches == 1);
}

/* ---- dynamic layout ---- */

static void test_dynamic_resize(void **state)
{
	struct ppt_control *ctl;
	uint8_t *a, *b, *c, snap[64 * 8], zero[64 * 8] = {0};
	int ida, idb, idc, idt, idsmall;
	void *p;
	struct corotop_ppt_stats s;

	(void)state;
	ida = seg_create(64 * 8, (void **)&a);
	ctl = ctl_create(4096, (uint64_t)ida, &idc);
	_ppt_hmem_demo = idc;
	save_tick(1);
	assert_int_equal(demo.live, 1);
	assert_true(ctl->data_block_hmem_attached == (uint64_t)ida);
	assert_true(ctl->data_block_sz == 8);
	assert_true(ctl->client_flags == PPT_CLIENT_FLAG_ATTACHED);
	check_tick(a, 1, 1, 1);
	save_io(2);
	save_io(3);
	check_io(a, 3, 3, 3);
	/* Resize to a bigger block. */
	idb = seg_create(64 * 32, (void **)&b);
	__atomic_store_n(&ctl->data_block_hmem, (uint64_t)idb,
			 __ATOMIC_RELEASE);
	memcpy(snap, a, sizeof(snap));
	save_tick(4);
	assert_true(ctl->data_block_hmem_attached == (uint64_t)idb);
	assert_true(ctl->data_block_sz == 32);
	check_tick(b, 4, 4, 4);
	assert_memory_equal(snap, a, sizeof(snap)); /* frames before stay */
	assert_memory_equal(zero, b, 4 * 64);
	s = stats(&demo);
	assert_true(s.resizes == 1 && s.nframes == 32 && s.saved == 4);
	/* The old block is let go lazily, at the next resize. */
	assert_int_equal(nattch(ida), 2);
	idt = seg_create(64 * 16, (void **)&c);
	__atomic_store_n(&ctl->data_block_hmem, (uint64_t)idt,
			 __ATOMIC_RELEASE);
	save_io(5);
	check_io(c, 5, 5, 5);
	assert_int_equal(nattch(ida), 1);
	assert_int_equal(nattch(idb), 2);
	/* A data segment smaller than a frame: refused, frames keep going
	 * to the current block, no retry at each save. */
	idsmall = seg_create(32, &p);
	__atomic_store_n(&ctl->data_block_hmem, (uint64_t)idsmall,
			 __ATOMIC_RELEASE);
	save_tick(6);
	save_tick(7);
	check_tick(c, 7, 7, 7);
	assert_true(ctl->data_block_hmem_attached == (uint64_t)idt);
	assert_true(stats(&demo).failures == 1);
	assert_int_equal(nattch(idsmall), 1);
	/* Detach lets everything go. */
	_ppt_hmem_demo = 0;
	assert_false(ppt_client_poll(&demo));
	assert_int_equal(nattch(idb), 1);
	assert_int_equal(nattch(idt), 1);
	assert_int_equal(nattch(idc), 1);
}

/* ---- segments that lie ---- */

static void test_lying_segments(void **state)
{
	struct ppt_control *ctl;
	void *p;
	int id;

	(void)state;
	/* control_blk_sz wrong. */
	ctl = ctl_create(CTL_START + 64 * 4, 0, &id);
	ctl->control_blk_sz = 100;
	_ppt_hmem_demo = id;
	save_tick(1);
	save_tick(2);
	assert_int_equal(demo.live, 0);
	assert_true(stats(&demo).failures == 1); /* not retried */
	assert_int_equal(nattch(id), 1);
	assert_true(ctl->client_flags == 0);
	/* Smaller than one frame after the control block. */
	ctl = ctl_create(CTL_START + 63, 0, &id);
	_ppt_hmem_demo = id;
	save_tick(3);
	assert_int_equal(demo.live, 0);
	assert_int_equal(nattch(id), 1);
	/* Smaller than the control block. */
	id = seg_create(100, &p);
	_ppt_hmem_demo = id;
	save_tick(4);
	/* A data segment id that is its own control segment, or none. */
	ctl = ctl_create(4096, 0, &id);
	ctl->data_block_hmem = (uint64_t)id;
	_ppt_hmem_demo = id;
	save_tick(5);
	ctl = ctl_create(4096, 0x7ffffff0u, &id);
	_ppt_hmem_demo = id;
	save_tick(6);
	ctl = ctl_create(4096, 1ull << 40, &id);
	_ppt_hmem_demo = id;
	save_tick(7);
	/* Not a segment at all. */
	_ppt_hmem_demo = 0x7ffffff1;
	save_tick(8);
	assert_int_equal(demo.live, 0);
	assert_true(stats(&demo).failures == 7);
	assert_true(stats(&demo).attaches == 0 && stats(&demo).saved == 0);
	/* A good one after all that. */
	ctl = ctl_create(CTL_START + 64 * 2, 0, &id);
	_ppt_hmem_demo = id;
	save_tick(9);
	assert_int_equal(demo.live, 1);
	check_tick((uint8_t *)ctl + CTL_START, 1, 1, 9);
}

/* ---- counters ---- */

static void test_counters(void **state)
{
	struct perf_event_attr a = {0};
	struct ppt_control *ctl;
	uint64_t v[3] = {1, 1, 1}, w[3];
	bool works;
	int id, fd;

	(void)state;
	assert_int_equal(corotop_ppt_counters(&demo, v), 0);
	assert_true(v[0] == 0 && v[1] == 0 && v[2] == 0);
	a.type = PERF_TYPE_SOFTWARE;
	a.size = PERF_ATTR_SIZE_VER0;
	a.config = PERF_COUNT_SW_TASK_CLOCK;
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	a.disabled = 1; /* the client counts anyway */
	fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
	works = fd >= 0;
	if (works)
		close(fd);
	ctl = ctl_create(CTL_START + 64 * 4, 0, &id);
	ctl->nr_perf_ctrs = 1;
	memcpy(ctl->counterdata[0], &a, PERF_ATTR_SIZE_VER0);
	_ppt_hmem_demo = id;
	assert_true(ppt_client_poll(&demo));
	assert_true(stats(&demo).counters == 1);
	assert_true(!!(ctl->client_flags & PPT_CLIENT_FLAG_COUNTERS_SETUP) ==
		    works);
	assert_int_equal(corotop_ppt_counters(&demo, v), works ? 1 : 0);
	for (volatile unsigned i = 0; i < 2000000; i++)
		;
	assert_int_equal(corotop_ppt_counters(&demo, w), works ? 1 : 0);
	if (works)
		assert_true(w[0] > v[0]);
	assert_true(w[1] == 0 && w[2] == 0);
	/* A lying attr (size 200): attached all the same, no counters. */
	_ppt_hmem_demo = 0;
	assert_false(ppt_client_poll(&demo));
	assert_int_equal(corotop_ppt_counters(&demo, v), 0);
	ctl = ctl_create(CTL_START + 64 * 4, 0, &id);
	ctl->nr_perf_ctrs = 2;
	memcpy(ctl->counterdata[0], &a, PERF_ATTR_SIZE_VER0);
	memcpy(ctl->counterdata[1], &a, PERF_ATTR_SIZE_VER0);
	((struct perf_event_attr *)(void *)ctl->counterdata[1])->size = 200;
	_ppt_hmem_demo = id;
	assert_true(ppt_client_poll(&demo));
	assert_true(ctl->client_flags == PPT_CLIENT_FLAG_ATTACHED);
	assert_true(stats(&demo).counters == 2);
	assert_int_equal(corotop_ppt_counters(&demo, v), 0);
	/* More counters than the contract allows: ignored. */
	_ppt_hmem_demo = 0;
	assert_false(ppt_client_poll(&demo));
	ctl = ctl_create(CTL_START + 64 * 4, 0, &id);
	ctl->nr_perf_ctrs = 1000;
	_ppt_hmem_demo = id;
	assert_true(ppt_client_poll(&demo));
	assert_true(stats(&demo).counters == 0);
}

/* ---- internal API: tag, hooks, poll ---- */

struct hook_log {
	unsigned attached, detached;
	const void *seg;
	size_t size;
	uint64_t blk_sz;
};

static void on_attached(struct corotop_ppt_buffer *b, const void *seg,
			size_t size, void *ctx)
{
	struct hook_log *l = ctx;

	assert_ptr_equal(b, &hk);
	l->attached++;
	l->seg = seg;
	l->size = size;
	l->blk_sz = ((const struct ppt_control *)seg)->control_blk_sz;
}

static void on_detached(struct corotop_ppt_buffer *b, void *ctx)
{
	struct hook_log *l = ctx;
	uint8_t v = 1;

	l->detached++;
	/* A save while the transition is under way skips, never waits. */
	corotop_ppt_save(b, 0, &v);
}

static void test_hooks_and_poll(void **state)
{
	static const struct corotop_ppt_member m[] = {
		{"b", COROTOP_PPT_BYTE, 0}};
	static const struct corotop_ppt_frame_type t[] = {{"rdv", m, 1}};
	struct hook_log log = {0};
	struct ppt_client_hooks hooks = {on_attached, on_detached, &log};
	struct ppt_control *ctl;
	uint8_t *data;
	int idc, idd, id2;

	(void)state;
	assert_int_equal(ppt_client_init(&hk, t, 1, COROTOP_PPT_RESIZE,
					 COROTOP_RDV_TAG_VALUE, &hooks),
			 0);
	assert_non_null(strstr(_ppt_json_hk,
			       "\"tags\":[{\"key\":\"corotop\",\"value\":"
			       "\"rendezvous/1\"},{\"key\":\"resize\","
			       "\"value\":\"on\"}]"));
	assert_false(ppt_client_poll(&hk));
	idd = seg_create(12 * 8, (void **)&data);
	ctl = ctl_create(1024, (uint64_t)idd, &idc);
	_ppt_hmem_hk = idc;
	assert_true(ppt_client_poll(&hk));
	assert_true(ppt_client_poll(&hk));
	assert_int_equal(log.attached, 1);
	assert_int_equal(log.size, 1024);
	assert_true(log.blk_sz == sizeof(struct ppt_control));
	assert_non_null(log.seg);
	assert_true(ctl->data_block_hmem_attached == (uint64_t)idd);
	assert_true(stats(&hk).saved == 0 && hk.live == 1);
	/* Switch to another control segment: the save in the detached hook
	 * finds the transition under way. */
	ctl = ctl_create(CTL_START + 12 * 4, 0, &id2);
	_ppt_hmem_hk = id2;
	assert_true(ppt_client_poll(&hk));
	assert_int_equal(log.detached, 1);
	assert_int_equal(log.attached, 2);
	assert_true(stats(&hk).skipped == 1 && stats(&hk).saved == 0);
	_ppt_hmem_hk = 0;
	assert_false(ppt_client_poll(&hk));
	assert_int_equal(log.detached, 2);
	assert_int_equal(hk.live, 0);
}

/* ---- concurrency: 4 savers, the test reads like an agent ---- */

#define SAVERS 4
#define PER_SAVER 100000
#define RING 7u

struct sframe {
	double a, b;
	int32_t tid, n, check;
};

static const struct corotop_ppt_member stress_m[] = {
	{"a", COROTOP_PPT_DOUBLE, offsetof(struct sframe, a)},
	{"b", COROTOP_PPT_DOUBLE, offsetof(struct sframe, b)},
	{"tid", COROTOP_PPT_INT, offsetof(struct sframe, tid)},
	{"n", COROTOP_PPT_INT, offsetof(struct sframe, n)},
	{"check", COROTOP_PPT_INT, offsetof(struct sframe, check)},
};

/* Frame offsets: seqno 0, pad 4, a 8, b 16, tid 24, n 28, check 32,
 * back 36; 40 bytes. */
#define SF_SIZE 40u

static int32_t sf_check(int32_t tid, int32_t n)
{
	return (int32_t)(((uint32_t)tid * 2654435761u) ^
			 ((uint32_t)n * 40503u));
}

static _Atomic int savers_done;

static void *saver(void *arg)
{
	int32_t tid = (int32_t)(intptr_t)arg;

	for (int32_t n = 0; n < PER_SAVER; n++) {
		struct sframe f;

		f.a = tid * 1e6 + n;
		f.b = f.a * 0.5 + 1;
		f.tid = tid;
		f.n = n;
		f.check = sf_check(tid, n);
		corotop_ppt_save(&stress, 0, &f);
	}
	atomic_fetch_add(&savers_done, 1);
	return NULL;
}

/* A frame read whole: internally consistent? Fills tid and n. */
static bool sf_valid(const uint8_t *f, uint32_t slot, uint32_t nframes,
		     int32_t *tid, int32_t *n)
{
	double a, b;
	int32_t check;

	memcpy(&a, f + 8, 8);
	memcpy(&b, f + 16, 8);
	memcpy(tid, f + 24, 4);
	memcpy(n, f + 28, 4);
	memcpy(&check, f + 32, 4);
	return u32_at(f, 0) % nframes == slot && *tid >= 0 && *tid < SAVERS &&
	       *n >= 0 && *n < PER_SAVER && a == *tid * 1e6 + *n &&
	       b == a * 0.5 + 1 && check == sf_check(*tid, *n);
}

/* (C): back acquire, copy, acquire fence, front; true when whole. */
static bool sf_read(const uint8_t *slot, uint8_t out[SF_SIZE])
{
	uint32_t back = __atomic_load_n(
		(const uint32_t *)(const void *)(slot + 36), __ATOMIC_ACQUIRE);

	memcpy(out, slot, SF_SIZE);
	atomic_thread_fence(memory_order_acquire);
	return back != 0 &&
	       __atomic_load_n((const uint32_t *)(const void *)slot,
			       __ATOMIC_RELAXED) == back &&
	       u32_at(out, 36) == back && u32_at(out, 0) == back;
}

/* Run `nsavers` savers while reading slots [0, nframes) round and round.
 * Every frame read whole must be valid -- which the protocol guarantees
 * only while no two savers write one slot at once: a saver lapped by
 * another in the middle of a frame can leave the other's seqnos around its
 * own body (docs/WIRE.md, "Reading frames").  So the small ring, which
 * laps all the time, runs one saver. */
static unsigned run_savers(const uint8_t *base, uint32_t nframes,
			   uint32_t window, int nsavers)
{
	pthread_t th[SAVERS];
	unsigned whole = 0;
	uint8_t f[SF_SIZE];
	int32_t tid, n;

	atomic_store(&savers_done, 0);
	for (intptr_t i = 0; i < nsavers; i++)
		assert_int_equal(pthread_create(&th[i], NULL, saver, (void *)i),
				 0);
	while (atomic_load(&savers_done) < nsavers) {
		/* Around the newest frames (the whole ring when small). */
		uint64_t head = stats(&stress).saved;

		for (uint32_t k = 0; k < window; k++) {
			uint32_t slot = (uint32_t)((head + k) % nframes);

			if (!sf_read(base + (size_t)slot * SF_SIZE, f))
				continue;
			assert_true(sf_valid(f, slot, nframes, &tid, &n));
			whole++;
		}
	}
	for (int i = 0; i < nsavers; i++)
		pthread_join(th[i], NULL);
	return whole;
}

static void test_concurrent_saves(void **state)
{
	static const struct corotop_ppt_frame_type t[] = {{"s", stress_m, 5}};
	const uint32_t big = SAVERS * PER_SAVER + 1;
	uint8_t *base, f[SF_SIZE];
	uint8_t *seen;
	struct ppt_control *ctl;
	int32_t tid, n;
	unsigned whole;
	int id;

	(void)state;
	assert_int_equal(corotop_ppt_buffer_init(&stress, t, 1, 0), 0);
	assert_int_equal(corotop_ppt_frame_size(&stress), SF_SIZE);
	/* Room for every frame: slot i must end up holding index i. */
	ctl = ctl_create(440 + (size_t)big * SF_SIZE, 0, &id);
	base = (uint8_t *)ctl + 440;
	_ppt_hmem_stress = id;
	assert_true(ppt_client_poll(&stress));
	assert_true(ctl->data_block_sz == big);
	whole = run_savers(base, big, 64, SAVERS);
	seen = calloc(SAVERS * PER_SAVER, 1);
	assert_non_null(seen);
	for (uint32_t i = 1; i < big; i++) {
		assert_true(sf_read(base + (size_t)i * SF_SIZE, f));
		assert_int_equal(u32_at(f, 0), i);
		assert_true(sf_valid(f, i, big, &tid, &n));
		seen[tid * PER_SAVER + n]++;
	}
	for (uint32_t i = 0; i < SAVERS * PER_SAVER; i++)
		assert_int_equal(seen[i], 1);
	free(seen);
	assert_true(stats(&stress).saved == SAVERS * PER_SAVER);
	/* A small ring: constant overwriting while the test reads. */
	ctl = ctl_create(440 + RING * SF_SIZE, 0, &id);
	_ppt_hmem_stress = id;
	assert_true(ppt_client_poll(&stress));
	whole += run_savers((uint8_t *)ctl + 440, RING, RING, 1);
	assert_true(whole > 0);
	print_message("pptclient: %u frames read whole while saving\n", whole);
	assert_true(stats(&stress).saved == (SAVERS + 1) * PER_SAVER);
	assert_true(stats(&stress).skipped == 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_unattached, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_single_type_static, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_static_attach, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_detach_and_reuse, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_switch_segment, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_dynamic_resize, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_lying_segments, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_counters, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hooks_and_poll, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_concurrent_saves, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
