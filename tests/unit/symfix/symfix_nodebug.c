/*
 * symfix_nodebug: a function with a symbol but no line info (this file is
 * built with -g0), for the "func+0x5" form of symbolizer_format.
 */
#include "symfix.h"

__attribute__((noinline)) int symfix_nodebug_func(int x)
{
	int acc = 1;

	for (int i = 0; i < x; i++)
		acc = acc * 31 + i;
	return acc;
}
