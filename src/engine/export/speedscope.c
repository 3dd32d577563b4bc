/*
 * speedscope: a profile as a speedscope file (https://www.speedscope.app,
 * "file-format-schema.json"): one "sampled" profile whose samples are the
 * distinct stacks and whose weights are theirs.
 *
 *   {"$schema": "https://www.speedscope.app/file-format-schema.json",
 *    "shared": {"frames": [{"name": ..., "file": ...}, ...]},
 *    "profiles": [{"type": "sampled", "name": ..., "unit": "none",
 *                  "startValue": 0, "endValue": <total weight>,
 *                  "samples": [[frame index, ...], ...],
 *                  "weights": [w, ...]}],
 *    "name": ..., "activeProfileIndex": 0, "exporter": "corotop"}
 *
 * A sample lists frame indexes root first (speedscope builds its call tree
 * from the first element down).  A frame is a (function, source file)
 * pair, numbered in order of first appearance; the line is left out on
 * purpose, so every call site of a function is one frame, as in the folded
 * export.  Weights are counts ("none"): whatever the puts added, samples
 * for the sampler.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "wire/cttable.h"
#include "common/json_writer.h"
#include "common/hashidx.h"
#include "engine/export/profile.h"

struct speedscope_index {
	const struct profile *p;
	const struct profile_frame *want;
	uint32_t *first; /* frame number -> index in p->frames of its first
			    appearance */
};

static bool speedscope_eq(void *ctx, uint32_t rec)
{
	const struct speedscope_index *x = ctx;
	const struct profile_frame *f = &x->p->frames[x->first[rec]];

	return f->name == x->want->name && f->file == x->want->file;
}

static uint64_t speedscope_hash(const struct profile_frame *f)
{
	return ct_mix64((uint64_t)(uintptr_t)f->name ^
			ct_mix64((uint64_t)(uintptr_t)f->file));
}

static bool speedscope_write(FILE *f, const struct profile *p)
{
	struct speedscope_index x = {.p = p};
	uint32_t *num = malloc((p->nframes ? p->nframes : 1) * sizeof(*num));
	struct hashidx idx;
	uint32_t distinct = 0;
	struct json_writer w;

	x.first = malloc((p->nframes ? p->nframes : 1) * sizeof(*x.first));
	if (!num || !x.first || !hashidx_init(&idx, p->nframes)) {
		free(num);
		free(x.first);
		return false;
	}
	/* Number the distinct frames. */
	for (size_t i = 0; i < p->nframes; i++) {
		uint64_t h = speedscope_hash(&p->frames[i]);
		uint32_t r;

		x.want = &p->frames[i];
		r = hashidx_find(&idx, h, speedscope_eq, &x);
		if (r == HASHIDX_NONE) {
			r = distinct++;
			x.first[r] = (uint32_t)i;
			hashidx_insert(&idx, h, r);
		}
		num[i] = r;
	}
	json_writer_init(&w, f);
	json_writer_object_begin(&w);
	json_writer_string_field(
		&w, "$schema",
		"https://www.speedscope.app/file-format-schema.json");
	json_writer_key(&w, "shared");
	json_writer_object_begin(&w);
	json_writer_key(&w, "frames");
	json_writer_array_begin(&w);
	for (uint32_t r = 0; r < distinct; r++) {
		const struct profile_frame *fr = &p->frames[x.first[r]];

		json_writer_object_begin(&w);
		json_writer_string_field(&w, "name", fr->name);
		if (fr->file)
			json_writer_string_field(&w, "file", fr->file);
		json_writer_object_end(&w);
	}
	json_writer_array_end(&w);
	json_writer_object_end(&w);
	json_writer_key(&w, "profiles");
	json_writer_array_begin(&w);
	json_writer_object_begin(&w);
	json_writer_string_field(&w, "type", "sampled");
	json_writer_string_field(&w, "name", p->name);
	json_writer_string_field(&w, "unit", "none");
	json_writer_uint_field(&w, "startValue", 0);
	json_writer_uint_field(&w, "endValue", p->total);
	json_writer_key(&w, "samples");
	json_writer_array_begin(&w);
	for (size_t i = 0; i < p->ns; i++) {
		const struct profile_sample *s = &p->s[i];

		json_writer_array_begin(&w);
		for (uint32_t k = s->n; k-- > 0;)
			json_writer_uint(&w, num[s->first + k]);
		json_writer_array_end(&w);
	}
	json_writer_array_end(&w);
	json_writer_key(&w, "weights");
	json_writer_array_begin(&w);
	for (size_t i = 0; i < p->ns; i++)
		json_writer_uint(&w, p->s[i].weight);
	json_writer_array_end(&w);
	json_writer_object_end(&w);
	json_writer_array_end(&w);
	json_writer_string_field(&w, "name", p->name);
	json_writer_uint_field(&w, "activeProfileIndex", 0);
	json_writer_string_field(&w, "exporter", "corotop");
	json_writer_object_end(&w);
	json_writer_raw(&w, "\n");
	json_writer_finish(&w);
	hashidx_finish(&idx);
	free(num);
	free(x.first);
	return !ferror(f);
}

const struct profile_format profile_speedscope = {
	.name = "speedscope",
	.write = speedscope_write,
};
