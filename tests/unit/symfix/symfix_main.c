/*
 * symfix_main: the symbolizer test's target process, built twice (PIE and
 * non-PIE).  It prints "<name> <hex address> <line>" for each of its
 * functions, then "ready", and waits for EOF on stdin before exiting, so
 * that the test can symbolize its addresses while it runs.
 */
#include <inttypes.h>
#include <stdio.h>

#include "symfix.h"

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
