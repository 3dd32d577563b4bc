/*
 * symfix_lib: the fixture's shared library, libsymfix.so: one exported
 * function with debug info, and its address as the library sees it.
 */
#include "symfix.h"

/* A local alias: taking its address needs no GOT entry, so it is the real
 * address even when a non-PIE executable has a PLT entry for the name. */
int symfix_lib_func_local(int x)
	__attribute__((alias("symfix_lib_func"), visibility("hidden")));

const int symfix_lib_func_line = __LINE__ + 1;
__attribute__((noinline)) int symfix_lib_func(int x)
{
	int acc = 0;

	for (int i = 0; i < x; i++)
		acc += i * 7 ^ (acc >> 3);
	return acc;
}

uintptr_t symfix_lib_func_addr(void)
{
	return (uintptr_t)&symfix_lib_func_local;
}
