/*
 * stacks: the object's lifecycle, and the few things the engine root asks
 * of it that belong to no one file -- a park to count, a death to keep,
 * a parked stack's frames, what the walks learned and their books.  The
 * rotation, the samples, the walks, the census and the hot queries are
 * their own files (stacks.h lists them).
 */
#include <stdlib.h>
#include <string.h>

#include "engine/stacks/stacks_internal.h"

#include "engine/calltrace/parked.h"
#include "engine/target/framecheck.h"

struct stacks *stacks_create(const struct stacks_env *env,
			     const struct stacks_config *cfg)
{
	struct stacks *sk = calloc(1, sizeof(*sk));

	if (!sk)
		return NULL;
	sk->env = *env;
	sk->cfg = *cfg;
	pthread_mutex_init(&sk->ct.hot_lock, NULL);
	return sk;
}

bool stacks_open(struct stacks *sk, char *err, size_t errlen)
{
	return stacks_ct_create(sk, err, errlen);
}

bool stacks_start_walker(struct stacks *sk, char *err, size_t errlen)
{
	return stacks_unwind_start(sk, err, errlen);
}

bool stacks_start_samples(struct stacks *sk, char *err, size_t errlen)
{
	return stacks_samples_start(sk, err, errlen);
}

void stacks_stop(struct stacks *sk)
{
	stacks_ct_final(sk);
	/* The last walks are the caller's (stacks_walk), on its thread, now
	 * that the walker is gone. */
	stacks_unwind_stop(sk);
}

void stacks_close(struct stacks *sk)
{
	stacks_ct_destroy(sk);
}

void stacks_destroy(struct stacks *sk)
{
	if (!sk)
		return;
	stacks_unwind_finish(sk);
	pthread_mutex_destroy(&sk->ct.hot_lock);
	free(sk);
}

void stacks_unlink(const struct stacks *sk)
{
	stacks_ct_unlink(sk);
}

void stacks_poll(struct stacks *sk, uint64_t now)
{
	stacks_ct_poll(sk, now);
}

unsigned stacks_walk(struct stacks *sk, uint64_t now)
{
	return stacks_unwind_parked(sk, now);
}

void stacks_prime(struct stacks *sk)
{
	stacks_unwind_prime(sk);
}

void stacks_others(struct stacks *sk)
{
	/* relaxed: a hint (stacks_ct.others); the rotations that read it
	 * run on the thread that sets it (the harvest's). */
	atomic_store_explicit(&sk->ct.others, true, memory_order_relaxed);
}

bool stacks_park(struct stacks *sk, uint64_t trace)
{
	struct stacks_ct *ct = &sk->ct;

	if (parked_sorted_has(ct->preserve, ct->npreserve_ct, trace))
		return false;
	ct->parks++; /* a stack the last rotation kept not */
	return true;
}

void stacks_died_parked(struct stacks *sk, uint64_t trace)
{
	struct stacks_ct *ct = &sk->ct;

	if (ct->dead_parked && ct->ndead_parked < STACKS_CT_DEAD_MAX)
		ct->dead_parked[ct->ndead_parked++] = trace;
}

size_t stacks_parked_frames(struct stacks *sk, uint64_t id, uint64_t *frames,
			    size_t max)
{
	size_t n = 0;

	pthread_mutex_lock(&sk->ct.hot_lock);
	if (sk->ct.parked)
		n = parked_frames(sk->ct.parked, id, frames, max);
	pthread_mutex_unlock(&sk->ct.hot_lock);
	return n;
}

uint64_t stacks_learned(struct stacks *sk, uint64_t id, uint64_t addr,
			uint64_t *stack)
{
	return learned_get(&sk->unwind.learned, id, addr, stack);
}

void stacks_where_view(const struct stacks *sk, struct stacks_where *out)
{
	*out = (struct stacks_where){.where_ts = sk->unwind.where_ts,
				     .cap = sk->unwind.cap,
				     .learned = &sk->unwind.learned};
}

bool stacks_walked(const struct stacks *sk, uint32_t r, uint64_t state_ts)
{
	return r < sk->unwind.cap && sk->unwind.where_ts[r] == state_ts;
}

void stacks_walk_stats(const struct stacks *sk, struct stacks_walk_stats *out)
{
	struct framecheck_stats st;

	*out = (struct stacks_walk_stats){
		.from_saved = sk->unwind.from_saved,
		.from_probe = sk->unwind.from_probe,
		.saved_refused = sk->unwind.saved_refused,
	};
	for (size_t k = 0; k < STACKS_UNWIND_PROCS; k++) {
		framecheck_stats(sk->unwind.procs[k].fc, &st);
		out->not_code += st.not_code;
		out->not_after_call += st.not_after_call;
	}
}
