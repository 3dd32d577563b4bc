/*
 * demo: corotop-demo, a small M:N coroutine server to point corotop at.
 *
 * This file is the program around the scheduler (scheduler.c) and the workload
 * (workload.c): the command line, the signal handling, the run time and the
 * summary line printed at exit:
 *
 *   corotop-demo: spawned=N finished=N switches=N alive=N elapsed=S
 *   transitions_per_s=N
 *
 * (one line; a switch is one run of a coroutine, i.e. two probe transitions.)
 *
 * SIGINT and SIGTERM are blocked in every thread and collected here with
 * sigtimedwait, so no handler ever runs on a coroutine stack.  After the
 * first one they are unblocked again: a second signal kills a stuck exit.
 *
 * Exit status: 0 after --duration or a signal, 1 on a runtime failure,
 * 2 on a bad command line.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "corotop/probe.h"
#include "demo/scheduler.h"
#include "demo/sleepq.h"
#include "demo/workload.h"

#define DEMO_NAME "corotop-demo"
/* Two mappings per coroutine (stack + guard) must fit vm.max_map_count. */
#define DEMO_MAX_COROUTINES 30000u

struct demo_options {
	unsigned threads;
	unsigned duration; /* seconds; 0 = until a signal */
	bool verbose;
	struct workload_config work;
};

enum demo_opt {
	DEMO_OPT_STUCK = 256,
	DEMO_OPT_SPAWN_RATE,
	DEMO_OPT_SEED,
};

static const struct option demo_long_options[] = {
	{"threads", required_argument, NULL, 't'},
	{"coroutines", required_argument, NULL, 'c'},
	{"duration", required_argument, NULL, 'd'},
	{"stuck", required_argument, NULL, DEMO_OPT_STUCK},
	{"spawn-rate", required_argument, NULL, DEMO_OPT_SPAWN_RATE},
	{"seed", required_argument, NULL, DEMO_OPT_SEED},
	{"verbose", no_argument, NULL, 'v'},
	{"help", no_argument, NULL, 'h'},
	{NULL, 0, NULL, 0},
};

static void demo_usage(FILE *out)
{
	fprintf(out,
		"usage: " DEMO_NAME " [options]\n"
		"A small M:N coroutine server instrumented with the corotop "
		"probe.\n"
		"\n"
		"  -t, --threads N      worker threads (default 2)\n"
		"  -c, --coroutines N   long-lived coroutines to keep alive,\n"
		"                       stuck ones included (default 2000, "
		"max %u)\n"
		"  -d, --duration SECS  run time; 0 runs until SIGINT/SIGTERM\n"
		"                       (default 0)\n"
		"      --stuck N        coroutines stuck forever on a lost "
		"wakeup\n"
		"                       (default 3)\n"
		"      --spawn-rate N   short-lived coroutines spawned per "
		"second\n"
		"                       (default 200)\n"
		"      --seed N         random seed (default 1)\n"
		"  -v, --verbose        print the population and probe status "
		"at start\n"
		"  -h, --help           show this help\n"
		"\n"
		"Traced when started with corotop's CTP_* environment, or from "
		"the moment\n"
		"corotop -p PID attaches; inert otherwise.\n"
		"Prints one summary line to stderr at exit.\n",
		DEMO_MAX_COROUTINES);
}

/* Strict decimal in [min, max]; false on anything else. */
static bool demo_parse_u64(const char *s, uint64_t min, uint64_t max,
			   uint64_t *out)
{
	unsigned long long v;
	char *end;

	if (!s || *s < '0' || *s > '9')
		return false;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return false;
	*out = v;
	return true;
}

static bool demo_parse_uint(const char *name, const char *s, unsigned min,
			    unsigned max, unsigned *out)
{
	uint64_t v;

	if (!demo_parse_u64(s, min, max, &v)) {
		fprintf(stderr,
			DEMO_NAME ": %s: expected an integer in %u..%u, "
				  "got '%s'\n",
			name, min, max, s);
		return false;
	}
	*out = (unsigned)v;
	return true;
}

/* 0: run; 1: exit 0 (help); 2: bad usage (message already printed). */
static int demo_parse_args(int argc, char **argv, struct demo_options *o)
{
	uint64_t seed;
	int c;

	*o = (struct demo_options){
		.threads = 2,
		.duration = 0,
		.work = {.coroutines = 2000,
			 .stuck = 3,
			 .spawn_rate = 200,
			 .seed = 1},
	};
	opterr = 0; /* we print our own one-line messages */
	while ((c = getopt_long(argc, argv, ":t:c:d:vh", demo_long_options,
				NULL)) != -1) {
		bool ok = true;

		switch (c) {
		case 't':
			ok = demo_parse_uint("--threads", optarg, 1, 256,
					     &o->threads);
			break;
		case 'c':
			ok = demo_parse_uint("--coroutines", optarg, 0,
					     DEMO_MAX_COROUTINES,
					     &o->work.coroutines);
			break;
		case 'd':
			ok = demo_parse_uint("--duration", optarg, 0,
					     366u * 24 * 3600, &o->duration);
			break;
		case DEMO_OPT_STUCK:
			ok = demo_parse_uint("--stuck", optarg, 0, 10000,
					     &o->work.stuck);
			break;
		case DEMO_OPT_SPAWN_RATE:
			ok = demo_parse_uint("--spawn-rate", optarg, 0, 100000,
					     &o->work.spawn_rate);
			break;
		case DEMO_OPT_SEED:
			if (!demo_parse_u64(optarg, 0, UINT64_MAX, &seed)) {
				fprintf(stderr,
					DEMO_NAME
					": --seed: expected an "
					"unsigned integer, got '%s'\n",
					optarg);
				ok = false;
				break;
			}
			o->work.seed = seed;
			break;
		case 'v':
			o->verbose = true;
			break;
		case 'h':
			demo_usage(stdout);
			return 1;
		case ':':
			fprintf(stderr,
				DEMO_NAME ": option '%s' needs a value "
					  "(try --help)\n",
				argv[optind - 1]);
			return 2;
		default:
			if (!optopt)
				fprintf(stderr,
					DEMO_NAME ": unknown option '%s' "
						  "(try --help)\n",
					argv[optind - 1]);
			else if (!strncmp(argv[optind - 1], "--", 2))
				fprintf(stderr,
					DEMO_NAME ": option '%s' takes no "
						  "value (try --help)\n",
					argv[optind - 1]);
			else
				fprintf(stderr,
					DEMO_NAME ": unknown option '-%c' "
						  "(try --help)\n",
					optopt);
			return 2;
		}
		if (!ok)
			return 2;
	}
	if (optind < argc) {
		fprintf(stderr,
			DEMO_NAME ": unexpected argument '%s' (try --help)\n",
			argv[optind]);
		return 2;
	}
	if (o->work.stuck > o->work.coroutines)
		o->work.coroutines = o->work.stuck;
	return 0;
}

/* Wait for SIGINT/SIGTERM, or until deadline_ns when it is non-zero. */
static void demo_wait(const sigset_t *stop, uint64_t deadline_ns)
{
	for (;;) {
		struct timespec left;
		uint64_t now;
		int sig;

		if (!deadline_ns) {
			sig = sigwaitinfo(stop, NULL);
		} else {
			now = sleepq_now_ns();
			if (now >= deadline_ns)
				return;
			left.tv_sec =
				(time_t)((deadline_ns - now) / 1000000000u);
			left.tv_nsec =
				(long)((deadline_ns - now) % 1000000000u);
			sig = sigtimedwait(stop, NULL, &left);
		}
		if (sig > 0)
			return;
		/* EAGAIN: timed out (re-checked above); EINTR: again. */
	}
}

static void demo_print_start(const struct demo_options *o,
			     const struct workload *w)
{
	struct workload_roles r;
	const char *status = corotop_probe_status();

	workload_roles(w, &r);
	fprintf(stderr,
		DEMO_NAME ": pid=%d threads=%u conns=%u burners=%u pipes=%u "
			  "stuck=%u spawn-rate=%u/s probe=%s%s%s\n",
		(int)getpid(), o->threads, r.conns, r.burners, r.pipe_pairs * 2,
		r.stuck, o->work.spawn_rate, *status ? "untraced (" : "traced",
		status, *status ? ")" : "");
}

int main(int argc, char **argv)
{
	struct demo_options o;
	struct scheduler_stats st;
	struct workload *w;
	struct scheduler *s;
	sigset_t stop;
	uint64_t t0, elapsed;
	double secs;
	int err;

	err = demo_parse_args(argc, argv, &o);
	if (err)
		return err == 1 ? 0 : 2;

	/* corotop -p may attach later, also under Yama ptrace_scope 1,
	 * where only a process we name may read and write our memory. */
	prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
	/* Block before any thread exists: every thread inherits the mask. */
	sigemptyset(&stop);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &stop, NULL);

	s = scheduler_create(o.threads, CORO_STACK_SIZE);
	if (!s) {
		fprintf(stderr, DEMO_NAME ": cannot create the scheduler: %s\n",
			strerror(errno));
		return 1;
	}
	w = workload_create(s, &o.work);
	if (!w) {
		fprintf(stderr, DEMO_NAME ": cannot create the workload: %s\n",
			strerror(errno));
		scheduler_destroy(s);
		return 1;
	}
	err = workload_start(w);
	if (!err)
		err = scheduler_start(s);
	if (err) {
		fprintf(stderr, DEMO_NAME ": cannot start: %s\n",
			strerror(-err));
		scheduler_destroy(s);
		workload_destroy(w);
		return 1;
	}
	if (o.verbose)
		demo_print_start(&o, w);

	t0 = sleepq_now_ns();
	demo_wait(&stop,
		  o.duration ? t0 + (uint64_t)o.duration * 1000000000u : 0);
	/* From now on a second signal terminates at once. */
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	pthread_sigmask(SIG_UNBLOCK, &stop, NULL);

	scheduler_stop(s);
	elapsed = sleepq_now_ns() - t0;
	scheduler_stats(s, &st);
	secs = (double)elapsed / 1e9;
	fprintf(stderr,
		DEMO_NAME ": spawned=%" PRIu64 " finished=%" PRIu64
			  " switches=%" PRIu64 " alive=%" PRIu64
			  " elapsed=%.2fs transitions_per_s=%.0f\n",
		st.spawned, st.finished, st.switches, st.alive, secs,
		secs > 0 ? 2.0 * (double)st.switches / secs : 0.0);
	scheduler_destroy(s);
	workload_destroy(w);
	return 0;
}
