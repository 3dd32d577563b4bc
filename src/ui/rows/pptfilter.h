/*
 * pptfilter: the ppt view's filter -- the same syntax as the coroutine
 * table's: words of text (each must appear, case-insensitive), a !regex
 * (POSIX extended, case-insensitive), and field terms NAME=VALUE where NAME
 * is "type" or a column and VALUE the value as shown.  See pptfilter.c.
 */
#ifndef COROTOP_PPTFILTER_H
#define COROTOP_PPTFILTER_H

#include <regex.h>
#include <stdbool.h>
#include <stddef.h>

#define PPTFILTER_TERMS 8

struct pptfilter {
	bool active;
	char text[128]; /* as typed */
	bool regex;	/* text is !regex */
	regex_t re;
	size_t nwords, nfields;
	char words[PPTFILTER_TERMS][64];     /* lowercased */
	char fields[PPTFILTER_TERMS][2][64]; /* name, value */
};

void pptfilter_init(struct pptfilter *f);
void pptfilter_finish(struct pptfilter *f);
/* Replace the filter ("" clears it).  False with a message (a bad regex,
 * too many terms); the old filter stays then. */
bool pptfilter_set(struct pptfilter *f, const char *text, char *err,
		   size_t errlen);
/* Does one frame match?  line: "TYPE name=value ...", as shown; names and
 * values: its n cells. */
bool pptfilter_match(const struct pptfilter *f, const char *type,
		     const char *line, const char *const *names,
		     const char *const *values, size_t n);
/* Case-insensitive substring (needle lowercased already). */
bool pptfilter_contains(const char *hay, const char *needle_lower);

#endif
