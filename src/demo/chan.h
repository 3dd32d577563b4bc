/*
 * chan: a channel of 64-bit values between coroutines.
 *
 * A bounded FIFO of values plus a FIFO of parked receivers.  A send never
 * blocks: it hands the value straight to the oldest waiting receiver and
 * makes it runnable, or buffers it, or reports the channel full.  A receive
 * takes a buffered value or parks the coroutine until a send arrives.
 *
 * A receiver parked on a channel nobody sends to waits forever: that is how
 * the demo stages its "lost wakeup" coroutines for corotop to find.
 */
#ifndef COROTOP_DEMO_CHAN_H
#define COROTOP_DEMO_CHAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct chan;
struct scheduler;

/* NULL with errno on failure.  cap > 0 values are buffered. */
struct chan *chan_create(struct scheduler *s, size_t cap);
/* Parked receivers are left alone: the scheduler frees coroutines. */
void chan_destroy(struct chan *ch);
/* Any thread.  False when the buffer is full and nobody waits. */
bool chan_send(struct chan *ch, uint64_t v);
/* Coroutine context: the next value, parking until there is one. */
uint64_t chan_recv(struct chan *ch);

#endif
