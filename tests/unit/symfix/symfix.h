/*
 * symfix: the symbolizer's fixture programs (see symfix_main.c).  Each
 * function here is noinline, so it has an address and a symbol of its own,
 * and each *_line constant is the source line of that function's name.
 */
#ifndef SYMFIX_H
#define SYMFIX_H

#include <stdint.h>

/* symfix_main.c, in the executable */
int symfix_main_func(int x);
extern const int symfix_main_func_line;

/* symfix_lib.c, in libsymfix.so (with debug info) */
int symfix_lib_func(int x);
extern const int symfix_lib_func_line;
/* &symfix_lib_func taken inside the library: in a non-PIE executable the
 * address seen from main would be the executable's PLT entry instead. */
uintptr_t symfix_lib_func_addr(void);

/* symfix_nodebug.c, linked in statically and built without debug info */
int symfix_nodebug_func(int x);

#endif
