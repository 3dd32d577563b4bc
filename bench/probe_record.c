/*
 * probe_record: what one corotop_coro_record() costs the traced program.
 *
 * Every case runs the same measurement twice:
 *   batch  time BATCH records in a row with clock_gettime around the batch,
 *          BATCHES times; the median and p99 of the per-batch averages are
 *          the headline numbers (the two clock reads add < 0.05 ns/record);
 *   call   time single records with serialized rdtsc/rdtscp, CALLS times,
 *          minus the median cost of an empty rdtsc pair.
 *
 * Cases, all in this one process so they share the machine state:
 *   untraced      no CTP_* environment: the inline wrapper's branch and
 *                 corotop_coro_note_ (a coarse clock read and the stores
 *                 that keep the transition in the struct, for the census);
 *   clock         the floor: one clock_gettime(CLOCK_MONOTONIC), which every
 *                 traced record has to make for its timestamp;
 *   clock-coarse  one clock_gettime(CLOCK_MONOTONIC_COARSE): the untraced
 *                 record's clock;
 *   gettid        one gettid syscall and
 *   fence         one seq_cst fence: the two costs the upstream SDKs pay per
 *                 event and the corotop probe avoids;
 *   upstream      a reproduction of the upstream SDK write (odd seq, payload
 *                 with a gettid syscall, even seq, seq_cst fence, sleeping
 *                 check) into a private station;
 *   traced        the real probe, attached to an in-process engine that owns
 *                 the region and harvests it concurrently, its threads
 *                 pinned to the last CPU and the writer to CPU 0 (two
 *                 processes on two cores); the engine as it ships: default
 *                 pacing, dirty hint, and the asymmetric fence when the
 *                 kernel has membarrier GLOBAL_EXPEDITED;
 *   traced-flat   the same with scan_interval_us = 0;
 *   traced-nomb   engine config no_membarrier: the probe issues a seq_cst
 *                 fence after every record and is never sent an IPI;
 *   traced-nodirty  engine config advertise_dirty = false: full scans only, so
 *                 membarrier runs only when the engine goes to sleep;
 *   traced-ct     the defaults plus a CallTrace region next to the cTP
 *                 region (created here as the engine would, unless the
 *                 engine already announced one), so the probe attaches to
 *                 it: what a record costs when stacks can be stored (the
 *                 parked stack captured at each suspend, when enabled).
 *                 Half of the records are suspends.
 *   untraced-switch, traced-pair, traced-switch
 *                 a switch between two coroutines, as libcorotop-preload
 *                 records one: two records (suspend one, resume the other:
 *                 traced-pair, two clock reads) or one corotop_coro_switch_
 *                 (one clock read); their numbers are per switch, not per
 *                 record.  Target (issue 15): a switch adds at most one
 *                 clock read + 15 ns.
 *   traced-switch-saved
 *                 traced-switch, then corotop_coro_set_saved for the side
 *                 that suspended, as libcorotop-preload does after a Boost
 *                 fcontext switch: its difference is what publishing the
 *                 saved fcontext costs a switch (set_saved_ns).
 * The writer records flat out into one station, the worst case for
 * contention with the harvester.  Traced lines also report the function-
 * call IPIs the writer's CPU received per second (membarrier is delivered
 * that way) and the CPU other processes used meanwhile (others_cores).
 *
 * Per-call numbers are limited by the TSC's granularity, printed as
 * resolution_ns (about 10 ns on the KVM guest of docs/PERFORMANCE.md);
 * the batch numbers are the precise ones.
 *
 * `probe_record hub [STATIONS]` runs only clock, traced, traced-switch and
 * the same two with the engine made but never started (-held: nothing
 * harvests, so nothing but the record varies), then, where the probe has
 * hub rings (issue 27), the four again (-hub) with the recording
 * coroutine (the switch's `coro` side, as a thread's root under the
 * preload) opened with COROTOP_CORO_HUB, so that it writes a
 * hub_depth-deep ring (1024 epochs here) instead of depth (64).  Each
 * line says whether the station carries CTP_STX_HUB.  The mode
 * builds against a probe from before hub rings too (no hub cases then),
 * for a before/after comparison of the record path.  STATIONS (16) sizes
 * the region: above 131,072 the engine leaves no room for hubs (1 GiB
 * budget), so the normal stations' rings lie 64 epochs apart as before
 * hub rings, not 1024.
 *
 * Target (from the issue): traced median <= clock median + 5 ns.
 * Build against the shared probe (what programs normally link) and, as
 * probe_record_static, against the static archive.
 */
#define _GNU_SOURCE
#include "bench.h"

#include <fcntl.h>
#include <libgen.h>
#include <linux/membarrier.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "corotop/calltrace.h"
#include "engine/calltrace/rotor.h"

#define BATCH 1000u
#define BATCHES 3000u
#define CALLS 200000u
#define WARMUP 200000u

static double tsc_per_ns;
static double tsc_overhead; /* ticks of an empty rdtsc pair, median */
static double batch_ns[BATCHES];
static double call_ticks[CALLS];
static volatile uint64_t sink;
static struct corotop_coro coro, other;
static uint64_t counter;
/* corotop_coro_open_named's flags for `coro` in traced cases (hub mode). */
static unsigned coro_flags;
/* Traced cases with the engine made (the region, the probe attached) but
 * never started: nothing harvests, so the writer's cache lines are its own
 * and nothing else varies (hub mode's -held cases). */
static bool engine_held;
/* The traced cases' region: stations (hub mode's second argument). */
static unsigned traced_stations = 16;

struct result {
	struct bench_dist batch; /* ns per record, per-batch averages */
	struct bench_dist call;	 /* ns per record, single calls */
	double others;		 /* cores other processes used meanwhile */
};

/* Time `stmt` both ways; `counter` advances once per statement. */
#define MEASURE(res, stmt)                                                     \
	do {                                                                   \
		struct bench_load l_;                                          \
		bench_load_start(&l_);                                         \
		for (unsigned w_ = 0; w_ < WARMUP; w_++) {                     \
			stmt;                                                  \
			BENCH_CLOBBER();                                       \
		}                                                              \
		for (unsigned b_ = 0; b_ < BATCHES; b_++) {                    \
			uint64_t t0_ = clock_now_ns(CLOCK_MONOTONIC);          \
			for (unsigned i_ = 0; i_ < BATCH; i_++) {              \
				stmt;                                          \
				BENCH_CLOBBER();                               \
			}                                                      \
			batch_ns[b_] =                                         \
				(double)(clock_now_ns(CLOCK_MONOTONIC) -       \
					 t0_) /                                \
				BATCH;                                         \
		}                                                              \
		for (unsigned c_ = 0; c_ < CALLS; c_++) {                      \
			uint64_t t0_ = bench_tsc_begin();                      \
			stmt;                                                  \
			uint64_t t1_ = bench_tsc_end();                        \
			call_ticks[c_] = (double)(t1_ - t0_);                  \
		}                                                              \
		result_fill(&(res));                                           \
		(res).others = bench_load_others(&l_);                         \
	} while (0)

/* One record through the public inline wrapper, alternating the state. */
__attribute__((always_inline)) static inline void record_one(void)
{
	uint64_t k = counter++;

	corotop_coro_record(&coro, (int)(k & 1), k);
}

/* A switch as two records: one coroutine suspends, the other resumes. */
__attribute__((always_inline)) static inline void pair_one(void)
{
	uint64_t k = counter++;
	struct corotop_coro *from = k & 1 ? &other : &coro;
	struct corotop_coro *to = k & 1 ? &coro : &other;

	corotop_coro_record(from, 0, k);
	corotop_coro_record(to, 1, k);
}

/* The same switch as one call. */
__attribute__((always_inline)) static inline void switch_one(void)
{
	uint64_t k = counter++;

	if (k & 1)
		corotop_coro_switch_(&other, &coro, k);
	else
		corotop_coro_switch_(&coro, &other, k);
}

/* The switch, then what libcorotop-preload tells the probe after a Boost
 * fcontext switch: where the suspended side's registers were saved
 * (corotop_coro_set_saved, on the side that resumed). */
__attribute__((always_inline)) static inline void switch_saved_one(void)
{
	uint64_t k = counter++;
	struct corotop_coro *from = k & 1 ? &other : &coro;

	corotop_coro_switch_(from, k & 1 ? &coro : &other, k);
	corotop_coro_set_saved(from, COROTOP_SAVED_FCONTEXT,
			       0x7f0000001000u + (k & 0xff0));
}

enum traced_op { OP_RECORD, OP_PAIR, OP_SWITCH, OP_SWITCH_SAVED };

static void result_fill(struct result *r)
{
	struct bench_dist d;

	r->batch = bench_dist(batch_ns, BATCHES);
	d = bench_dist(call_ticks, CALLS);
	/* Ticks of the call minus ticks of an empty pair, in ns. */
	r->call.min = (d.min - tsc_overhead) / tsc_per_ns;
	r->call.p50 = (d.p50 - tsc_overhead) / tsc_per_ns;
	r->call.p90 = (d.p90 - tsc_overhead) / tsc_per_ns;
	r->call.p99 = (d.p99 - tsc_overhead) / tsc_per_ns;
	r->call.max = (d.max - tsc_overhead) / tsc_per_ns;
	r->call.mean = (d.mean - tsc_overhead) / tsc_per_ns;
}

static void result_print(const char *name, const struct result *r,
			 const char *extra)
{
	printf("probe_record %-14s batch_median_ns=%.2f batch_p99_ns=%.2f "
	       "batch_min_ns=%.2f call_median_ns=%.1f call_p99_ns=%.1f "
	       "others_cores=%.2f%s%s\n",
	       name, r->batch.p50, r->batch.p99, r->batch.min, r->call.p50,
	       r->call.p99, r->others, extra ? " " : "", extra ? extra : "");
	fflush(stdout);
}

static void tsc_calibrate(void)
{
	uint64_t step = UINT64_MAX, prev = bench_tsc_raw();

	tsc_per_ns = bench_tsc_per_ns();
	/* Smallest non-zero step between two reads: the counter's
	 * granularity (some hypervisors advance it in coarse steps). */
	for (unsigned c = 0; c < 100000; c++) {
		uint64_t t = bench_tsc_raw();

		if (t != prev && t - prev < step)
			step = t - prev;
		prev = t;
	}
	for (unsigned c = 0; c < CALLS; c++) {
		uint64_t t0 = bench_tsc_begin();
		uint64_t t1 = bench_tsc_end();

		call_ticks[c] = (double)(t1 - t0);
	}
	tsc_overhead = bench_quantile(call_ticks, CALLS, 0.5);
	printf("probe_record tsc ticks_per_ns=%.3f empty_pair_ticks=%.0f "
	       "resolution_ns=%.1f\n",
	       tsc_per_ns, tsc_overhead, (double)step / tsc_per_ns);
}

/* ---- the upstream SDK's write, reproduced from UPSTREAM-FACTS.md ---- */

struct upstream {
	struct ctp_header *hdr;
	struct ctp_station *st;
	uint64_t count; /* events written; slot = count % 8 */
};

static struct upstream up;

__attribute__((noinline)) static void upstream_record(int is_active,
						      uint64_t addr)
{
	struct ctp_epoch *e = &up.st->slots[up.count++ % CTP_SLOTS];
	uint64_t old = atomic_load_explicit(&e->seq, memory_order_relaxed);
	uint32_t one = 1;

	atomic_store_explicit(&e->seq, old + 1, memory_order_release);
	e->addr = addr;
	e->tid = (uint64_t)syscall(SYS_gettid); /* every event */
	e->timestamp = clock_now_ns(CLOCK_MONOTONIC);
	e->is_active = (uint8_t)is_active;
	atomic_store_explicit(&e->seq, old + 2, memory_order_release);
	atomic_thread_fence(memory_order_seq_cst);
	if (atomic_load_explicit(&up.hdr->tracer_sleeping,
				 memory_order_relaxed) == 1 &&
	    atomic_compare_exchange_strong(&up.hdr->tracer_sleeping, &one, 0))
		sink++; /* would write '1' to the socket */
}

__attribute__((always_inline)) static inline void upstream_one(void)
{
	uint64_t k = counter++;

	upstream_record((int)(k & 1), k);
}

static void upstream_setup(void)
{
	/* A header and one station, as the SDK would see them mapped. */
	void *m = aligned_alloc(1024, ctp_region_size(1));

	if (!m)
		bench_die("out of memory");
	memset(m, 0, ctp_region_size(1));
	up.hdr = m;
	up.st = (struct ctp_station *)((char *)m + CTP_HEADER_SIZE);
}

/* ---- traced cases ---- */

static bool membarrier_available(void)
{
	long q = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);

	return q > 0 && (q & MEMBARRIER_CMD_GLOBAL_EXPEDITED);
}

/*
 * Announce a CallTrace region in the engine's cTP header, as the engine
 * does for a launched target, unless it already did.  Returns the rotor to
 * destroy after the probe detached (NULL when the engine owns one).
 */
static struct rotor *calltrace_attach(struct engine *e)
{
	const char *shm = engine_shm_path(e);
	struct rotor_config cfg;
	struct ctp_header *hdr;
	struct rotor *r = NULL;
	char dir[512], err[512];
	int fd = open(shm, O_RDWR | O_CLOEXEC);

	if (fd < 0)
		bench_die("open %s failed", shm);
	hdr = mmap(NULL, CTP_HEADER_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED,
		   fd, 0);
	close(fd);
	if (hdr == MAP_FAILED)
		bench_die("mmap %s failed", shm);
	if (ctp_calltrace_desc(hdr)->magic != CTP_CT_MAGIC) {
		snprintf(dir, sizeof(dir), "%s", shm);
		rotor_config_defaults(&cfg);
		r = rotor_create(dirname(dir), hdr, &cfg, err, sizeof(err));
		if (!r)
			bench_die("rotor_create: %s", err);
	}
	munmap(hdr, CTP_HEADER_SIZE);
	return r;
}

static void traced(const char *name, bool no_membarrier, bool advertise_dirty,
		   unsigned scan_interval_us, bool calltrace, enum traced_op op,
		   double *median_out)
{
	struct rotor *rot = NULL;
	struct engine_config cfg;
	struct engine_stats st;
	struct snapshot snap;
	struct result r;
	struct engine *e;
	char extra[384];
	uint64_t t_start, t_end, ipi0, ipi1;
	int stx_hub = -1; /* -1: this probe has no hub rings */

	engine_config_defaults(&cfg);
	cfg.stations = traced_stations;
	cfg.no_membarrier = no_membarrier;
	cfg.scan_interval_us = scan_interval_us;
	cfg.advertise_dirty = advertise_dirty;
	e = bench_engine_create(&cfg);
	if (calltrace)
		rot = calltrace_attach(e);
	bench_probe_attach();
	if (calltrace && !corotop_calltrace_put(NULL, 0, 0))
		bench_die("the probe did not attach the CallTrace region");
	/* The engine's threads inherit our CPU: start them on the last CPU
	 * and record from the first, like two processes on two cores. */
	bench_pin(bench_ncpu() - 1);
	if (!engine_held)
		bench_engine_start(e);
	bench_pin(0);
	if (coro_flags)
		corotop_coro_open_named(&coro, 1, NULL, coro_flags);
	else
		corotop_coro_open(&coro, 1);
	if (op != OP_RECORD)
		corotop_coro_open(&other, 2);
	if (!coro.station || (op != OP_RECORD && !other.station))
		bench_die("the probe gave the coroutines no station");
#ifdef CTP_STX_HUB
	stx_hub = !!(coro.station->ext.flags & CTP_STX_HUB);
#endif
	t_start = clock_now_ns(CLOCK_MONOTONIC);
	ipi0 = bench_ipis(0);
	if (op == OP_PAIR)
		MEASURE(r, pair_one());
	else if (op == OP_SWITCH)
		MEASURE(r, switch_one());
	else if (op == OP_SWITCH_SAVED)
		MEASURE(r, switch_saved_one());
	else
		MEASURE(r, record_one());
	ipi1 = bench_ipis(0);
	t_end = clock_now_ns(CLOCK_MONOTONIC);
	corotop_coro_close(&coro);
	if (op != OP_RECORD)
		corotop_coro_close(&other);
	engine_stop(e);
	engine_stats(e, &st);
	snapshot_init(&snap);
	engine_snapshot(e, &snap);
	snprintf(extra, sizeof(extra),
		 "fence=%s dirty_hint=%d scan_interval_us=%u "
		 "writer_cpu_ipis_per_s=%.0f engine_harvested=%llu "
		 "engine_lost=%llu engine_scans=%llu engine_sleeps=%llu "
		 "stx_hub=%d engine=%s",
		 (!no_membarrier && membarrier_available()) ? "membarrier"
							    : "seq_cst",
		 advertise_dirty, scan_interval_us,
		 (double)(ipi1 - ipi0) * 1e9 / (double)(t_end - t_start),
		 (unsigned long long)snap.t.events,
		 (unsigned long long)snap.t.lost, (unsigned long long)st.scans,
		 (unsigned long long)st.sleeps, stx_hub,
		 engine_held ? "held" : "running");
	result_print(name, &r, extra);
	snapshot_finish(&snap);
	corotop_probe_shutdown();
	rotor_destroy(rot);
	engine_destroy(e);
	*median_out = r.batch.p50;
}

/*
 * Hub mode: a record and a switch into a normal station and into a hub's
 * (COROTOP_CORO_HUB), the engine as it ships.  The hub cases run only
 * where the probe has the flag.
 */
static void hub_mode(void)
{
	/* clock, then per station kind: traced, traced-switch, and the same
	 * two with the engine held. */
	static const struct {
		const char *name;
		enum traced_op op;
		bool held;
	} cases[] = {
		{"traced", OP_RECORD, false},
		{"traced-switch", OP_SWITCH, false},
		{"traced-held", OP_RECORD, true},
		{"traced-switch-held", OP_SWITCH, true},
	};
	enum { NCASES = sizeof(cases) / sizeof(cases[0]) };
	double med[2][NCASES];
	unsigned kinds = 1;
	struct result r;
	char name[64];

	MEASURE(r, sink += clock_now_ns(CLOCK_MONOTONIC));
	result_print("clock", &r, NULL);
#ifdef COROTOP_CORO_HUB
	kinds = 2;
#endif
	for (unsigned k = 0; k < kinds; k++) {
#ifdef COROTOP_CORO_HUB
		coro_flags = k ? COROTOP_CORO_HUB : 0;
#endif
		for (unsigned c = 0; c < NCASES; c++) {
			engine_held = cases[c].held;
			snprintf(name, sizeof(name), "%s%s", cases[c].name,
				 k ? "-hub" : "");
			traced(name, false, true, 500, false, cases[c].op,
			       &med[k][c]);
		}
	}
	coro_flags = 0;
	engine_held = false;
	printf("probe_record hub_mode clock_median=%.2f", r.batch.p50);
	for (unsigned k = 0; k < kinds; k++)
		for (unsigned c = 0; c < NCASES; c++)
			printf(" %s%s=%.2f", cases[c].name, k ? "-hub" : "",
			       med[k][c]);
	for (unsigned c = 0; c < NCASES && kinds == 2; c++)
		printf(" %s_hub_minus_normal=%.2f", cases[c].name,
		       med[1][c] - med[0][c]);
	printf("%s\n", kinds == 2 ? "" : " hub=unsupported");
}

int main(int argc, char **argv)
{
	struct result r;
	double clock_med, coarse_med, traced_med, flat_med, nomb_med,
		nodirty_med, ct_med, pair_med, switch_med, switch_saved_med,
		untraced_med, untraced_switch_med;
	bool hub = argc > 1 && !strcmp(argv[1], "hub");

	if ((argc > 1 && !hub) || argc > 3)
		bench_die("usage: probe_record [hub [STATIONS]]");
	if (argc > 2)
		traced_stations = (unsigned)strtoul(argv[2], NULL, 10);
	if (corotop_probe_live_)
		bench_die("unset CTP_SHM_PATH/CTP_SOCK_PATH/CTP_MAX_STATIONS: "
			  "the untraced case needs a detached probe");
	printf("probe_record config batch=%u batches=%u calls=%u mode=%s "
	       "stations=%u\n",
	       BATCH, BATCHES, CALLS, hub ? "hub" : "all", traced_stations);
	bench_pin(0);
	tsc_calibrate();
	if (hub) {
		hub_mode();
		return 0;
	}

	corotop_coro_open(&coro, 1); /* untraced: no station */
	MEASURE(r, record_one());
	result_print("untraced", &r, NULL);
	untraced_med = r.batch.p50;

	corotop_coro_open(&other, 2);
	MEASURE(r, switch_one());
	result_print("untraced-switch", &r, NULL);
	untraced_switch_med = r.batch.p50;
	corotop_coro_close(&other);
	corotop_coro_close(&coro);

	MEASURE(r, sink += clock_now_ns(CLOCK_MONOTONIC));
	result_print("clock", &r, NULL);
	clock_med = r.batch.p50;

	MEASURE(r, sink += clock_now_ns(CLOCK_MONOTONIC_COARSE));
	result_print("clock-coarse", &r, NULL);
	coarse_med = r.batch.p50;

	MEASURE(r, sink += (uint64_t)syscall(SYS_gettid));
	result_print("gettid", &r, NULL);

	MEASURE(r, atomic_thread_fence(memory_order_seq_cst));
	result_print("fence", &r, NULL);

	upstream_setup();
	MEASURE(r, upstream_one());
	result_print("upstream", &r, NULL);

	/* The engine as it ships: dirty hint, asymmetric fence. */
	traced("traced", false, true, 500, false, OP_RECORD, &traced_med);
	traced("traced-flat", false, true, 0, false, OP_RECORD, &flat_med);
	/* The probe fences itself; the engine never IPIs it. */
	traced("traced-nomb", true, true, 500, false, OP_RECORD, &nomb_med);
	/* Asymmetric fence, but no dirty scans (membarrier only at sleep). */
	traced("traced-nodirty", false, false, 500, false, OP_RECORD,
	       &nodirty_med);
	/* With a CallTrace region the probe can store stacks. */
	traced("traced-ct", false, true, 500, true, OP_RECORD, &ct_med);
	/* A switch: two records, then one call. */
	traced("traced-pair", false, true, 500, false, OP_PAIR, &pair_med);
	traced("traced-switch", false, true, 500, false, OP_SWITCH,
	       &switch_med);
	/* ... and the saved fcontext an interposer publishes after it. */
	traced("traced-switch-saved", false, true, 500, false, OP_SWITCH_SAVED,
	       &switch_saved_med);

	printf("probe_record target traced_median=%.2f clock_median=%.2f "
	       "overhead_ns=%.2f limit_ns=5.00 %s\n",
	       traced_med, clock_med, traced_med - clock_med,
	       traced_med <= clock_med + 5.0 ? "PASS" : "MISS");
	printf("probe_record fence_delta traced_minus_nomb_ns=%.2f "
	       "traced_minus_nodirty_ns=%.2f\n",
	       traced_med - nomb_med, traced_med - nodirty_med);
	printf("probe_record calltrace_delta traced_ct_minus_traced_ns=%.2f "
	       "ratio=%.3f\n",
	       ct_med - traced_med, ct_med / traced_med);
	printf("probe_record switch traced_switch_median=%.2f "
	       "traced_pair_median=%.2f saved_ns=%.2f clock_median=%.2f "
	       "overhead_ns=%.2f limit_ns=15.00 %s\n",
	       switch_med, pair_med, pair_med - switch_med, clock_med,
	       switch_med - clock_med,
	       switch_med <= clock_med + 15.0 ? "PASS" : "MISS");
	printf("probe_record switch_saved traced_switch_saved_median=%.2f "
	       "traced_switch_median=%.2f set_saved_ns=%.2f\n",
	       switch_saved_med, switch_med, switch_saved_med - switch_med);
	printf("probe_record untraced_switch median=%.2f two_notes=%.2f "
	       "saved_ns=%.2f clock_coarse_median=%.2f\n",
	       untraced_switch_med, 2 * untraced_med,
	       2 * untraced_med - untraced_switch_med, coarse_med);
	(void)flat_med;
	free(up.hdr);
	return 0;
}
