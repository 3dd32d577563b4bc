/*
 * symfix_main: the symbolizer test's target process, built twice (PIE and
 * non-PIE).  It prints "<name> <hex address> <line>" for each of its
 * functions, then "ready", and waits for EOF on stdin before exiting, so
 * that the test can symbolize its addresses while it runs.
 *
 * With an argument, it first maps SYMFIX_SPREAD small areas (alternately
 * readable and not, so that none merge) below its libraries: its maps
 * text then runs to several pages, its libraries' lines after the first,
 * which the kernel hands out in a read of its own.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <sys/mman.h>

#include "symfix.h"

#define SYMFIX_SPREAD 256

const int symfix_main_func_line = __LINE__ + 1;
__attribute__((noinline)) int symfix_main_func(int x)
{
	int acc = 3;

	for (int i = 0; i < x; i++)
		acc = (acc << 1) ^ i;
	return acc;
}

static const int symfix_static_func_line = __LINE__ + 1;
static __attribute__((noinline)) int symfix_static_func(int x)
{
	int acc = 5;

	for (int i = 0; i < x; i++)
		acc = acc * 3 - i;
	return acc;
}

int main(int argc, char **argv)
{
	(void)argv;
	for (int i = 0; argc > 1 && i < SYMFIX_SPREAD; i++)
		(void)mmap(NULL, 4096, i & 1 ? PROT_READ : PROT_NONE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	printf("main %" PRIxPTR " %d\n", (uintptr_t)&symfix_main_func,
	       symfix_main_func_line);
	printf("static %" PRIxPTR " %d\n", (uintptr_t)&symfix_static_func,
	       symfix_static_func_line);
	printf("nodebug %" PRIxPTR " 0\n", (uintptr_t)&symfix_nodebug_func);
	printf("lib %" PRIxPTR " %d\n", symfix_lib_func_addr(),
	       symfix_lib_func_line);
	printf("ready\n");
	fflush(stdout);
	while (getchar() != EOF)
		;
	return (symfix_main_func(argc) + symfix_static_func(argc) +
		symfix_nodebug_func(argc) + symfix_lib_func(argc)) == 12345;
}
