/*
 * fakecode: a page of executable code for tests of the rule "a return
 * address lies in code, right after a call" (engine/target/framecheck.c):
 * nops, one call whose end is *after_call, nops again; *after_nops is an
 * address inside the nops (no call before it).  x86_64 and aarch64.
 * Unmap it with munmap(page, FAKECODE_PAGE).
 */
#ifndef COROTOP_TESTS_FAKECODE_H
#define COROTOP_TESTS_FAKECODE_H

#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#define FAKECODE_PAGE 4096u

/* The page, or NULL. */
static inline unsigned char *fakecode_create(uint64_t *after_call,
					     uint64_t *after_nops)
{
	unsigned char *code = mmap(NULL, FAKECODE_PAGE, PROT_READ | PROT_WRITE,
				   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	size_t i = 0;

	if (code == MAP_FAILED)
		return NULL;
#if defined(__aarch64__)
	static const uint32_t nop = 0xd503201fu, bl = 0x94000010u;

	for (; i < 256; i += 4)
		memcpy(code + i, &nop, 4);
	memcpy(code + i, &bl, 4);
	i += 4;
	*after_call = (uint64_t)(uintptr_t)(code + i);
	for (; i < 512; i += 4)
		memcpy(code + i, &nop, 4);
#else
	memset(code, 0x90, 512);
	i = 256;
	code[i++] = 0xe8; /* call .+0x10 */
	code[i++] = 0x10;
	memset(code + i, 0, 3);
	i += 3;
	*after_call = (uint64_t)(uintptr_t)(code + i);
#endif
	*after_nops = (uint64_t)(uintptr_t)(code + 128);
	if (mprotect(code, FAKECODE_PAGE, PROT_READ | PROT_EXEC)) {
		munmap(code, FAKECODE_PAGE);
		return NULL;
	}
	return code;
}

#endif
