/*
 * attach: attach mode (corotop -p PID).  The engine finds the ppt
 * buffers the process publishes, attaches an agent to each, polls them on
 * a thread of its own, and watches the process through a pidfd.
 *
 * The probe's own buffer ("corotop", whose JSON asks for the rendezvous)
 * gets the engine's cTP region in its control segment: the probe maps it
 * at its next transition and the coroutines appear in the table, exactly
 * as if the target had been launched by corotop.  Other buffers are shown
 * in the ppt view.
 *
 * Lifecycle.  create: own-uid check, symbols, counters (refused ones are a
 * warning); start: attach every buffer (one that fails is a warning, all
 * failing is an error), then the ppt thread; stop: join it; destroy:
 * detach every buffer that is still ours -- _hmem and _stat back to 0 --
 * unless the process is gone.
 *
 * Pacing.  A poll that found frames is followed by the next after 1 ms,
 * an empty one after 2, 4, .. up to 10 ms: at most 10 ms from a frame's
 * save to corotop; at 1 M frames/s the default 64 Ki-frame block holds
 * 65 ms, room for a ppt thread the scheduler kept waiting.
 * The sleep is a poll() on the pidfd and the engine's stop pipe, so the
 * target's exit is seen at once: the thread then raises SIGCHLD in our own
 * process, which both output loops already wait for.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "engine/attach/attach.h"
#include "engine/attach/doorbell.h"
#include "engine/ctp/region.h"
#include "engine/ppt/perfctr.h"
#include "engine/ppt/pptagent.h"
#include "engine/ppt/pptfind.h"
#include "engine/ppt/pptframe.h"
#include "engine/target/autotrace.h"
#include "engine/target/procmem.h"
#include "common/clock.h"

#define PPT_POLL_MIN_MS 1
#define PPT_POLL_MAX_MS 10
#define PPT_TICK_NS 1000000000ull

/* The agents are polled by the ppt thread under `lock`; readers copy
 * under it too. */
struct attach {
	struct attach_env env;
	struct attach_config cfg;
	bool enabled;
	pid_t pid;
	int pidfd; /* -1: liveness by polling /proc */
	struct procmem pm;
	struct pptfind_result found;
	struct pptagent *agents; /* found.n of them; state DETACHED = failed */
	char (*errors)[256];	 /* per agent: why it is not attached */
	size_t n;
	struct perfctr_set ctr;
	struct corotop_rendezvous rdv;
	pthread_mutex_t lock;
	pthread_t thread;
	bool running;
	bool scanning; /* no buffer: scanned instead (attach_scanning) */
	bool gone;
	uint64_t tick_at;
	uint64_t *tick_delivered; /* per agent, at tick_at */
	double *fps;
	char warning[512];
};

static void attach_warn(struct attach *p, const char *msg)
{
	size_t len = strlen(p->warning);

	/* Truncated past the buffer's end: the first problems matter. */
	if (len + 3 < sizeof(p->warning) &&
	    snprintf(p->warning + len, sizeof(p->warning) - len, "%s%s",
		     len ? "; " : "", msg) < 0)
		p->warning[len] = '\0';
}

static bool attach_find(struct attach *p, char *err, size_t errlen)
{
	char why[512];

	if (!procmem_open(&p->pm, p->pid, err, errlen))
		return false;
	if (!pptfind_scan(p->pid, &p->found, why, sizeof(why))) {
		snprintf(err, errlen, "process %d: %s", (int)p->pid, why);
		return false;
	}
	if (p->cfg.ppt_buffer) {
		size_t k = 0;

		for (size_t i = 0; i < p->found.n; i++)
			if (!strcmp(p->found.buf[i].name, p->cfg.ppt_buffer))
				p->found.buf[k++] = p->found.buf[i];
		if (!k) {
			snprintf(err, errlen,
				 "process %d has no ppt buffer named '%s' "
				 "(corotop -p %d --list-buffers lists them)",
				 (int)p->pid, p->cfg.ppt_buffer, (int)p->pid);
			return false;
		}
		p->found.n = k;
	}
	if (!p->found.n && p->cfg.scan_fallback && !p->cfg.ppt_buffer) {
		p->scanning = true;
		return true;
	}
	if (!p->found.n) {
		char lib[4096];

		/* The route that needs no code change is named first: a
		 * program started with the preload can be attached. */
		(void)autotrace_library(lib, sizeof(lib));
		snprintf(err, errlen,
			 "process %d publishes no ppt buffer (none of its "
			 "ELF files defines _ppt_hmem_NAME, _ppt_stat_NAME "
			 "and _ppt_json_NAME): start it with LD_PRELOAD=%s "
			 "to attach to it later without a code change, link "
			 "libcorotop-probe, or generate a buffer with ppt%s%s",
			 (int)p->pid, lib, p->found.warning[0] ? "; " : "",
			 p->found.warning);
		return false;
	}
	if (p->cfg.counters) {
		if (!perfctr_parse(p->cfg.counters, &p->ctr, why,
				   sizeof(why))) {
			snprintf(err, errlen, "-c: %s", why);
			return false;
		}
		perfctr_probe(&p->ctr, p->pid);
		if (p->ctr.refused[0])
			attach_warn(p, p->ctr.refused);
	}
	if (p->found.n > ENGINE_PPT_MAX_BUFFERS) {
		char w[128];

		snprintf(w, sizeof(w),
			 "%zu buffers found; the first %d (by name) are "
			 "attached (--buffer NAME picks one)",
			 p->found.n, ENGINE_PPT_MAX_BUFFERS);
		attach_warn(p, w);
		p->found.n = ENGINE_PPT_MAX_BUFFERS;
	}
	p->n = p->found.n;
	p->agents = calloc(p->n, sizeof(*p->agents));
	p->errors = calloc(p->n, sizeof(*p->errors));
	p->tick_delivered = calloc(p->n, sizeof(*p->tick_delivered));
	p->fps = calloc(p->n, sizeof(*p->fps));
	if (!p->agents || !p->errors || !p->tick_delivered || !p->fps) {
		snprintf(err, errlen, "out of memory");
		return false;
	}
	if (p->found.warning[0])
		attach_warn(p, p->found.warning);
	return true;
}

struct attach *attach_create(const struct attach_env *env,
			     const struct attach_config *cfg, char *err,
			     size_t errlen)
{
	struct attach *p = calloc(1, sizeof(*p));

	if (!p) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	p->env = *env;
	p->cfg = *cfg;
	p->pidfd = -1;
	if (!cfg->attach_pid)
		return p;
	p->enabled = true;
	p->pid = cfg->attach_pid;
	pthread_mutex_init(&p->lock, NULL);
	if (!attach_find(p, err, errlen)) {
		attach_destroy(p);
		return NULL;
	}
	return p;
}

/* What the probe's buffer hands the probe: our region, as the CTP_*
 * environment would have named it in launch mode. */
static void attach_rendezvous(struct attach *p)
{
	const struct region *g = p->env.region;
	struct corotop_rendezvous *r = &p->rdv;

	memset(r, 0, sizeof(*r));
	r->magic = COROTOP_RDV_MAGIC;
	r->version = COROTOP_RDV_VERSION;
	r->size = sizeof(*r);
	r->max_stations = g->stations;
	r->sample_hz = p->cfg.sample_hz;
	r->flags = p->cfg.parked_stacks ? COROTOP_RDV_PARKED_STACKS : 0;
	r->engine_pid = (uint32_t)getpid();
	/* A path that does not fit makes the rendezvous invalid (the probe
	 * then checks the magic and stays untraced), never a wrong path. */
	if (snprintf(r->shm_path, sizeof(r->shm_path), "%s", g->shm_path) >=
		    (int)sizeof(r->shm_path) ||
	    snprintf(r->sock_path, sizeof(r->sock_path), "%s", g->sock_path) >=
		    (int)sizeof(r->sock_path))
		r->magic = 0;
}

static bool attach_alive(struct attach *p)
{
	struct pollfd pf = {.fd = p->pidfd, .events = POLLIN};

	if (p->pidfd >= 0)
		return poll(&pf, 1, 0) == 0;
	return procmem_alive(p->pid);
}

/* The process exited: freeze the buffers, tell the output loop. */
static void attach_gone(struct attach *p)
{
	pthread_mutex_lock(&p->lock);
	p->gone = true;
	for (size_t i = 0; i < p->n; i++)
		if (pptagent_live(p->agents[i].state))
			pptagent_forget(&p->agents[i]);
	pthread_mutex_unlock(&p->lock);
	p->env.gone(p->env.ctx);
	kill(getpid(), SIGCHLD);
}

static void attach_tick(struct attach *p, uint64_t now)
{
	double secs = (double)(now - p->tick_at) / 1e9;

	for (size_t i = 0; i < p->n; i++) {
		uint64_t d = p->agents[i].st.delivered;

		p->fps[i] = secs > 0 ? (double)(d - p->tick_delivered[i]) / secs
				     : 0;
		p->tick_delivered[i] = d;
	}
	p->tick_at = now;
}

static void *attach_main(void *arg)
{
	struct attach *p = arg;
	int wait_ms = PPT_POLL_MIN_MS;

	/* acquire: pairs with engine_stop's acq_rel exchange (engine.c). */
	while (!atomic_load_explicit(p->env.stop, memory_order_acquire)) {
		struct pollfd pf[2] = {
			{.fd = *p->env.stop_fd, .events = POLLIN},
			{.fd = p->pidfd, .events = POLLIN},
		};
		uint64_t now = clock_now_ns(CLOCK_MONOTONIC);
		size_t got = 0;

		/* The lock per buffer: a poll reads at most a ring's worth,
		 * so readers never wait for more than one.  stop: acquire,
		 * pairs with engine_stop's acq_rel exchange. */
		for (size_t i = 0;
		     i < p->n &&
		     !atomic_load_explicit(p->env.stop, memory_order_acquire);
		     i++) {
			pthread_mutex_lock(&p->lock);
			got += pptagent_poll(&p->agents[i], now);
			pthread_mutex_unlock(&p->lock);
		}
		pthread_mutex_lock(&p->lock);
		if (now - p->tick_at >= PPT_TICK_NS)
			attach_tick(p, now);
		pthread_mutex_unlock(&p->lock);
		if (got)
			wait_ms = PPT_POLL_MIN_MS;
		else if (wait_ms < PPT_POLL_MAX_MS)
			wait_ms = wait_ms * 2 < PPT_POLL_MAX_MS
					  ? wait_ms * 2
					  : PPT_POLL_MAX_MS;
		if (poll(pf, p->pidfd >= 0 ? 2 : 1, wait_ms) < 0 &&
		    errno != EINTR)
			break;
		if (!attach_alive(p)) {
			attach_gone(p);
			break;
		}
	}
	return NULL;
}

bool attach_start(struct attach *p, char *err, size_t errlen)
{
	struct pptagent_config cfg = {
		.force = p->cfg.force_attach,
		.nframes = p->cfg.ppt_block_frames,
		.auto_grow = true,
		.max_frames = PPTAGENT_MAX_FRAMES,
	};
	size_t ok = 0;
	bool rdv = false;
	int rc;

	if (!p || !p->enabled)
		return true;
	attach_rendezvous(p);
	cfg.rdv = &p->rdv;
	cfg.ncounters = p->ctr.n;
	memcpy(cfg.counters, p->ctr.attrs, sizeof(cfg.counters));
	for (size_t i = 0; i < p->n; i++) {
		if (pptagent_attach(&p->agents[i], &p->pm, &p->found.buf[i],
				    &cfg, p->errors[i], sizeof(p->errors[0]))) {
			ok++;
			rdv |= p->agents[i].rendezvous;
		} else {
			attach_warn(p, p->errors[i]);
		}
	}
	/* A program in which nothing transitions hears us now. */
	if (rdv)
		(void)doorbell_ring(p->pid);
	if (!ok && !p->scanning) {
		/* The first failure is the one worth reading. */
		snprintf(err, errlen, "%s", p->errors[0]);
		return false;
	}
	p->pidfd = (int)syscall(SYS_pidfd_open, p->pid, 0);
	p->tick_at = clock_now_ns(CLOCK_MONOTONIC);
	rc = pthread_create(&p->thread, NULL, attach_main, p);
	if (rc) {
		snprintf(err, errlen, "cannot start a thread: %s",
			 strerror(rc));
		return false;
	}
	p->running = true;
	return true;
}

void attach_stop(struct attach *p)
{
	if (!p)
		return;
	if (p->running)
		pthread_join(p->thread, NULL);
	p->running = false;
}

void attach_destroy(struct attach *p)
{
	bool rdv = false;

	if (!p)
		return;
	if (!p->enabled) {
		free(p);
		return;
	}
	attach_stop(p);
	for (size_t i = 0; p->agents && i < p->n; i++) {
		struct pptagent *a = &p->agents[i];

		if (pptagent_live(a->state)) {
			if (attach_alive(p)) {
				rdv |= a->rendezvous;
				pptagent_detach(a);
			} else {
				pptagent_forget(a);
			}
		}
		pptagent_finish(a);
	}
	/* The probe retires the region now, not at its next transition. */
	if (rdv)
		(void)doorbell_ring(p->pid);
	free(p->agents);
	free(p->errors);
	free(p->tick_delivered);
	free(p->fps);
	pptfind_result_finish(&p->found);
	procmem_finish(&p->pm);
	if (p->pidfd >= 0)
		close(p->pidfd);
	pthread_mutex_destroy(&p->lock);
	free(p);
}

bool attach_scanning(const struct attach *p)
{
	return p && p->enabled && p->scanning;
}

struct procmem *attach_pm(struct attach *p)
{
	return p && p->enabled ? &p->pm : NULL;
}

/* ---- what callers read ---- */

/*
 * What the probe said in its last "probe" frame (rendezvous.c): traced 1 = it
 * mapped our region, 2 = it was traced already (by an engine that launched
 * it), 0 = it could not; its errno then.  Under the ppt lock.
 */
static void attach_traced(const struct pptagent *a, struct engine_ppt_info *out)
{
	struct ppt_value v[PPTDESC_MAX_MEMBERS];
	const struct ppt_layout *l;
	const void *f;
	size_t n;

	if (!a->hist_pos || !a->have_desc)
		return;
	f = pptagent_frame(a, a->hist_pos - 1, NULL);
	if (!f || pptframe_type(&a->desc, f) != 0)
		return;
	l = &a->desc.types[0];
	n = pptframe_decode(&a->desc, 0, f, v, PPTDESC_MAX_MEMBERS);
	for (size_t c = 0; c < n && c < l->ncols; c++) {
		if (!strcmp(l->cols[c].name, "traced"))
			out->traced = v[c].v.i == 1 || v[c].v.i == 2;
		if (!strcmp(l->cols[c].name, "error") && v[c].v.i > 0)
			out->probe_errno = (int)v[c].v.i;
	}
	out->probe_said = true;
}

void attach_info(struct attach *p, struct engine_ppt_info *out)
{
	memset(out, 0, sizeof(*out));
	if (!p || !p->enabled)
		return;
	pthread_mutex_lock(&p->lock);
	out->enabled = true;
	out->pid = p->pid;
	out->agent_pid = getpid();
	out->target_gone = p->gone;
	out->nbuffers = p->n;
	for (size_t i = 0; i < p->n; i++)
		if (p->agents[i].rendezvous)
			attach_traced(&p->agents[i], out);
	out->ncounters = p->ctr.n;
	for (uint32_t i = 0; i < p->ctr.n; i++)
		snprintf(out->counters[i], sizeof(out->counters[i]), "%s",
			 p->ctr.names[i]);
	snprintf(out->warning, sizeof(out->warning), "%s", p->warning);
	snprintf(out->refused, sizeof(out->refused), "%s", p->ctr.refused);
	pthread_mutex_unlock(&p->lock);
}

/* The agent's state as the facade names it. */
static const enum engine_ppt_state engine_ppt_states[] = {
	[PPTAGENT_DETACHED] = ENGINE_PPT_DETACHED,
	[PPTAGENT_UNHOOKING] = ENGINE_PPT_UNHOOKING,
	[PPTAGENT_WAITING] = ENGINE_PPT_WAITING,
	[PPTAGENT_ATTACHED] = ENGINE_PPT_ATTACHED,
	[PPTAGENT_GONE] = ENGINE_PPT_GONE,
	[PPTAGENT_LOST] = ENGINE_PPT_LOST,
};

size_t attach_buffers(struct attach *p, struct engine_ppt_buffer *out,
		      size_t max)
{
	size_t n = 0;

	if (!p || !p->enabled)
		return 0;
	pthread_mutex_lock(&p->lock);
	for (; n < p->n && n < max; n++) {
		const struct pptagent *a = &p->agents[n];
		struct engine_ppt_buffer *b = &out[n];

		memset(b, 0, sizeof(*b));
		snprintf(b->name, sizeof(b->name), "%s", p->found.buf[n].name);
		snprintf(b->object, sizeof(b->object), "%s",
			 p->found.buf[n].object);
		b->state =
			(size_t)a->state < sizeof(engine_ppt_states) /
						   sizeof(engine_ppt_states[0])
				? engine_ppt_states[a->state]
				: ENGINE_PPT_DETACHED;
		b->dynamic = a->dynamic;
		b->rendezvous = a->rendezvous;
		b->counters_setup = a->st.counters_setup;
		b->frame_size = a->have_desc ? a->desc.frame_size : 0;
		b->ntypes = a->have_desc ? a->desc.ntypes : 0;
		b->nframes = a->nframes;
		b->delivered = a->st.delivered;
		b->lost = a->st.lost;
		b->torn = a->st.torn;
		b->resizes = a->st.resizes;
		b->fps = p->fps[n];
		if (a->st.first_frame_ns)
			b->attach_latency_ns =
				a->st.first_frame_ns - a->st.attach_ns;
		b->next_pos = a->hist_pos;
		snprintf(b->warning, sizeof(b->warning), "%s",
			 a->state == PPTAGENT_DETACHED ? p->errors[n]
						       : a->warning);
	}
	pthread_mutex_unlock(&p->lock);
	return n;
}

const struct ppt_desc *attach_desc(struct attach *p, size_t i)
{
	/* The description is written once, by attach, before the ppt thread
	 * starts, and freed only by engine_destroy. */
	if (!p || !p->enabled || i >= p->n || !p->agents[i].have_desc)
		return NULL;
	return &p->agents[i].desc;
}

size_t attach_frames(struct attach *p, size_t i, uint64_t from, void *bytes,
		     struct engine_ppt_frame *meta, size_t max, uint64_t *next,
		     uint64_t *skipped)
{
	const struct pptagent *a;
	uint64_t oldest, pos;
	size_t n = 0, fs;

	*next = from;
	*skipped = 0;
	if (!p || !p->enabled || i >= p->n)
		return 0;
	pthread_mutex_lock(&p->lock);
	a = &p->agents[i];
	fs = a->have_desc ? a->desc.frame_size : 0;
	oldest = pptagent_oldest(a);
	pos = from;
	if (pos < oldest) {
		*skipped = oldest - pos;
		pos = oldest;
	}
	for (; n < max && pos < a->hist_pos; pos++, n++) {
		struct pptagent_frame m;
		const void *f = pptagent_frame(a, pos, &m);

		meta[n] = (struct engine_ppt_frame){m.pos, m.index, m.ts};
		memcpy((unsigned char *)bytes + n * fs, f, fs);
	}
	*next = pos;
	pthread_mutex_unlock(&p->lock);
	return n;
}

bool attach_resize(struct attach *p, size_t i, uint64_t nframes, char *err,
		   size_t errlen)
{
	bool ok;

	if (!p || !p->enabled || i >= p->n) {
		snprintf(err, errlen, "no ppt buffer %zu", i);
		return false;
	}
	pthread_mutex_lock(&p->lock);
	ok = pptagent_resize(&p->agents[i], nframes, err, errlen);
	pthread_mutex_unlock(&p->lock);
	return ok;
}
