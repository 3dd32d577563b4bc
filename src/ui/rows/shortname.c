/*
 * shortname: a function's name in a cell narrower than it.  Cutting the
 * end of "boost::fibers::context::resume()+0x52" at 14 characters leaves
 * "boost::fibers:", which says nothing about the coroutine; what matters
 * in a C++ name is at its end, the function's own name, and what matters
 * least is where it sits and how it was called.  So, each step only while
 * the name is still too wide:
 *
 *   1. the " (file:line)" after a WHERE, then its "+0x..." offset;
 *   2. parameter lists "(...)" outside any braces, "(anonymous
 *      namespace)" excepted ("main::{lambda()#2}" keeps its "()");
 *   3. template arguments "<...>";
 *   4. leading qualifiers, one "a::" at a time, the last component kept
 *      ("boost::fibers::context::resume" -> "context::resume");
 *
 * and what is still too wide is the caller's to cut.  Brackets are
 * counted ( ( < { [ ), so a "::" inside a lambda's braces or a template's
 * arguments is not a qualifier.  Plain text goes through as it is.
 */
#include "ui/rows/shortname.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* Remove b[from, to). */
static void shortname_cut(char *b, size_t from, size_t to)
{
	memmove(b + from, b + to, strlen(b + to) + 1);
}

static bool shortname_open(char c)
{
	return c == '(' || c == '<' || c == '{' || c == '[';
}

static bool shortname_close(char c)
{
	return c == ')' || c == '>' || c == '}' || c == ']';
}

/* Step 1: " (file:line)" at the end, then "+0x<hex>" at the end. */
static void shortname_drop_place(char *b, size_t width)
{
	size_t len = strlen(b);
	char *p;

	if (len > width && len && b[len - 1] == ')' && (p = strstr(b, " (")) &&
	    strchr(p, ':')) {
		char *last = p;

		while ((p = strstr(p + 1, " (")))
			last = p;
		if (strchr(last, ':'))
			*last = '\0';
	}
	len = strlen(b);
	if (len > width && (p = strstr(b, "+0x"))) {
		char *q = p + 3;

		while (*q && strchr("0123456789abcdefABCDEF", *q))
			q++;
		if (!*q)
			*p = '\0';
	}
}

/* Steps 2 and 3: every group opened by `open` at depth 0 (outside every
 * bracket), "(anonymous namespace)" kept. */
static void shortname_drop_groups(char *b, size_t width, char open)
{
	int depth = 0;

	for (size_t i = 0; b[i] && strlen(b) > width; i++) {
		if (depth == 0 && b[i] == open &&
		    strncmp(b + i, "(anonymous namespace)", 21) != 0 &&
		    !(open == '<' && i >= 8 &&
		      !strncmp(b + i - 8, "operator", 8))) {
			size_t j = i;
			int d = 0;

			do {
				d += shortname_open(b[j]);
				d -= shortname_close(b[j]);
				j++;
			} while (b[j] && d > 0);
			if (d == 0) {
				shortname_cut(b, i, j);
				i--;
				continue;
			}
		}
		depth += shortname_open(b[i]);
		depth -= shortname_close(b[i]) && depth > 0;
	}
}

/* Step 4: the first "::" at depth 0 and what is before it, while too
 * wide. */
static void shortname_drop_qualifiers(char *b, size_t width)
{
	while (strlen(b) > width) {
		int depth = 0;
		size_t at = 0;
		bool found = false;

		for (size_t i = 0; b[i] && b[i + 1]; i++) {
			if (depth == 0 && b[i] == ':' && b[i + 1] == ':') {
				at = i + 2;
				found = b[at] != '\0';
				break;
			}
			depth += shortname_open(b[i]);
			depth -= shortname_close(b[i]) && depth > 0;
		}
		if (!found)
			return;
		shortname_cut(b, 0, at);
	}
}

char *shortname_fit(const char *name, size_t width, char *out, size_t n)
{
	if (!n)
		return out;
	snprintf(out, n, "%s", name);
	if (strlen(out) <= width)
		return out;
	shortname_drop_place(out, width);
	shortname_drop_groups(out, width, '(');
	shortname_drop_groups(out, width, '<');
	shortname_drop_qualifiers(out, width);
	return out;
}
