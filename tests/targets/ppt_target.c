/*
 * ppt-target: a program that publishes ppt buffers through the probe's
 * client API and is driven line by line on stdin, for the ppt integration
 * tests and benches.  It is never started by corotop: the tests start it
 * alone and attach with corotop -p.
 *
 * Buffers:
 *   demo  two frame types, static layout:
 *         tick {count int, load double, work time interval}
 *         io   {fd int, cost counter interval}
 *   grow  one type {n int, x double}, dynamic layout (COROTOP_PPT_RESIZE)
 *   bad   a hand-written description whose ABI is 2.0.0
 * Frame k of a buffer (k counted per buffer from 1) carries values derived
 * from k, so a reader can check each one exactly:
 *   tick: count = k, load = k / 4.0, work = [k s, k s + k us]
 *   io:   fd = -k, cost = the counters read around nothing
 *   grow: n = k, x = k * 1.5
 *
 * Commands (one per line; each answers one line, "ok ..." or "err ..."):
 *   tick N        save N tick frames          io N    save N io frames
 *   grow N        save N grow frames
 *   pace N US     save N tick frames, one every US microseconds
 *   stream US [W] save grow frames every US us until "stop" (a thread);
 *                 with W > 0 paced by the reader too: frame k waits
 *                 until the reader acknowledged k - W ("ack"), so a
 *                 block of more than W frames is never lapped, however
 *                 long the reader is kept from running
 *   ack K         the reader has K grow frames (a count that only grows)
 *   stop          end the stream; answers with the frames it saved
 *   state         "ok hmem=H stat=S" of demo, "grow=H,S" of grow
 *   busy PID      write PID into demo's _stat (an agent that died)
 *   counters      "ok n=N v=a,b,c": corotop_ppt_counters on demo
 *   stats         "ok saved=N attached=A" of demo
 *   fork N        fork a child that saves N tick frames and exits 0 when
 *                 it found itself detached (hmem 0, not attached, nothing
 *                 saved), 1 otherwise; answers "ok child=STATUS"
 *   quit          exit 0
 * It prints "ready PID" first.  PR_SET_PTRACER_ANY lets a non-root corotop
 * attach under Yama ptrace_scope 1.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "corotop/ppt.h"
#include "ppt-demo-types.h"

struct growf {
	int32_t n;
	double x;
};

static const struct corotop_ppt_member grow_members[] = {
	{"n", COROTOP_PPT_INT, offsetof(struct growf, n)},
	{"x", COROTOP_PPT_DOUBLE, offsetof(struct growf, x)},
};
static const struct corotop_ppt_frame_type grow_types[] = {
	{"sample", grow_members, 2},
};

COROTOP_PPT_BUFFER(demo);
COROTOP_PPT_BUFFER(grow);

/* "bad": symbols by hand, with a description from a future ABI. */
COROTOP_PPT_SYMBOL int _ppt_hmem_bad;
COROTOP_PPT_SYMBOL struct ppt_stat _ppt_stat_bad;
COROTOP_PPT_SYMBOL const char *_ppt_json_bad =
	"{\"abi\":\"2.0.0\",\"tags\":[],\"metadata\":[],\"emit\":{},"
	"\"target\":{},\"frames\":[]}";

static int32_t tick_k, io_k, grow_k;
static atomic_bool streaming;
static atomic_ulong streamed;
static unsigned stream_us;
static pthread_t stream_thread;
/* The reader's pacing of the stream: window (0: none), acked. */
static pthread_mutex_t ack_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ack_cv = PTHREAD_COND_INITIALIZER;
static unsigned long stream_window, stream_acked;

static void save_tick(void)
{
	struct tick f;
	int32_t k = ++tick_k;

	f.count = k;
	f.load = k / 4.0;
	f.work[0] = (struct timespec){k, 0};
	f.work[1] = (struct timespec){k, k * 1000L};
	corotop_ppt_save(&demo, 0, &f);
}

static void save_io(void)
{
	struct io f;

	f.fd = -(++io_k);
	corotop_ppt_counters(&demo, f.cost[0]);
	corotop_ppt_counters(&demo, f.cost[1]);
	corotop_ppt_save(&demo, 1, &f);
}

static void save_grow(void)
{
	struct growf f;
	int32_t k = ++grow_k;

	f.n = k;
	f.x = k * 1.5;
	corotop_ppt_save(&grow, 0, &f);
}

static void sleep_us(unsigned us)
{
	struct timespec ts = {us / 1000000u, (long)(us % 1000000u) * 1000};

	nanosleep(&ts, NULL);
}

/* With a window: wait until frame k = streamed + 1 is within it (or the
 * stream stops); false when it stopped. */
static bool stream_may_save(void)
{
	bool go;

	pthread_mutex_lock(&ack_mu);
	while (stream_window && atomic_load(&streaming) &&
	       atomic_load(&streamed) + 1 > stream_acked + stream_window)
		pthread_cond_wait(&ack_cv, &ack_mu);
	go = atomic_load(&streaming);
	pthread_mutex_unlock(&ack_mu);
	return go;
}

static void *stream_main(void *arg)
{
	(void)arg;
	while (atomic_load_explicit(&streaming, memory_order_relaxed)) {
		if (!stream_may_save())
			break;
		save_grow();
		atomic_fetch_add_explicit(&streamed, 1, memory_order_relaxed);
		if (stream_us)
			sleep_us(stream_us);
	}
	return NULL;
}

static void command(char *line)
{
	unsigned long n = 0, us = 0;
	char word[32];

	if (sscanf(line, "%31s %lu %lu", word, &n, &us) < 1) {
		puts("err empty");
		return;
	}
	if (!strcmp(word, "tick")) {
		for (unsigned long i = 0; i < n; i++)
			save_tick();
		printf("ok %d\n", tick_k);
	} else if (!strcmp(word, "io")) {
		for (unsigned long i = 0; i < n; i++)
			save_io();
		printf("ok %d\n", io_k);
	} else if (!strcmp(word, "grow")) {
		for (unsigned long i = 0; i < n; i++)
			save_grow();
		printf("ok %d\n", grow_k);
	} else if (!strcmp(word, "pace")) {
		for (unsigned long i = 0; i < n; i++) {
			save_tick();
			sleep_us((unsigned)us);
		}
		printf("ok %d\n", tick_k);
	} else if (!strcmp(word, "stream")) {
		stream_us = (unsigned)n;
		stream_window = us;
		stream_acked = 0;
		atomic_store(&streaming, true);
		if (pthread_create(&stream_thread, NULL, stream_main, NULL))
			puts("err thread");
		else
			puts("ok");
	} else if (!strcmp(word, "ack")) {
		pthread_mutex_lock(&ack_mu);
		if (n > stream_acked)
			stream_acked = n;
		pthread_cond_signal(&ack_cv);
		pthread_mutex_unlock(&ack_mu);
		puts("ok");
	} else if (!strcmp(word, "stop")) {
		pthread_mutex_lock(&ack_mu);
		atomic_store(&streaming, false);
		pthread_cond_signal(&ack_cv);
		pthread_mutex_unlock(&ack_mu);
		pthread_join(stream_thread, NULL);
		printf("ok %lu\n", atomic_load(&streamed));
	} else if (!strcmp(word, "state")) {
		printf("ok hmem=%d stat=%d grow=%d,%d\n",
		       __atomic_load_n(&_ppt_hmem_demo, __ATOMIC_RELAXED),
		       (int)__atomic_load_n(&_ppt_stat_demo.ppt_agent_pid,
					    __ATOMIC_RELAXED),
		       __atomic_load_n(&_ppt_hmem_grow, __ATOMIC_RELAXED),
		       (int)__atomic_load_n(&_ppt_stat_grow.ppt_agent_pid,
					    __ATOMIC_RELAXED));
	} else if (!strcmp(word, "busy")) {
		_ppt_stat_demo.ppt_agent_pid = (int32_t)n;
		puts("ok");
	} else if (!strcmp(word, "counters")) {
		uint64_t v[3] = {0, 0, 0};
		unsigned k = corotop_ppt_counters(&demo, v);

		printf("ok n=%u v=%llu,%llu,%llu\n", k,
		       (unsigned long long)v[0], (unsigned long long)v[1],
		       (unsigned long long)v[2]);
	} else if (!strcmp(word, "stats")) {
		struct corotop_ppt_stats st;

		corotop_ppt_stats(&demo, &st);
		printf("ok saved=%llu attached=%u\n",
		       (unsigned long long)st.saved, st.attached);
	} else if (!strcmp(word, "fork")) {
		pid_t child = fork();
		int status = -1;

		if (child == 0) {
			struct corotop_ppt_stats st;

			for (unsigned long i = 0; i < n; i++)
				save_tick();
			corotop_ppt_stats(&demo, &st);
			_exit(st.attached == 0 && _ppt_hmem_demo == 0 &&
					      _ppt_stat_demo.ppt_agent_pid == 0
				      ? 0
				      : 1);
		}
		if (child > 0)
			waitpid(child, &status, 0);
		printf("ok child=%d\n", status);
	} else if (!strcmp(word, "quit")) {
		exit(0);
	} else {
		printf("err unknown '%s'\n", word);
	}
}

int main(void)
{
	char line[256];

	prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (corotop_ppt_buffer_init(&demo, demo_types, 2, 0) ||
	    corotop_ppt_buffer_init(&grow, grow_types, 1, COROTOP_PPT_RESIZE)) {
		puts("err init");
		return 1;
	}
	printf("ready %d\n", (int)getpid());
	while (fgets(line, sizeof(line), stdin))
		command(line);
	return 0;
}
