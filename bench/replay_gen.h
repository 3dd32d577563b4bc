/*
 * replay_gen: a synthetic corotop recording (Heph) for the replay
 * benchmarks.  See replay_gen.c for its shape.
 */
#ifndef COROTOP_BENCH_REPLAY_GEN_H
#define COROTOP_BENCH_REPLAY_GEN_H

#include <stdint.h>

/* Write a recording of about `events` events (a few hundred more at
 * most: it ends at a harvest pass) to path, synced; print one line
 * ("replay_open gen ...") describing it.  Exits on a failure. */
void replay_gen_write(const char *path, uint64_t events);

#endif
