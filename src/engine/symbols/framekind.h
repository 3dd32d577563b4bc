/*
 * framekind: whether a stack frame is the program's own code or a
 * runtime's.  See framekind.c.
 */
#ifndef COROTOP_FRAMEKIND_H
#define COROTOP_FRAMEKIND_H

#include <stdbool.h>
#include <stddef.h>

/*
 * True when a frame in `module` (basename of its ELF file) running
 * `function` (its name as people read it, symname.h; NULL or "" when
 * unknown) belongs to a runtime -- libc and the loader, the C++ runtime,
 * Boost, corotop's own libraries -- rather than to the program.
 */
bool framekind_runtime(const char *module, const char *function);

/*
 * The program's code a runtime frame runs inlined, when its name says so:
 * Boost.Fiber runs a fiber's function as worker_context<F>::run_, and a
 * lambda F is usually inlined there, leaving no frame of its own.  Copies
 * F ("main::{lambda()#2}") into out and returns true for such a frame --
 * and for a context a runtime made for itself, what it is ("boost.fiber
 * dispatcher").
 */
bool framekind_inlined(const char *function, char *out, size_t n);

#endif
