/*
 * test-sampler-stress: the sampler firing while threads resume and suspend
 * coroutines (each suspend storing its parked stack), while threads come
 * and go, the sampler is stopped and started over and over, and the engine
 * side rotates the CallTrace tables in a loop -- all in one process, so the
 * 'concurrency' suite's TSan build sees every side.
 *
 * Concept.  Worker threads live 50..250 ms each and are replaced as they
 * exit, so timers are created lazily, deleted by the exit destructor, and
 * deleted by stop under threads that are busy or blocked.  A worker loops
 * over its coroutines: resume, burn a little CPU, suspend from a nested
 * function (the parked-stack put, which SIGPROF interrupts: a put nested in
 * a put on one thread).  The main thread toggles the sampler every few ms;
 * a rotor thread rotates every 2 ms and books each union.  Required:
 *
 *   - exact books: the weight collected with a tag frame == the samples the
 *     sampler stored, signals == stored + dropped, and the region's dropped
 *     weight == the samples dropped (parked stacks weigh 0, so they never
 *     add CPU weight: every trace without a tag has weight 0);
 *   - every tag names a station of the region (CT_TAG_CORO) or a thread
 *     of this test (CT_TAG_THREAD); no other frame looks like a tag;
 *   - no timer leaks: none alive once stopped and joined, and
 *     /proc/self/timers (when the kernel has it) lists none;
 *   - no thread ever went without a timer for want of a slot or a
 *     timer_create failure.
 *
 * SAMPLER_STRESS_SECONDS (default 3) sets the load duration.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <sys/syscall.h>

#include "../common/itest.h"
#include "corotop/calltrace.h"
#include "corotop/probe.h"
#include "engine/ctp/region.h"
#include "engine/calltrace/rotor.h"

#define WORKERS 4
#define CORO_PER_WORKER 3
#define MAX_TIDS 4096

struct books {
	uint64_t tagged_weight, untagged_traces, parked_nonzero;
	uint64_t bad_tag, tag_inside, unknown_tid, traces, rotations;
	uint64_t coro_weight, thread_weight;
};

struct worker {
	pthread_t th;
	uint64_t lifetime_ns;
	_Atomic bool done;
	bool used;
	uint64_t transitions;
};

static struct {
	struct region reg;
	struct rotor *r;
	struct books b;
	/* Thread ids this test ever ran, for checking THREAD tags. */
	pthread_mutex_t tids_mu;
	uint64_t tids[MAX_TIDS];
	size_t ntids;
	_Atomic bool stop_rotor;
	_Atomic bool stop_workers;
} S;

/* Per thread: the burners' result, kept so the loop is not optimized out. */
static __thread volatile uint64_t sink;

static double stress_seconds(void)
{
	const char *s = getenv("SAMPLER_STRESS_SECONDS");
	double v = s ? atof(s) : 0;

	return v > 0 ? v : 3.0;
}

static void tid_add(uint64_t tid)
{
	pthread_mutex_lock(&S.tids_mu);
	if (S.ntids < MAX_TIDS)
		S.tids[S.ntids++] = tid;
	pthread_mutex_unlock(&S.tids_mu);
}

static bool tid_known(uint64_t tid)
{
	bool found = false;

	pthread_mutex_lock(&S.tids_mu);
	for (size_t i = 0; i < S.ntids && !found; i++)
		found = S.tids[i] == tid;
	pthread_mutex_unlock(&S.tids_mu);
	return found;
}

/* ---- the rotor side ---- */

static void book(const struct traceset *ts)
{
	for (size_t i = 0; i < ts->n; i++) {
		const struct traceset_entry *e = &ts->e[i];
		uint64_t last;

		S.b.traces++;
		if (!e->nframes) {
			S.b.untagged_traces++;
			S.b.parked_nonzero += e->weight != 0;
			continue;
		}
		for (uint32_t k = 0; k + 1 < e->nframes; k++)
			S.b.tag_inside += CT_TAG_IS(e->frames[k]);
		last = e->frames[e->nframes - 1];
		if (!CT_TAG_IS(last)) {
			/* A parked stack: weight 0, always. */
			S.b.untagged_traces++;
			S.b.parked_nonzero += e->weight != 0;
			continue;
		}
		S.b.tagged_weight += e->weight;
		if ((last & CT_TAG_MASK) == CT_TAG_CORO) {
			S.b.coro_weight += e->weight;
			S.b.bad_tag +=
				CT_TAG_CORO_INDEX(last) >= S.reg.stations;
		} else if ((last & CT_TAG_MASK) == CT_TAG_THREAD) {
			S.b.thread_weight += e->weight;
			S.b.unknown_tid += !tid_known(CT_TAG_THREAD_TID(last));
		} else {
			S.b.bad_tag++;
		}
	}
}

static void rotate_and_book(void)
{
	rotor_rotate(S.r, NULL, 0);
	book(rotor_traces(S.r));
	S.b.rotations++;
}

static void *rotor_main(void *arg)
{
	(void)arg;
	while (!atomic_load_explicit(&S.stop_rotor, memory_order_acquire)) {
		rotate_and_book();
		it_sleep_us(2000);
	}
	return NULL;
}

/* ---- the workers ---- */

__attribute__((noinline)) void stress_burn(unsigned rounds);
__attribute__((noinline)) void stress_park(struct corotop_coro *c);

__attribute__((noinline)) void stress_burn(unsigned rounds)
{
	uint64_t x = sink;

	for (unsigned i = 0; i < rounds; i++)
		x = x * 6364136223846793005ull + 1442695040888963407ull;
	sink = x;
	__asm__ volatile("" ::: "memory");
}

/* The suspend, one frame down: its parked stack holds this function. */
__attribute__((noinline)) void stress_park(struct corotop_coro *c)
{
	corotop_coro_suspend(c, (uint64_t)(uintptr_t)stress_park);
	__asm__ volatile("" ::: "memory");
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct corotop_coro c[CORO_PER_WORKER];
	uint64_t end = it_now() + w->lifetime_ns;

	tid_add((uint64_t)syscall(SYS_gettid));
	for (unsigned k = 0; k < CORO_PER_WORKER; k++)
		corotop_coro_open(&c[k], 0);
	while (it_now() < end &&
	       !atomic_load_explicit(&S.stop_workers, memory_order_relaxed))
		for (unsigned k = 0; k < CORO_PER_WORKER; k++) {
			corotop_coro_resume(&c[k], k + 1);
			stress_burn(2000 + 500 * k);
			stress_park(&c[k]);
			w->transitions += 2;
		}
	for (unsigned k = 0; k < CORO_PER_WORKER; k++)
		corotop_coro_close(&c[k]);
	atomic_store_explicit(&w->done, true, memory_order_release);
	return NULL;
}

static void worker_spawn(struct worker *w, uint64_t *rng)
{
	*rng = *rng * 6364136223846793005ull + 1442695040888963407ull;
	w->lifetime_ns = (50 + (*rng >> 33) % 200) * 1000000ull;
	w->transitions = 0;
	atomic_store_explicit(&w->done, false, memory_order_relaxed);
	assert_int_equal(pthread_create(&w->th, NULL, worker_main, w), 0);
	w->used = true;
}

/* Timers /proc/self/timers lists for this process; -1 when unreadable. */
static int proc_timers(void)
{
	FILE *f = fopen("/proc/self/timers", "r");
	char line[256];
	int n = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		n += strncmp(line, "ID:", 3) == 0;
	fclose(f);
	return n;
}

static void test_sampler_stress(void **state)
{
	struct worker w[WORKERS];
	struct corotop_sampler_stats st;
	struct rotor_stats rs;
	struct rotor_config cfg;
	pthread_t rot;
	char err[512], max[16];
	uint64_t end, rng = 42, spawned = 0, toggles = 0, transitions = 0;
	int timers_left;

	(void)state;
	memset(w, 0, sizeof(w));
	pthread_mutex_init(&S.tids_mu, NULL);
	tid_add((uint64_t)syscall(SYS_gettid));
	assert_true(
		region_create(&S.reg, 64, CTP_HX_FREELIST, err, sizeof(err)));
	rotor_config_defaults(&cfg);
	cfg.max_traces = 16384;
	cfg.pool_frames = 16384 * 16;
	S.r = rotor_create(S.reg.dir, S.reg.hdr, &cfg, err, sizeof(err));
	if (!S.r)
		fail_msg("rotor_create: %s", err);
	snprintf(max, sizeof(max), "%u", S.reg.stations);
	setenv(CTP_ENV_SHM, S.reg.shm_path, 1);
	setenv(CTP_ENV_SOCK, S.reg.sock_path, 1);
	setenv(CTP_ENV_MAX, max, 1);
	setenv("COROTOP_PARKED_STACKS", "1", 1);
	unsetenv("COROTOP_SAMPLE_HZ");
	assert_true(corotop_probe_init());
	assert_int_equal(corotop_sampler_start(1000), 0);
	assert_int_equal(corotop_sampler_start(1000), -EALREADY);
	assert_int_equal(pthread_create(&rot, NULL, rotor_main, NULL), 0);

	end = it_now() + (uint64_t)(stress_seconds() * 1e9);
	for (unsigned i = 0; i < WORKERS; i++, spawned++)
		worker_spawn(&w[i], &rng);
	while (it_now() < end) {
		for (unsigned i = 0; i < WORKERS; i++)
			if (atomic_load_explicit(&w[i].done,
						 memory_order_acquire)) {
				pthread_join(w[i].th, NULL);
				transitions += w[i].transitions;
				worker_spawn(&w[i], &rng);
				spawned++;
			}
		/* Mostly on: toggle every 5..20 ms, off for 1..4 ms. */
		it_sleep_us(5000 + (unsigned)(rng >> 40) % 15000);
		corotop_sampler_stop();
		it_sleep_us(1000 + (unsigned)(rng >> 20) % 3000);
		assert_int_equal(corotop_sampler_start(1000), 0);
		toggles++;
	}
	corotop_sampler_stop();
	atomic_store_explicit(&S.stop_workers, true, memory_order_relaxed);
	for (unsigned i = 0; i < WORKERS; i++) {
		pthread_join(w[i].th, NULL);
		transitions += w[i].transitions;
	}
	atomic_store_explicit(&S.stop_rotor, true, memory_order_release);
	pthread_join(rot, NULL);
	/* The old ACTIVE, then STANDBY: everything is collected. */
	for (int i = 0; i < 3; i++)
		rotate_and_book();

	corotop_sampler_stats(&st);
	rotor_stats(S.r, &rs);
	timers_left = proc_timers();
	print_message(
		"threads %llu, toggles %llu, transitions %llu; "
		"signals %llu stored %llu dropped %llu overruns %llu "
		"timers %llu no_timer %llu alive %u (proc %d); "
		"collected %llu traces, tagged weight %llu (coroutine "
		"%llu, thread %llu), untagged traces %llu; rotations "
		"%llu, quarantined %llu, region drops full %llu raced "
		"%llu no-slot %llu\n",
		(unsigned long long)spawned, (unsigned long long)toggles,
		(unsigned long long)transitions, (unsigned long long)st.signals,
		(unsigned long long)st.stored, (unsigned long long)st.dropped,
		(unsigned long long)st.overruns, (unsigned long long)st.timers,
		(unsigned long long)st.no_timer, st.threads, timers_left,
		(unsigned long long)S.b.traces,
		(unsigned long long)S.b.tagged_weight,
		(unsigned long long)S.b.coro_weight,
		(unsigned long long)S.b.thread_weight,
		(unsigned long long)S.b.untagged_traces,
		(unsigned long long)S.b.rotations,
		(unsigned long long)rs.quarantined,
		(unsigned long long)rs.drop_full,
		(unsigned long long)rs.drop_raced,
		(unsigned long long)rs.drop_no_slot);
	assert_true(st.signals > 0);
	assert_true(S.b.coro_weight > 0);
	assert_true(S.b.untagged_traces > 0); /* parked stacks were stored */
	assert_int_equal(st.signals, st.stored + st.dropped);
	assert_int_equal(S.b.tagged_weight, st.stored);
	assert_int_equal(rs.dropped_weight, st.dropped);
	assert_int_equal(S.b.parked_nonzero, 0);
	assert_int_equal(S.b.bad_tag, 0);
	assert_int_equal(S.b.tag_inside, 0);
	assert_int_equal(S.b.unknown_tid, 0);
	assert_int_equal(st.no_timer, 0);
	assert_int_equal(st.threads, 0);
	assert_true(timers_left <= 0);
	assert_true(st.timers >= spawned);

	corotop_probe_shutdown();
	rotor_destroy(S.r);
	region_finish(&S.reg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sampler_stress),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
