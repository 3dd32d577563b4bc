/*
 * test-shmfresh: a SysV segment attached with shm_attach_fresh
 * (src/wire/shmfresh.h) starts with no history under ThreadSanitizer.
 *
 * The CI failure it stands for: TSan does not intercept shmat, and the
 * engine's ppt segment landed where a finished, never-joined thread had
 * had its TLS; the reader's first atomic load was reported as a race with
 * that thread.  Here a thread writes a private mapping with plain stores
 * and is not joined (nothing orders its stores before ours), the mapping
 * is removed behind TSan's back (a raw munmap syscall, as glibc does with
 * a cached thread stack), and a segment of the same size is attached: the
 * kernel hands out the same range.  An atomic load of every page of it
 * must not be reported (under TSan, halt_on_error makes a report fail the
 * test; with plain shmat it does report).  Every build also checks that the
 * segment works: what one attachment stores, another one reads.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "wire/shmfresh.h"

enum { PAGES = 16 };

struct scribble {
	unsigned char *at;
	size_t len;
	atomic_int done;
};

static void *scribbler(void *arg)
{
	struct scribble *s = arg;

	/* Plain stores: TSan records them as this thread's. */
	for (size_t i = 0; i < s->len; i += 64)
		s->at[i] = (unsigned char)i;
	/* relaxed: no happens-before for TSan; the main thread only needs
	 * the stores to have happened. */
	atomic_store_explicit(&s->done, 1, memory_order_relaxed);
	return NULL;
}

static void test_shmfresh_forgets_history(void **state)
{
	(void)state;
	size_t len = PAGES * (size_t)sysconf(_SC_PAGESIZE);
	struct scribble s = {.len = len};
	pthread_t t;

	s.at = mmap(NULL, len, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(s.at != MAP_FAILED);
	assert_int_equal(pthread_create(&t, NULL, scribbler, &s), 0);
	/* relaxed: see scribbler. */
	while (!atomic_load_explicit(&s.done, memory_order_relaxed))
		sched_yield();
	/* Behind TSan's back: its shadow still holds the stores above. */
	assert_int_equal(syscall(SYS_munmap, s.at, len), 0);

	int id = shmget(IPC_PRIVATE, len, IPC_CREAT | IPC_EXCL | 0600);

	assert_true(id > 0);
	unsigned char *p = shm_attach_fresh(id, len, 0);
	unsigned char *q = shm_attach_fresh(id, len, SHM_RDONLY);

	shmctl(id, IPC_RMID, NULL);
	assert_true(p != (void *)-1);
	assert_true(q != (void *)-1);
	if (p != s.at)
		print_message("note: the segment landed at %p, not at the "
			      "unmapped %p: nothing to forget this run\n",
			      (void *)p, (void *)s.at);
	unsigned sum = 0;

	for (size_t i = 0; i < len; i += 64) {
		/* relaxed: one thread; the load TSan would report. */
		sum += __atomic_load_n(p + i, __ATOMIC_RELAXED);
		__atomic_store_n(p + i, (unsigned char)(i / 64 + 1),
				 __ATOMIC_RELAXED);
	}
	assert_int_equal(sum, 0); /* a fresh segment, not the old pages */
	for (size_t i = 0; i < len; i += 64)
		assert_int_equal(q[i], (unsigned char)(i / 64 + 1));
	shmdt(q);
	shmdt(p);
	assert_int_equal(pthread_join(t, NULL), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_shmfresh_forgets_history),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
