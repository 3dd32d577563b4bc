/*
 * hephnames: the symbol names a corotop recording carries -- metadata
 * packets `corotop_symbol` (u64 address, then the name) -- as a sorted
 * table, for replay and the converters.  See hephnames.c.
 */
#ifndef COROTOP_HEPHNAMES_H
#define COROTOP_HEPHNAMES_H

#include <stddef.h>
#include <stdint.h>

#include "engine/heph/hephfile.h"

#define HEPH_NAMES_MAX (1u << 20)
#define HEPH_NAME_LEN 255

struct heph_name {
	uint64_t addr;
	uint32_t off; /* into pool */
};

struct heph_names {
	struct heph_name *v; /* sorted by addr, unique (the last one wins) */
	size_t n;
	char *pool;
	size_t pool_len;
};

/* Load f's names (none is fine; out of memory leaves what fitted). */
void heph_names_init(struct heph_names *n, const struct heph_file *f);
void heph_names_finish(struct heph_names *n);
/* "func+0xOFF (file.c:N)" as recorded, or NULL. */
const char *heph_names_find(const struct heph_names *n, uint64_t addr);

/* The value of a corotop_symbol option for addr and name (len bytes at
 * most HEPH_NAME_LEN + 8) into buf; returns its length. */
size_t heph_names_value(uint64_t addr, const char *name, uint8_t *buf,
			size_t len);

#endif
