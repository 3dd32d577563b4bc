/*
 * convert_parked: where a trace's coroutines spent their time parked, as
 * a profile for flame graphs -- corotop convert --to folded and --to
 * speedscope.
 *
 * Each `suspended` interval with a stack -- a `stack` attribute (u64
 * array, innermost first; a recording made with --parked-stacks), or a
 * `stack_id` naming a `corotop_stack` written later (hephstacks.c: a
 * coroutine that died parked before the engine collected its stack) --
 * is one sample,
 * weighted by the interval's length in nanoseconds; its frames are named
 * by the caller (the names recorded in the trace, function only), else
 * hex.  The samples are folded into their distinct stacks (profile_fold)
 * and written by the live export's writers (engine/export: folded.c,
 * speedscope.c), so the two formats of one file are one profile: the same
 * stacks, the same frame words, the same weights.  The events are walked
 * in file order; memory is the profile's, one entry per parked interval
 * until it is folded.
 */
#define _GNU_SOURCE
#include "convert/convert.h"
#include "convert/convert_coros.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "engine/export/profile.h"
#include "engine/heph/hephstacks.h"

#define CV_FRAMES 256 /* frames of a stack kept, innermost first */

/* The profile's name, which speedscope shows as its title: "parked:
 * COMMAND" for a recording that says what it traced, else "parked". */
static bool cv_parked_init(struct profile *prof, const struct heph_file *hf)
{
	struct convert_stats unused;
	struct convert_coros cs;
	char name[200] = "parked";
	bool ok;

	convert_coros_init(&cs, hf, NULL, &unused);
	if (cs.ours && cs.command[0])
		snprintf(name, sizeof(name), "parked: %s", cs.command);
	convert_coros_finish(&cs);
	ok = profile_init(prof, name);
	if (!ok)
		profile_finish(prof);
	return ok;
}

/* p's stack, if it is a parked interval with one, added to prof. */
static bool cv_parked_add(struct profile *prof, const struct heph_file *hf,
			  const struct heph_stacks *hs,
			  const struct heph_packet *p, convert_name_fn fn,
			  void *ctx, struct convert_stats *st)
{
	static char buf[CV_FRAMES][256];
	const char *names[CV_FRAMES];
	uint64_t frames[CV_FRAMES];
	size_t n;

	if (!convert_desc_is(p, "suspended") || p->end <= p->start)
		return true;
	n = heph_stacks_of(hs, hf, p, frames, CV_FRAMES);
	if (!n)
		return true;
	for (size_t k = 0; k < n; k++) {
		const char *name = fn ? fn(ctx, frames[k], !k) : NULL;

		/* A copy: fn may reuse its buffer. */
		if (name)
			snprintf(buf[k], sizeof(buf[k]), "%s", name);
		else
			snprintf(buf[k], sizeof(buf[k]), "0x%" PRIx64,
				 frames[k]);
		names[k] = buf[k];
	}
	st->written++;
	return profile_add(prof, names, NULL, n, p->end - p->start);
}

bool convert_parked(const struct heph_file *hf,
		    const struct profile_format *fmt, FILE *out,
		    convert_name_fn fn, void *ctx, struct convert_stats *st)
{
	struct heph_stacks hs;
	struct profile prof;
	bool ok = true;

	if (!cv_parked_init(&prof, hf))
		return false;
	heph_stacks_init(&hs, hf);
	for (size_t i = 0; i < hf->nev && ok; i++) {
		struct heph_packet p;

		if (!heph_file_event(hf, i, &p)) {
			st->skipped++;
			continue;
		}
		st->events++;
		ok = cv_parked_add(&prof, hf, &hs, &p, fn, ctx, st);
	}
	heph_stacks_finish(&hs);
	if (ok)
		ok = profile_fold(&prof) && fmt->write(out, &prof);
	profile_finish(&prof);
	return ok;
}
