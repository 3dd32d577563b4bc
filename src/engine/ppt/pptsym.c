/*
 * pptsym: what corotop trusts about a buffer's symbols before it writes.
 *
 * pptfind names addresses by symbol name; names are only a promise.  A
 * symbol that is bigger or smaller than the thing it should be, or that
 * lies in code or read-only data (a label that merely has the right name),
 * is refused before the attach writes a byte: corotop writes four bytes to
 * _stat and four to _hmem, and nowhere else.
 *
 * _json is read, never written: the generator's is a pointer to the text,
 * the protocol document allows the text in place; the symbol's size says
 * which when the symbol table gives one.
 */
#define _GNU_SOURCE
#include "engine/ppt/pptsym.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool pptsym_check(struct procmem *pm, const struct pptfind_buffer *b, char *err,
		  size_t errlen)
{
	static const struct {
		const char *what;
		size_t off_addr, off_size;
	} syms[] = {
		{"_hmem", offsetof(struct pptfind_buffer, hmem_addr),
		 offsetof(struct pptfind_buffer, hmem_size)},
		{"_stat", offsetof(struct pptfind_buffer, stat_addr),
		 offsetof(struct pptfind_buffer, stat_size)},
	};

	for (size_t i = 0; i < sizeof(syms) / sizeof(syms[0]); i++) {
		uint64_t addr, size;

		memcpy(&addr, (const char *)b + syms[i].off_addr, sizeof(addr));
		memcpy(&size, (const char *)b + syms[i].off_size, sizeof(size));
		if (size != 0 && size != 4) {
			snprintf(err, errlen,
				 "buffer %s: its %s symbol is %llu bytes, not "
				 "4: not a ppt buffer corotop may write to",
				 b->name, syms[i].what,
				 (unsigned long long)size);
			return false;
		}
		if (!procmem_writable(pm, addr, 4)) {
			snprintf(err, errlen,
				 "buffer %s: its %s symbol at 0x%llx is not in "
				 "writable memory of process %d: refusing to "
				 "write there",
				 b->name, syms[i].what,
				 (unsigned long long)addr, (int)pm->pid);
			return false;
		}
	}
	return true;
}

char *pptsym_json(struct procmem *pm, const struct pptfind_buffer *b, char *err,
		  size_t errlen)
{
	uint64_t addr = b->json_addr, ptr = 0;
	unsigned char first = 0;
	bool in_place;
	char *text = malloc(PPTSYM_JSON_MAX);

	if (!text) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if (b->json_size == sizeof(ptr))
		in_place = false;
	else if (b->json_size > sizeof(ptr))
		in_place = true;
	else if (!procmem_read(pm, addr, &first, 1, err, errlen))
		goto fail;
	else
		in_place = first == '{';
	if (!in_place) {
		if (!procmem_read(pm, addr, &ptr, sizeof(ptr), err, errlen))
			goto fail;
		if (!ptr) {
			snprintf(err, errlen,
				 "not initialized yet (its _json pointer is "
				 "NULL): try again once the program has set "
				 "it up");
			goto fail;
		}
		addr = ptr;
	}
	if (!procmem_read_string(pm, addr, text, PPTSYM_JSON_MAX, err, errlen))
		goto fail;
	return text;
fail:
	free(text);
	return NULL;
}
