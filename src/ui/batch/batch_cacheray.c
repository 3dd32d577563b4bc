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
 * does (common/jsonstr.h): valid UTF-8 as it is, other bytes as U+FFFD,
 * control characters escaped, so the output is always valid UTF-8 JSON.
 */
#define _GNU_SOURCE /* O_CLOEXEC */
#include "ui/batch/batch_cacheray.h"

#include "common/jsonstr.h"
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

static void json_thread_id(FILE *f, const struct cacheray_thread *t)
{
	if (t->other)
		fputs("null", f);
	else
		fprintf(f, "%" PRIu64, t->id);
}

static void json_types(FILE *f, const struct cacheray *c)
{
	size_t n;
	const void **v = sorted(c, false, &n);

	fputs(",\"types\":[", f);
	for (size_t i = 0; v && i < n; i++) {
		const struct cacheray_type *t = v[i];
		bool first = true;

		fputs(i ? ",{\"name\":" : "{\"name\":", f);
		jsonstr_write(f, t->name, t->name_len);
		fprintf(f,
			",\"elemsize\":%" PRIu32 ",\"special\":%s"
			",\"regions\":%" PRIu64 ",\"accesses\":%" PRIu64
			",\"reads\":%" PRIu64 ",\"writes\":%" PRIu64
			",\"members\":",
			t->elemsize, t->special ? "true" : "false", t->regions,
			type_accesses(t), t->n[0], t->n[1]);
		if (!t->members) {
			fputs("null}", f);
			continue;
		}
		fputc('[', f);
		for (uint32_t o = 0; o < t->elemsize; o++) {
			const struct cacheray_member *m = &t->members[o];

			if (!m->n[0] && !m->n[1])
				continue;
			fprintf(f,
				"%s{\"offset\":%" PRIu32 ",\"reads\":%" PRIu64
				",\"writes\":%" PRIu64 "}",
				first ? "" : ",", o, m->n[0], m->n[1]);
			first = false;
		}
		fputs("]}", f);
	}
	fputc(']', f);
	free(v);
}

static void json_threads(FILE *f, const struct cacheray *c)
{
	size_t n;
	const void **v = sorted(c, true, &n);

	fputs(",\"threads\":[", f);
	for (size_t i = 0; v && i < n; i++) {
		const struct cacheray_thread *t = v[i];

		fputs(i ? ",{\"id\":" : "{\"id\":", f);
		json_thread_id(f, t);
		fprintf(f,
			",\"other\":%s,\"accesses\":%" PRIu64
			",\"reads\":%" PRIu64 ",\"writes\":%" PRIu64 "}",
			t->other ? "true" : "false", t->n[0] + t->n[1], t->n[0],
			t->n[1]);
	}
	fputc(']', f);
	free(v);
}

static void json_line(FILE *f, const struct cacheray_line *l)
{
	fprintf(f,
		"{\"addr\":\"0x%016" PRIx64 "\",\"accesses\":%" PRIu64
		",\"reads\":%" PRIu64 ",\"writes\":%" PRIu64
		",\"layout\":\"%s\",\"bytes_disjoint\":%s,\"threads\":[",
		l->addr, l->reads + l->writes, l->reads, l->writes,
		layout_name[l->layout],
		l->nthreads < 2 || l->more_threads ? "null"
		: l->disjoint			   ? "true"
						   : "false");
	for (unsigned s = 0; s < l->nthreads; s++) {
		fputs(s ? ",{\"id\":" : "{\"id\":", f);
		json_thread_id(f, l->thread[s].t);
		fprintf(f, ",\"wrote\":%s,\"bytes\":\"0x%016" PRIx64 "\"}",
			l->thread[s].wrote ? "true" : "false",
			l->thread[s].bytes);
	}
	fprintf(f,
		"],\"more_threads\":%s,\"more_threads_wrote\":%s,\"types\":[",
		l->more_threads ? "true" : "false",
		l->more_threads_wrote ? "true" : "false");
	for (unsigned s = 0; s < l->ntypes; s++) {
		fputs(s ? ",{\"name\":" : "{\"name\":", f);
		jsonstr_write(f, l->type[s]->name, l->type[s]->name_len);
		fprintf(f, ",\"elemsize\":%" PRIu32 "}", l->type[s]->elemsize);
	}
	fprintf(f, "],\"more_types\":%s}", l->more_types ? "true" : "false");
}

static void json_lines(FILE *f, const struct cacheray *c, bool shared)
{
	struct cacheray_line l[BATCH_CACHERAY_ROWS];
	size_t n = cacheray_top_lines(c, shared, l, BATCH_CACHERAY_ROWS);

	fputs(shared ? ",\"false_sharing\":[" : ",\"hot_lines\":[", f);
	for (size_t i = 0; i < n; i++) {
		if (i)
			fputc(',', f);
		json_line(f, &l[i]);
	}
	fputc(']', f);
}

void batch_cacheray_print_json(FILE *f, const struct cacheray *c,
			       const char *source)
{
	struct cacheray_totals t;
	uint64_t off;
	const char *err = cacheray_error(c, &off);
	const char *note = threads_note(c);

	cacheray_totals(c, &t);
	fputs("{\"source\":", f);
	jsonstr_write(f, source, strlen(source));
	fprintf(f, ",\"bytes\":%" PRIu64 ",\"records\":%" PRIu64 ",\"error\":",
		t.bytes_read, t.records);
	if (err) {
		fprintf(f, "{\"offset\":%" PRIu64 ",\"message\":", off);
		jsonstr_write(f, err, strlen(err));
		fputc('}', f);
	} else {
		fputs("null", f);
	}
	if (cacheray_pending(c) && !err)
		fprintf(f,
			",\"truncated\":{\"offset\":%" PRIu64 ",\"bytes\":%zu}",
			t.bytes_read, cacheray_pending(c));
	else
		fputs(",\"truncated\":null", f);
	fputs(",\"threads_note\":", f);
	if (note)
		jsonstr_write(f, note, strlen(note));
	else
		fputs("null", f);
	fprintf(f,
		",\"totals\":{\"accesses\":%" PRIu64 ",\"reads\":%" PRIu64
		",\"writes\":%" PRIu64 ",\"atomics\":%" PRIu64
		",\"atomic_rmw\":%" PRIu64 ",\"unaligned\":%" PRIu64
		",\"access_bytes\":%" PRIu64 ",\"cross_line\":%" PRIu64
		",\"untyped\":%" PRIu64 "}",
		t.accesses, t.reads, t.writes, t.atomics, t.atomic_rmw,
		t.unaligned, t.access_bytes, t.cross_line, t.untyped);
	fprintf(f,
		",\"rtta\":{\"adds\":%" PRIu64 ",\"removes\":%" PRIu64
		",\"live\":%" PRIu64 ",\"empty\":%" PRIu64
		",\"overlaps\":%" PRIu64 ",\"remove_unknown\":%" PRIu64
		",\"refused\":%" PRIu64 "}",
		t.rtta_adds, t.rtta_removes, t.rtta_live, t.rtta_empty,
		t.rtta_overlaps, t.rtta_remove_unknown, t.rtta_full);
	fprintf(f,
		",\"lines\":{\"distinct\":%" PRIu64 ",\"max\":%" PRIu64
		",\"dropped_accesses\":%" PRIu64 "}",
		t.lines, t.lines_max, t.lines_dropped_accesses);
	json_types(f, c);
	json_threads(f, c);
	json_lines(f, c, false);
	json_lines(f, c, true);
	fputs("}\n", f);
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
