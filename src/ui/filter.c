/*
 * filter: the table filter language.
 *
 *   text           rows whose cells contain "text" (case-insensitive)
 *   !regex         rows whose joined cells match the POSIX extended regex
 *   key=value ...  field terms: the cell of column `key` equals value
 *                  (case-insensitive); state accepts R/S/D or the word, id
 *                  and where accept an optional 0x.  Terms and a remaining
 *                  substring combine with AND: "state=S tid=42 conn".
 *
 * Keys are column names (column.c), so every column is filterable.
 */
#include "filter.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "column.h"

void filter_init(struct filter *f)
{
	memset(f, 0, sizeof(*f));
}

void filter_finish(struct filter *f)
{
	if (f->regex_on)
		regfree(&f->regex);
	memset(f, 0, sizeof(*f));
}

static void filter_lower(char *s)
{
	for (; *s; s++)
		*s = (char)tolower((unsigned char)*s);
}

bool filter_set(struct filter *f, const char *text, char *err, size_t n)
{
	struct filter nf;
	char buf[128], *save = NULL, *tok;
	size_t used = 0;
	int rc;

	filter_init(&nf);
	snprintf(nf.text, sizeof(nf.text), "%s", text);
	if (!*text) {
		filter_finish(f);
		*f = nf;
		return true;
	}
	nf.active = true;
	if (text[0] == '!') {
		rc = regcomp(&nf.regex, text + 1,
			     REG_EXTENDED | REG_ICASE | REG_NOSUB);
		if (rc) {
			char why[96];

			regerror(rc, &nf.regex, why, sizeof(why));
			snprintf(err, n, "bad regex '%s': %s", text + 1, why);
			return false;
		}
		nf.regex_on = true;
		filter_finish(f);
		*f = nf;
		return true;
	}
	snprintf(buf, sizeof(buf), "%s", text);
	for (tok = strtok_r(buf, " \t", &save); tok;
	     tok = strtok_r(NULL, " \t", &save)) {
		char *eq = strchr(tok, '=');

		if (eq && eq != tok) {
			int col;

			*eq = '\0';
			col = column_find(tok);
			if (col < 0) {
				snprintf(err, n,
					 "no column '%s' (try state=, tid=, "
					 "id=, where=)",
					 tok);
				return false;
			}
			if (nf.nterms == FILTER_MAX_TERMS) {
				snprintf(err, n, "at most %d field terms",
					 FILTER_MAX_TERMS);
				return false;
			}
			nf.terms[nf.nterms].column = col;
			snprintf(nf.terms[nf.nterms].value,
				 sizeof(nf.terms[0].value), "%s", eq + 1);
			nf.nterms++;
			continue;
		}
		used += (size_t)snprintf(nf.substr + used,
					 sizeof(nf.substr) - used, "%s%s",
					 used ? " " : "", tok);
		if (used >= sizeof(nf.substr))
			used = sizeof(nf.substr) - 1;
	}
	filter_lower(nf.substr);
	filter_finish(f);
	*f = nf;
	return true;
}

static const char *filter_strip_0x(const char *v)
{
	return (v[0] == '0' && (v[1] == 'x' || v[1] == 'X')) ? v + 2 : v;
}

static bool filter_term_match(const struct filter_term *t,
			      const struct snapshot *s,
			      const struct model_coro *c)
{
	char cell[96];

	column_table[t->column].cell(cell, sizeof(cell), s, c);
	if (t->column == COL_STATE)
		return toupper((unsigned char)t->value[0]) == cell[0];
	if (t->column == COL_ID || t->column == COL_WHERE)
		return !strcasecmp(filter_strip_0x(cell),
				   filter_strip_0x(t->value));
	return !strcasecmp(cell, t->value);
}

static void filter_row_text(char *buf, size_t n, const struct snapshot *s,
			    const struct model_coro *c)
{
	size_t used = 0;

	buf[0] = '\0';
	for (int k = 0; k < COL_COUNT && used + 1 < n; k++) {
		char cell[96];

		column_table[k].cell(cell, sizeof(cell), s, c);
		used += (size_t)snprintf(buf + used, n - used, "%s%s",
					 k ? " " : "", cell);
		if (used >= n)
			used = n - 1;
	}
}

bool filter_row_contains(const struct snapshot *s, const struct model_coro *c,
			 const char *needle)
{
	char row[512];

	if (!*needle)
		return true;
	filter_row_text(row, sizeof(row), s, c);
	filter_lower(row);
	return strstr(row, needle) != NULL;
}

bool filter_match(const struct filter *f, const struct snapshot *s,
		  const struct model_coro *c)
{
	if (!f->active)
		return true;
	if (f->regex_on) {
		char row[512];

		filter_row_text(row, sizeof(row), s, c);
		return regexec(&f->regex, row, 0, NULL, 0) == 0;
	}
	for (unsigned i = 0; i < f->nterms; i++)
		if (!filter_term_match(&f->terms[i], s, c))
			return false;
	return filter_row_contains(s, c, f->substr);
}
