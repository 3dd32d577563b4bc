/*
 * profile: the exported form of hot stacks -- every stack with its weight
 * and its frames as names -- and the one place profiles reach the disk.
 *
 * Names are interned (strpool), so two frames name the same function
 * exactly when their pointers are equal: the writers merge stacks and
 * number frames by pointer, never by comparing text twice.  The engine
 * fills a profile from a copy of its stacks (engine/stacks/rotation.c); formats
 * are entries of a const table (struct profile_format) that only turn a
 * profile into bytes.  profile_write owns the file: temporary file next to
 * the target, written, flushed and closed with every error checked, then
 * renamed into place.  A profile filled one sample per event (corotop
 * convert's parked time) is folded to its distinct stacks by profile_fold
 * before it is written.
 */
#define _GNU_SOURCE
#include "engine/export/profile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/grow.h"
#include "common/strpool.h"
#include "common/tmpbeside.h"

#define PROFILE_POOL_BYTES (64u << 20)

bool profile_init(struct profile *p, const char *name)
{
	memset(p, 0, sizeof(*p));
	p->pool = strpool_create(PROFILE_POOL_BYTES);
	if (!p->pool)
		return false;
	p->name = strpool_intern(p->pool, name, strlen(name));
	return p->name != NULL;
}

void profile_finish(struct profile *p)
{
	free(p->s);
	free(p->frames);
	strpool_destroy(p->pool);
	memset(p, 0, sizeof(*p));
}

static const char *profile_intern(struct profile *p, const char *s)
{
	const char *r = s ? strpool_intern(p->pool, s, strlen(s)) : NULL;

	/* A full pool still needs a name: "?" is one. */
	return r || !s ? r : "?";
}

bool profile_add(struct profile *p, const char *const *names,
		 const char *const *files, uint32_t n, uint64_t weight)
{
	struct profile_sample *s;

	if (!weight)
		return true;
	if (!grow_array((void **)&p->s, &p->cap_s, p->ns + 1, sizeof(*p->s)) ||
	    !grow_array((void **)&p->frames, &p->cap_frames, p->nframes + n,
			sizeof(*p->frames)))
		return false;
	s = &p->s[p->ns++];
	s->weight = weight;
	s->first = (uint32_t)p->nframes;
	s->n = n;
	for (uint32_t i = 0; i < n; i++) {
		struct profile_frame *f = &p->frames[p->nframes++];

		f->name = profile_intern(p, names[i] ? names[i] : "?");
		f->file = files ? profile_intern(p, files[i]) : NULL;
	}
	p->total += weight;
	return true;
}

/* Two samples' stacks compared root first: names, then files (NULL
 * first), a prefix first.  Equal pointers are equal strings (interned). */
struct profile_ref {
	const struct profile *p;
	const struct profile_sample *s;
};

static int profile_str_cmp(const char *a, const char *b)
{
	if (a == b)
		return 0;
	if (!a || !b)
		return a ? 1 : -1;
	return strcmp(a, b);
}

static int profile_cmp(const void *x, const void *y)
{
	const struct profile_ref *a = x, *b = y;
	const struct profile_frame *fa = a->p->frames, *fb = b->p->frames;

	for (uint32_t i = 0; i < a->s->n && i < b->s->n; i++) {
		const struct profile_frame *u =
			&fa[a->s->first + a->s->n - 1 - i];
		const struct profile_frame *v =
			&fb[b->s->first + b->s->n - 1 - i];
		int c = profile_str_cmp(u->name, v->name);

		if (!c)
			c = profile_str_cmp(u->file, v->file);
		if (c)
			return c;
	}
	return (a->s->n > b->s->n) - (a->s->n < b->s->n);
}

bool profile_fold(struct profile *p)
{
	struct profile_ref *r = malloc((p->ns ? p->ns : 1) * sizeof(*r));
	struct profile_sample *s = malloc((p->ns ? p->ns : 1) * sizeof(*s));
	struct profile_frame *f =
		malloc((p->nframes ? p->nframes : 1) * sizeof(*f));
	size_t ns = 0, nf = 0;

	if (!r || !s || !f) {
		free(r);
		free(s);
		free(f);
		return false;
	}
	for (size_t i = 0; i < p->ns; i++)
		r[i] = (struct profile_ref){p, &p->s[i]};
	qsort(r, p->ns, sizeof(*r), profile_cmp);
	for (size_t i = 0; i < p->ns;) {
		const struct profile_ref key = r[i];
		uint64_t w = 0;

		for (; i < p->ns && !profile_cmp(&r[i], &key); i++)
			w += r[i].s->weight;
		memcpy(&f[nf], &p->frames[key.s->first], key.s->n * sizeof(*f));
		s[ns++] = (struct profile_sample){
			.weight = w, .first = (uint32_t)nf, .n = key.s->n};
		nf += key.s->n;
	}
	free(r);
	free(p->s);
	free(p->frames);
	p->s = s;
	p->ns = p->cap_s = ns;
	p->frames = f;
	p->nframes = nf;
	p->cap_frames = nf;
	return true;
}

bool profile_write(const struct profile *p, const struct profile_format *fmt,
		   const char *path, char *err, size_t errlen)
{
	FILE *f = NULL;
	char *tmp;
	int fd = tmp_beside(path, &tmp), saved;

	if (fd < 0 && errno == ENOMEM) {
		snprintf(err, errlen, "cannot write %s: out of memory", path);
		return false;
	}
	if (fd < 0) {
		snprintf(err, errlen,
			 "cannot write the %s profile %s: cannot create a "
			 "file next to it: %s",
			 fmt->name, path, strerror(errno));
		return false;
	}
	f = fdopen(fd, "w");
	if (!f) {
		saved = errno;
		close(fd);
		goto err_tmp;
	}
	errno = 0;
	if (!fmt->write(f, p) || fflush(f) != 0 || ferror(f)) {
		saved = errno ? errno : EIO;
		fclose(f);
		goto err_tmp;
	}
	if (fclose(f) != 0) {
		saved = errno;
		goto err_tmp;
	}
	if (rename(tmp, path) != 0) {
		saved = errno;
		goto err_tmp;
	}
	free(tmp);
	return true;

err_tmp:
	unlink(tmp);
	snprintf(err, errlen, "cannot write the %s profile %s: %s", fmt->name,
		 path, strerror(saved));
	free(tmp);
	return false;
}
