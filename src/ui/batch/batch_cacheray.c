/*
 * batch_cacheray: the memory report of a Cacheray trace, for scripts and
 * for people without a terminal UI.
 *
 * The trace is read with read(2) in 256 KiB chunks (they stay in the
 * cache while the reader goes over them) until end of file, so a
 * regular file, stdin ("-") or a FIFO whose writer is still running all
 * work the same; each chunk goes to the streaming reader (src/cacheray),
 * which keeps only counters.  The report then has five parts: Totals,
 * Types (with per-offset member rows), Threads, Hot lines (the most
 * accessed 64-byte lines) and False-sharing suspects (lines written by one
 * thread and touched by another).  Text mimics top -b: a header, then one
 * section per part with a column header; JSON is one object, the schema in
 * docs/JSON.md ("Memory report").
 *
 * A directory or a terminal is refused before anything is read, with the
 * memory view's message and exit code, 2: the view's input
 * (cray_source.c) calls cray_source_refuse too.
 *
 * Typenames come from the trace and may hold any byte: text shows bytes
 * outside printable ASCII as '?'; JSON writes them as every corotop JSON
 * does (common/json_writer.h, common/jsonstr.h): valid UTF-8 as it is, other
 * bytes as U+FFFD, control characters escaped, so the output is always valid
 * UTF-8 JSON.
 */
#define _GNU_SOURCE /* O_CLOEXEC */
#include "ui/batch/batch_cacheray.h"

#include "common/json_writer.h"
#include "cacheray/cray_source.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define BATCH_CACHERAY_CHUNK (256 * 1024u)

static const char *const layout_name[] = {
	[CACHERAY_LAYOUT_UNTYPED] = "untyped",
	[CACHERAY_LAYOUT_ELEMENT] = "element",
	[CACHERAY_LAYOUT_ELEMENTS] = "elements",
	[CACHERAY_LAYOUT_REGIONS] = "regions",
};

static uint64_t type_accesses(const struct cacheray_type *t)
{
	return t->n[0] + t->n[1];
}

static int type_cmp(const void *a, const void *b)
{
	const struct cacheray_type *x = *(const struct cacheray_type *const *)a;
	const struct cacheray_type *y = *(const struct cacheray_type *const *)b;
	uint64_t p = type_accesses(x), q = type_accesses(y);

	if (p != q)
		return p > q ? -1 : 1;
	return (x > y) - (x < y); /* array order: first registered first */
}

static int thread_cmp(const void *a, const void *b)
{
	const struct cacheray_thread *x =
		*(const struct cacheray_thread *const *)a;
	const struct cacheray_thread *y =
		*(const struct cacheray_thread *const *)b;
	uint64_t p = x->n[0] + x->n[1], q = y->n[0] + y->n[1];

	if (p != q)
		return p > q ? -1 : 1;
	return (x > y) - (x < y);
}

/* Types (or threads) by accesses, most first; NULL when out of memory. */
static const void **sorted(const struct cacheray *c, bool threads, size_t *n)
{
	const void **v;

	*n = threads ? cacheray_nthreads(c) : cacheray_ntypes(c);
	v = malloc((*n ? *n : 1) * sizeof(*v));
	if (!v)
		return NULL;
	for (size_t i = 0; i < *n; i++)
		v[i] = threads ? (const void *)cacheray_thread_at(c, i)
			       : (const void *)cacheray_type_at(c, i);
	qsort(v, *n, sizeof(*v), threads ? thread_cmp : type_cmp);
	return v;
}

/* A note when the trace cannot show sharing between threads. */
static const char *threads_note(const struct cacheray *c)
{
	const struct cacheray_thread *t = cacheray_thread_at(c, 0);

	if (cacheray_nthreads(c) != 1 || t->other)
		return NULL;
	if (t->id == 0)
		return "every access carries thread id 0 (the shipped Cacheray "
		       "runtime always writes 0): per-thread and false-sharing "
		       "analysis sees a single thread";
	return "every access carries the same thread id: per-thread and "
	       "false-sharing analysis sees a single thread";
}

/* ---- text ---- */

static void text_name(FILE *f, const char *s, size_t n, size_t max)
{
	for (size_t i = 0; i < n && i < max; i++)
		fputc(s[i] >= 0x20 && s[i] < 0x7f ? s[i] : '?', f);
	if (n > max)
		fputs("...", f);
}

static void text_header(FILE *f, const struct cacheray *c, const char *source,
			const struct cacheray_totals *t)
{
	uint64_t off;
	const char *err = cacheray_error(c, &off);
	const char *note = threads_note(c);

	fputs("Cacheray trace: ", f);
	text_name(f, source, strlen(source), 200);
	fprintf(f, "\n  %" PRIu64 " bytes, %" PRIu64 " records", t->bytes_read,
		t->records);
	if (err)
		fprintf(f, "; STOPPED: %s\n", err);
	else if (cacheray_pending(c))
		fprintf(f,
			"; ends inside a record at byte %" PRIu64
			" (%zu bytes of it)\n",
			t->bytes_read, cacheray_pending(c));
	else
		fputs("; complete\n", f);
	if (note)
		fprintf(f, "  note: %s\n", note);
}

static void text_totals(FILE *f, const struct cacheray_totals *t)
{
	fprintf(f,
		"\nTotals\n"
		"  accesses %" PRIu64 "  reads %" PRIu64 "  writes %" PRIu64
		"  atomics %" PRIu64 " (rmw-pairs %" PRIu64
		")  unaligned %" PRIu64 "\n",
		t->accesses, t->reads, t->writes, t->atomics, t->atomic_rmw,
		t->unaligned);
	fprintf(f,
		"  bytes %" PRIu64 "  cross-line %" PRIu64 "  untyped %" PRIu64
		"\n",
		t->access_bytes, t->cross_line, t->untyped);
	fprintf(f,
		"  rtta: adds %" PRIu64 "  removes %" PRIu64 "  live %" PRIu64
		"  empty %" PRIu64 "  overlaps %" PRIu64
		"  unknown-removes %" PRIu64 "  refused %" PRIu64 "\n",
		t->rtta_adds, t->rtta_removes, t->rtta_live, t->rtta_empty,
		t->rtta_overlaps, t->rtta_remove_unknown, t->rtta_full);
	fprintf(f,
		"  lines %" PRIu64 " (cap %" PRIu64
		")  dropped-accesses %" PRIu64 "  other-threads %" PRIu64
		"  other-types %" PRIu64 "\n",
		t->lines, t->lines_max, t->lines_dropped_accesses,
		t->threads_other, t->types_other);
}

static void text_members(FILE *f, const struct cacheray_type *t)
{
	unsigned shown = 0, more = 0;

	if (!t->members) {
		if (t->no_members)
			fputs("  (no member counts: element over 4096 bytes "
			      "or the counter budget spent)\n",
			      f);
		return;
	}
	for (uint32_t o = 0; o < t->elemsize; o++) {
		const struct cacheray_member *m = &t->members[o];

		if (!m->n[0] && !m->n[1])
			continue;
		if (shown++ >= BATCH_CACHERAY_MEMBERS) {
			more++;
			continue;
		}
		fprintf(f,
			"  %10" PRIu64 " %10" PRIu64 " %10" PRIu64
			" %8s %8s    +%" PRIu32 "\n",
			m->n[0] + m->n[1], m->n[0], m->n[1], "", "", o);
	}
	if (more)
		fprintf(f, "%56s... %u more offsets\n", "", more);
}

static void text_types(FILE *f, const struct cacheray *c)
{
	size_t n, shown = 0, more = 0;
	const void **v = sorted(c, false, &n);

	fprintf(f, "\nTypes\n  %10s %10s %10s %8s %8s  %s\n", "ACCESSES",
		"READS", "WRITES", "ELEMSIZE", "REGIONS", "NAME");
	for (size_t i = 0; v && i < n; i++) {
		const struct cacheray_type *t = v[i];

		if (!type_accesses(t) && !t->regions)
			continue; /* "(untyped)" in a trace without any */
		if (shown++ >= BATCH_CACHERAY_ROWS) {
			more++;
			continue;
		}
		fprintf(f,
			"  %10" PRIu64 " %10" PRIu64 " %10" PRIu64 " %8" PRIu32
			" %8" PRIu64 "  ",
			type_accesses(t), t->n[0], t->n[1], t->elemsize,
			t->regions);
		text_name(f, t->name, t->name_len, 60);
		fputc('\n', f);
		if (type_accesses(t))
			text_members(f, t);
	}
	if (more)
		fprintf(f, "  ... %zu more types\n", more);
	free(v);
}

static void text_threads(FILE *f, const struct cacheray *c)
{
	size_t n;
	const void **v = sorted(c, true, &n);

	fprintf(f, "\nThreads\n  %-20s %10s %10s %10s\n", "ID", "ACCESSES",
		"READS", "WRITES");
	for (size_t i = 0; v && i < n && i < BATCH_CACHERAY_ROWS; i++) {
		const struct cacheray_thread *t = v[i];

		if (t->other)
			fprintf(f, "  %-20s", "(other threads)");
		else
			fprintf(f, "  %-20" PRIu64, t->id);
		fprintf(f, " %10" PRIu64 " %10" PRIu64 " %10" PRIu64 "\n",
			t->n[0] + t->n[1], t->n[0], t->n[1]);
	}
	if (v && n > BATCH_CACHERAY_ROWS)
		fprintf(f, "  ... %zu more threads\n", n - BATCH_CACHERAY_ROWS);
	free(v);
}

static void text_line(FILE *f, const struct cacheray_line *l, bool shared)
{
	fprintf(f, "  0x%016" PRIx64 " %10" PRIu64 " %10" PRIu64 " %10" PRIu64,
		l->addr, l->reads + l->writes, l->reads, l->writes);
	fprintf(f, " %-13s", cacheray_layout_text(l->layout));
	if (shared)
		fprintf(f, " %-9s", l->disjoint ? "disjoint" : "overlap");
	fputs("  ", f);
	for (unsigned s = 0; s < l->nthreads; s++) {
		if (l->thread[s].t->other)
			fputs(s ? ",other" : "other", f);
		else
			fprintf(f, "%s%" PRIu64, s ? "," : "",
				l->thread[s].t->id);
		if (l->thread[s].wrote)
			fputs("(w)", f);
	}
	if (l->more_threads)
		fputs(l->more_threads_wrote ? ",+more(w)" : ",+more", f);
	fputs("  ", f);
	for (unsigned s = 0; s < l->ntypes; s++) {
		if (s)
			fputc(',', f);
		text_name(f, l->type[s]->name, l->type[s]->name_len, 40);
	}
	if (l->more_types)
		fputs(",...", f);
	fputc('\n', f);
}

static void text_lines(FILE *f, const struct cacheray *c, bool shared)
{
	struct cacheray_line l[BATCH_CACHERAY_ROWS];
	size_t n = cacheray_top_lines(c, shared, l, BATCH_CACHERAY_ROWS);

	fprintf(f, "\n%s\n  %-18s %10s %10s %10s %-13s",
		shared ? "False-sharing suspects" : "Hot lines", "LINE",
		"ACCESSES", "READS", "WRITES", "LAYOUT");
	if (shared)
		fprintf(f, " %-9s", "BYTES");
	fputs("  THREADS  TYPES\n", f);
	for (size_t i = 0; i < n; i++)
		text_line(f, &l[i], shared);
	if (!n)
		fputs(shared ? "  (none: no line was written by one thread and "
			       "touched by another)\n"
			     : "  (no accesses)\n",
		      f);
}

void batch_cacheray_print_text(FILE *f, const struct cacheray *c,
			       const char *source)
{
	struct cacheray_totals t;

	cacheray_totals(c, &t);
	text_header(f, c, source, &t);
	text_totals(f, &t);
	text_types(f, c);
	text_threads(f, c);
	text_lines(f, c, false);
	text_lines(f, c, true);
}

/* ---- JSON ---- */

static void json_thread_id(struct json_writer *w,
			   const struct cacheray_thread *t)
{
	json_writer_key(w, "id");
	if (t->other)
		json_writer_null(w);
	else
		json_writer_uint(w, t->id);
}

static void json_types(struct json_writer *w, const struct cacheray *c)
{
	size_t n;
	const void **v = sorted(c, false, &n);

	json_writer_key(w, "types");
	json_writer_array_begin(w);
	for (size_t i = 0; v && i < n; i++) {
		const struct cacheray_type *t = v[i];

		json_writer_object_begin(w);
		json_writer_key(w, "name");
		json_writer_string_len(w, t->name, t->name_len);
		json_writer_uint_field(w, "elemsize", t->elemsize);
		json_writer_bool_field(w, "special", t->special);
		json_writer_uint_field(w, "regions", t->regions);
		json_writer_uint_field(w, "accesses", type_accesses(t));
		json_writer_uint_field(w, "reads", t->n[0]);
		json_writer_uint_field(w, "writes", t->n[1]);
		json_writer_key(w, "members");
		if (!t->members) {
			json_writer_null(w);
			json_writer_object_end(w);
			continue;
		}
		json_writer_array_begin(w);
		for (uint32_t o = 0; o < t->elemsize; o++) {
			const struct cacheray_member *m = &t->members[o];

			if (!m->n[0] && !m->n[1])
				continue;
			json_writer_object_begin(w);
			json_writer_uint_field(w, "offset", o);
			json_writer_uint_field(w, "reads", m->n[0]);
			json_writer_uint_field(w, "writes", m->n[1]);
			json_writer_object_end(w);
		}
		json_writer_array_end(w);
		json_writer_object_end(w);
	}
	json_writer_array_end(w);
	free(v);
}

static void json_threads(struct json_writer *w, const struct cacheray *c)
{
	size_t n;
	const void **v = sorted(c, true, &n);

	json_writer_key(w, "threads");
	json_writer_array_begin(w);
	for (size_t i = 0; v && i < n; i++) {
		const struct cacheray_thread *t = v[i];

		json_writer_object_begin(w);
		json_thread_id(w, t);
		json_writer_bool_field(w, "other", t->other);
		json_writer_uint_field(w, "accesses", t->n[0] + t->n[1]);
		json_writer_uint_field(w, "reads", t->n[0]);
		json_writer_uint_field(w, "writes", t->n[1]);
		json_writer_object_end(w);
	}
	json_writer_array_end(w);
	free(v);
}

/* An address or a byte mask: a string, so that no reader rounds it. */
static void json_hex_field(struct json_writer *w, const char *key, uint64_t v)
{
	json_writer_key(w, key);
	json_writer_hex(w, "0x", v, 16);
}

static void json_line(struct json_writer *w, const struct cacheray_line *l)
{
	json_writer_object_begin(w);
	json_hex_field(w, "addr", l->addr);
	json_writer_uint_field(w, "accesses", l->reads + l->writes);
	json_writer_uint_field(w, "reads", l->reads);
	json_writer_uint_field(w, "writes", l->writes);
	json_writer_string_field(w, "layout", layout_name[l->layout]);
	if (l->nthreads < 2 || l->more_threads)
		json_writer_null_field(w, "bytes_disjoint");
	else
		json_writer_bool_field(w, "bytes_disjoint", l->disjoint);
	json_writer_key(w, "threads");
	json_writer_array_begin(w);
	for (unsigned s = 0; s < l->nthreads; s++) {
		json_writer_object_begin(w);
		json_thread_id(w, l->thread[s].t);
		json_writer_bool_field(w, "wrote", l->thread[s].wrote);
		json_hex_field(w, "bytes", l->thread[s].bytes);
		json_writer_object_end(w);
	}
	json_writer_array_end(w);
	json_writer_bool_field(w, "more_threads", l->more_threads);
	json_writer_bool_field(w, "more_threads_wrote", l->more_threads_wrote);
	json_writer_key(w, "types");
	json_writer_array_begin(w);
	for (unsigned s = 0; s < l->ntypes; s++) {
		json_writer_object_begin(w);
		json_writer_key(w, "name");
		json_writer_string_len(w, l->type[s]->name,
				       l->type[s]->name_len);
		json_writer_uint_field(w, "elemsize", l->type[s]->elemsize);
		json_writer_object_end(w);
	}
	json_writer_array_end(w);
	json_writer_bool_field(w, "more_types", l->more_types);
	json_writer_object_end(w);
}

static void json_lines(struct json_writer *w, const struct cacheray *c,
		       bool shared)
{
	struct cacheray_line l[BATCH_CACHERAY_ROWS];
	size_t n = cacheray_top_lines(c, shared, l, BATCH_CACHERAY_ROWS);

	json_writer_key(w, shared ? "false_sharing" : "hot_lines");
	json_writer_array_begin(w);
	for (size_t i = 0; i < n; i++)
		json_line(w, &l[i]);
	json_writer_array_end(w);
}

void batch_cacheray_print_json(FILE *f, const struct cacheray *c,
			       const char *source)
{
	struct cacheray_totals t;
	uint64_t off;
	const char *err = cacheray_error(c, &off);
	const char *note = threads_note(c);
	struct json_writer w;

	cacheray_totals(c, &t);
	json_writer_init(&w, f);
	json_writer_object_begin(&w);
	json_writer_string_field(&w, "source", source);
	json_writer_uint_field(&w, "bytes", t.bytes_read);
	json_writer_uint_field(&w, "records", t.records);
	json_writer_key(&w, "error");
	if (err) {
		json_writer_object_begin(&w);
		json_writer_uint_field(&w, "offset", off);
		json_writer_string_field(&w, "message", err);
		json_writer_object_end(&w);
	} else {
		json_writer_null(&w);
	}
	json_writer_key(&w, "truncated");
	if (cacheray_pending(c) && !err) {
		json_writer_object_begin(&w);
		json_writer_uint_field(&w, "offset", t.bytes_read);
		json_writer_uint_field(&w, "bytes", cacheray_pending(c));
		json_writer_object_end(&w);
	} else {
		json_writer_null(&w);
	}
	json_writer_key(&w, "threads_note");
	if (note)
		json_writer_string(&w, note);
	else
		json_writer_null(&w);
	json_writer_key(&w, "totals");
	json_writer_object_begin(&w);
	json_writer_uint_field(&w, "accesses", t.accesses);
	json_writer_uint_field(&w, "reads", t.reads);
	json_writer_uint_field(&w, "writes", t.writes);
	json_writer_uint_field(&w, "atomics", t.atomics);
	json_writer_uint_field(&w, "atomic_rmw", t.atomic_rmw);
	json_writer_uint_field(&w, "unaligned", t.unaligned);
	json_writer_uint_field(&w, "access_bytes", t.access_bytes);
	json_writer_uint_field(&w, "cross_line", t.cross_line);
	json_writer_uint_field(&w, "untyped", t.untyped);
	json_writer_object_end(&w);
	json_writer_key(&w, "rtta");
	json_writer_object_begin(&w);
	json_writer_uint_field(&w, "adds", t.rtta_adds);
	json_writer_uint_field(&w, "removes", t.rtta_removes);
	json_writer_uint_field(&w, "live", t.rtta_live);
	json_writer_uint_field(&w, "empty", t.rtta_empty);
	json_writer_uint_field(&w, "overlaps", t.rtta_overlaps);
	json_writer_uint_field(&w, "remove_unknown", t.rtta_remove_unknown);
	json_writer_uint_field(&w, "refused", t.rtta_full);
	json_writer_object_end(&w);
	json_writer_key(&w, "lines");
	json_writer_object_begin(&w);
	json_writer_uint_field(&w, "distinct", t.lines);
	json_writer_uint_field(&w, "max", t.lines_max);
	json_writer_uint_field(&w, "dropped_accesses",
			       t.lines_dropped_accesses);
	json_writer_object_end(&w);
	json_types(&w, c);
	json_threads(&w, c);
	json_lines(&w, c, false);
	json_lines(&w, c, true);
	json_writer_object_end(&w);
	json_writer_raw(&w, "\n");
	json_writer_finish(&w);
}

/* ---- reading ---- */

int batch_cacheray_run(const char *path, bool json, FILE *out, char *err,
		       size_t errlen)
{
	bool stdin_ = strcmp(path, "-") == 0;
	int fd = stdin_ ? STDIN_FILENO
			: open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	struct cacheray *c = NULL;
	unsigned char *buf = NULL;
	struct stat st;
	int rc = 1;

	if (fd < 0) {
		snprintf(err, errlen, "cannot open Cacheray trace %s: %s", path,
			 strerror(errno));
		return 1;
	}
	/* What the memory view refuses, the report refuses the same way. */
	if (fstat(fd, &st) < 0) {
		snprintf(err, errlen, "cannot stat Cacheray trace %s: %s", path,
			 strerror(errno));
		goto out;
	}
	if (cray_source_refuse(path, fd, &st, err, errlen)) {
		rc = 2;
		goto out;
	}
	c = cacheray_create(NULL);
	buf = malloc(BATCH_CACHERAY_CHUNK);
	if (!c || !buf) {
		snprintf(err, errlen, "out of memory reading %s", path);
		goto out;
	}
	for (;;) {
		ssize_t n = read(fd, buf, BATCH_CACHERAY_CHUNK);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			snprintf(err, errlen, "cannot read %s: %s", path,
				 strerror(errno));
			goto out;
		}
		if (n == 0 || !cacheray_feed(c, buf, (size_t)n))
			break;
	}
	if (json)
		batch_cacheray_print_json(out, c, stdin_ ? "(stdin)" : path);
	else
		batch_cacheray_print_text(out, c, stdin_ ? "(stdin)" : path);
	if (cacheray_error(c, NULL))
		snprintf(err, errlen,
			 "%s: %s (the report covers the records "
			 "before it; the format has no sync marker to resume "
			 "at)",
			 path, cacheray_error(c, NULL));
	else
		rc = 0;
out:
	free(buf);
	cacheray_destroy(c);
	if (!stdin_)
		close(fd);
	return rc;
}
