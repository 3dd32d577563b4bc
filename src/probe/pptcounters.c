/*
 * pptcounters: the performance counters a ppt agent asks a client for (the
 * control block's nr_perf_ctrs and counterdata, ppt's -c), counted per
 * thread with perf_event_open and read by corotop_ppt_counters.
 *
 * At attach, the attaching thread copies the agent's attrs (untrusted:
 * size checked, and everything that could sample, signal, inherit or start
 * disabled is cleared -- these are counting events only), opens each once
 * to see that the kernel accepts it, and publishes the attrs to the other
 * threads through a seqlock word (gen: odd while changing, then a value
 * unique in the process).  A thread opens its own fds lazily, on its first
 * corotop_ppt_counters of an attachment, and keeps them in a small
 * thread-local cache keyed by gen and pid (a forked child reopens); a
 * pthread key closes them when the thread exits.  Never on the save path.
 */
#define _GNU_SOURCE
#include "probe/ppt_internal.h"
#include "probe/probe_internal.h"

#include <linux/perf_event.h>
#include <pthread.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define PPT_TLS_ENTRIES 4u

struct ppt_tls_entry {
	uint64_t gen; /* 0: empty */
	uint32_t pid;
	uint32_t n;
	int fd[PPT_MAX_COUNTERS];
};

struct ppt_tls {
	struct ppt_tls_entry e[PPT_TLS_ENTRIES];
	unsigned next;
	bool key_set;
};

static __thread struct ppt_tls ppt_tls;
static pthread_key_t ppt_tls_key;
static pthread_once_t ppt_tls_once = PTHREAD_ONCE_INIT;
static bool ppt_tls_key_ok;
/* Source of the unique even gens (relaxed: only uniqueness matters). */
static _Atomic uint64_t ppt_counters_gens;

static void tls_entry_close(struct ppt_tls_entry *e)
{
	for (unsigned i = 0; i < e->n; i++)
		if (e->fd[i] >= 0)
			close(e->fd[i]);
	memset(e, 0, sizeof(*e));
}

static void tls_destroy(void *p)
{
	struct ppt_tls *t = p;

	for (unsigned i = 0; i < PPT_TLS_ENTRIES; i++)
		tls_entry_close(&t->e[i]);
}

static void tls_key_create(void)
{
	ppt_tls_key_ok = pthread_key_create(&ppt_tls_key, tls_destroy) == 0;
}

static int counter_open(const struct perf_event_attr *a)
{
	return (int)syscall(SYS_perf_event_open, a, 0, -1, -1,
			    PERF_FLAG_FD_CLOEXEC);
}

/* Agent's raw attr -> a counting-only attr; false when it makes no sense. */
static bool attr_sanitize(const uint8_t raw[PPT_PERF_ATTR_SIZE],
			  struct perf_event_attr *a)
{
	uint32_t size;
	size_t n;

	memcpy(&size, raw + offsetof(struct perf_event_attr, size),
	       sizeof(size));
	if (size == 0)
		size = PERF_ATTR_SIZE_VER0;
	if (size < PERF_ATTR_SIZE_VER0 || size > PPT_PERF_ATTR_SIZE)
		return false;
	n = size < sizeof(*a) ? size : sizeof(*a);
	memset(a, 0, sizeof(*a));
	memcpy(a, raw, n);
	a->size = (uint32_t)n;
	a->disabled = 0;
	a->inherit = 0;
	a->enable_on_exec = 0;
	a->remove_on_exec = 0;
	a->sigtrap = 0;
	a->freq = 0;
	a->sample_period = 0;
	a->sample_type = 0;
	a->read_format = 0;
	a->wakeup_events = 0;
	a->watermark = 0;
	return true;
}

/* Publish n attrs (seqlock writer; the transition lock serializes). */
static void counters_publish(struct ppt_counters *k,
			     const struct perf_event_attr *a, uint32_t n)
{
	uint64_t g = 2 * (atomic_fetch_add_explicit(&ppt_counters_gens, 1,
						    memory_order_relaxed) +
			  1);

	/* relaxed + release fence: readers that see any word below also
	 * see the odd gen (pairs with their acquire fence). */
	atomic_store_explicit(&k->gen, 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
	for (uint32_t i = 0; i < n; i++) {
		uint64_t w[PPT_PERF_ATTR_SIZE / 8] = {0};

		memcpy(w, &a[i],
		       sizeof(a[i]) < sizeof(w) ? sizeof(a[i]) : sizeof(w));
		for (unsigned j = 0; j < PPT_PERF_ATTR_SIZE / 8; j++)
			atomic_store_explicit(&k->attr[i][j], w[j],
					      memory_order_relaxed);
	}
	atomic_store_explicit(&k->n, n, memory_order_relaxed);
	/* release: pairs with the acquire of readers' first gen load. */
	atomic_store_explicit(&k->gen, g, memory_order_release);
}

bool ppt_counters_setup(struct ppt_counters *k, const struct ppt_control *ctl,
			uint32_t *n_out)
{
	struct perf_event_attr a[PPT_MAX_COUNTERS];
	uint8_t raw[PPT_MAX_COUNTERS][PPT_PERF_ATTR_SIZE];
	/* relaxed: the acquire fence after shmat ordered the control block
	 * (B); the agent does not change it while we attach. */
	uint32_t n = __atomic_load_n(&ctl->nr_perf_ctrs, __ATOMIC_RELAXED);
	bool ok = true;

	*n_out = 0;
	if (n == 0 || n > PPT_MAX_COUNTERS) {
		counters_publish(k, NULL, 0);
		return false;
	}
	*n_out = n;
	/* One copy out of shared memory, then checks on our copy only. */
	memcpy(raw, (const void *)ctl->counterdata, sizeof(raw));
	for (uint32_t i = 0; i < n; i++) {
		int fd;

		if (!attr_sanitize(raw[i], &a[i])) {
			counters_publish(k, NULL, 0);
			return false;
		}
		fd = counter_open(&a[i]);
		if (fd < 0)
			ok = false;
		else
			close(fd);
	}
	counters_publish(k, a, n);
	return ok;
}

void ppt_counters_clear(struct ppt_counters *k)
{
	counters_publish(k, NULL, 0);
}

/* Open this thread's fds for gen g into e; false when g moved on. */
static bool tls_entry_open(struct ppt_counters *k, uint64_t g,
			   struct ppt_tls_entry *e)
{
	uint64_t w[PPT_MAX_COUNTERS][PPT_PERF_ATTR_SIZE / 8];
	struct perf_event_attr a;
	/* relaxed: ordered after the caller's acquire load of gen. */
	uint32_t n = atomic_load_explicit(&k->n, memory_order_relaxed);

	if (n > PPT_MAX_COUNTERS)
		return false;
	for (uint32_t i = 0; i < n; i++)
		for (unsigned j = 0; j < PPT_PERF_ATTR_SIZE / 8; j++)
			w[i][j] = atomic_load_explicit(&k->attr[i][j],
						       memory_order_relaxed);
	/* acquire fence: the words above were read before gen is checked
	 * again (pairs with the writer's release fence). */
	atomic_thread_fence(memory_order_acquire);
	if (atomic_load_explicit(&k->gen, memory_order_relaxed) != g)
		return false;
	tls_entry_close(e);
	e->gen = g;
	e->pid = probe_pid;
	e->n = n;
	for (uint32_t i = 0; i < n; i++) {
		memset(&a, 0, sizeof(a));
		memcpy(&a, w[i],
		       sizeof(a) < sizeof(w[i]) ? sizeof(a) : sizeof(w[i]));
		e->fd[i] = counter_open(&a);
	}
	return true;
}

unsigned ppt_counters_read(struct ppt_counters *k, uint64_t v[3])
{
	struct ppt_tls *t = &ppt_tls;
	struct ppt_tls_entry *e = NULL;
	unsigned got = 0;
	/* acquire: pairs with counters_publish's release store. */
	uint64_t g = atomic_load_explicit(&k->gen, memory_order_acquire);

	v[0] = v[1] = v[2] = 0;
	if (g == 0 || (g & 1) ||
	    atomic_load_explicit(&k->n, memory_order_relaxed) == 0)
		return 0;
	for (unsigned i = 0; i < PPT_TLS_ENTRIES; i++)
		if (t->e[i].gen == g && t->e[i].pid == probe_pid)
			e = &t->e[i];
	if (!e) {
		if (!t->key_set) {
			pthread_once(&ppt_tls_once, tls_key_create);
			t->key_set = ppt_tls_key_ok &&
				     pthread_setspecific(ppt_tls_key, t) == 0;
		}
		e = &t->e[t->next++ % PPT_TLS_ENTRIES];
		if (!tls_entry_open(k, g, e))
			return 0;
	}
	for (unsigned i = 0; i < e->n; i++) {
		uint64_t x;

		if (e->fd[i] >= 0 &&
		    read(e->fd[i], &x, sizeof(x)) == sizeof(x)) {
			v[i] = x;
			got++;
		}
	}
	return got;
}
