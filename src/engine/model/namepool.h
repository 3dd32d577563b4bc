/*
 * namepool: the names of coroutines, interned, each behind a 32-bit id a
 * 128-byte model record can carry and a snapshot can read long after the
 * engine's lock was let go.  See namepool.c.
 */
#ifndef COROTOP_NAMEPOOL_H
#define COROTOP_NAMEPOOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The longest name kept, in bytes with the NUL (the probe's
 * COROTOP_NAME_MAX, the station's CTP_STX_NAME_LEN). */
#define NAMEPOOL_TEXT_MAX 48
/* Names the pool holds at most (ids carry the entry in 20 bits). */
#define NAMEPOOL_MAX ((1u << 20) - 1)

struct namepool;

/* A pool of at most `max` names (at most NAMEPOOL_MAX); NULL when out of
 * memory. */
struct namepool *namepool_create(uint32_t max);
/* NULL is a no-op. */
void namepool_destroy(struct namepool *p);

/*
 * A name from untrusted bytes: the bytes of `in` up to the first NUL or
 * `len`, at most NAMEPOOL_TEXT_MAX - 1 of them, each byte outside
 * printable ASCII (a control character, DEL, UTF-8) replaced by '?', into
 * out, NUL-terminated.  Returns its length.
 */
size_t namepool_clean(char out[NAMEPOOL_TEXT_MAX], const void *in, size_t len);

/*
 * The id of the name (text, pc), with one reference more: text is the
 * name a probe gave ("" or NULL: none; cleaned here), pc the code address
 * the name may come from instead (0: none).  Equal pairs share one id
 * while referenced.  0 for no name at all, or when the pool is full (then
 * counted): the coroutine shows none.
 */
uint32_t namepool_intern(struct namepool *p, const char *text, uint64_t pc);
/* The same, with the function pc's entry was made for (made_for, 0: none;
 * kept only with a pc): a runtime's entry template whose name gives only
 * that function's type (snapshot_name). */
uint32_t namepool_intern_made(struct namepool *p, const char *text, uint64_t pc,
			      uint64_t made_for);
/* One reference more, or less: the last drop frees the entry, and the id
 * is never valid again (a later name in its place has another id). */
void namepool_hold(struct namepool *p, uint32_t id);
void namepool_drop(struct namepool *p, uint32_t id);

/*
 * id's text into buf (n bytes, NUL-terminated; "" when it has none) and
 * its pc into *pc (may be NULL).  False when id is 0 or no longer valid
 * (buf "", *pc 0).  Thread-safe: callers read while the engine interns.
 */
bool namepool_get(struct namepool *p, uint32_t id, char *buf, size_t n,
		  uint64_t *pc);
/* id's made_for (namepool_intern_made); 0 when it has none or id is not
 * valid.  Thread-safe like namepool_get. */
uint64_t namepool_made_for(struct namepool *p, uint32_t id);

struct namepool_stats {
	uint32_t names; /* entries referenced now */
	uint32_t max;
	uint64_t full; /* interns refused: the pool was full */
};
void namepool_stats(struct namepool *p, struct namepool_stats *out);

#endif
