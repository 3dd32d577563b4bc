/*
 * filter: which coroutines the table shows.  See filter.c.
 */
#ifndef COROTOP_FILTER_H
#define COROTOP_FILTER_H

#include <regex.h>
#include <stdbool.h>
#include <stddef.h>

#include "../engine/snapshot.h"

#define FILTER_MAX_TERMS 8

struct filter_term {
	int column; /* enum column_id */
	char value[64];
};

struct filter {
	char text[128]; /* as typed */
	bool active;
	bool regex_on;
	regex_t regex;
	char substr[128]; /* what is left after field terms, lowercased */
	struct filter_term terms[FILTER_MAX_TERMS];
	unsigned nterms;
};

void filter_init(struct filter *f);
void filter_finish(struct filter *f);
/* Parse `text`; "" clears the filter.  On error the filter is unchanged
 * and err says what is wrong. */
bool filter_set(struct filter *f, const char *text, char *err, size_t n);
bool filter_match(const struct filter *f, const struct snapshot *s,
		  const struct model_coro *c);
/* Case-insensitive substring match of `needle` in any visible cell (used by
 * search as well). */
bool filter_row_contains(const struct snapshot *s, const struct model_coro *c,
			 const char *needle);

#endif
