/*
 * batch_loop: batch mode's loop (batch_loop.h).  The signals are the
 * caller's, blocked before any thread started, and taken here with
 * sigtimedwait (ticker.c): a signal ends the loop with 128+N, SIGCHLD
 * lets the engine harvest the target's last words and print them once
 * more.  A snapshot's ppt section has the frames delivered since the
 * previous one, the newest --ppt-frames of them.
 */
#define _GNU_SOURCE
#include "ui/batch/batch_loop.h"
#include "ui/batch/dump.h"

#include <stdlib.h>
#include <string.h>

#include "ui/batch/ticker.h"
#include "ui/rows/rowset.h"

/* Batch text shows a short section, whatever --hot-stacks says. */
#define BATCH_HOT_TEXT_ROWS 10
/* At most this many bytes of ppt frames per buffer and snapshot. */
#define BATCH_PPT_BYTES (16u << 20)
/* ... and the newest ppt frames of each buffer. */
#define BATCH_PPT_TEXT_ROWS 10

struct batch_loop {
	struct engine *engine;
	struct batch_options o;
	struct engine_frame frame;
	struct rowset rows;
	unsigned printed;
	/* Per ppt buffer, what the next snapshot prints from. */
	struct batch_ppt_buffer ppt[ENGINE_PPT_MAX_BUFFERS];
	uint64_t ppt_from[ENGINE_PPT_MAX_BUFFERS];
	unsigned char *ppt_bytes[ENGINE_PPT_MAX_BUFFERS];
	struct engine_ppt_frame *ppt_meta[ENGINE_PPT_MAX_BUFFERS];
};

static const char *batch_frame_name(void *ctx, uint64_t addr, bool leaf,
				    bool full, char *buf, size_t len)
{
	return engine_frame_name(ctx, addr, leaf, full, buf, len);
}

static const char *batch_frame_label(void *ctx, uint64_t addr, bool leaf,
				     enum engine_hot_by by, char *buf,
				     size_t len)
{
	return engine_hot_frame_label(ctx, addr, leaf, by, buf, len);
}

static size_t batch_parked(void *ctx, const struct model_coro *c,
			   uint64_t *frames, size_t max, uint64_t *trace_id)
{
	return engine_parked_stack_of(ctx, c, frames, max, trace_id);
}

/* A signal that ends corotop is pending: a long snapshot stops printing
 * rows (the loop takes the signal next). */
static bool batch_interrupted(void *ctx)
{
	sigset_t pending;

	(void)ctx;
	return !sigpending(&pending) && (sigismember(&pending, SIGINT) == 1 ||
					 sigismember(&pending, SIGTERM) == 1 ||
					 sigismember(&pending, SIGHUP) == 1);
}

void batch_hot_of(struct batch_hot *hot, struct engine *e,
		  const struct engine_frame *f, bool labels)
{
	*hot = (struct batch_hot){.s = f->hot,
				  .n = f->nhot,
				  .ct = &f->ct,
				  .name = batch_frame_name,
				  .parked = batch_parked,
				  .ctx = e};
	if (labels) {
		hot->by = f->hot_by;
		hot->label = batch_frame_label;
	}
}

void batch_ppt_of(struct batch_ppt *ppt, struct batch_ppt_buffer *buf,
		  struct engine *e, const struct engine_frame *f)
{
	for (size_t i = 0; i < f->nbuf; i++)
		buf[i] = (struct batch_ppt_buffer){
			.b = f->buf[i], .desc = engine_ppt_desc(e, i)};
	*ppt = (struct batch_ppt){.info = f->ppt, .buf = buf, .n = f->nbuf};
}

struct batch_loop *batch_loop_create(struct engine *e,
				     const struct batch_options *o)
{
	struct batch_loop *b = calloc(1, sizeof(*b));

	if (!b)
		return NULL;
	b->engine = e;
	b->o = *o;
	rowset_init(&b->rows);
	/* Without memory for the hot stacks, a snapshot has none. */
	engine_frame_init(&b->frame, o->hot_stacks, true, o->hot_by);
	return b;
}

void batch_loop_destroy(struct batch_loop *b)
{
	if (!b)
		return;
	for (size_t i = 0; i < ENGINE_PPT_MAX_BUFFERS; i++) {
		free(b->ppt_bytes[i]);
		free(b->ppt_meta[i]);
	}
	rowset_finish(&b->rows);
	engine_frame_finish(&b->frame);
	free(b);
}

/* The frames of ppt buffer i delivered since the last snapshot (the
 * newest ppt_frames of them) into p. */
static void batch_ppt_frames(struct batch_loop *b, size_t i,
			     struct batch_ppt_buffer *p)
{
	const struct ppt_desc *d = p->desc;
	uint64_t from = b->ppt_from[i], skipped = 0;
	/* The frame size comes from the target: a byte budget. */
	size_t max = b->o.ppt_frames;

	if (!d || !max)
		return;
	if (max > BATCH_PPT_BYTES / engine_ppt_frame_size(d))
		max = BATCH_PPT_BYTES / engine_ppt_frame_size(d);
	if (!b->ppt_bytes[i]) {
		b->ppt_bytes[i] = malloc(max * engine_ppt_frame_size(d));
		b->ppt_meta[i] = malloc(max * sizeof(*b->ppt_meta[i]));
		if (!b->ppt_bytes[i] || !b->ppt_meta[i])
			return;
	}
	if (p->b.next_pos - from > max) {
		p->omitted = p->b.next_pos - max - from;
		from = p->b.next_pos - max;
	}
	p->n = engine_ppt_frames(b->engine, i, from, b->ppt_bytes[i],
				 b->ppt_meta[i], max, &b->ppt_from[i],
				 &skipped);
	p->omitted += skipped;
	p->bytes = b->ppt_bytes[i];
	p->meta = b->ppt_meta[i];
}

static void batch_loop_print(struct batch_loop *b, bool live)
{
	struct engine_frame *f = &b->frame;
	struct rowset_order order = {.column = b->o.sort_column};
	struct batch_hot hot;
	struct batch_ppt ppt;
	const uint32_t *idx;
	size_t n = 0;

	engine_frame_take(b->engine, f);
	batch_hot_of(&hot, b->engine, f, true);
	hot.interrupted = batch_interrupted;
	/* The text table is the TUI's (filter.h: a live one waits for a
	 * coroutine's first switch); JSON lists every coroutine. */
	b->o.filter->unswitched_ns =
		b->o.json || b->o.dump || !live ? 0 : FILTER_UNSWITCHED_NS;
	idx = rowset_rows(&b->rows, &f->snap, b->o.filter, &order, &n);
	batch_ppt_of(&ppt, b->ppt, b->engine, f);
	for (size_t i = 0; i < f->nbuf; i++)
		batch_ppt_frames(b, i, &b->ppt[i]);
	if (b->o.json) {
		batch_print_json(stdout, &f->snap, idx, n, &hot, &ppt);
	} else if (b->o.dump) {
		dump_print_text(stdout, &f->snap, idx, n, &hot);
	} else {
		batch_print_text(stdout, &f->snap, idx, n, 0);
		batch_print_hot_text(stdout, &hot, BATCH_HOT_TEXT_ROWS);
		/* A scanned process has no buffer: the scan's line says
		 * what was read instead. */
		if (!f->snap.target.scanned)
			batch_print_ppt_text(stdout, &ppt, BATCH_PPT_TEXT_ROWS);
	}
	fflush(stdout);
	b->printed++;
}

static bool batch_loop_done(const struct batch_loop *b)
{
	return b->o.iterations && b->printed >= b->o.iterations;
}

static int batch_target_status(const struct snapshot *s)
{
	if (s->target.term_signal)
		return 128 + s->target.term_signal;
	return s->target.exit_code;
}

/* A scanned process's first snapshot waits for its first scan (a large
 * process takes seconds: an empty table before it would say it has no
 * coroutine), at most this many delays. */
#define BATCH_SCAN_WAIT_DELAYS 100u

/* The engine scans the live target's memory and has not finished a
 * pass, or the refresh that follows it (its threads' rows). */
static bool batch_scan_pending(const struct snapshot *s)
{
	return s->target.scanned && s->target.running &&
	       (!s->scan.passes || (!s->target.core && !s->scan.refreshes));
}

int batch_loop_live(struct batch_loop *b)
{
	struct ticker t;
	unsigned waits = 0; /* ticks the first snapshot waited for a scan */

	ticker_init(&t, b->o.delay_tenths, false);
	for (;;) {
		int sig;

		switch (ticker_wait(&t, b->o.sigs, 0, true, &sig)) {
		case TICKER_CHILD:
			if (!engine_reap(b->engine))
				continue;
			/* Harvest the target's last words, then report. */
			engine_stop(b->engine);
			batch_loop_print(b, true);
			return batch_target_status(&b->frame.snap);
		case TICKER_SIGNAL:
			return 128 + sig;
		case TICKER_FAILED:
			return 1;
		case TICKER_IDLE:
			continue;
		case TICKER_TICK:
			break;
		}
		if (!b->printed) {
			engine_frame_take(b->engine, &b->frame);
			if (batch_scan_pending(&b->frame.snap) &&
			    ++waits < BATCH_SCAN_WAIT_DELAYS)
				continue;
		}
		batch_loop_print(b, true);
		/* A core file's process is frozen: one snapshot says it all. */
		if (batch_loop_done(b) || b->frame.snap.target.core)
			return 0;
		/* An observer whose engine stopped (a region truncated under
		 * it) has nothing more to show: end now, the caller turns the
		 * error into exit 1, rather than repeat it until -n. */
		if (b->frame.snap.observer && b->frame.snap.error)
			return 0;
	}
}

/* Whether a dump can be printed: the first scan is in, or, for a
 * process the engine hears from (probe, preload, ppt), one delay has
 * passed for its census to arrive. */
static bool batch_dump_ready(const struct snapshot *s, uint64_t waited_ns,
			     uint64_t delay_ns)
{
	if (s->target.scanned)
		return !batch_scan_pending(s) ||
		       waited_ns >= BATCH_SCAN_WAIT_DELAYS * delay_ns;
	return waited_ns >= delay_ns || !s->target.running;
}

int batch_loop_dump(struct batch_loop *b)
{
	const uint64_t step_ns = 50u * 1000000u;
	uint64_t delay_ns = (uint64_t)b->o.delay_tenths * 100000000u;
	uint64_t waited = 0;

	for (;;) {
		struct timespec ts = {0, (long)step_ns};
		siginfo_t si;
		int sig;

		engine_frame_take(b->engine, &b->frame);
		if (batch_dump_ready(&b->frame.snap, waited, delay_ns))
			break;
		sig = sigtimedwait(b->o.sigs, &si, &ts);
		if (sig > 0 && sig != SIGWINCH && sig != SIGCHLD)
			return 128 + sig;
		if (sig == SIGCHLD)
			(void)engine_reap(b->engine);
		waited += step_ns;
	}
	batch_loop_print(b, true);
	return 0;
}

int batch_loop_replay(struct batch_loop *b, const uint64_t *at, size_t nat)
{
	uint64_t period = (uint64_t)b->o.delay_tenths * 100000000u;
	struct engine_replay_info ri;
	struct timespec zero = {0, 0};

	if (nat) {
		for (size_t i = 0; i < nat && !batch_loop_done(b); i++) {
			engine_replay_seek(b->engine, at[i]);
			batch_loop_print(b, false);
		}
		return 0;
	}
	engine_replay_info(b->engine, &ri);
	for (uint64_t t = ri.t0 + period; t < ri.t1 && t >= ri.t0;
	     t += period) {
		siginfo_t si;
		int sig = sigtimedwait(b->o.sigs, &si, &zero);

		if (sig > 0 && sig != SIGWINCH && sig != SIGCHLD)
			return 128 + sig;
		engine_replay_seek(b->engine, t);
		batch_loop_print(b, false);
		if (batch_loop_done(b))
			return 0;
	}
	engine_replay_seek(b->engine, ri.t1);
	batch_loop_print(b, false);
	return 0;
}

const char *batch_loop_error(const struct batch_loop *b)
{
	return b->printed ? b->frame.snap.error : NULL;
}
