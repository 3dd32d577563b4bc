/*
 * sampler_overhead: what the CPU sampler costs a demo-like workload.
 *
 * The workload: W worker threads (default 2, one per core of the reference
 * machine), each running K ucontext coroutines round-robin on their own
 * 64 KiB stacks (declared with corotop_coro_set_stack, frame chains ending
 * at the entry), every run recorded through the real shared probe: resume,
 * a fixed amount of arithmetic in a noinline burner (about 20 us), suspend
 * from inside the coroutine, switch back.  One op = one coroutine run.
 * This is the demo's shape (M:N switches around CPU work) without its
 * sleeps and timers, so that ops/s measures CPU throughput only.
 *
 * The probe is attached to a cTP region and a CallTrace region created here
 * as the engine creates them; the tables are rotated between rounds, as the
 * engine would, and the rotation is not timed.
 *
 * Rounds alternate sampler off / on (corotop_sampler_start(1000): 1 kHz of
 * CPU time per thread; threads arm their timers lazily at their next
 * transition, as in a real target) while the workers keep running, so both
 * modes see the same machine; medians of each mode are compared:
 *
 *   ops_per_s       ops per wall-clock second (what a user sees);
 *   ops_per_cpu_s   ops per second of this process's CPU time -- the
 *                   sampler's cost (signal delivery, walk, put) is CPU time
 *                   of ours, while CPU taken by other processes on this
 *                   shared machine is not, so this one is the steadier.
 *
 *   sampler_overhead [ROUND_SECONDS [PAIRS [WORKERS [SNAP]]]]   (1.0 5 2 0)
 *
 * SNAP 1 also creates the snapshot ring (corotop/snapring.h), as the
 * engine does for --sample: each sample then copies registers, the frame
 * walk and up to 8 KiB of stack into it instead of a CallTrace put.  The
 * ring is not drained here (the engine's walks are measured by
 * bench/cfi_walk.c); writers lap it, which costs them nothing more.
 *
 * Target (issue 4): overhead <= 3% of throughput at 1 kHz per thread.
 *
 * The kernel checks CPU-time timers at its tick, so 1000 asked for is at
 * most CONFIG_HZ delivered (250 on the reference machine): the rounds
 * measure what asking for 1 kHz costs.  What a delivered 1 kHz would cost
 * is then put together from two measured parts:
 *
 *   handler_ns   time inside the handler per sample (walk and put), from
 *                the sampler's own counter over the "on" rounds;
 *   delivery_ns  a signal sent to this thread and returned from (tgkill,
 *                frame set-up, an empty SA_SIGINFO handler, sigreturn),
 *                timed over DELIVERY_LOOPS on a worker-free machine: an
 *                upper bound for the kernel side of a timer signal, which
 *                needs no syscall to be sent;
 *
 *   cost_1khz_pct = 1000 * (handler_ns + delivery_ns) / 1e9 * 100, the
 *   share of each thread's CPU second.  Cache and TLB disturbance of the
 *   interrupted code is not in it; the rounds above include it.
 */
#include "bench.h"

#include <stdatomic.h>
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <ucontext.h>

#include "engine/ctp/region.h"
#include "engine/calltrace/rotor.h"
#include "engine/calltrace/snapring.h"

#define MAX_WORKERS 8
#define CORO_PER_WORKER 8
#define STACK_SIZE (64u * 1024u)
#define BURN_ITERS 20000u
#define SAMPLE_HZ 1000u
#define DELIVERY_LOOPS 200000u

struct bcoro {
	ucontext_t ctx;
	struct corotop_coro probe;
	struct bworker *w;
	char *stack;
};

struct bworker {
	pthread_t th;
	ucontext_t host;
	struct bcoro co[CORO_PER_WORKER];
	struct bcoro *cur;
	_Atomic uint64_t ops; /* written by this worker only; relaxed */
	uint64_t sink;
};

static struct bworker workers[MAX_WORKERS];
static _Atomic bool stop;

__attribute__((noinline)) uint64_t bench_burn(uint64_t x);
__attribute__((noinline)) void bench_park(struct bcoro *c);

/* The CPU work of one run: a fixed number of dependent multiplies. */
__attribute__((noinline)) uint64_t bench_burn(uint64_t x)
{
	for (unsigned i = 0; i < BURN_ITERS; i++)
		x = x * 6364136223846793005ull + 1442695040888963407ull +
		    (x >> 31);
	return x;
}

/* Suspend on the coroutine's own stack, then switch to the host. */
__attribute__((noinline)) void bench_park(struct bcoro *c)
{
	corotop_coro_suspend(&c->probe, (uint64_t)(uintptr_t)bench_park);
	if (swapcontext(&c->ctx, &c->w->host) < 0)
		abort();
	BENCH_CLOBBER();
}

static void coro_entry(unsigned hi, unsigned lo)
{
	struct bcoro *c = (struct bcoro *)(uintptr_t)((uint64_t)hi << 32 | lo);

	for (;;) {
		c->w->sink = bench_burn(c->w->sink);
		bench_park(c);
	}
}

static void coro_init(struct bworker *w, struct bcoro *c)
{
	uint64_t self = (uint64_t)(uintptr_t)c;

	c->w = w;
	c->stack = mmap(NULL, STACK_SIZE, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	if (c->stack == MAP_FAILED || getcontext(&c->ctx) < 0)
		bench_die("coroutine stack");
	c->ctx.uc_stack.ss_sp = c->stack;
	c->ctx.uc_stack.ss_size = STACK_SIZE;
	c->ctx.uc_link = NULL;
	makecontext(&c->ctx, (void (*)(void))coro_entry, 2,
		    (unsigned)(self >> 32), (unsigned)self);
#if defined(__x86_64__)
	c->ctx.uc_mcontext.gregs[REG_RBP] = 0; /* end the frame chain */
#elif defined(__aarch64__)
	c->ctx.uc_mcontext.regs[29] = 0;
#endif
	corotop_coro_open(&c->probe, 0);
	corotop_coro_set_stack(&c->probe, c->stack, c->stack + STACK_SIZE);
}

static void *worker_main(void *arg)
{
	struct bworker *w = arg;
	uint64_t ops = 0;

	for (unsigned k = 0; k < CORO_PER_WORKER; k++)
		coro_init(w, &w->co[k]);
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		for (unsigned k = 0; k < CORO_PER_WORKER; k++) {
			struct bcoro *c = &w->co[k];

			corotop_coro_resume(&c->probe, k + 1);
			if (swapcontext(&w->host, &c->ctx) < 0)
				abort();
		}
		ops += CORO_PER_WORKER;
		/* relaxed: a counter the main thread reads as a statistic. */
		atomic_store_explicit(&w->ops, ops, memory_order_relaxed);
	}
	for (unsigned k = 0; k < CORO_PER_WORKER; k++) {
		corotop_coro_close(&w->co[k].probe);
		munmap(w->co[k].stack, STACK_SIZE);
	}
	return NULL;
}

static uint64_t total_ops(unsigned nw)
{
	uint64_t n = 0;

	for (unsigned i = 0; i < nw; i++)
		n += atomic_load_explicit(&workers[i].ops,
					  memory_order_relaxed);
	return n;
}

struct round {
	double ops_s, ops_cpu_s, others, signals_per_cpu_s;
};

static struct round measure(unsigned nw, double seconds)
{
	struct corotop_sampler_stats s0, s1;
	struct bench_load l;
	struct round r;
	uint64_t o0, o1, t0, t1, c0, c1;

	corotop_sampler_stats(&s0);
	bench_load_start(&l);
	o0 = total_ops(nw);
	t0 = clock_now_ns(CLOCK_MONOTONIC);
	c0 = clock_now_ns(CLOCK_PROCESS_CPUTIME_ID);
	bench_sleep_ns((uint64_t)(seconds * 1e9));
	o1 = total_ops(nw);
	t1 = clock_now_ns(CLOCK_MONOTONIC);
	c1 = clock_now_ns(CLOCK_PROCESS_CPUTIME_ID);
	corotop_sampler_stats(&s1);
	r.ops_s = (double)(o1 - o0) * 1e9 / (double)(t1 - t0);
	r.ops_cpu_s = (double)(o1 - o0) * 1e9 / (double)(c1 - c0);
	r.signals_per_cpu_s =
		(double)(s1.signals - s0.signals) * 1e9 / (double)(c1 - c0);
	r.others = bench_load_others(&l);
	return r;
}

static void on_usr2(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)si;
	(void)uc;
}

/* ns per signal sent to this thread and handled (empty handler). */
static double delivery_ns(void)
{
	struct sigaction sa, old;
	pid_t pid = getpid(), tid = (pid_t)syscall(SYS_gettid);
	uint64_t t0, t1;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_usr2;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGUSR2, &sa, &old))
		bench_die("sigaction: %s", strerror(errno));
	t0 = clock_now_ns(CLOCK_MONOTONIC);
	for (unsigned i = 0; i < DELIVERY_LOOPS; i++)
		syscall(SYS_tgkill, pid, tid, SIGUSR2);
	t1 = clock_now_ns(CLOCK_MONOTONIC);
	sigaction(SIGUSR2, &old, NULL);
	return (double)(t1 - t0) / DELIVERY_LOOPS;
}

static double median(double *v, size_t n)
{
	return bench_quantile(v, n, 0.5);
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 1.0;
	unsigned pairs = argc > 2 ? (unsigned)atoi(argv[2]) : 5;
	unsigned nw = argc > 3 ? (unsigned)atoi(argv[3]) : 2;
	bool snap = argc > 4 && atoi(argv[4]) != 0;
	struct snapring *ring = NULL;
	double off_s[64], on_s[64], off_c[64], on_c[64];
	struct rotor_config cfg;
	struct region reg;
	struct rotor *rot;
	char err[512];
	double m_off_s, m_on_s, m_off_c, m_on_c, ovh_s, ovh_c;
	int rc;

	if (seconds <= 0 || pairs < 1 || pairs > 64 || nw < 1 ||
	    nw > MAX_WORKERS)
		bench_die("usage: sampler_overhead [ROUND_SECONDS [PAIRS "
			  "[WORKERS]]] (0 < seconds, 1..64 pairs, 1..%d "
			  "workers)",
			  MAX_WORKERS);
	if (corotop_probe_live_)
		bench_die("unset CTP_SHM_PATH/CTP_SOCK_PATH/CTP_MAX_STATIONS");
	unsetenv("COROTOP_SAMPLE_HZ");
	unsetenv("COROTOP_PARKED_STACKS");
	if (!region_create(&reg, 256, CTP_HX_FREELIST, err, sizeof(err)))
		bench_die("region_create: %s", err);
	rotor_config_defaults(&cfg);
	rot = rotor_create(reg.dir, reg.hdr, &cfg, err, sizeof(err));
	if (!rot)
		bench_die("rotor_create: %s", err);
	if (snap) {
		ring = snapring_create(reg.dir, rotor_base(rot), 512, 50000000u,
				       err, sizeof(err));
		if (!ring)
			bench_die("snapring_create: %s", err);
	}
	bench_probe_env(reg.shm_path, reg.sock_path, reg.stations);
	bench_probe_attach();
	printf("sampler_overhead config round_s=%.2f pairs=%u workers=%u "
	       "coroutines_per_worker=%u burn_iters=%u hz=%u ncpu=%d "
	       "snapshots=%d\n",
	       seconds, pairs, nw, CORO_PER_WORKER, BURN_ITERS, SAMPLE_HZ,
	       bench_ncpu(), snap);
	for (unsigned i = 0; i < nw; i++)
		if (pthread_create(&workers[i].th, NULL, worker_main,
				   &workers[i]))
			bench_die("pthread_create failed");
	bench_sleep_ns(300000000u); /* warm up */
	for (unsigned p = 0; p < pairs; p++) {
		struct round off, on;

		rotor_rotate(rot, NULL, 0);
		off = measure(nw, seconds);
		rc = corotop_sampler_start(SAMPLE_HZ);
		if (rc)
			bench_die("corotop_sampler_start: %s", strerror(-rc));
		on = measure(nw, seconds);
		corotop_sampler_stop();
		off_s[p] = off.ops_s;
		off_c[p] = off.ops_cpu_s;
		on_s[p] = on.ops_s;
		on_c[p] = on.ops_cpu_s;
		printf("sampler_overhead round=%u off ops_per_s=%.0f "
		       "ops_per_cpu_s=%.0f others_cores=%.2f\n",
		       p, off.ops_s, off.ops_cpu_s, off.others);
		printf("sampler_overhead round=%u on ops_per_s=%.0f "
		       "ops_per_cpu_s=%.0f signals_per_cpu_s=%.0f "
		       "others_cores=%.2f\n",
		       p, on.ops_s, on.ops_cpu_s, on.signals_per_cpu_s,
		       on.others);
		fflush(stdout);
	}
	atomic_store_explicit(&stop, true, memory_order_relaxed);
	for (unsigned i = 0; i < nw; i++)
		pthread_join(workers[i].th, NULL);
	rotor_rotate(rot, NULL, 0);
	{
		struct corotop_sampler_stats st;
		struct rotor_stats rs;

		corotop_sampler_stats(&st);
		rotor_stats(rot, &rs);
		printf("sampler_overhead samples signals=%llu stored=%llu "
		       "dropped=%llu overruns=%llu timers=%llu "
		       "collected_weight=%llu traces=%llu\n",
		       (unsigned long long)st.signals,
		       (unsigned long long)st.stored,
		       (unsigned long long)st.dropped,
		       (unsigned long long)st.overruns,
		       (unsigned long long)st.timers,
		       (unsigned long long)rs.weight,
		       (unsigned long long)rs.traces);
	}
	m_off_s = median(off_s, pairs);
	m_on_s = median(on_s, pairs);
	m_off_c = median(off_c, pairs);
	m_on_c = median(on_c, pairs);
	ovh_s = 100.0 * (m_off_s - m_on_s) / m_off_s;
	ovh_c = 100.0 * (m_off_c - m_on_c) / m_off_c;
	printf("sampler_overhead median off_ops_per_s=%.0f on_ops_per_s=%.0f "
	       "overhead_pct=%.2f off_ops_per_cpu_s=%.0f "
	       "on_ops_per_cpu_s=%.0f overhead_cpu_pct=%.2f\n",
	       m_off_s, m_on_s, ovh_s, m_off_c, m_on_c, ovh_c);
	printf("sampler_overhead target overhead_pct=%.2f %s "
	       "overhead_cpu_pct=%.2f %s limit_pct=3.00\n",
	       ovh_s, ovh_s <= 3.0 ? "PASS" : "MISS", ovh_c,
	       ovh_c <= 3.0 ? "PASS" : "MISS");
	{
		struct corotop_sampler_stats st;
		double h, d;

		corotop_sampler_stats(&st);
		h = st.signals ? (double)st.handler_ns / (double)st.signals
			       : 0.0;
		d = delivery_ns();
		printf("sampler_overhead per_sample handler_ns=%.0f "
		       "delivery_ns=%.0f cost_1khz_pct=%.2f %s "
		       "limit_pct=3.00\n",
		       h, d, 1000.0 * (h + d) / 1e9 * 100.0,
		       1000.0 * (h + d) / 1e9 * 100.0 <= 3.0 ? "PASS" : "MISS");
	}
	if (ring) {
		struct snapreader_stats ss;

		snapreader_stats(snapring_reader(ring), &ss);
		printf("sampler_overhead snapshots head=%llu stored=%llu "
		       "busy=%llu\n",
		       (unsigned long long)ss.head,
		       (unsigned long long)ss.stored,
		       (unsigned long long)ss.busy);
	}
	corotop_probe_shutdown();
	snapring_destroy(ring);
	rotor_destroy(rot);
	region_finish(&reg);
	return 0;
}
