/*
 * test-sampler: the probe's stack captures, end to end across processes.
 *
 * The test plays the engine: it creates a cTP region and a CallTrace region
 * next to it (rotor_create announces it in the cTP header), runs
 * itest-sampler-target with the CTP_* environment plus COROTOP_SAMPLE_HZ
 * and COROTOP_PARKED_STACKS, and once the target exited collects the tables
 * with a rotation and reads the stations.
 *
 *   coroutine   1000 Hz while a coroutine burns CPU in target_burn_coro on
 *               its own (declared) stack: most of the sampled weight is
 *               tagged CT_TAG_CORO with the coroutine's station index and
 *               generation, and has an address inside target_burn_coro and
 *               one inside target_coro_entry, 8 KiB further up the stack (so
 * the walk used the declared bounds, not just sp's page); thread      the same
 * on a thread with no coroutine running: the tag is CT_TAG_THREAD | that
 * thread's tid, and the thread's lazily created timer was deleted when it
 * exited; parked      the coroutine's suspend event carries a trace id
 *               (CTP_EPOCH_TRACE_OFFSET) that resolves in the collected
 *               tables to a weight-0 stack holding target_park_here;
 *   no_parked   without COROTOP_PARKED_STACKS the word stays 0;
 *   bad_env     COROTOP_SAMPLE_HZ of 0, 10001, "abc", "" or "5x": the
 *               target runs normally with the sampler off.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "corotop/calltrace.h"
#include "engine/ctp/region.h"
#include "engine/calltrace/rotor.h"
#include "../common/itest.h"

#ifndef ITEST_SAMPLER_TARGET
#error "ITEST_SAMPLER_TARGET must name the sampler target program"
#endif

struct report {
	unsigned index;
	uint64_t tid;
	uint64_t burn_lo, burn_hi, park_lo, park_hi, deep_lo, deep_hi;
	uint64_t signals, stored, dropped, timers;
	unsigned threads, hz;
	bool has_sampler;
};

struct rig {
	struct region reg;
	struct rotor *r;
	char report_path[400];
};

static struct rig G;

static void rig_open(struct rig *g)
{
	struct rotor_config cfg;
	char err[512];

	memset(g, 0, sizeof(*g));
	assert_true(
		region_create(&g->reg, 16, CTP_HX_FREELIST, err, sizeof(err)));
	rotor_config_defaults(&cfg);
	cfg.max_traces = 4096;
	cfg.pool_frames = 4096 * 32;
	g->r = rotor_create(g->reg.dir, g->reg.hdr, &cfg, err, sizeof(err));
	if (!g->r)
		fail_msg("rotor_create: %s", err);
	snprintf(g->report_path, sizeof(g->report_path), "%s/report.txt",
		 g->reg.dir);
}

static int teardown(void **state)
{
	(void)state;
	if (G.report_path[0])
		unlink(G.report_path);
	rotor_destroy(G.r);
	G.r = NULL;
	if (G.reg.hdr || G.reg.owner)
		region_finish(&G.reg);
	memset(&G, 0, sizeof(G));
	return 0;
}

/* Run the target to completion; hz / parked NULL = leave unset. */
static void run_target(struct rig *g, const char *mode, const char *hz,
		       const char *parked, struct report *out)
{
	char max[16], line[256];
	pid_t pid;
	int status;
	FILE *f;

	snprintf(max, sizeof(max), "%u", g->reg.stations);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		setenv(CTP_ENV_SHM, g->reg.shm_path, 1);
		setenv(CTP_ENV_SOCK, g->reg.sock_path, 1);
		setenv(CTP_ENV_MAX, max, 1);
		unsetenv("COROTOP_SAMPLE_HZ");
		unsetenv("COROTOP_PARKED_STACKS");
		if (hz)
			setenv("COROTOP_SAMPLE_HZ", hz, 1);
		if (parked)
			setenv("COROTOP_PARKED_STACKS", parked, 1);
		execl(ITEST_SAMPLER_TARGET, ITEST_SAMPLER_TARGET, mode, "0.6",
		      g->report_path, (char *)NULL);
		_exit(126);
	}
	assert_int_equal(it_wait_pid(pid, 60000, &status), 0);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	memset(out, 0, sizeof(*out));
	f = fopen(g->report_path, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		unsigned long long a, b, c, d;
		unsigned e, h;

		if (sscanf(line, "index %u", &out->index) == 1)
			continue;
		if (sscanf(line, "tid %llu", &a) == 1)
			out->tid = a;
		else if (sscanf(line, "burn %llx %llx", &a, &b) == 2)
			out->burn_lo = a, out->burn_hi = b;
		else if (sscanf(line, "park %llx %llx", &a, &b) == 2)
			out->park_lo = a, out->park_hi = b;
		else if (sscanf(line, "outer %llx %llx", &a, &b) == 2)
			out->deep_lo = a, out->deep_hi = b;
		else if (sscanf(line, "sampler %llu %llu %llu %llu %u %u", &a,
				&b, &c, &d, &e, &h) == 6) {
			out->signals = a, out->stored = b, out->dropped = c;
			out->timers = d, out->threads = e, out->hz = h;
			out->has_sampler = true;
		}
	}
	fclose(f);
	assert_true(out->has_sampler);
}

static bool frames_hit(const struct traceset_entry *e, uint64_t lo, uint64_t hi)
{
	for (uint32_t i = 0; i < e->nframes; i++)
		if (e->frames[i] >= lo && e->frames[i] < hi)
			return true;
	return false;
}

static struct ctp_station *station(struct rig *g, unsigned index)
{
	assert_true(index < g->reg.stations);
	return (struct ctp_station *)((char *)g->reg.hdr + CTP_HEADER_SIZE) +
	       index;
}

/* Sampled weight by tag, and how much of it hit [lo, hi). */
struct tally {
	uint64_t total, tagged, hit, deep, other_tags, untagged, traces;
};

static struct tally tally(const struct traceset *ts, uint64_t want_tag,
			  const struct report *r)
{
	struct tally t = {0};

	for (size_t i = 0; i < ts->n; i++) {
		const struct traceset_entry *e = &ts->e[i];
		uint64_t last;

		if (!e->weight || !e->nframes)
			continue;
		last = e->frames[e->nframes - 1];
		t.total += e->weight;
		t.traces++;
		if (!CT_TAG_IS(last)) {
			t.untagged += e->weight;
			continue;
		}
		/* No other frame may look like a tag. */
		for (uint32_t k = 0; k + 1 < e->nframes; k++)
			assert_false(CT_TAG_IS(e->frames[k]));
		if (last != want_tag) {
			t.other_tags += e->weight;
			continue;
		}
		t.tagged += e->weight;
		if (frames_hit(e, r->burn_lo, r->burn_hi))
			t.hit += e->weight;
		if (frames_hit(e, r->deep_lo, r->deep_hi))
			t.deep += e->weight;
	}
	return t;
}

static void print_tally(const char *name, const struct tally *t,
			const struct report *r)
{
	print_message(
		"%s: signals %llu stored %llu dropped %llu timers %llu; "
		"collected weight %llu in %llu traces, %llu with the "
		"tag, %llu of it in the burner, %llu past "
		"target_deep; other tags %llu, untagged %llu\n",
		name, (unsigned long long)r->signals,
		(unsigned long long)r->stored, (unsigned long long)r->dropped,
		(unsigned long long)r->timers, (unsigned long long)t->total,
		(unsigned long long)t->traces, (unsigned long long)t->tagged,
		(unsigned long long)t->hit, (unsigned long long)t->deep,
		(unsigned long long)t->other_tags,
		(unsigned long long)t->untagged);
}

static void test_coroutine(void **state)
{
	struct report r;
	struct tally t;
	uint64_t gen, tag;

	(void)state;
	rig_open(&G);
	run_target(&G, "coro", "1000", "1", &r);
	assert_int_equal(r.hz, 1000);
	assert_true(r.burn_hi > r.burn_lo);
	rotor_rotate(G.r, NULL, 0);
	gen = atomic_load(&station(&G, r.index)->ext.gen);
	assert_true(gen >= 1);
	tag = CT_TAG_CORO | (gen & 0xffffu) << 32 | r.index;
	t = tally(rotor_traces(G.r), tag, &r);
	print_tally("coroutine", &t, &r);
	/* 0.6 s of CPU: >= 150 ticks at CONFIG_HZ 250, more at higher HZ. */
	assert_true(r.signals >= 50);
	assert_int_equal(r.dropped, 0);
	/* Every stored sample is in the tables, exactly once. */
	assert_int_equal(t.total, r.stored);
	assert_int_equal(t.untagged, 0);
	/* Most of the weight: the coroutine, inside the burner. */
	assert_true(t.tagged * 10 >= t.total * 8);
	assert_true(t.hit * 10 >= t.tagged * 8);
	/* The walk crossed target_deep's 8 KiB up to target_coro_entry:
	 * it used the declared stack, not just sp's page. */
	assert_true(t.deep * 10 >= t.tagged * 8);
}

static void test_thread(void **state)
{
	struct report r;
	struct tally t;

	(void)state;
	rig_open(&G);
	run_target(&G, "thread", "1000", NULL, &r);
	rotor_rotate(G.r, NULL, 0);
	t = tally(rotor_traces(G.r), CT_TAG_THREAD | r.tid, &r);
	print_tally("thread", &t, &r);
	assert_true(r.signals >= 50);
	assert_int_equal(t.total, r.stored);
	assert_true(t.tagged * 10 >= t.total * 8);
	assert_true(t.hit * 10 >= t.tagged * 8);
	/* ... here the thread's stack, from pthread_getattr_np. */
	assert_true(t.deep * 10 >= t.tagged * 8);
	/* The main thread's timer (start) and the burner's (lazy); the
	 * burner's went with its thread. */
	assert_int_equal(r.timers, 2);
	assert_int_equal(r.threads, 1);
}

/* The suspend event of the (only) coroutine, parked once. */
static uint64_t parked_word(struct rig *g, unsigned index)
{
	struct ctp_station *s = station(g, index);
	uint64_t word = UINT64_MAX;
	unsigned found = 0;

	for (unsigned k = 0; k < CTP_SLOTS; k++) {
		struct ctp_epoch *e = &s->slots[k];
		uint64_t seq = atomic_load(&e->seq);

		if (!seq || (seq & 1))
			continue;
		if (e->is_active) {
			uint64_t w;

			memcpy(&w, e->reserved + CTP_EPOCH_TRACE_OFFSET,
			       sizeof(w));
			assert_int_equal(w, 0); /* resumes carry no stack */
			continue;
		}
		memcpy(&word, e->reserved + CTP_EPOCH_TRACE_OFFSET,
		       sizeof(word));
		found++;
	}
	assert_int_equal(found, 1);
	return word;
}

static void test_parked(void **state)
{
	const struct traceset_entry *e;
	struct report r;
	uint64_t id;

	(void)state;
	rig_open(&G);
	run_target(&G, "coro", "1000", "1", &r);
	id = parked_word(&G, r.index);
	print_message("parked trace id 0x%llx\n", (unsigned long long)id);
	assert_true(id > CT_DROPPED_TRACE_ID);
	rotor_rotate(G.r, NULL, 0);
	e = traceset_find(rotor_traces(G.r), id);
	assert_non_null(e);
	assert_int_equal(e->weight, 0);
	assert_true(e->hits >= 1);
	assert_true(e->nframes >= 2);
	/* frames[0] is the return address into the suspending function. */
	assert_true(e->frames[0] >= r.park_lo && e->frames[0] < r.park_hi);
	/* No tag: many coroutines parked at one place share the trace. */
	for (uint32_t k = 0; k < e->nframes; k++)
		assert_false(CT_TAG_IS(e->frames[k]));
}

static void test_no_parked(void **state)
{
	struct report r;

	(void)state;
	rig_open(&G);
	run_target(&G, "coro", NULL, NULL, &r);
	assert_int_equal(r.hz, 0);
	assert_int_equal(r.signals, 0);
	assert_int_equal(parked_word(&G, r.index), 0);
	rotor_rotate(G.r, NULL, 0);
	assert_int_equal(rotor_traces(G.r)->n, 0);
}

static void test_bad_env(void **state)
{
	static const char *const bad[] = {"0",	"10001", "abc", "",
					  "5x", "-5",	 " 5"};
	struct report r;

	(void)state;
	rig_open(&G);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		run_target(&G, "idle", bad[i], NULL, &r);
		assert_int_equal(r.hz, 0);
		assert_int_equal(r.timers, 0);
	}
	/* And a good one, for contrast. */
	run_target(&G, "idle", "10000", NULL, &r);
	assert_int_equal(r.hz, 10000);
	assert_int_equal(r.timers, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_coroutine, teardown),
		cmocka_unit_test_teardown(test_thread, teardown),
		cmocka_unit_test_teardown(test_parked, teardown),
		cmocka_unit_test_teardown(test_no_parked, teardown),
		cmocka_unit_test_teardown(test_bad_env, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
