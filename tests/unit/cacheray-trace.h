/*
 * cacheray-trace: a Cacheray trace writer for the tests (field by field,
 * native byte order, as the Cacheray runtime writes), the main synthetic
 * trace, lookups into a reader's tables, and the JSON or text report as
 * a string.  Static inline: each test uses what it needs.  Include it
 * after <cmocka.h>, with _GNU_SOURCE defined (open_memstream).
 */
#ifndef COROTOP_TEST_CACHERAY_TRACE_H
#define COROTOP_TEST_CACHERAY_TRACE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cacheray/cacheray.h"
#include "ui/batch/batch_cacheray.h"

struct tw {
	uint8_t b[8192];
	size_t n;
};

static inline void tw_put(struct tw *w, const void *p, size_t n)
{
	assert_true(w->n + n <= sizeof(w->b));
	memcpy(w->b + w->n, p, n);
	w->n += n;
}

static inline void tw_access(struct tw *w, uint8_t type, uint64_t addr,
			     uint8_t size, uint64_t tid)
{
	tw_put(w, &type, 1);
	tw_put(w, &addr, 8);
	tw_put(w, &size, 1);
	tw_put(w, &tid, 8);
}

static inline void tw_accesses(struct tw *w, unsigned times, uint8_t type,
			       uint64_t addr, uint8_t size, uint64_t tid)
{
	while (times--)
		tw_access(w, type, addr, size, tid);
}

static inline void tw_add(struct tw *w, uint64_t addr, uint32_t elemsize,
			  uint32_t count, const char *name)
{
	uint8_t type = CACHERAY_EVENT_RTTA_ADD;
	uint64_t tid = 0;
	uint32_t len = (uint32_t)strlen(name);

	tw_put(w, &type, 1);
	tw_put(w, &addr, 8);
	tw_put(w, &tid, 8);
	tw_put(w, &elemsize, 4);
	tw_put(w, &count, 4);
	tw_put(w, &len, 4);
	tw_put(w, name, len);
}

static inline void tw_remove(struct tw *w, uint64_t addr)
{
	uint8_t type = CACHERAY_EVENT_RTTA_REMOVE;
	uint64_t tid = 0;

	tw_put(w, &type, 1);
	tw_put(w, &addr, 8);
	tw_put(w, &tid, 8);
}

#define R CACHERAY_EVENT_READ
#define W CACHERAY_EVENT_WRITE
#define ATOMIC CACHERAY_EVENT_MASK_ATOMIC
#define UNALIGNED CACHERAY_EVENT_MASK_UNALIGNED

/*
 * The main trace.  Lines: 0x1000 holds pair[0..7], 0x1040 pair[8..15],
 * 0x1080 an int[4] at +0 and a long at +0x20.
 */
static inline void tw_main(struct tw *w)
{
	w->n = 0;
	tw_add(w, 0x1000, 8, 16, "struct pair");
	tw_add(w, 0x1080, 4, 4, "int");
	tw_add(w, 0x10a0, 8, 1, "long");
	/* Line 0x1000: thread 1 writes pair[0].a, thread 2 pair[1].b and
	 * reads pair[1].a: two elements, disjoint bytes. */
	tw_accesses(w, 3, W, 0x1000, 4, 1);
	tw_accesses(w, 2, W, 0x100c, 4, 2);
	tw_accesses(w, 1, R, 0x1008, 4, 2);
	/* A read-modify-write atomic on pair[2].a, an unaligned write. */
	tw_access(w, R | ATOMIC, 0x1010, 4, 2);
	tw_access(w, W | ATOMIC, 0x1010, 4, 2);
	tw_access(w, W | UNALIGNED, 0x1013, 4, 2);
	/* Line 0x1040: one thread only. */
	tw_accesses(w, 2, W, 0x1040, 4, 1);
	/* Line 0x1080: int[1] read by 1, long written by 1, int[2] read by
	 * 3: two regions. */
	tw_accesses(w, 4, R, 0x1084, 4, 1);
	tw_accesses(w, 1, W, 0x10a0, 8, 1);
	tw_accesses(w, 1, R, 0x1088, 4, 3);
	/* Untyped. */
	tw_accesses(w, 1, R, 0x5000, 8, 1);
	/* The long is freed: its bytes are untyped now. */
	tw_remove(w, 0x10a0);
	tw_accesses(w, 1, R, 0x10a0, 8, 1);
	/* realloc of the int array: remove + add, another type. */
	tw_remove(w, 0x1080);
	tw_add(w, 0x1080, 16, 1, "struct quad");
	tw_accesses(w, 1, W, 0x1084, 4, 3);
	tw_remove(w, 0x9999); /* never added */
}

static inline struct cacheray *feed_all(const uint8_t *b, size_t n)
{
	struct cacheray *c = cacheray_create(NULL);

	assert_non_null(c);
	assert_true(cacheray_feed(c, b, n));
	return c;
}

static inline const struct cacheray_type *find_type(const struct cacheray *c,
						    const char *name)
{
	for (size_t i = 0; i < cacheray_ntypes(c); i++) {
		const struct cacheray_type *t = cacheray_type_at(c, i);

		if (!strcmp(t->name, name))
			return t;
	}
	fail_msg("type %s not found", name);
	return NULL;
}

static inline const struct cacheray_thread *
find_thread(const struct cacheray *c, uint64_t id)
{
	for (size_t i = 0; i < cacheray_nthreads(c); i++)
		if (cacheray_thread_at(c, i)->id == id &&
		    !cacheray_thread_at(c, i)->other)
			return cacheray_thread_at(c, i);
	fail_msg("thread %llu not found", (unsigned long long)id);
	return NULL;
}

static inline void assert_rw(const uint64_t n[2], uint64_t r, uint64_t w)
{
	assert_int_equal(n[0], r);
	assert_int_equal(n[1], w);
}

static inline char *report(const struct cacheray *c, bool json)
{
	char *s = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&s, &len);

	assert_non_null(f);
	if (json)
		batch_cacheray_print_json(f, c, "t");
	else
		batch_cacheray_print_text(f, c, "t");
	fclose(f);
	return s;
}

#endif
