/*
 * lines: a test's captured output split into its lines, in place.
 */
#ifndef COROTOP_TEST_LINES_H
#define COROTOP_TEST_LINES_H

#include <stddef.h>
#include <string.h>

/* Split buf into lines (the newlines become NULs); at most max of them in
 * line[].  Returns the count. */
static inline size_t split_lines(char *buf, char **line, size_t max)
{
	size_t n = 0;

	for (char *p = buf; *p && n < max;) {
		char *nl = strchr(p, '\n');

		line[n++] = p;
		if (!nl)
			break;
		*nl = '\0';
		p = nl + 1;
	}
	return n;
}

#endif
