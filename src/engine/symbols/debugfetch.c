/*
 * debugfetch: separate debug info fetched from debuginfod servers, for a
 * program shipped stripped (pdns_recursor+0x2c3e73) whose debug files are
 * not installed.  Only when DEBUGINFOD_URLS is set and not empty, as for
 * gdb and elfutils' own tools.
 *
 * A fetch goes over the network and may take seconds or never end, and
 * the symbolizer is asked under a lock the UI thread also takes.  So no
 * caller ever waits for one: debugfetch_get answers from what is known
 * and queues an ID it has not seen; the thread (started on the first
 * fetch) asks libdebuginfod for the queued IDs one at a time, and counts
 * the files it got (debugfetch_found) so the symbolizer knows when to look
 * again (symbolizer.c reports its modules anew).
 *
 * Bounded.  Every answer, found or failed, is kept for the fetcher's life:
 * an ID is asked of the servers once (libdebuginfod also keeps its files
 * and misses in DEBUGINFOD_CACHE_PATH).  A fetch stalls no longer than
 * libdebuginfod allows (DEBUGINFOD_TIMEOUT: 90 s without progress,
 * DEBUGINFOD_MAXTIME, DEBUGINFOD_MAXSIZE), and is abandoned after
 * DEBUGFETCH_MAXTIME_S in all (or DEBUGINFOD_MAXTIME when that is set),
 * and at once when the fetcher is destroyed: libdebuginfod calls our
 * progress function about once a second, which says stop.  At most
 * DEBUGFETCH_IDS_MAX IDs are kept; past that, an ID is not fetched.
 */
#define _GNU_SOURCE
#include "engine/symbols/debugfetch.h"

#include <elfutils/debuginfod.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/grow.h"

#define DEBUGFETCH_IDS_MAX 4096u
#define DEBUGFETCH_ID_MAX 64u
#define DEBUGFETCH_MAXTIME_S 120u

struct debugfetch_id {
	unsigned char id[DEBUGFETCH_ID_MAX];
	size_t len;
	enum debugfetch_rc rc;
	char *path; /* FOUND: the file in libdebuginfod's cache */
};

struct debugfetch {
	pthread_mutex_t lock; /* guards the fields up to `thread` */
	pthread_cond_t wake;  /* an ID queued, or stop */
	struct debugfetch_id *ids;
	size_t n, cap;
	size_t next; /* the first ID not fetched yet (they queue in order) */
	bool started;
	bool stop;
	pthread_t thread;
	/* Read without the lock: the thread's progress function reads
	 * `stopping`, the symbolizer polls `found`.  Relaxed: each is a
	 * hint that orders nothing (the answers themselves are read under
	 * the lock). */
	atomic_bool stopping;
	atomic_uint_fast64_t found;
	/* The thread's own. */
	debuginfod_client *client;
	uint64_t deadline_ns; /* of the fetch in flight */
	uint64_t maxtime_ns;
};

/* libdebuginfod's progress callback: nonzero abandons the fetch. */
static int debugfetch_progress(debuginfod_client *c, long a, long b)
{
	struct debugfetch *f = debuginfod_get_user_data(c);

	(void)a;
	(void)b;
	return atomic_load_explicit(&f->stopping, memory_order_relaxed) ||
	       clock_now_ns(CLOCK_MONOTONIC) >= f->deadline_ns;
}

static void *debugfetch_main(void *arg)
{
	struct debugfetch *f = arg;

	pthread_mutex_lock(&f->lock);
	while (!f->stop) {
		unsigned char id[DEBUGFETCH_ID_MAX];
		size_t len, at;
		char *path = NULL;
		int fd;

		if (f->next == f->n) {
			pthread_cond_wait(&f->wake, &f->lock);
			continue;
		}
		at = f->next++;
		len = f->ids[at].len;
		memcpy(id, f->ids[at].id, len);
		pthread_mutex_unlock(&f->lock);
		f->deadline_ns = clock_now_ns(CLOCK_MONOTONIC) + f->maxtime_ns;
		fd = debuginfod_find_debuginfo(f->client, id, (int)len, &path);
		if (fd >= 0)
			close(fd); /* the symbolizer opens it itself */
		pthread_mutex_lock(&f->lock);
		f->ids[at].rc =
			fd >= 0 && path ? DEBUGFETCH_FOUND : DEBUGFETCH_NONE;
		f->ids[at].path = fd >= 0 ? path : NULL;
		if (fd < 0)
			free(path);
		else
			atomic_fetch_add_explicit(&f->found, 1,
						  memory_order_relaxed);
	}
	pthread_mutex_unlock(&f->lock);
	return NULL;
}

struct debugfetch *debugfetch_create(void)
{
	const char *urls = getenv("DEBUGINFOD_URLS");
	const char *maxtime = getenv("DEBUGINFOD_MAXTIME");
	struct debugfetch *f;
	long s = maxtime ? atol(maxtime) : 0;

	if (!urls || !urls[strspn(urls, " \t")])
		return NULL;
	f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	f->client = debuginfod_begin();
	if (!f->client) {
		free(f);
		return NULL;
	}
	debuginfod_set_user_data(f->client, f);
	debuginfod_set_progressfn(f->client, debugfetch_progress);
	f->maxtime_ns =
		(uint64_t)(s > 0 ? (unsigned long)s : DEBUGFETCH_MAXTIME_S) *
		1000000000ull;
	atomic_init(&f->stopping, false);
	atomic_init(&f->found, 0);
	pthread_mutex_init(&f->lock, NULL);
	pthread_cond_init(&f->wake, NULL);
	return f;
}

void debugfetch_destroy(struct debugfetch *f)
{
	if (!f)
		return;
	pthread_mutex_lock(&f->lock);
	f->stop = true;
	atomic_store_explicit(&f->stopping, true, memory_order_relaxed);
	pthread_cond_signal(&f->wake);
	pthread_mutex_unlock(&f->lock);
	if (f->started)
		pthread_join(f->thread, NULL);
	debuginfod_end(f->client);
	for (size_t i = 0; i < f->n; i++)
		free(f->ids[i].path);
	free(f->ids);
	pthread_cond_destroy(&f->wake);
	pthread_mutex_destroy(&f->lock);
	free(f);
}

/* With the lock held: queue id, starting the thread if it is not; false
 * when it can not be (the ID is then never fetched). */
static bool debugfetch_queue(struct debugfetch *f, const unsigned char *id,
			     size_t len)
{
	struct debugfetch_id *e;

	if (!grow_array_max((void **)&f->ids, &f->cap, f->n + 1,
			    DEBUGFETCH_IDS_MAX, sizeof(*f->ids)))
		return false;
	if (!f->started) {
		if (pthread_create(&f->thread, NULL, debugfetch_main, f))
			return false;
		f->started = true;
	}
	e = &f->ids[f->n++];
	memset(e, 0, sizeof(*e));
	memcpy(e->id, id, len);
	e->len = len;
	e->rc = DEBUGFETCH_PENDING;
	pthread_cond_signal(&f->wake);
	return true;
}

enum debugfetch_rc debugfetch_get(struct debugfetch *f, const unsigned char *id,
				  size_t len, char **path)
{
	enum debugfetch_rc rc = DEBUGFETCH_NONE;
	size_t i;

	*path = NULL;
	if (!f || !len || len > DEBUGFETCH_ID_MAX)
		return DEBUGFETCH_NONE;
	pthread_mutex_lock(&f->lock);
	for (i = 0; i < f->n; i++)
		if (f->ids[i].len == len && !memcmp(f->ids[i].id, id, len))
			break;
	if (i < f->n) {
		rc = f->ids[i].rc;
		if (rc == DEBUGFETCH_FOUND && !(*path = strdup(f->ids[i].path)))
			rc = DEBUGFETCH_NONE;
	} else if (debugfetch_queue(f, id, len)) {
		rc = DEBUGFETCH_PENDING;
	}
	pthread_mutex_unlock(&f->lock);
	return rc;
}

uint64_t debugfetch_found(struct debugfetch *f)
{
	return f ? atomic_load_explicit(&f->found, memory_order_relaxed) : 0;
}
