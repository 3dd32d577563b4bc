/*
 * regdesc: the probe's registry of live coroutines (src/probe/registry.c)
 * as a reader outside the process finds it -- in a core file of a program
 * that ran with the probe or the preload (corotop --core), where no
 * handshake can ask the probe for a census.
 *
 * The probe exports one descriptor, corotop_registry_desc_ (a dynamic
 * symbol of libcorotop-probe, or of the program that links the probe
 * statically), that says where its registry is and how it is laid out:
 * the addresses of its three variables (the slots' and the names' arrays,
 * mapped at load; the count of slots ever handed out) and the sizes of a
 * slot, a name and a struct corotop_coro.  A reader checks the magic, the
 * version and every size before it trusts anything, bounds the count by
 * max, and reads a coroutine only through a slot whose word has LIVE.
 *
 * The layouts here are the probe's (registry.c asserts they match).  A
 * slot's coro is the struct corotop_coro's address (include/corotop/
 * probe.h); a name is its text, or, when ptr is not 0, the address of a
 * static string of at most COROTOP_NAME_MAX - 1 bytes.
 */
#ifndef COROTOP_WIRE_REGDESC_H
#define COROTOP_WIRE_REGDESC_H

#include <stdint.h>

#include "corotop/probe.h"

#define REGDESC_SYMBOL "corotop_registry_desc_"
#define REGDESC_MAGIC "CTREG01" /* 8 bytes with its NUL */
#define REGDESC_VERSION 1u
#define REGDESC_LIVE 1ull /* a slot word's bit: open, not yet closed */

/* struct corotop_coro's settings bits (the probe's CORO_*). */
#define REGDESC_CORO_LONG_WAITS (1u << 0)
#define REGDESC_CORO_CONTEXT (1u << 1)
#define REGDESC_CORO_HUB (1u << 2)
#define REGDESC_CORO_DISPATCHER (1u << 3)
#define REGDESC_CORO_ROOT (1u << 4)

struct regdesc {
	char magic[8];
	uint32_t version;
	uint32_t slot_size; /* sizeof(struct regdesc_slot) */
	uint32_t name_size; /* sizeof(struct regdesc_name) */
	uint32_t coro_size; /* sizeof(struct corotop_coro) */
	uint32_t max;	    /* slots reserved (REGISTRY_MAX) */
	uint32_t pad_;
	uint64_t slots_at; /* where the probe keeps its slots' address */
	uint64_t names_at; /* ... its names' address (0 there: none) */
	uint64_t used_at;  /* ... its uint32_t count of slots handed out */
};

struct regdesc_slot {
	uint64_t word; /* REGDESC_LIVE, ... */
	uint64_t coro; /* the struct corotop_coro's address */
	uint32_t next, pad_;
};

struct regdesc_name {
	char text[COROTOP_NAME_MAX]; /* a copied name, NUL-terminated */
	uint64_t ptr;		     /* a static name's address, or 0 */
	uint64_t entry;		     /* the entry's address, 0 = none */
	uint64_t made_for;	     /* the function it was made for */
};

#endif
