/*
 * pptfilter: which ppt frames the view shows.
 *
 * One frame is one line of text, "TYPE name=value name=value", with each
 * value formatted as on screen.  A filter is either a !regex over that line
 * (case-insensitive), or space-separated terms that must all hold: a word
 * is a case-insensitive substring of the line; NAME=VALUE compares one cell
 * exactly as shown ("type" names the frame type).  The same syntax as the
 * coroutine table's filter, minus what only coroutines have.
 */
#define _GNU_SOURCE
#include "ui/rows/pptfilter.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

void pptfilter_init(struct pptfilter *f)
{
	memset(f, 0, sizeof(*f));
}

void pptfilter_finish(struct pptfilter *f)
{
	if (f->active && f->regex)
		regfree(&f->re);
	memset(f, 0, sizeof(*f));
}

bool pptfilter_contains(const char *hay, const char *needle)
{
	size_t n = strlen(needle);

	if (!n)
		return true;
	for (const char *h = hay; *h; h++) {
		size_t i = 0;

		while (i < n && h[i] &&
		       tolower((unsigned char)h[i]) == needle[i])
			i++;
		if (i == n)
			return true;
	}
	return false;
}

static bool pptfilter_terms(struct pptfilter *f, const char *text, char *err,
			    size_t errlen)
{
	char buf[128], *save = NULL;

	snprintf(buf, sizeof(buf), "%s", text);
	for (char *w = strtok_r(buf, " ", &save); w;
	     w = strtok_r(NULL, " ", &save)) {
		char *eq = strchr(w, '=');

		if (eq && eq != w) {
			if (f->nfields == PPTFILTER_TERMS)
				goto too_many;
			*eq = '\0';
			snprintf(f->fields[f->nfields][0], 64, "%s", w);
			snprintf(f->fields[f->nfields][1], 64, "%s", eq + 1);
			f->nfields++;
			continue;
		}
		if (f->nwords == PPTFILTER_TERMS)
			goto too_many;
		for (size_t i = 0; w[i] && i < 63; i++)
			f->words[f->nwords][i] =
				(char)tolower((unsigned char)w[i]);
		f->nwords++;
	}
	return true;
too_many:
	snprintf(err, errlen, "at most %d words and %d NAME=VALUE terms",
		 PPTFILTER_TERMS, PPTFILTER_TERMS);
	return false;
}

bool pptfilter_set(struct pptfilter *f, const char *text, char *err,
		   size_t errlen)
{
	struct pptfilter next;

	pptfilter_init(&next);
	while (*text == ' ')
		text++;
	if (!*text) {
		pptfilter_finish(f);
		return true;
	}
	snprintf(next.text, sizeof(next.text), "%s", text);
	if (text[0] == '!') {
		int rc = regcomp(&next.re, text + 1,
				 REG_EXTENDED | REG_ICASE | REG_NOSUB);

		if (rc) {
			char why[96];

			regerror(rc, &next.re, why, sizeof(why));
			if (err)
				snprintf(err, errlen, "bad regex: %s", why);
			return false;
		}
		next.regex = true;
	} else if (!pptfilter_terms(&next, text, err, errlen)) {
		return false;
	}
	next.active = true;
	pptfilter_finish(f);
	*f = next;
	return true;
}

bool pptfilter_match(const struct pptfilter *f, const char *type,
		     const char *line, const char *const *names,
		     const char *const *values, size_t n)
{
	if (!f->active)
		return true;
	if (f->regex)
		return regexec(&f->re, line, 0, NULL, 0) == 0;
	for (size_t w = 0; w < f->nwords; w++)
		if (!pptfilter_contains(line, f->words[w]))
			return false;
	for (size_t k = 0; k < f->nfields; k++) {
		const char *name = f->fields[k][0], *want = f->fields[k][1];
		bool ok = false;

		if (!strcmp(name, "type"))
			ok = !strcmp(type, want);
		for (size_t c = 0; !ok && c < n; c++)
			ok = !strcmp(names[c], name) &&
			     !strcmp(values[c], want);
		if (!ok)
			return false;
	}
	return true;
}
