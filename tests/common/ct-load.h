/*
 * ct-load: a CallTrace write load with exact books, shared by the stress
 * writer program (ct-writer.c, another process) and the in-process stress
 * test.
 *
 * Each of N threads busy-loops putting stacks through corotop_calltrace_put
 * and, at the same time, is interrupted by SIGPROF from its own timer
 * (timer_create, SIGEV_THREAD_ID), whose handler puts too -- so puts
 * nest inside puts on the same thread.  Every put's weight is booked per
 * thread, per stack, per context (loop or handler, so a handler never
 * races the loop on a counter), as put or dropped.
 *
 * A stack is recognisable and self-checking: frame 0 is CTL_TAG | thread <<
 * 20 | stack, the middle frames are a function of (thread, stack, i), and
 * the last frame is a checksum of the others.  A collector that receives
 * torn or mixed frames fails ctl_decode.
 */
#ifndef COROTOP_CT_LOAD_H
#define COROTOP_CT_LOAD_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "corotop/probe.h"

#ifndef sigev_notify_thread_id
#define sigev_notify_thread_id _sigev_un._tid
#endif

#define CTL_MAX_THREADS 8
#define CTL_STACKS 600 /* per thread */
#define CTL_TAG 0x5ca1ab1e00000000ull

static inline uint64_t ctl_mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static inline unsigned ctl_frames(unsigned t, unsigned k, uint64_t *f)
{
	unsigned n = 3 + (k % 14) + (t % 3); /* 3..18 */
	uint64_t sum = 0;

	f[0] = CTL_TAG | (uint64_t)t << 20 | k;
	for (unsigned i = 1; i + 1 < n; i++)
		f[i] = ctl_mix((uint64_t)t << 40 ^ (uint64_t)k << 8 ^ i);
	for (unsigned i = 0; i + 1 < n; i++)
		sum = ctl_mix(sum ^ f[i]);
	f[n - 1] = sum;
	return n;
}

/* (thread, stack) of a collected stack, or false if it is not one of ours
 * or fails its checksum. */
static inline bool ctl_decode(const uint64_t *f, unsigned n, unsigned *t,
			      unsigned *k)
{
	uint64_t want[32];

	if (n < 3 || n > 32 || (f[0] & 0xffffffff00000000ull) != CTL_TAG)
		return false;
	*t = (unsigned)(f[0] >> 20) & 0xfff;
	*k = (unsigned)f[0] & 0xfffff;
	if (*t >= CTL_MAX_THREADS || *k >= CTL_STACKS ||
	    ctl_frames(*t, *k, want) != n)
		return false;
	return memcmp(want, f, n * 8u) == 0;
}

struct ctl_book {
	uint64_t put[CTL_STACKS], dropped[CTL_STACKS];
	uint64_t puts, drops, unattached;
};

struct ctl_thread {
	unsigned index;
	uint64_t rng[2];	 /* loop, handler */
	struct ctl_book book[2]; /* loop, handler */
	uint64_t signals;
	uint64_t nested; /* handler puts that interrupted a loop put */
	volatile sig_atomic_t in_put; /* the loop is inside a put */
	struct ctl_load *load;
	pthread_t th;
};

struct ctl_load {
	unsigned threads;
	uint64_t end_ns;
	unsigned timer_us; /* SIGPROF period per thread */
	struct ctl_thread t[CTL_MAX_THREADS];
	_Atomic bool stop;
};

static __thread struct ctl_thread *ctl_self;

static inline uint64_t ctl_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline void ctl_put_one(struct ctl_thread *t, int ctx)
{
	uint64_t f[32], r, w, id;
	unsigned k, n;

	r = t->rng[ctx] = ctl_mix(t->rng[ctx]);
	/* Mostly a hot set (existing stacks), sometimes any (new ones). */
	k = (unsigned)(r % 10 ? (r >> 8) % 40 : (r >> 8) % CTL_STACKS);
	w = 1 + (r >> 40) % 1000;
	n = ctl_frames(t->index, k, f);
	if (ctx == 0)
		t->in_put = 1;
	id = corotop_calltrace_put(f, n, w);
	if (ctx == 0)
		t->in_put = 0;
	t->book[ctx].put[k] += w;
	t->book[ctx].puts++;
	if (id == COROTOP_CALLTRACE_DROPPED) {
		t->book[ctx].dropped[k] += w;
		t->book[ctx].drops++;
	} else if (id == 0) {
		t->book[ctx].unattached++;
	}
}

static inline void ctl_on_sigprof(int sig)
{
	struct ctl_thread *t = ctl_self;

	(void)sig;
	if (!t)
		return;
	t->signals++;
	t->nested += t->in_put != 0;
	ctl_put_one(t, 1);
}

static inline void *ctl_thread_main(void *arg)
{
	struct ctl_thread *t = arg;
	struct sigevent sev;
	struct itimerspec its;
	timer_t timer;
	bool armed;

	ctl_self = t;
	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_THREAD_ID;
	sev.sigev_signo = SIGPROF;
	sev.sigev_notify_thread_id = (pid_t)syscall(SYS_gettid);
	memset(&its, 0, sizeof(its));
	its.it_value.tv_nsec = (long)t->load->timer_us * 1000;
	its.it_interval = its.it_value;
	/* CLOCK_MONOTONIC: high-resolution, so signals land inside puts
	 * often (CPU-time timers only fire on scheduler ticks). */
	armed = timer_create(CLOCK_MONOTONIC, &sev, &timer) == 0 &&
		timer_settime(timer, 0, &its, NULL) == 0;
	for (uint64_t i = 0;; i++) {
		if ((i & 63) == 0 &&
		    (atomic_load_explicit(&t->load->stop,
					  memory_order_relaxed) ||
		     ctl_now() > t->load->end_ns))
			break;
		ctl_put_one(t, 0);
	}
	if (armed) {
		memset(&its, 0, sizeof(its));
		timer_settime(timer, 0, &its, NULL);
		timer_delete(timer);
	}
	ctl_self = NULL;
	return NULL;
}

/* Start the load: threads run until `seconds` pass or ctl_stop. */
static inline bool ctl_start(struct ctl_load *l, unsigned threads,
			     double seconds, unsigned timer_us, uint64_t seed)
{
	struct sigaction sa;

	memset(l, 0, sizeof(*l));
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = ctl_on_sigprof;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGPROF, &sa, NULL) < 0)
		return false;
	l->threads = threads > CTL_MAX_THREADS ? CTL_MAX_THREADS : threads;
	l->timer_us = timer_us;
	l->end_ns = ctl_now() + (uint64_t)(seconds * 1e9);
	for (unsigned i = 0; i < l->threads; i++) {
		struct ctl_thread *t = &l->t[i];

		t->index = i;
		t->load = l;
		t->rng[0] = ctl_mix(seed * 64 + i * 2);
		t->rng[1] = ctl_mix(seed * 64 + i * 2 + 1);
		if (pthread_create(&t->th, NULL, ctl_thread_main, t))
			return false;
	}
	return true;
}

static inline void ctl_join(struct ctl_load *l)
{
	for (unsigned i = 0; i < l->threads; i++)
		pthread_join(l->t[i].th, NULL);
	signal(SIGPROF, SIG_IGN);
}

/* Totals over threads and contexts. */
struct ctl_totals {
	uint64_t put, dropped, puts, drops, unattached, signals, nested;
};

static inline struct ctl_totals ctl_totals(const struct ctl_load *l)
{
	struct ctl_totals s = {0};

	for (unsigned i = 0; i < l->threads; i++) {
		s.signals += l->t[i].signals;
		s.nested += l->t[i].nested;
		for (int c = 0; c < 2; c++) {
			const struct ctl_book *b = &l->t[i].book[c];

			s.puts += b->puts;
			s.drops += b->drops;
			s.unattached += b->unattached;
			for (unsigned k = 0; k < CTL_STACKS; k++) {
				s.put += b->put[k];
				s.dropped += b->dropped[k];
			}
		}
	}
	return s;
}

/* Expected collected weight of (thread, stack): put minus dropped. */
static inline uint64_t ctl_expected(const struct ctl_load *l, unsigned t,
				    unsigned k)
{
	return l->t[t].book[0].put[k] + l->t[t].book[1].put[k] -
	       l->t[t].book[0].dropped[k] - l->t[t].book[1].dropped[k];
}

#endif
