/*
 * dump: `corotop dump`'s text, every coroutine with its whole stack,
 * grouped by state, lost-wakeup suspects first.  See dump.c.
 */
#ifndef COROTOP_UI_BATCH_DUMP_H
#define COROTOP_UI_BATCH_DUMP_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ui/batch/batch.h"

/* The rows idx[0..n) of s; hot names frames and finds parked stacks
 * (NULL: none are printed). */
void dump_print_text(FILE *f, const struct snapshot *s, const uint32_t *idx,
		     size_t n, const struct batch_hot *hot);

#endif
