/*
 * pptfix: the fixture programs of tests/unit/test-pptfind.c.  Each defines
 * ppt buffers, prints "NAME HMEM STAT JSON" (run-time addresses in hex) for
 * each buffer it expects pptfind to find, then "ready", and waits for EOF
 * on stdin before it exits.
 */
#ifndef PPTFIX_H
#define PPTFIX_H

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>

#define PPTFIX_SYM __attribute__((used, visibility("default")))

struct pptfix_stat {
	int32_t pid;
};

/* libpptfix.so: buffer gamma.  Its addresses as the library itself uses
 * them (through its GOT, so a copy in the executable shows here). */
void pptfix_lib_addrs(uintptr_t addr[3]);
/* libpptfix2.so: buffer epsilon, likewise. */
void pptfix_lib2_addrs(uintptr_t addr[3]);

static inline void pptfix_print(const char *name, uintptr_t hmem,
				uintptr_t stat, uintptr_t json)
{
	printf("%s %" PRIxPTR " %" PRIxPTR " %" PRIxPTR "\n", name, hmem, stat,
	       json);
}

static inline int pptfix_wait(void)
{
	printf("ready\n");
	fflush(stdout);
	while (getchar() != EOF)
		;
	return 0;
}

#endif
