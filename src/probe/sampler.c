/*
 * sampler: the probe's CPU profiler -- per-thread CPU-time timers that send
 * SIGPROF, and the handler that stores the interrupted stack, tagged with
 * the coroutine that was running, into the CallTrace region.
 *
 * Timers.  A thread gets its timer lazily, on the slow path of its first
 * transition after a start (perthread.c; the thread that calls start gets one
 * at once): timer_create(CLOCK_THREAD_CPUTIME_ID) on its own CPU clock,
 * SIGEV_THREAD_ID to itself, SIGPROF, period 1/hz of CPU time.  A thread
 * that sleeps uses no CPU and gets no signal.  Timers are process-wide
 * objects, so any thread may delete any of them; to know which exist and to
 * delete each exactly once, every timer lives in a slot of a fixed table
 * whose word is seq << 2 | state:
 *
 *   FREE --claim (the thread, CAS)--> CLAIMED --timer armed--> ARMED
 *   ARMED --CAS (stop, the thread's exit destructor, or the thread when it
 *           finds the sampler stopped)--> DELETING --timer_delete--> FREE
 *
 * seq grows with every claim, so a stale word (a thread whose slot stop
 * already freed and someone else took) never matches: its CAS fails and it
 * deletes nothing.  No lock, no allocation, bounded loops.
 *
 * Ordering (letters as in the comments below):
 *   (S1) ARMED store, seq_cst          (T1) sampler_on = 0 and
 *   (S2) then epoch load, seq_cst:          (T2) epoch += 1, seq_cst, then
 *        moved => the thread deletes        (T3) every slot's word, seq_cst:
 *        its own timer                           ARMED => stop deletes it
 *   S1/S2 with T2/T3 (Dekker): either stop sees the slot ARMED, or the
 *   arming thread sees the new epoch; a timer never outlives a stop.  The
 *   ARMED store also publishes the timer id (release) to whoever wins the
 *   DELETING CAS (acquire); the FREE store (release) hands the slot to the
 *   next claimer's CAS (acquire).
 *
 * Thread exit.  The first timer of a thread sets a pthread key whose
 * destructor deletes the thread's timer: exiting threads leak none.  A
 * thread that is blocked when stop runs needs nothing: stop deletes its
 * timer for it.
 *
 * The signal.  The handler is installed with SA_RESTART | SA_SIGINFO when
 * the sampler starts, and only when SIGPROF has no handler yet (a profiler
 * or a setitimer user keeps theirs: start returns -EBUSY).  It acts only on
 * SI_TIMER signals that carry our mark, preserves errno, takes no lock and
 * allocates nothing: read the interrupted pc/sp/fp from the ucontext, walk
 * the frames (unwind.h; the range comes from the bounds perthread.c captured
 * outside any handler), append the tag frame, put with weight 1.  Stop
 * deletes every timer, waits (bounded) for threads caught between claiming
 * a slot and arming it, then sets SIGPROF to SIG_IGN -- which discards a
 * signal still pending from a deleted timer -- and restores the old
 * disposition.  A thread still claiming after the bound leaves our handler
 * installed (it ignores signals while stopped) rather than risk a default
 * SIGPROF, which terminates.
 *
 * Weight.  One per signal.  The kernel checks CPU timers once per tick, so
 * a thread gets at most CONFIG_HZ signals per second whatever hz asks for;
 * the expirations merged into one signal are counted as overruns.
 */
#define _GNU_SOURCE
#include "probe/probe_internal.h"
#include "probe/unwind.h"
#include "wire/snapwriter.h"

#include "corotop/calltrace.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <ucontext.h>

#ifndef sigev_notify_thread_id
#define sigev_notify_thread_id _sigev_un._tid
#endif

#define SAMPLER_SLOTS 4096u
#define SAMPLER_FRAMES 64u /* pc + walked frames + tag */
#define SAMPLER_HZ_MAX 10000u
/* Bound on stop's wait for threads caught between claim and arm. */
#define SAMPLER_STOP_WAIT_MS 200u

enum {
	SS_FREE = 0,
	SS_CLAIMED = 1,
	SS_ARMED = 2,
	SS_DELETING = 3,
};
#define SS_STATE(w) ((unsigned)((w)&3u))
#define SS_SEQ(w) ((w) >> 2)
#define SS_WORD(seq, st) (((uint64_t)(seq) << 2) | (uint64_t)(st))

struct sampler_slot {
	_Atomic uint64_t word;
	timer_t timer; /* valid from the ARMED store until FREE */
};

static struct sampler_slot sampler_slots[SAMPLER_SLOTS];
/* Serializes start and stop (never taken by transitions or handlers). */
static pthread_mutex_t sampler_mu = PTHREAD_MUTEX_INITIALIZER;
/* relaxed in the handler (a stale true only stores one more sample);
 * seq_cst in stop (T1). */
static _Atomic bool sampler_on;
static _Atomic uint32_t sampler_hz;
/* Under sampler_mu. */
static struct sigaction sampler_old;
static bool sampler_installed;
static pthread_key_t sampler_key;
static bool sampler_key_ok;

/* Statistics: relaxed counters that order nothing (fetch_adds in the
 * handler and the thread hooks, relaxed loads in the stats call). */
static _Atomic uint64_t st_signals; /* SIGPROF deliveries handled */
static _Atomic uint64_t st_stored, st_dropped, st_overruns;
static _Atomic uint64_t st_handler_ns;
static _Atomic uint64_t st_timers, st_no_timer;
static _Atomic uint32_t st_threads; /* threads with a timer armed now */

static void sampler_on_signal(int sig, siginfo_t *si, void *ucv);

/* ---- slots and timers ---- */

/* Delete slot i's timer if the slot still holds `armed`. */
static bool sampler_slot_delete(uint32_t i, uint64_t armed)
{
	struct sampler_slot *s = &sampler_slots[i];
	uint64_t w = armed;

	/* acq_rel: acquire pairs with the ARMED store (S1), so s->timer is
	 * the armed timer; only one deleter wins. */
	if (SS_STATE(armed) != SS_ARMED ||
	    !atomic_compare_exchange_strong_explicit(
		    &s->word, &w, SS_WORD(SS_SEQ(armed), SS_DELETING),
		    memory_order_acq_rel, memory_order_relaxed))
		return false;
	timer_delete(s->timer);
	atomic_fetch_sub_explicit(&st_threads, 1, memory_order_relaxed);
	/* release: pairs with the next claimer's acquire CAS. */
	atomic_store_explicit(&s->word, SS_WORD(SS_SEQ(armed), SS_FREE),
			      memory_order_release);
	return true;
}

static void sampler_disarm(struct probe_thread *t)
{
	if (!t->slot)
		return;
	sampler_slot_delete(t->slot - 1, t->slot_word);
	t->slot = 0;
}

static void sampler_thread_exit(void *arg)
{
	(void)arg;
	sampler_disarm(&probe_self);
}

static bool sampler_claim(uint32_t *out, uint64_t *word)
{
	uint32_t start = (uint32_t)(probe_tid() * 2654435761u) % SAMPLER_SLOTS;

	for (uint32_t k = 0; k < SAMPLER_SLOTS; k++) {
		uint32_t i = (start + k) % SAMPLER_SLOTS;
		_Atomic uint64_t *w = &sampler_slots[i].word;
		/* relaxed: the CAS below is what counts. */
		uint64_t cur = atomic_load_explicit(w, memory_order_relaxed);
		uint64_t claimed = SS_WORD(SS_SEQ(cur) + 1, SS_CLAIMED);

		/* acquire: pairs with the FREE store of the last deleter. */
		if (SS_STATE(cur) == SS_FREE &&
		    atomic_compare_exchange_strong_explicit(
			    w, &cur, claimed, memory_order_acquire,
			    memory_order_relaxed)) {
			*out = i;
			*word = claimed;
			return true;
		}
	}
	return false;
}

static int sampler_arm(struct probe_thread *t, uint32_t epoch)
{
	struct sigevent sev;
	struct itimerspec its;
	uint64_t claimed, armed, period;
	uint32_t i, hz;
	timer_t tm;
	int err;

	/* Still armed from this run (the epoch moved for another reason):
	 * keep it.  A stop would have deleted it. */
	if (t->slot &&
	    atomic_load_explicit(&sampler_slots[t->slot - 1].word,
				 memory_order_acquire) == t->slot_word)
		return 0;
	t->slot = 0;
	/* Bounds before the first signal can arrive. */
	probe_thread_bounds(t);
	if (!sampler_claim(&i, &claimed)) {
		atomic_fetch_add_explicit(&st_no_timer, 1,
					  memory_order_relaxed);
		return -EAGAIN;
	}
	/* relaxed: 0 means a stop ran since our epoch load (S2 then
	 * cancels anyway); never divide by it. */
	hz = atomic_load_explicit(&sampler_hz, memory_order_relaxed);
	if (!hz) {
		err = ECANCELED;
		goto fail;
	}
	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_THREAD_ID;
	sev.sigev_signo = SIGPROF;
	sev.sigev_value.sival_ptr = sampler_slots; /* our mark */
	sev.sigev_notify_thread_id = (pid_t)probe_tid();
	period = 1000000000u / hz;
	memset(&its, 0, sizeof(its));
	its.it_value.tv_sec = (time_t)(period / 1000000000u);
	its.it_value.tv_nsec = (long)(period % 1000000000u);
	its.it_interval = its.it_value;
	if (timer_create(CLOCK_THREAD_CPUTIME_ID, &sev, &tm) != 0) {
		err = errno;
		goto fail;
	}
	if (timer_settime(tm, 0, &its, NULL) != 0) {
		err = errno;
		timer_delete(tm);
		goto fail;
	}
	sampler_slots[i].timer = tm;
	armed = SS_WORD(SS_SEQ(claimed), SS_ARMED);
	atomic_fetch_add_explicit(&st_threads, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&st_timers, 1, memory_order_relaxed);
	/* (S1) seq_cst: Dekker with stop's (T2)/(T3); its release part
	 * publishes the timer id to the deleter. */
	atomic_store_explicit(&sampler_slots[i].word, armed,
			      memory_order_seq_cst);
	t->slot = i + 1;
	t->slot_word = armed;
	if (!t->key_set && sampler_key_ok)
		t->key_set = pthread_setspecific(sampler_key, t) == 0;
	/* (S2) seq_cst: a stop that ran meanwhile may have missed us. */
	if (atomic_load_explicit(&probe_capture_epoch, memory_order_seq_cst) !=
	    epoch) {
		sampler_disarm(t);
		return -ECANCELED;
	}
	return 0;
fail:
	/* release: the slot goes back untouched; pairs with the next
	 * claimer's acquire CAS, as the free store in sampler_slot_delete. */
	atomic_store_explicit(&sampler_slots[i].word,
			      SS_WORD(SS_SEQ(claimed), SS_FREE),
			      memory_order_release);
	/* A stop that overtook us is not a thread left unsampled. */
	if (err != ECANCELED)
		atomic_fetch_add_explicit(&st_no_timer, 1,
					  memory_order_relaxed);
	return -err;
}

int sampler_thread_sync(struct probe_thread *t, uint32_t epoch)
{
	/* relaxed: ordered after the caller's acquire of the epoch, which
	 * start released after storing it. */
	if (atomic_load_explicit(&sampler_on, memory_order_relaxed))
		return sampler_arm(t, epoch);
	sampler_disarm(t);
	return 0;
}

/* ---- the signal handler ---- */

static bool sampler_context(const void *ucv, uintptr_t *pc, uintptr_t *sp,
			    uintptr_t *fp)
{
#if defined(__x86_64__)
	const ucontext_t *uc = ucv;

	*pc = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
	*sp = (uintptr_t)uc->uc_mcontext.gregs[REG_RSP];
	*fp = (uintptr_t)uc->uc_mcontext.gregs[REG_RBP];
	return true;
#elif defined(__aarch64__)
	const ucontext_t *uc = ucv;

	*pc = (uintptr_t)uc->uc_mcontext.pc;
	*sp = (uintptr_t)uc->uc_mcontext.sp;
	*fp = (uintptr_t)uc->uc_mcontext.regs[29];
	return true;
#else
	(void)ucv, (void)pc, (void)sp, (void)fp;
	return false;
#endif
}

static void sampler_sample(const void *ucv)
{
	struct probe_thread *t = &probe_self;
	struct unwind_stack coro, thread, range;
	struct snap_sample_in in;
	uint64_t f[SAMPLER_FRAMES], tag, id;
	uintptr_t pc, sp, fp;
	unsigned n = 0;

	if (!ucv || !sampler_context(ucv, &pc, &sp, &fp))
		return;
	/* Same thread as the writers (probe_thread_enter, perthread.c): hi is
	 * stored last and invalidated first, so read it first. */
	tag = atomic_load_explicit(&t->run_tag, memory_order_relaxed);
	coro.hi = atomic_load_explicit(&t->run_hi, memory_order_relaxed);
	atomic_signal_fence(memory_order_acquire);
	coro.lo = atomic_load_explicit(&t->run_lo, memory_order_relaxed);
	thread.hi = atomic_load_explicit(&t->stack_hi, memory_order_relaxed);
	atomic_signal_fence(memory_order_acquire);
	thread.lo = atomic_load_explicit(&t->stack_lo, memory_order_relaxed);
	range = unwind_range(sp, &coro, &thread);
	f[n++] = pc;
	n += unwind_fp(fp, range, f + n, SAMPLER_FRAMES - 2);
	tag = tag ? tag : CT_TAG_THREAD | (probe_tid() & 0xffffffffffffull);
	/* The registers and the stack's top, for the engine's CFI walk; the
	 * frame-pointer walk goes along (the engine splices it on where the
	 * copy ends).  Without a ring, or with its record busy, the walk
	 * alone goes to CallTrace. */
	in = (struct snap_sample_in){
		.tag = tag,
		.pc = pc,
		.sp = sp,
		.fp = fp,
		.weight = 1,
		.frames = f,
		.nframes = n,
		.ncopy = sp >= range.lo && sp < range.hi
				 ? (range.hi - sp < SNAP_COPY_MAX
					    ? (uint32_t)(range.hi - sp)
					    : SNAP_COPY_MAX)
				 : 0,
	};
	if (in.ncopy && probe_snap_put(&in)) {
		atomic_fetch_add_explicit(&st_stored, 1, memory_order_relaxed);
		return;
	}
	f[n++] = tag;
	id = probe_calltrace_put(f, n, 1);
	if (id == COROTOP_CALLTRACE_DROPPED)
		atomic_fetch_add_explicit(&st_dropped, 1, memory_order_relaxed);
	else if (id)
		atomic_fetch_add_explicit(&st_stored, 1, memory_order_relaxed);
}

static void sampler_on_signal(int sig, siginfo_t *si, void *ucv)
{
	uint64_t t0;
	int saved = errno;

	(void)sig;
	if (si && si->si_code == SI_TIMER &&
	    si->si_value.sival_ptr == (void *)sampler_slots &&
	    atomic_load_explicit(&sampler_on, memory_order_relaxed)) {
		atomic_fetch_add_explicit(&st_signals, 1, memory_order_relaxed);
		if (si->si_overrun > 0)
			atomic_fetch_add_explicit(&st_overruns,
						  (uint64_t)si->si_overrun,
						  memory_order_relaxed);
		/* clock_gettime is async-signal-safe (POSIX), vDSO here. */
		t0 = probe_now();
		sampler_sample(ucv);
		atomic_fetch_add_explicit(&st_handler_ns, probe_now() - t0,
					  memory_order_relaxed);
	}
	errno = saved;
}

/* ---- start, stop ---- */

/* SIGPROF has someone else's handler. */
static bool sampler_foreign(const struct sigaction *sa)
{
	if (sa->sa_flags & SA_SIGINFO)
		return sa->sa_sigaction != sampler_on_signal;
	return sa->sa_handler != SIG_DFL && sa->sa_handler != SIG_IGN;
}

/* Under sampler_mu: our handler on SIGPROF, the old one kept. */
static int sampler_install(void)
{
	struct sigaction sa, old;

	if (sigaction(SIGPROF, NULL, &old) != 0)
		return -errno;
	/* Left installed by a stop that could not restore: still ours. */
	if (sampler_installed && !sampler_foreign(&old) &&
	    (old.sa_flags & SA_SIGINFO))
		return 0;
	/* Someone else's -- also when they replaced ours meanwhile. */
	if (sampler_foreign(&old))
		return -EBUSY;
	if (!sampler_installed)
		sampler_old = old;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = sampler_on_signal;
	sa.sa_flags = SA_RESTART | SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGPROF, &sa, NULL) != 0)
		return -errno;
	sampler_installed = true;
	return 0;
}

COROTOP_API int corotop_sampler_start(unsigned hz)
{
	int err = 0;

	if (!UNWIND_SUPPORTED)
		return -ENOTSUP;
	if (hz < 1 || hz > SAMPLER_HZ_MAX)
		return -EINVAL;
	/* acquire: pairs with probe_attach_region's release (probe.c). */
	if (!__atomic_load_n(&corotop_probe_live_, __ATOMIC_ACQUIRE) ||
	    !probe_calltrace_attached())
		return -ENODEV;
	pthread_mutex_lock(&sampler_mu);
	if (atomic_load_explicit(&sampler_on, memory_order_relaxed)) {
		err = -EALREADY;
		goto out;
	}
	if (!sampler_key_ok) {
		if (pthread_key_create(&sampler_key, sampler_thread_exit)) {
			err = -EAGAIN;
			goto out;
		}
		sampler_key_ok = true;
	}
	err = sampler_install();
	if (err)
		goto out;
	/* relaxed: both are published by the epoch release below, which
	 * every thread acquires before arming. */
	atomic_store_explicit(&sampler_hz, hz, memory_order_relaxed);
	atomic_store_explicit(&sampler_on, true, memory_order_relaxed);
	atomic_fetch_add_explicit(&probe_capture_epoch, 1,
				  memory_order_seq_cst);
out:
	pthread_mutex_unlock(&sampler_mu);
	if (err)
		return err;
	/* The caller's own timer, now. */
	err = probe_thread_sync(&probe_self);
	if (err)
		corotop_sampler_stop();
	return err;
}

/* Under sampler_mu, sampler off: delete every armed timer; true once no
 * slot is armed or being armed. */
static bool sampler_delete_all(void)
{
	bool busy = false;

	for (uint32_t i = 0; i < SAMPLER_SLOTS; i++) {
		/* (T3) seq_cst: pairs with (S1)/(S2). */
		uint64_t w = atomic_load_explicit(&sampler_slots[i].word,
						  memory_order_seq_cst);

		if (SS_STATE(w) == SS_ARMED)
			sampler_slot_delete(i, w);
		else if (SS_STATE(w) != SS_FREE)
			busy = true;
	}
	return !busy;
}

COROTOP_API void corotop_sampler_stop(void)
{
	struct sigaction ign;
	bool idle = false;

	pthread_mutex_lock(&sampler_mu);
	if (!atomic_load_explicit(&sampler_on, memory_order_relaxed)) {
		pthread_mutex_unlock(&sampler_mu);
		return;
	}
	/* (T1), (T2) seq_cst: see the top of the file. */
	atomic_store_explicit(&sampler_on, false, memory_order_seq_cst);
	atomic_store_explicit(&sampler_hz, 0, memory_order_relaxed);
	atomic_fetch_add_explicit(&probe_capture_epoch, 1,
				  memory_order_seq_cst);
	for (unsigned ms = 0; ms <= SAMPLER_STOP_WAIT_MS; ms++) {
		struct timespec one = {0, 1000000};

		idle = sampler_delete_all();
		if (idle)
			break;
		/* A thread between claim and arm: it deletes its own timer
		 * as soon as it sees the epoch (S2); wait for that. */
		nanosleep(&one, NULL);
	}
	if (idle && sampler_installed) {
		/* SIG_IGN discards a SIGPROF still pending from a deleted
		 * timer (POSIX), so the old disposition never sees one. */
		memset(&ign, 0, sizeof(ign));
		ign.sa_handler = SIG_IGN;
		sigemptyset(&ign.sa_mask);
		sigaction(SIGPROF, &ign, NULL);
		sigaction(SIGPROF, &sampler_old, NULL);
		sampler_installed = false;
	}
	pthread_mutex_unlock(&sampler_mu);
	(void)probe_thread_sync(&probe_self);
}

COROTOP_API void corotop_sampler_stats(struct corotop_sampler_stats *out)
{
	out->signals = atomic_load_explicit(&st_signals, memory_order_relaxed);
	out->stored = atomic_load_explicit(&st_stored, memory_order_relaxed);
	out->dropped = atomic_load_explicit(&st_dropped, memory_order_relaxed);
	out->overruns =
		atomic_load_explicit(&st_overruns, memory_order_relaxed);
	out->timers = atomic_load_explicit(&st_timers, memory_order_relaxed);
	out->no_timer =
		atomic_load_explicit(&st_no_timer, memory_order_relaxed);
	out->threads = atomic_load_explicit(&st_threads, memory_order_relaxed);
	out->hz = atomic_load_explicit(&sampler_hz, memory_order_relaxed);
	out->handler_ns =
		atomic_load_explicit(&st_handler_ns, memory_order_relaxed);
}

void sampler_autostart(void)
{
	const char *v = secure_getenv("COROTOP_SAMPLE_HZ");
	unsigned long hz;
	char *end;

	/* Digits only, 1..10000; anything else is ignored. */
	if (!v || *v < '0' || *v > '9')
		return;
	errno = 0;
	hz = strtoul(v, &end, 10);
	if (errno || *end || hz < 1 || hz > SAMPLER_HZ_MAX)
		return;
	(void)corotop_sampler_start((unsigned)hz);
}

void sampler_atfork_child(void)
{
	/* One thread, no timers: timers are not inherited across fork. */
	if (sampler_key_ok)
		for (uint32_t i = 0; i < SAMPLER_SLOTS; i++)
			atomic_store_explicit(&sampler_slots[i].word, 0,
					      memory_order_relaxed);
	probe_self.slot = 0;
	atomic_store_explicit(&st_threads, 0, memory_order_relaxed);
	pthread_mutex_init(&sampler_mu, NULL);
	/* Still running: this thread re-arms at its next transition.
	 * release: pairs with the acquire load of the epoch in
	 * probe_thread_sync (perthread.c), which then sees the reset
	 * slots above. */
	if (atomic_load_explicit(&sampler_on, memory_order_relaxed))
		atomic_fetch_add_explicit(&probe_capture_epoch, 1,
					  memory_order_release);
}
