/*
 * ppt_agent: the agent's side of ppt, measured (issue 5's targets).
 *
 *   latency   attach-to-first-frame: the engine attaches (-p) to this very
 *             process's buffer "lat" while a thread saves a frame every
 *             50 us; the time from _hmem written to the first frame read
 *             (the engine's own clock), and from engine_start returning to
 *             the frame being visible to a caller.  Target <= 100 ms.
 *   live      a thread saves 64-byte frames at RATE per second (paced per
 *             millisecond, in bursts) into "thru" for SECONDS while the
 *             engine polls; delivered, lost and torn, and their sum against
 *             what was saved; the saver's CPU, and the rest of the process
 *             (the engine: ppt thread, idle harvest).  Target: 1 M frames/s
 *             kept up with.
 *   flood     the same, unpaced, for 1 s: the most a saver produces; loss
 *             must be counted (delivered + lost + torn == saved), never
 *             silent.
 *   decode    pptreader + pptframe_decode over a full in-memory block: the
 *             decoder alone, frames per second.
 *
 * The engine attaches to our own pid: the buffers are found in this
 * executable's symbol table exactly as in another process.
 *
 * usage: ppt_agent [SECONDS [RATE [ROUNDS]]]   (defaults 5, 1000000, 20)
 */
#include "bench.h"

#include <stdatomic.h>
#include <stddef.h>

#include "corotop/ppt.h"
#include "engine/ppt/pptframe.h"
#include "engine/ppt/pptreader.h"

/* On the wire: seqno, padding, x0..x5, n, back seqno = 64 bytes. */
struct frame64 {
	int32_t n;
	double x[6];
};

static const struct corotop_ppt_member members[] = {
	{"n", COROTOP_PPT_INT, offsetof(struct frame64, n)},
	{"x0", COROTOP_PPT_DOUBLE, offsetof(struct frame64, x[0])},
	{"x1", COROTOP_PPT_DOUBLE, offsetof(struct frame64, x[1])},
	{"x2", COROTOP_PPT_DOUBLE, offsetof(struct frame64, x[2])},
	{"x3", COROTOP_PPT_DOUBLE, offsetof(struct frame64, x[3])},
	{"x4", COROTOP_PPT_DOUBLE, offsetof(struct frame64, x[4])},
	{"x5", COROTOP_PPT_DOUBLE, offsetof(struct frame64, x[5])},
};
static const struct corotop_ppt_frame_type types[] = {
	{"sample", members, 7},
};

COROTOP_PPT_BUFFER(lat);
COROTOP_PPT_BUFFER(thru);

struct saver {
	struct corotop_ppt_buffer *b;
	uint64_t rate; /* frames per second, 0: unpaced */
	uint64_t pause_ns;
	atomic_bool stop;
	uint64_t saved;
	uint64_t cpu_ns; /* the saver's own CPU time */
	pthread_t th;
};

static void *saver_main(void *arg)
{
	struct saver *s = arg;
	struct frame64 f = {0};
	uint64_t t0 = clock_now_ns(CLOCK_MONOTONIC), ms = 0;

	while (!atomic_load_explicit(&s->stop, memory_order_relaxed)) {
		if (s->pause_ns) {
			f.n = (int32_t)++s->saved;
			corotop_ppt_save(s->b, 0, &f);
			bench_sleep_ns(s->pause_ns);
			continue;
		}
		if (!s->rate) {
			for (int i = 0; i < 1024; i++) {
				f.n = (int32_t)++s->saved;
				corotop_ppt_save(s->b, 0, &f);
			}
			continue;
		}
		/* A millisecond's worth, then wait for the next one. */
		for (uint64_t i = 0; i < s->rate / 1000; i++) {
			f.n = (int32_t)++s->saved;
			corotop_ppt_save(s->b, 0, &f);
		}
		ms++;
		{
			uint64_t at = t0 + ms * 1000000u;
			struct timespec ts = {(time_t)(at / 1000000000u),
					      (long)(at % 1000000000u)};

			clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts,
					NULL);
		}
	}
	s->cpu_ns = clock_now_ns(CLOCK_THREAD_CPUTIME_ID);
	return NULL;
}

static void saver_start(struct saver *s, struct corotop_ppt_buffer *b,
			uint64_t rate, uint64_t pause_ns)
{
	memset(s, 0, sizeof(*s));
	s->b = b;
	s->rate = rate;
	s->pause_ns = pause_ns;
	if (pthread_create(&s->th, NULL, saver_main, s))
		bench_die("pthread_create");
}

static void saver_stop(struct saver *s)
{
	atomic_store(&s->stop, true);
	pthread_join(s->th, NULL);
}

static struct engine *attach_self(const char *buffer)
{
	struct engine_config cfg;
	struct engine *e;
	char err[512];

	engine_config_defaults(&cfg);
	cfg.attach_pid = getpid();
	cfg.ppt_buffer = buffer;
	cfg.ct_traces = 0;
	e = engine_create(&cfg, err, sizeof(err));
	if (!e)
		bench_die("engine_create: %s", err);
	if (!engine_start(e, err, sizeof(err)))
		bench_die("engine_start: %s", err);
	return e;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void bench_latency(unsigned rounds)
{
	uint64_t *ms = calloc(rounds, sizeof(*ms));
	uint64_t *seen = calloc(rounds, sizeof(*seen));

	for (unsigned r = 0; r < rounds; r++) {
		struct engine_ppt_buffer b;
		struct saver s;
		struct engine *e;
		uint64_t t0;

		saver_start(&s, &lat, 0, 50000);
		bench_sleep_ns(5000000);
		e = attach_self("lat");
		t0 = clock_now_ns(CLOCK_MONOTONIC);
		do {
			bench_sleep_ns(100000);
			engine_ppt_buffers(e, &b, 1);
		} while (!b.delivered &&
			 clock_now_ns(CLOCK_MONOTONIC) - t0 < 5000000000ull);
		seen[r] = clock_now_ns(CLOCK_MONOTONIC) - t0;
		ms[r] = b.attach_latency_ns;
		engine_destroy(e);
		saver_stop(&s);
	}
	qsort(ms, rounds, sizeof(*ms), cmp_u64);
	qsort(seen, rounds, sizeof(*seen), cmp_u64);
	printf("ppt_agent latency rounds=%u hmem_to_first_frame_p50_ms=%.3f "
	       "p90_ms=%.3f max_ms=%.3f start_to_visible_p50_ms=%.3f "
	       "max_ms=%.3f\n",
	       rounds, ms[rounds / 2] / 1e6, ms[rounds * 9 / 10] / 1e6,
	       ms[rounds - 1] / 1e6, seen[rounds / 2] / 1e6,
	       seen[rounds - 1] / 1e6);
	free(ms);
	free(seen);
}

static void bench_live(const char *name, double seconds, uint64_t rate)
{
	struct engine_ppt_buffer b;
	struct bench_load load;
	struct saver s;
	struct engine *e = attach_self("thru");
	uint64_t t0, t1, deadline;
	uint64_t c0, c1;

	/* The client attaches at its first save. */
	saver_start(&s, &thru, 1000, 0);
	do {
		bench_sleep_ns(1000000);
		engine_ppt_buffers(e, &b, 1);
	} while (!b.delivered);
	saver_stop(&s);
	bench_sleep_ns(50000000);
	engine_ppt_buffers(e, &b, 1);
	{
		uint64_t base_saved = s.saved,
			 base = b.delivered + b.lost + b.torn;
		uint64_t base_lost = b.lost, base_torn = b.torn;
		uint64_t base_del = b.delivered;

		bench_load_start(&load);
		c0 = clock_now_ns(CLOCK_PROCESS_CPUTIME_ID);
		t0 = clock_now_ns(CLOCK_MONOTONIC);
		saver_start(&s, &thru, rate, 0);
		bench_sleep_ns((uint64_t)(seconds * 1e9));
		saver_stop(&s);
		t1 = clock_now_ns(CLOCK_MONOTONIC);
		deadline = t1 + 2000000000ull;
		do {
			bench_sleep_ns(5000000);
			engine_ppt_buffers(e, &b, 1);
		} while (b.delivered + b.lost + b.torn - base < s.saved &&
			 clock_now_ns(CLOCK_MONOTONIC) < deadline);
		c1 = clock_now_ns(CLOCK_PROCESS_CPUTIME_ID);
		printf("ppt_agent %s rate_asked=%llu saved=%llu "
		       "saved_per_s=%.0f "
		       "delivered=%llu lost=%llu torn=%llu accounted=%s "
		       "block=%llu saver_cpu_s=%.2f engine_cpu_s=%.2f "
		       "wall_s=%.2f others_cores=%.2f\n",
		       name, (unsigned long long)rate,
		       (unsigned long long)s.saved, s.saved / ((t1 - t0) / 1e9),
		       (unsigned long long)(b.delivered - base_del),
		       (unsigned long long)(b.lost - base_lost),
		       (unsigned long long)(b.torn - base_torn),
		       b.delivered + b.lost + b.torn - base == s.saved
			       ? "exact"
			       : "MISMATCH",
		       (unsigned long long)b.nframes, s.cpu_ns / 1e9,
		       (c1 - c0) / 1e9 - s.cpu_ns / 1e9, (t1 - t0) / 1e9,
		       bench_load_others(&load));
		(void)base_saved;
	}
	engine_destroy(e);
}

/* The decoder alone: a block of 16 Ki whole frames, read and decoded. */
static void bench_decode(void)
{
	const uint32_t fs = 64, nf = 16384;
	unsigned char *block = calloc(nf, fs), *buf = malloc(1024 * fs);
	uint32_t *idx = malloc(1024 * sizeof(*idx));
	struct ppt_member m[3] = {
		{"__ppt_seqno", PPT_T_INT, PPT_K_FRONT, PPT_I_NONE, -1, 0, 4},
		{"n", PPT_T_INT, PPT_K_MEMBER, PPT_I_NONE, -1, 4, 4},
		{"__ppt_seqno_back", PPT_T_INT, PPT_K_BACK, PPT_I_NONE, -1, 60,
		 4},
	};
	struct ppt_column col = {"n", PPT_T_INT, false, 1, 1};
	struct ppt_layout l = {"sample", m, 3, &col, 1};
	struct ppt_desc d = {.frame_size = fs,
			     .front_off = 0,
			     .back_off = 60,
			     .type_off = UINT32_MAX,
			     .counter_count = 3,
			     .types = &l,
			     .ntypes = 1};
	struct pptreader r;
	uint64_t frames = 0, t0, t1, sum = 0;

	for (uint32_t i = 1; i <= nf; i++) {
		unsigned char *f = block + (size_t)(i % nf) * fs;

		memcpy(f, &i, 4);
		memcpy(f + 4, &i, 4);
		memcpy(f + 60, &i, 4);
	}
	t0 = clock_now_ns(CLOCK_MONOTONIC);
	for (int rep = 0; rep < 200; rep++) {
		size_t n;

		pptreader_init(&r, block, nf, fs, 0, 60, 1);
		while ((n = pptreader_poll(&r, 0, buf, idx, 1024)) > 0) {
			for (size_t k = 0; k < n; k++) {
				struct ppt_value v;

				pptframe_decode(&d, 0, buf + k * fs, &v, 1);
				sum += (uint64_t)v.v.i;
			}
			frames += n;
		}
	}
	t1 = clock_now_ns(CLOCK_MONOTONIC);
	printf("ppt_agent decode frames=%llu frames_per_s=%.0f (check %llu)\n",
	       (unsigned long long)frames, frames / ((t1 - t0) / 1e9),
	       (unsigned long long)sum);
	free(block);
	free(buf);
	free(idx);
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 5;
	uint64_t rate = argc > 2 ? strtoull(argv[2], NULL, 10) : 1000000;
	unsigned rounds = argc > 3 ? (unsigned)atoi(argv[3]) : 20;

	if (corotop_ppt_buffer_init(&lat, types, 1, 0) ||
	    corotop_ppt_buffer_init(&thru, types, 1, 0))
		bench_die("corotop_ppt_buffer_init");
	if (corotop_ppt_frame_size(&thru) != 64)
		bench_die("frame size %zu, not 64",
			  corotop_ppt_frame_size(&thru));
	bench_latency(rounds ? rounds : 1);
	bench_live("live", seconds, rate);
	bench_live("flood", 1.0, 0);
	bench_decode();
	return 0;
}
