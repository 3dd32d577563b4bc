/*
 * route: the request dispatch of corotop serve.
 *
 * A fixed table of paths; everything else is 404, whatever it looks like
 * (no path is ever joined to a directory or handed to a command).  GET
 * and HEAD only: any other method is 405 on a known path and 404 on an
 * unknown one.  Accept is read as RFC 9110 says -- comma-separated media
 * ranges with an optional ;q= weight -- only far enough to choose between
 * the two metrics formats; anything it cannot read counts as not asked.
 */
#include "ui/serve/route.h"

#include <stddef.h>
#include <string.h>
#include <strings.h>

static const struct {
	const char *path;
	enum route_kind kind;
} route_paths[] = {
	{"/metrics", ROUTE_METRICS},
	{"/snapshot", ROUTE_SNAPSHOT},
	{"/healthz", ROUTE_HEALTHZ},
};

static bool route_blank(char c)
{
	return c == ' ' || c == '\t';
}

/* The weight of a q= value in thousandths (0..1000), or -1: malformed. */
static int route_q(const char *s, size_t n)
{
	int v = 0, scale = 1000;
	size_t i = 0;

	if (!n || (s[0] != '0' && s[0] != '1'))
		return -1;
	v = (s[0] - '0') * 1000;
	i = 1;
	if (i < n && s[i] == '.') {
		for (i++; i < n && scale > 1; i++) {
			if (s[i] < '0' || s[i] > '9')
				return -1;
			scale /= 10;
			v += (s[i] - '0') * scale;
		}
	}
	if (i != n || v > 1000)
		return -1;
	return v;
}

/* One media range [s, s + n): its type in *type (length *tlen) and its
 * weight, or -1 when it cannot be read. */
static int route_range(const char *s, size_t n, const char **type, size_t *tlen)
{
	size_t i = 0, end;
	int q = 1000;

	while (i < n && route_blank(s[i]))
		i++;
	end = i;
	while (end < n && s[end] != ';')
		end++;
	*type = s + i;
	*tlen = end - i;
	while (*tlen && route_blank((*type)[*tlen - 1]))
		(*tlen)--;
	while (end < n) { /* at a ';' */
		size_t p = end + 1, pend;

		while (p < n && route_blank(s[p]))
			p++;
		pend = p;
		while (pend < n && s[pend] != ';')
			pend++;
		if (pend - p >= 2 && (s[p] == 'q' || s[p] == 'Q') &&
		    s[p + 1] == '=') {
			size_t qend = pend;

			while (qend > p + 2 && route_blank(s[qend - 1]))
				qend--;
			q = route_q(s + p + 2, qend - p - 2);
			if (q < 0)
				return -1;
		}
		end = pend;
	}
	return q;
}

static bool route_is(const char *type, size_t tlen, const char *want)
{
	return tlen == strlen(want) && !strncasecmp(type, want, tlen);
}

bool route_wants_openmetrics(const char *accept)
{
	int om = 0, text = 0;

	for (const char *s = accept; s && *s;) {
		size_t n = strcspn(s, ","), tlen;
		const char *type;
		int q = route_range(s, n, &type, &tlen);

		if (q >= 0) {
			if (route_is(type, tlen,
				     "application/openmetrics-text"))
				om = q > om ? q : om;
			else if (route_is(type, tlen, "text/plain") ||
				 route_is(type, tlen, "text/*") ||
				 route_is(type, tlen, "*/*"))
				text = q > text ? q : text;
		}
		s += n;
		if (*s == ',')
			s++;
	}
	return om > 0 && om >= text;
}

struct route route_request(const char *method, const char *path,
			   const char *accept)
{
	struct route r = {ROUTE_NOT_FOUND, 404, METRICS_PROMETHEUS};
	bool get =
		method && (!strcmp(method, "GET") || !strcmp(method, "HEAD"));

	for (size_t i = 0;
	     path && i < sizeof(route_paths) / sizeof(*route_paths); i++) {
		if (strcmp(path, route_paths[i].path))
			continue;
		if (!get)
			return (struct route){ROUTE_METHOD_NOT_ALLOWED, 405,
					      METRICS_PROMETHEUS};
		r.kind = route_paths[i].kind;
		r.status = 200;
		if (r.kind == ROUTE_METRICS && route_wants_openmetrics(accept))
			r.fmt = METRICS_OPENMETRICS;
		return r;
	}
	return r;
}
