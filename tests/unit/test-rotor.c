/*
 * rotor and traceset: the engine's half of CallTrace storage, with writes
 * made through ctwriter on the real mapping (and once through the probe).
 *
 *   create      the file sits in the cTP region's private directory, 0600,
 *               O_EXCL, announced in the cTP header; the probe finds it;
 *   ids         unique across rotations and stable within one; collected
 *               weights exact (collected + dropped == put);
 *   liveness    preserved ids survive rotations unchanged (also ids put
 *               in the period a rotation ends), are handed back
 *               to new puts of the same stack, and appear in every union
 *               while preserved (weight 0 when nobody put them);
 *   quarantine  a writer that stays inside past the bound: the table is
 *               neither collected nor cleared, rotations go on (or are
 *               skipped and say why), and its weights arrive exactly once
 *               after it leaves; a dead writer's slot is reclaimed;
 *   hostile     garbage in buckets, slots and roles: no crash (the time it
 *               took is printed; a hang is caught by meson's timeout);
 *   traceset    duplicates folded on seal, lookups by id.
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

#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "wire/ctwriter.h"
#include "corotop/probe.h"
#include "engine/ctp/region.h"
#include "engine/calltrace/rotor.h"

struct rig {
	struct region reg;
	struct rotor *r;
	struct ct_view v;
	uint64_t me;
};

static void rig_open(struct rig *g, uint32_t traces, uint32_t frames,
		     unsigned timeout_ms)
{
	struct rotor_config cfg;
	char err[512];

	memset(g, 0, sizeof(*g));
	assert_true(
		region_create(&g->reg, 16, CTP_HX_FREELIST, err, sizeof(err)));
	rotor_config_defaults(&cfg);
	cfg.max_traces = traces;
	cfg.pool_frames = frames;
	cfg.drain_timeout_ms = timeout_ms;
	g->r = rotor_create(g->reg.dir, g->reg.hdr, &cfg, err, sizeof(err));
	if (!g->r)
		fail_msg("rotor_create: %s", err);
	assert_true(ct_view_init(&g->v, rotor_base(g->r), rotor_size(g->r)));
	g->me = ((uint64_t)getpid() << 32) | (uint64_t)syscall(SYS_gettid);
}

static void rig_close(struct rig *g)
{
	rotor_destroy(g->r);
	region_finish(&g->reg);
}

/* Monotonic nanoseconds, for printing how long something took. */
static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void stack(uint64_t *f, unsigned n, uint64_t seed)
{
	for (unsigned i = 0; i < n; i++)
		f[i] = ct_mix64(seed * 7919 + i) | 1;
}

static uint64_t put(struct rig *g, uint64_t seed, uint64_t weight)
{
	uint64_t f[16];

	stack(f, 16, seed);
	return ct_writer_put(&g->v, g->me, f, 16, weight);
}

static bool frames_are(const struct traceset_entry *e, uint64_t seed)
{
	uint64_t f[16];

	stack(f, 16, seed);
	return e && e->nframes == 16 && memcmp(e->frames, f, sizeof(f)) == 0;
}

static void test_create_and_probe_attach(void **state)
{
	struct rig g;
	struct stat st;
	struct rotor_config cfg;
	char err[512], max[16];
	const struct ctp_calltrace_desc *d;
	uint64_t f[16] = {0}, id;

	(void)state;
	assert_int_equal(corotop_calltrace_put(f, 0, 1), 0); /* detached */
	rig_open(&g, 1024, 1 << 14, 100);
	assert_int_equal(lstat(rotor_path(g.r), &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal((uint64_t)st.st_size, rotor_size(g.r));
	assert_non_null(strstr(rotor_path(g.r), g.reg.dir));
	d = ctp_calltrace_desc(g.reg.hdr);
	assert_int_equal(d->magic, CTP_CT_MAGIC);
	assert_string_equal(d->name, "calltrace.shm");
	assert_true(d->region_size == rotor_size(g.r));
	/* O_EXCL: a second one in the same directory is refused. */
	rotor_config_defaults(&cfg);
	assert_null(rotor_create(g.reg.dir, NULL, &cfg, err, sizeof(err)));
	assert_non_null(strstr(err, "calltrace.shm"));

	/* The probe follows the descriptor from CTP_SHM_PATH. */
	snprintf(max, sizeof(max), "%u", g.reg.stations);
	setenv(CTP_ENV_SHM, g.reg.shm_path, 1);
	setenv(CTP_ENV_SOCK, g.reg.sock_path, 1);
	setenv(CTP_ENV_MAX, max, 1);
	assert_true(corotop_probe_init());
	stack(f, 16, 42);
	id = corotop_calltrace_put(f, 16, 5);
	assert_int_equal(id >> 32, 1);
	assert_true(corotop_calltrace_put(f, 16, 6) == id);
	assert_true(rotor_rotate(g.r, NULL, 0));
	assert_int_equal(rotor_traces(g.r)->n, 1);
	assert_true(rotor_traces(g.r)->e[0].id == id);
	assert_int_equal(rotor_traces(g.r)->e[0].weight, 11);
	assert_int_equal(rotor_traces(g.r)->e[0].hits, 2);
	assert_int_equal(corotop_calltrace_put(f, 16, 1) >> 32, 2);
	corotop_probe_shutdown();
	assert_int_equal(corotop_calltrace_put(f, 16, 1), 0);

	/* A descriptor naming another directory is ignored. */
	snprintf(ctp_calltrace_desc(g.reg.hdr)->name, CTP_CT_NAME_MAX,
		 "../calltrace.shm");
	assert_true(corotop_probe_init());
	assert_int_equal(corotop_calltrace_put(f, 16, 1), 0);
	corotop_probe_shutdown();
	unsetenv(CTP_ENV_SHM);
	unsetenv(CTP_ENV_SOCK);
	unsetenv(CTP_ENV_MAX);
	rig_close(&g);
	assert_int_not_equal(lstat(g.reg.dir, &st), 0); /* all removed */
}

/* ids: unique over rotations, stable within one, weights exact. */
static void test_ids_and_weights(void **state)
{
	enum { STACKS = 50, ROUNDS = 12 };
	static uint64_t seen_id[ROUNDS * STACKS];
	static uint64_t seen_stack[ROUNDS * STACKS];
	size_t nseen = 0;
	struct rig g;
	uint64_t total = 0, collected = 0;

	(void)state;
	rig_open(&g, 1024, 1 << 14, 100);
	for (unsigned round = 0; round < ROUNDS; round++) {
		const struct traceset *ts;
		uint64_t ids[STACKS];

		for (unsigned k = 0; k < STACKS; k++) {
			ids[k] = put(&g, k, k + 1);
			assert_true(ids[k] >> 32 == round + 1);
			assert_true(put(&g, k, 2 * k) == ids[k]);
			total += 3 * k + 1;
		}
		assert_true(rotor_rotate(g.r, NULL, 0));
		ts = rotor_traces(g.r);
		assert_int_equal(ts->n, STACKS);
		for (unsigned k = 0; k < STACKS; k++) {
			const struct traceset_entry *e =
				traceset_find(ts, ids[k]);

			assert_true(frames_are(e, k));
			assert_int_equal(e->weight, 3 * k + 1);
			assert_int_equal(e->hits, 2);
			collected += e->weight;
			/* never the id of another stack, before or now */
			for (size_t i = 0; i < nseen; i++)
				assert_false(seen_id[i] == ids[k] &&
					     seen_stack[i] != k);
			seen_id[nseen] = ids[k];
			seen_stack[nseen++] = k;
		}
	}
	/* Unique: a round's ids never repeat an earlier round's. */
	for (size_t i = 0; i < nseen; i++)
		for (size_t j = i + 1; j < nseen; j++)
			assert_false(seen_id[i] == seen_id[j]);
	assert_int_equal(collected, total);
	rig_close(&g);
}

static void test_dropped_exact_over_rotations(void **state)
{
	struct rig g;
	struct rotor_stats st;
	uint64_t total = 0, collected = 0, dropped = 0, x = 1;

	(void)state;
	rig_open(&g, 16, 200, 100); /* 16 traces, 200 frames: drops */
	for (unsigned round = 0; round < 20; round++) {
		for (unsigned i = 0; i < 100; i++) {
			uint64_t w, id;

			x = ct_mix64(x);
			w = x % 1000;
			id = put(&g, x % 40, w);
			total += w;
			if (id == CT_DROPPED_TRACE_ID)
				dropped += w;
		}
		assert_true(rotor_rotate(g.r, NULL, 0));
		collected += traceset_weight(rotor_traces(g.r));
	}
	rotor_stats(g.r, &st);
	assert_true(dropped > 0);
	assert_int_equal(st.dropped_weight, dropped);
	assert_int_equal(st.drop_full, st.dropped);
	assert_int_equal(st.weight, collected);
	assert_int_equal(collected + dropped, total);
	rig_close(&g);
}

static void test_preserve_keeps_ids(void **state)
{
	struct rig g;
	struct rotor_stats st;
	const struct traceset_entry *e;
	uint64_t id1, id2;

	(void)state;
	rig_open(&g, 1024, 1 << 14, 100);
	id1 = put(&g, 1, 10);
	id2 = put(&g, 2, 20);
	assert_true(rotor_rotate(g.r, NULL, 0)); /* id1, id2 collected */
	/* Preserve id1: it goes into the new ACTIVE with its id. */
	assert_true(rotor_rotate(g.r, &id1, 1));
	assert_true(put(&g, 1, 5) == id1);
	assert_true(put(&g, 2, 7) != id2); /* not preserved: new id */
	/* Preserved and put again: reported once, with the new weight. */
	assert_true(rotor_rotate(g.r, &id1, 1));
	e = traceset_find(rotor_traces(g.r), id1);
	assert_true(frames_are(e, 1));
	assert_int_equal(e->weight, 5);
	assert_int_equal(rotor_traces(g.r)->n, 2);
	/* Nobody puts it: it is still in every union, weight 0. */
	for (int i = 0; i < 4; i++) {
		assert_true(rotor_rotate(g.r, &id1, 1));
		e = traceset_find(rotor_traces(g.r), id1);
		assert_true(frames_are(e, 1));
		assert_int_equal(e->weight, 0);
		assert_true(put(&g, 1, 0) == id1);
	}
	rotor_stats(g.r, &st);
	assert_int_equal(st.preserve_missing, 0);
	assert_int_equal(st.preserve_failed, 0);
	/* Let it go: once parked in STANDBY it shows a last time, then a
	 * new put of the stack gets a new id. */
	assert_true(rotor_rotate(g.r, NULL, 0));
	assert_true(rotor_rotate(g.r, NULL, 0));
	assert_null(traceset_find(rotor_traces(g.r), id1));
	assert_true(put(&g, 1, 1) != id1);
	/* An id put in the period this rotation ends (a coroutine that
	 * parked since the last rotation) is preserved at once, its frames
	 * read from the retiring ACTIVE: put again right after the swap, the
	 * stack keeps its id (it would otherwise change at every rotation for
	 * a coroutine that parks more often than the engine rotates). */
	id2 = put(&g, 3, 4);
	assert_true(rotor_rotate(g.r, &id2, 1));
	assert_true(put(&g, 3, 0) == id2);
	/* It is also parked in STANDBY at step 6, so the next rotation
	 * reports it even if nobody puts it. */
	assert_true(rotor_rotate(g.r, &id2, 1));
	e = traceset_find(rotor_traces(g.r), id2);
	assert_true(frames_are(e, 3));
	/* ...and from then on it is in ACTIVE: its id comes back. */
	assert_true(put(&g, 3, 1) == id2);
	/* Unknown ids are counted, not invented. */
	id1 = (999ull << 32) | 5;
	assert_true(rotor_rotate(g.r, &id1, 1));
	rotor_stats(g.r, &st);
	assert_int_equal(st.preserve_missing, 1);
	rig_close(&g);
}

static struct ct_slot *fake_writer(struct rig *g, unsigned slot, uint64_t owner)
{
	struct ct_slot *s = &g->v.slots[slot];

	atomic_store(&s->owner, owner);
	atomic_store(&s->word, atomic_load(&g->v.hdr->active));
	atomic_store(&s->refs, 1);
	return s;
}

static void test_quarantine_and_late_collection(void **state)
{
	struct rig g;
	struct rotor_stats st;
	struct ct_slot *a, *b;
	uint64_t id0, total = 0, collected = 0;

	(void)state;
	rig_open(&g, 1024, 1 << 14, 20);
	id0 = put(&g, 1, 100);
	total += 100;
	/* A live writer (us, as far as tgkill can tell) inside table 0. */
	a = fake_writer(&g, 17, g.me);
	/* It never leaves: the rotation gives up on it after the drain bound
	 * (however long the machine takes to get there) and says so. */
	assert_true(rotor_rotate(g.r, NULL, 0));
	rotor_stats(g.r, &st);
	assert_int_equal(st.quarantined, 1);
	assert_non_null(strstr(rotor_warning(g.r), "quarantined"));
	assert_int_equal(rotor_traces(g.r)->n, 0); /* not collected yet */
	put(&g, 2, 10);
	total += 10;
	/* Another one stuck in the new ACTIVE (table 1). */
	b = fake_writer(&g, 4000, g.me);
	assert_true(rotor_rotate(g.r, NULL, 0));
	collected += traceset_weight(rotor_traces(g.r));
	put(&g, 3, 1);
	total += 1;
	/* Both spare tables held: the rotation is skipped, and says so. */
	assert_false(rotor_rotate(g.r, NULL, 0));
	assert_non_null(strstr(rotor_warning(g.r), "no table"));
	rotor_stats(g.r, &st);
	assert_int_equal(st.skipped, 1);
	assert_int_equal(st.quarantined, 2);
	/* The writers leave: both tables are collected, exactly once. */
	atomic_store(&a->refs, 0);
	atomic_store(&a->owner, 0);
	atomic_store(&b->refs, 0);
	atomic_store(&b->owner, 0);
	assert_true(rotor_rotate(g.r, NULL, 0));
	collected += traceset_weight(rotor_traces(g.r));
	assert_true(traceset_find(rotor_traces(g.r), id0) != NULL);
	assert_int_equal(traceset_find(rotor_traces(g.r), id0)->weight, 100);
	for (int i = 0; i < 3; i++) {
		assert_true(rotor_rotate(g.r, NULL, 0));
		collected += traceset_weight(rotor_traces(g.r));
	}
	rotor_stats(g.r, &st);
	assert_int_equal(st.late, 2);
	assert_int_equal(collected, total);
	assert_int_equal(st.weight, total);
	rig_close(&g);
}

static void test_dead_writer_reclaimed(void **state)
{
	struct rig g;
	struct rotor_stats st;
	pid_t child;
	int status;

	(void)state;
	/* The drain looks for dead owners only after a few hundred polls
	 * (yields, on a busy machine each a time slice): its bound must not
	 * come first, so it is a deadline (30 s), not a guess. */
	rig_open(&g, 1024, 1 << 14, 30000);
	child = fork();
	assert_true(child >= 0);
	if (child == 0)
		_exit(0);
	assert_int_equal(waitpid(child, &status, 0), child);
	put(&g, 1, 3);
	/* It "died inside a put": refs up, word = ACTIVE. */
	fake_writer(&g, 99, ((uint64_t)child << 32) | (uint64_t)child);
	assert_true(rotor_rotate(g.r, NULL, 0));
	rotor_stats(g.r, &st);
	assert_int_equal(st.reclaimed, 1);
	assert_int_equal(st.quarantined, 0);
	assert_int_equal(traceset_weight(rotor_traces(g.r)), 3);
	assert_true(atomic_load(&g.v.slots[99].owner) == 0);
	rig_close(&g);
}

static void test_hostile_region(void **state)
{
	struct rig g;
	struct rotor_stats st;
	uint64_t x = 0x1234567;
	uint8_t *base, geometry[0x80];
	uint64_t t0;

	(void)state;
	rig_open(&g, 256, 4096, 10);
	base = rotor_base(g.r);
	memcpy(geometry, base, sizeof(geometry));
	t0 = now_ns();
	for (int round = 0; round < 30; round++) {
		for (int k = 0; k < 20; k++)
			put(&g, (uint64_t)k, 1);
		/* Scribble over everything the target can write. */
		for (int i = 0; i < 3000; i++) {
			uint64_t off, v;

			x = ct_mix64(x);
			off = (x % (rotor_size(g.r) / 8)) * 8;
			x = ct_mix64(x);
			v = x;
			if (round % 3 == 0 && (x & 3) == 0)
				v = ct_key(x, (unsigned)(x >> 8) & 0xff,
					   (uint32_t)(x >> 16) & 0xfff);
			memcpy(base + off, &v, 8);
		}
		/* Slots: random words and counts, some naming our tables,
		 * with owners that are garbage or dead. */
		for (int i = 0; i < 50; i++) {
			struct ct_slot *s;

			x = ct_mix64(x);
			s = &g.v.slots[x % CT_SLOTS];
			atomic_store(&s->owner, x % 5 ? (x | 1) : 0);
			atomic_store(&s->word, x >> 3);
			atomic_store(&s->refs, (uint32_t)(x >> 40));
		}
		atomic_store(&g.v.hdr->active, x);
		rotor_rotate(g.r, &x, 1);
		{
			const struct traceset *ts = rotor_traces(g.r);

			for (size_t i = 0; i < ts->n; i++) {
				assert_true(ts->e[i].nframes <= CT_MAX_FRAMES);
				if (ts->e[i].nframes)
					assert_non_null(ts->e[i].frames);
			}
		}
		/* The engine never reads the geometry back; this test's own
		 * writer needs it to keep putting. */
		memcpy(base, geometry, sizeof(geometry));
		assert_true(ct_view_init(&g.v, base, rotor_size(g.r)));
	}
	/* The time is printed, not compared: a rotation that loops on
	 * garbage is caught by meson's timeout. */
	t0 = now_ns() - t0;
	rotor_stats(g.r, &st);
	print_message("hostile: rotations %llu skipped %llu corrupt %llu "
		      "reclaimed %llu quarantined %llu in %.1f ms\n",
		      (unsigned long long)st.rotations,
		      (unsigned long long)st.skipped,
		      (unsigned long long)st.corrupt,
		      (unsigned long long)st.reclaimed,
		      (unsigned long long)st.quarantined, t0 / 1e6);
	assert_true(st.corrupt > 0);
	rig_close(&g);
}

static void test_truncated_file_is_left_alone(void **state)
{
	struct rig g;

	(void)state;
	rig_open(&g, 1024, 1 << 14, 100);
	put(&g, 1, 1);
	assert_true(rotor_rotate(g.r, NULL, 0));
	assert_int_equal(rotor_traces(g.r)->n, 1);
	assert_int_equal(truncate(rotor_path(g.r), 4096), 0);
	assert_false(rotor_rotate(g.r, NULL, 0));
	assert_non_null(strstr(rotor_warning(g.r), "truncated"));
	assert_int_equal(rotor_traces(g.r)->n, 0); /* not the last union */
	rig_close(&g);
}

static void test_traceset_merge_and_find(void **state)
{
	struct traceset s;
	uint64_t f[3] = {1, 2, 3};
	const struct traceset_entry *e;

	(void)state;
	traceset_init(&s, 4, 8);
	assert_true(traceset_add(&s, 10, 1, 1, f, 3));
	assert_true(traceset_add(&s, 11, 2, 1, f, 2));
	assert_true(traceset_add(&s, 10, 5, 2, f + 1, 2));
	assert_false(traceset_add(&s, 12, 1, 1, f, 3)); /* frames max */
	assert_int_equal(s.overflow, 1);
	traceset_seal(&s);
	assert_int_equal(s.n, 2);
	assert_int_equal(s.merged, 1);
	e = traceset_find(&s, 10);
	assert_non_null(e);
	assert_int_equal(e->weight, 6);
	assert_int_equal(e->hits, 3);
	assert_int_equal(e->nframes, 3);
	assert_true(e->frames[2] == 3);
	assert_null(traceset_find(&s, 12));
	assert_int_equal(traceset_weight(&s), 8);
	traceset_clear(&s);
	traceset_seal(&s);
	assert_null(traceset_find(&s, 10));
	traceset_finish(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_create_and_probe_attach),
		cmocka_unit_test(test_ids_and_weights),
		cmocka_unit_test(test_dropped_exact_over_rotations),
		cmocka_unit_test(test_preserve_keeps_ids),
		cmocka_unit_test(test_quarantine_and_late_collection),
		cmocka_unit_test(test_dead_writer_reclaimed),
		cmocka_unit_test(test_hostile_region),
		cmocka_unit_test(test_truncated_file_is_left_alone),
		cmocka_unit_test(test_traceset_merge_and_find),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
