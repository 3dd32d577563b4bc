/*
 * callsite: the program's line that led into code inlined from another
 * file (a library's header).  See callsite.c.
 */
#ifndef COROTOP_CALLSITE_H
#define COROTOP_CALLSITE_H

#include <elfutils/libdwfl.h>
#include <stdbool.h>
#include <stdint.h>

/*
 * The code at addr in mod has its line in file `base` (a basename).  When
 * that is not its compile unit's own file, and an inlined call made from
 * the unit's file leads to it: true, with the unit's file (a basename, the
 * module's own string) in *file and the call's line in *line.
 */
bool callsite_in_unit(Dwfl_Module *mod, uint64_t addr, const char *base,
		      const char **file, int *line);

/* A path's last component (path itself without a '/'; NULL stays NULL). */
const char *callsite_base(const char *path);

#endif
