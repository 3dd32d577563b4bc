/*
 * folded: a profile in the folded-stacks format that flamegraph.pl (and
 * speedscope, inferno, ...) read: one line per distinct stack,
 *
 *   root;caller;...;leaf WEIGHT
 *
 * frames outermost first, separated by ';', then one space and the summed
 * weight.  Frames are function names (framename_function guarantees no ';'
 * and no control characters), so stacks that differ only in call sites or
 * offsets fold into one line.  Lines are sorted by their text, which makes
 * the file deterministic (and diffable).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "engine/export/profile.h"

/* Compare two samples' names root first; a prefix sorts first. */
static int folded_cmp_ctx(const struct profile *p,
			  const struct profile_sample *a,
			  const struct profile_sample *b)
{
	uint32_t i;

	for (i = 0; i < a->n && i < b->n; i++) {
		const char *x = p->frames[a->first + a->n - 1 - i].name;
		const char *y = p->frames[b->first + b->n - 1 - i].name;
		int c = x == y ? 0 : strcmp(x, y);

		if (c)
			return c;
	}
	return (a->n > b->n) - (a->n < b->n);
}

struct folded_ref {
	const struct profile *p;
	const struct profile_sample *s;
};

static int folded_cmp(const void *a, const void *b)
{
	const struct folded_ref *x = a, *y = b;

	return folded_cmp_ctx(x->p, x->s, y->s);
}

static void folded_line(FILE *f, const struct profile *p,
			const struct profile_sample *s, uint64_t weight)
{
	for (uint32_t i = 0; i < s->n; i++)
		fprintf(f, "%s%s", i ? ";" : "",
			p->frames[s->first + s->n - 1 - i].name);
	fprintf(f, "%s%" PRIu64 "\n", s->n ? " " : "[no frames] ", weight);
}

static bool folded_write(FILE *f, const struct profile *p)
{
	struct folded_ref *r = malloc((p->ns ? p->ns : 1) * sizeof(*r));

	if (!r)
		return false;
	for (size_t i = 0; i < p->ns; i++)
		r[i] = (struct folded_ref){p, &p->s[i]};
	qsort(r, p->ns, sizeof(*r), folded_cmp);
	for (size_t i = 0; i < p->ns;) {
		uint64_t w = 0;
		size_t j = i;

		while (j < p->ns && !folded_cmp(&r[i], &r[j]))
			w += r[j++].s->weight;
		folded_line(f, p, r[i].s, w);
		i = j;
	}
	free(r);
	return !ferror(f);
}

const struct profile_format profile_folded = {
	.name = "folded",
	.write = folded_write,
};
