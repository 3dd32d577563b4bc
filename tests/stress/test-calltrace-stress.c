/*
 * test-calltrace-stress: CallTrace puts from SIGPROF handlers against an
 * engine rotating in a tight loop, with exact books.
 *
 * Concept.  Writer threads put stacks from their loops and from SIGPROF
 * handlers driven by per-thread timers (100 us), so puts nest inside puts on
 * the
 * same thread (ct-load.h).  The engine side rotates as fast as it can (with
 * random short pauses, so tables sometimes fill up and puts are dropped),
 * preserving a few hot ids every time.  Every stack carries a checksum and
 * names its (thread, stack); every put's weight is booked by the writer as
 * stored or dropped.  Required:
 *
 *   - every collected stack passes its checksum (no torn or mixed frames);
 *   - per (thread, stack): collected weight == put - dropped, so nothing is
 *     lost, counted twice, or attributed to another stack (an id collision
 *     would merge two stacks and break this);
 *   - in total: collected == put - dropped, and the region's dropped weight
 *     == what the writers saw dropped; hits == puts - drops;
 *   - a preserved id is in the next union, with the same stack.
 *
 *   mp        the writer is another process (ct-writer, real shared probe);
 *   killed    writers SIGKILLed at random moments, possibly inside a put:
 *             every rotation returns (the longest is printed, not
 *             compared: a rotation that hangs is caught by meson's
 *             timeout), and the dead writers' slots are reclaimed within
 *             a few rotations;
 *   inproc    writer threads and the rotor in one process, so TSan (the
 *             'concurrency' suite runs under it) sees both sides.
 *
 * CALLTRACE_STRESS_SECONDS (default 3) sets the load duration.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <sys/wait.h>

#include "../common/itest.h"
#include "../common/ct-load.h"
#include "engine/ctp/region.h"
#include "engine/calltrace/rotor.h"

#ifndef CT_WRITER
#error "CT_WRITER must name the ct-writer program"
#endif

#define PRESERVE_MAX 16

struct books {
	uint64_t got[CTL_MAX_THREADS][CTL_STACKS];
	uint64_t weight, hits, bad, traces;
	/* Ids to preserve at the next rotation, and those preserved at the
	 * last one (which must be in the next union). */
	uint64_t preserve[PRESERVE_MAX], check[PRESERVE_MAX];
	unsigned preserve_stack[PRESERVE_MAX], check_stack[PRESERVE_MAX];
	size_t npreserve, ncheck;
	uint64_t preserve_checked, preserve_lost;
	uint64_t longest_step_ns; /* printed, never asserted */
};

static double stress_seconds(void)
{
	const char *s = getenv("CALLTRACE_STRESS_SECONDS");
	double v = s ? atof(s) : 0;

	return v > 0 ? v : 3.0;
}

/*
 * Book one rotation's union.  Ids preserved by the rotation before it must
 * be in it (parked in STANDBY, or re-inserted into ACTIVE); then the ids
 * this rotation preserved become the next ones to check, and a few hot
 * stacks' ids are picked to preserve next.
 */
static void books_take(struct books *b, const struct traceset *ts,
		       bool check_preserved)
{
	for (size_t p = 0; p < b->ncheck && check_preserved; p++) {
		const struct traceset_entry *e = traceset_find(ts, b->check[p]);
		unsigned t, k;

		b->preserve_checked++;
		if (!e) {
			b->preserve_lost++;
			continue;
		}
		assert_true(ctl_decode(e->frames, e->nframes, &t, &k));
		assert_int_equal(t * CTL_STACKS + k, b->check_stack[p]);
	}
	memcpy(b->check, b->preserve, sizeof(b->check));
	memcpy(b->check_stack, b->preserve_stack, sizeof(b->check_stack));
	b->ncheck = b->npreserve;
	b->npreserve = 0;
	for (size_t i = 0; i < ts->n; i++) {
		const struct traceset_entry *e = &ts->e[i];
		unsigned t, k;

		if (!ctl_decode(e->frames, e->nframes, &t, &k)) {
			b->bad++;
			continue;
		}
		b->got[t][k] += e->weight;
		b->weight += e->weight;
		b->hits += e->hits;
		b->traces++;
		if (k < 4 && b->npreserve < PRESERVE_MAX) {
			b->preserve_stack[b->npreserve] = t * CTL_STACKS + k;
			b->preserve[b->npreserve++] = e->id;
		}
	}
}

struct rig {
	struct region reg;
	struct rotor *r;
};

static void rig_open(struct rig *g, uint32_t traces, unsigned timeout_ms)
{
	struct rotor_config cfg;
	char err[512];

	assert_true(
		region_create(&g->reg, 64, CTP_HX_FREELIST, err, sizeof(err)));
	rotor_config_defaults(&cfg);
	cfg.max_traces = traces;
	cfg.pool_frames = traces * 8;
	cfg.drain_timeout_ms = timeout_ms;
	g->r = rotor_create(g->reg.dir, g->reg.hdr, &cfg, err, sizeof(err));
	if (!g->r)
		fail_msg("rotor_create: %s", err);
}

static void rig_close(struct rig *g)
{
	rotor_destroy(g->r);
	region_finish(&g->reg);
}

/* One engine step: rotate (preserving), book, and pause 0..2 ms.  How long
 * it took is kept for the report, not compared with anything: a machine
 * that deschedules this thread for seconds makes a step that long. */
static void engine_step(struct rig *g, struct books *b, uint64_t *rng)
{
	struct rotor_stats st;
	uint64_t pres[PRESERVE_MAX];
	size_t np = b->npreserve;
	uint64_t t0 = it_now();
	bool ok;

	memcpy(pres, b->preserve, np * sizeof(*pres));
	ok = rotor_rotate(g->r, pres, np);
	rotor_stats(g->r, &st);
	/* Checked only while nothing was quarantined or skipped: then a
	 * preserved id may legitimately miss a union.  A rotation that
	 * collected nothing new still reports the preserved ids. */
	books_take(b, rotor_traces(g->r),
		   ok && st.quarantined == 0 && st.skipped == 0);
	if (it_now() - t0 > b->longest_step_ns)
		b->longest_step_ns = it_now() - t0;
	*rng = ctl_mix(*rng);
	if (*rng % 4 == 0)
		it_sleep_us((unsigned)(*rng >> 8) % 2000);
}

static void final_rotations(struct rig *g, struct books *b, uint64_t *rng)
{
	/* Three: the old ACTIVE, then anything quarantined, then STANDBY. */
	for (int i = 0; i < 4; i++)
		engine_step(g, b, rng);
}

static void check_books(struct rig *g, struct books *b, uint64_t put,
			uint64_t dropped, uint64_t puts, uint64_t drops,
			uint64_t expected[CTL_MAX_THREADS][CTL_STACKS])
{
	struct rotor_stats st;
	uint64_t mismatched = 0;

	rotor_stats(g->r, &st);
	print_message(
		"books: put %llu dropped %llu (%llu of %llu puts) "
		"collected %llu in %llu traces; rotations %llu waits "
		"%llu quarantined %llu late %llu skipped %llu "
		"reclaimed %llu; preserved ids checked %llu lost %llu; drops: "
		"full %llu raced %llu no-slot %llu; longest step %.1f ms\n",
		(unsigned long long)put, (unsigned long long)dropped,
		(unsigned long long)drops, (unsigned long long)puts,
		(unsigned long long)b->weight, (unsigned long long)b->traces,
		(unsigned long long)st.rotations, (unsigned long long)st.waits,
		(unsigned long long)st.quarantined, (unsigned long long)st.late,
		(unsigned long long)st.skipped,
		(unsigned long long)st.reclaimed,
		(unsigned long long)b->preserve_checked,
		(unsigned long long)b->preserve_lost,
		(unsigned long long)st.drop_full,
		(unsigned long long)st.drop_raced,
		(unsigned long long)st.drop_no_slot, b->longest_step_ns / 1e6);
	assert_int_equal(b->bad, 0);
	assert_int_equal(st.corrupt, 0);
	for (unsigned t = 0; t < CTL_MAX_THREADS; t++)
		for (unsigned k = 0; k < CTL_STACKS; k++)
			if (b->got[t][k] != expected[t][k]) {
				if (mismatched++ < 10)
					print_error("stack %u/%u: collected "
						    "%llu, expected %llu\n",
						    t, k,
						    (unsigned long long)
							    b->got[t][k],
						    (unsigned long long)
							    expected[t][k]);
			}
	assert_int_equal(mismatched, 0);
	assert_int_equal(b->weight, put - dropped);
	assert_int_equal(st.dropped_weight, dropped);
	assert_int_equal(st.dropped, drops);
	assert_int_equal(b->hits, puts - drops);
	assert_int_equal(b->preserve_lost, 0);
	/* How many rotations ran under the load depends on the machine's
	 * speed: printed above ("rotations"), not asserted. */
}

static uint64_t expected_mp[CTL_MAX_THREADS][CTL_STACKS];

static pid_t spawn_writer(struct rig *g, unsigned threads, double seconds,
			  unsigned seed, const char *report)
{
	char max[16], th[16], secs[32], sd[16];
	pid_t pid;

	snprintf(max, sizeof(max), "%u", g->reg.stations);
	snprintf(th, sizeof(th), "%u", threads);
	snprintf(secs, sizeof(secs), "%.3f", seconds);
	snprintf(sd, sizeof(sd), "%u", seed);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		setenv(CTP_ENV_SHM, g->reg.shm_path, 1);
		setenv(CTP_ENV_SOCK, g->reg.sock_path, 1);
		setenv(CTP_ENV_MAX, max, 1);
		execl(CT_WRITER, CT_WRITER, th, secs, "100", sd, report,
		      (char *)NULL);
		_exit(126);
	}
	return pid;
}

static void test_mp_exact(void **state)
{
	static struct books b;
	struct rig g;
	char report[512], line[128];
	unsigned long long put = 0, dropped = 0, puts = 0, drops = 0,
			   unattached = 0, signals = 0, nested = 0;
	uint64_t rng = 7;
	int status = 0;
	pid_t pid;
	FILE *f;

	(void)state;
	memset(&b, 0, sizeof(b));
	memset(expected_mp, 0, sizeof(expected_mp));
	rig_open(&g, 2048, 200);
	snprintf(report, sizeof(report), "%s/report", g.reg.dir);
	pid = spawn_writer(&g, 4, stress_seconds(), 11, report);
	while (waitpid(pid, &status, WNOHANG) == 0)
		engine_step(&g, &b, &rng);
	final_rotations(&g, &b, &rng);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	f = fopen(report, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		unsigned t, k;
		unsigned long long e;

		if (sscanf(line, "T %llu %llu %llu %llu %llu %llu %llu", &put,
			   &dropped, &puts, &drops, &unattached, &signals,
			   &nested) == 7)
			continue;
		assert_int_equal(sscanf(line, "S %u %u %llu", &t, &k, &e), 3);
		assert_true(t < CTL_MAX_THREADS && k < CTL_STACKS);
		expected_mp[t][k] = e;
	}
	fclose(f);
	unlink(report);
	print_message("mp: %llu signals in the writer, %llu of them inside a "
		      "put\n",
		      signals, nested);
	assert_int_equal(unattached, 0);
	assert_true(signals > 0);
	check_books(&g, &b, put, dropped, puts, drops, expected_mp);
	rig_close(&g);
}

static void test_killed_writers(void **state)
{
	static struct books b;
	struct rig g;
	char report[512];
	uint64_t rng = 99;

	(void)state;
	memset(&b, 0, sizeof(b));
	rig_open(&g, 2048, 50);
	snprintf(report, sizeof(report), "%s/report", g.reg.dir);
	for (unsigned round = 0; round < 5; round++) {
		uint64_t end = it_now() + 100000000ull +
			       (ctl_mix(rng) % 200) * 1000000ull;
		int status;
		pid_t pid = spawn_writer(&g, 3, 30, round, report);

		while (it_now() < end)
			engine_step(&g, &b, &rng);
		kill(pid, SIGKILL);
		assert_int_equal(waitpid(pid, &status, 0), pid);
		assert_true(WIFSIGNALED(status));
	}
	/* Every table is retired once within three rotations, and a slot
	 * of a dead writer holding it is reclaimed then. */
	for (int i = 0; i < 4; i++) {
		assert_true(rotor_rotate(g.r, NULL, 0));
		books_take(&b, rotor_traces(g.r), false);
	}
	assert_string_equal(rotor_warning(g.r), "");
	{
		struct ct_slot *slots =
			(struct ct_slot *)(void *)((char *)rotor_base(g.r) +
						   CT_HEADER_SIZE);
		struct rotor_stats st;
		unsigned held = 0;

		rotor_stats(g.r, &st);
		for (unsigned i = 0; i < CT_SLOTS; i++) {
			uint64_t w = atomic_load(&slots[i].word);

			if (atomic_load(&slots[i].refs) &&
			    CT_ROLE_INDEX(w) != st.active)
				held++;
		}
		print_message("killed: reclaimed %llu slots, quarantined "
			      "%llu, late %llu, bad stacks %llu, longest "
			      "step %.1f ms\n",
			      (unsigned long long)st.reclaimed,
			      (unsigned long long)st.quarantined,
			      (unsigned long long)st.late,
			      (unsigned long long)b.bad,
			      b.longest_step_ns / 1e6);
		assert_int_equal(held, 0);
	}
	assert_int_equal(b.bad, 0);
	rig_close(&g);
}

static uint64_t expected_in[CTL_MAX_THREADS][CTL_STACKS];

static void test_inproc(void **state)
{
	static struct books b;
	static struct ctl_load load;
	struct ctl_totals s;
	struct rig g;
	char max[16];
	uint64_t rng = 3;

	(void)state;
	memset(&b, 0, sizeof(b));
	rig_open(&g, 2048, 500);
	snprintf(max, sizeof(max), "%u", g.reg.stations);
	setenv(CTP_ENV_SHM, g.reg.shm_path, 1);
	setenv(CTP_ENV_SOCK, g.reg.sock_path, 1);
	setenv(CTP_ENV_MAX, max, 1);
	assert_true(corotop_probe_init());
	assert_true(ctl_start(&load, 3, stress_seconds(), 100, 5));
	while (it_now() < load.end_ns)
		engine_step(&g, &b, &rng);
	ctl_join(&load);
	final_rotations(&g, &b, &rng);
	corotop_probe_shutdown();
	s = ctl_totals(&load);
	print_message("inproc: %llu signals, %llu of them inside a put\n",
		      (unsigned long long)s.signals,
		      (unsigned long long)s.nested);
	assert_int_equal(s.unattached, 0);
	for (unsigned t = 0; t < CTL_MAX_THREADS; t++)
		for (unsigned k = 0; k < CTL_STACKS; k++)
			expected_in[t][k] = t < load.threads
						    ? ctl_expected(&load, t, k)
						    : 0;
	check_books(&g, &b, s.put, s.dropped, s.puts, s.drops, expected_in);
	rig_close(&g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mp_exact),
		cmocka_unit_test(test_killed_writers),
		cmocka_unit_test(test_inproc),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
