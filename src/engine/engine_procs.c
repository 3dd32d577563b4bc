/*
 * engine_procs: the processes a traced program runs as.
 *
 * Every process that loads corotop's probe with the region in its
 * environment -- the target, a child it forks, one it spawns or execs --
 * publishes a process station (CTP_STX_PROCESS: its pid, its image, its
 * command) and writes its own coroutines on stations that carry the same
 * pid and image (docs/WIRE.md, "Processes").  This keeps the list of them,
 * under the engine lock:
 *
 *   arrival  a process station opens (engine_on_process).  A newer image
 *            of a pid already listed means that pid exec'd: the old
 *            image is gone, and so are its coroutines.
 *   tick     each listed process that is not the target is looked at: a
 *            pidfd taken when it was first seen (kill(pid, 0) where the
 *            kernel has none) says whether it ended.  An ended process's
 *            coroutines die -- the contexts of an image that is gone end
 *            as dead; the target's own end is the final state's business
 *            (engine.c, engine_mark_exit).
 *   gone     harvest_forget_image reads its stations one last time, closes
 *            them (the model shows its coroutines dead) and, in a region
 *            we own, gives them back to the free list.
 *   end      when corotop ends the target (q, SIGINT, -n), the program's
 *            other processes still listed get SIGTERM too, through their
 *            pidfds: `corotop -- sh -c 'server'` leaves no server behind.
 *
 * Each also counts the contexts its interposer could not track and the
 * switches it found made where it could not see them (its station's
 * contexts_untracked, switches_unseen): their sums are the snapshot's.
 */
#define _GNU_SOURCE
#include "engine/engine_internal.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Processes kept at most (a prefork server of thousands: the oldest gone
 * ones make room). */
#define ENGINE_PROCS_MAX 4096u

/* A pidfd for pid, or -1 (no pidfd_open: kill(pid, 0) instead). */
static int engine_proc_pidfd(uint32_t pid)
{
#ifdef SYS_pidfd_open
	long fd = syscall(SYS_pidfd_open, (pid_t)pid, 0);

	return fd >= 0 ? (int)fd : -1;
#else
	(void)pid;
	return -1;
#endif
}

/* Process p has ended (or never was: its pid is gone). */
static bool engine_proc_ended(const struct engine_proc *p)
{
	if (p->pidfd >= 0) {
		struct pollfd f = {.fd = p->pidfd, .events = POLLIN};

		/* A pidfd turns readable when its process ends. */
		return poll(&f, 1, 0) == 1 && (f.revents & (POLLIN | POLLHUP));
	}
	return kill((pid_t)p->pid, 0) < 0 && errno == ESRCH;
}

/* p's image is gone: its stations are closed, its coroutines die. */
static void engine_proc_gone(struct engine *e, struct engine_proc *p,
			     const struct harvest_sink *sink)
{
	p->gone = true;
	harvest_interposer(&e->harvest, p->station, &p->counts);
	if (p->pidfd >= 0) {
		close(p->pidfd);
		p->pidfd = -1;
	}
	(void)harvest_forget_image(&e->harvest, p->pid, p->image, sink);
}

/* Room for one more: the list grows, or its oldest gone entry goes. */
static struct engine_proc *engine_proc_slot(struct engine_procs *ps)
{
	if (ps->n == ps->cap && ps->cap < ENGINE_PROCS_MAX) {
		size_t cap = ps->cap ? ps->cap * 2 : 8;
		struct engine_proc *p = realloc(ps->p, cap * sizeof(*p));

		if (p) {
			ps->p = p;
			ps->cap = cap;
		}
	}
	if (ps->n < ps->cap)
		return &ps->p[ps->n++];
	for (size_t k = 0; k < ps->n; k++)
		if (ps->p[k].gone) {
			memmove(&ps->p[k], &ps->p[k + 1],
				(ps->n - k - 1) * sizeof(ps->p[0]));
			return &ps->p[ps->n - 1];
		}
	return NULL;
}

void engine_on_process(struct engine *e, uint32_t station,
		       const struct harvest_sink *sink)
{
	struct engine_procs *ps = &e->procs;
	struct harvest_who who;
	struct engine_proc *p;

	harvest_who(&e->harvest, station, &who);
	if (!who.pid)
		return;
	/* The same pid, an older image: it exec'd. */
	for (size_t k = 0; k < ps->n; k++) {
		p = &ps->p[k];
		if (!p->gone && p->pid == who.pid && p->image < who.image)
			engine_proc_gone(e, p, sink);
	}
	p = engine_proc_slot(ps);
	if (!p)
		return;
	*p = (struct engine_proc){
		.station = station,
		.pid = who.pid,
		.image = who.image,
		.pidfd = (pid_t)who.pid == e->target.pid
				 ? -1
				 : engine_proc_pidfd(who.pid),
	};
	memcpy(p->name, who.name, sizeof(p->name));
}

void engine_procs_tick(struct engine *e, const struct harvest_sink *sink)
{
	struct engine_procs *ps = &e->procs;

	for (size_t k = 0; k < ps->n; k++) {
		struct engine_proc *p = &ps->p[k];

		if (p->gone)
			continue;
		harvest_interposer(&e->harvest, p->station, &p->counts);
		/* The target's end is the final state (engine_mark_exit). */
		if ((pid_t)p->pid != e->target.pid && engine_proc_ended(p))
			engine_proc_gone(e, p, sink);
	}
}

void engine_procs_snapshot(struct engine *e, struct snapshot *out)
{
	const struct engine_procs *ps = &e->procs;
	size_t k = ps->n > SNAPSHOT_PROCS_MAX ? ps->n - SNAPSHOT_PROCS_MAX : 0;

	out->nspaces = e->nspaces;
	memcpy(out->spaces, e->spaces, e->nspaces * sizeof(e->spaces[0]));
	out->contexts_untracked = 0;
	out->switches_unseen = 0;
	out->nprocs = 0;
	out->procs_total = ps->n;
	for (size_t j = 0; j < ps->n; j++) {
		out->contexts_untracked += ps->p[j].counts.untracked;
		out->switches_unseen += ps->p[j].counts.unseen;
	}
	for (; k < ps->n; k++) {
		const struct engine_proc *p = &ps->p[k];
		struct snapshot_proc *o = &out->procs[out->nprocs++];

		o->pid = p->pid;
		o->image = p->image;
		o->gone = p->gone;
		o->contexts_untracked = p->counts.untracked;
		o->switches_unseen = p->counts.unseen;
		memcpy(o->name, p->name, sizeof(o->name));
	}
}

void engine_procs_terminate(struct engine *e)
{
	pthread_mutex_lock(&e->lock);
	for (size_t k = 0; k < e->procs.n; k++) {
		const struct engine_proc *p = &e->procs.p[k];

		/* Through its pidfd only: never a pid that may have been
		 * reused by a process that is not the program's. */
		if (p->gone || p->pidfd < 0)
			continue;
#ifdef SYS_pidfd_send_signal
		(void)syscall(SYS_pidfd_send_signal, p->pidfd, SIGTERM, NULL,
			      0);
#endif
	}
	pthread_mutex_unlock(&e->lock);
}

void engine_procs_finish(struct engine *e)
{
	for (size_t k = 0; k < e->procs.n; k++)
		if (e->procs.p[k].pidfd >= 0)
			close(e->procs.p[k].pidfd);
	free(e->procs.p);
	memset(&e->procs, 0, sizeof(e->procs));
}
