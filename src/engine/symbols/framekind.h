/*
 * framekind: whether a stack frame is the program's own code or a
 * runtime's.  See framekind.c.
 */
#ifndef COROTOP_FRAMEKIND_H
#define COROTOP_FRAMEKIND_H

#include <stdbool.h>

/*
 * True when a frame in `module` (basename of its ELF file) running
 * `function` (its name as people read it, symname.h; NULL or "" when
 * unknown) belongs to a runtime -- libc and the loader, the C++ runtime,
 * Boost, corotop's own libraries -- rather than to the program.
 */
bool framekind_runtime(const char *module, const char *function);

#endif
