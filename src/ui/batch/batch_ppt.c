/*
 * batch_ppt: attach mode's ppt buffers in batch output.
 *
 * JSON: a "ppt" object -- the process, our agent pid, the counters -- with
 * one entry per buffer: its state, layout, books (delivered, lost, torn),
 * rate, the columns of each frame type, and the frames delivered since the
 * previous snapshot, each with its values keyed by column name (numbers;
 * times and durations in ns; null for a NaN).  docs/JSON.md has the schema.
 *
 * Text: a summary line per buffer, then its newest frames, one per line:
 * "SEQ TYPE name=value ...", values formatted for people.
 *
 * And the list of a process's buffers (--list-buffers), as JSON or text.
 */
#include <inttypes.h>
#include <string.h>

#include "common/json_writer.h"
#include "ui/batch/batch.h"

/* Members printed per frame: every member a description may hold
 * (pptdesc.h allows 256 per type, padding included). */
#define BATCH_PPT_CELLS 256

static const char *batch_ppt_state(enum engine_ppt_state s)
{
	switch (s) {
	case ENGINE_PPT_UNHOOKING:
		return "unhooking";
	case ENGINE_PPT_WAITING:
		return "waiting";
	case ENGINE_PPT_ATTACHED:
		return "attached";
	case ENGINE_PPT_GONE:
		return "gone";
	case ENGINE_PPT_LOST:
		return "lost";
	default:
		return "detached";
	}
}

static void batch_json_columns(struct json_writer *w, const struct ppt_desc *d)
{
	json_writer_key(w, "types");
	json_writer_array_begin(w);
	for (size_t t = 0; t < engine_ppt_types(d); t++) {
		size_t ncols;
		const char *name = engine_ppt_type(d, t, &ncols);

		json_writer_object_begin(w);
		json_writer_string_field(w, "name", name);
		json_writer_key(w, "columns");
		json_writer_array_begin(w);
		for (size_t c = 0; c < ncols; c++)
			json_writer_string(w, engine_ppt_column(d, t, c));
		json_writer_array_end(w);
		json_writer_object_end(w);
	}
	json_writer_array_end(w);
}

static void batch_json_frame(struct json_writer *w, const struct ppt_desc *d,
			     const unsigned char *bytes,
			     const struct engine_ppt_frame *m)
{
	struct engine_ppt_cell cell[BATCH_PPT_CELLS];
	const char *type;
	size_t n =
		engine_ppt_cells(d, bytes, true, &type, cell, BATCH_PPT_CELLS);

	json_writer_object_begin(w);
	json_writer_uint_field(w, "pos", m->pos);
	json_writer_uint_field(w, "seq", m->index);
	json_writer_uint_field(w, "ts", m->ts);
	json_writer_key(w, "type");
	if (type)
		json_writer_string(w, type);
	else
		json_writer_null(w);
	json_writer_key(w, "values");
	json_writer_object_begin(w);
	for (size_t c = 0; type && c < n; c++) {
		/* The cell's text is JSON already (engine_ppt_cells). */
		json_writer_key(w, cell[c].name);
		json_writer_valuef(w, "%s", cell[c].text);
	}
	json_writer_object_end(w);
	json_writer_object_end(w);
}

static void batch_json_buffer(struct json_writer *w,
			      const struct batch_ppt_buffer *p)
{
	const struct engine_ppt_buffer *b = &p->b;

	json_writer_object_begin(w);
	json_writer_string_field(w, "name", b->name);
	json_writer_string_field(w, "object", b->object);
	json_writer_string_field(w, "state", batch_ppt_state(b->state));
	json_writer_string_field(w, "layout",
				 b->dynamic ? "dynamic" : "static");
	json_writer_bool_field(w, "rendezvous", b->rendezvous);
	json_writer_uint_field(w, "frame_size", b->frame_size);
	json_writer_uint_field(w, "nframes", b->nframes);
	json_writer_uint_field(w, "delivered", b->delivered);
	json_writer_uint_field(w, "lost", b->lost);
	json_writer_uint_field(w, "torn", b->torn);
	json_writer_uint_field(w, "resizes", b->resizes);
	json_writer_key(w, "frames_per_sec");
	json_writer_fixed(w, b->fps, 1);
	json_writer_bool_field(w, "counters_setup", b->counters_setup);
	json_writer_key(w, "attach_latency_ns");
	if (b->attach_latency_ns)
		json_writer_uint(w, b->attach_latency_ns);
	else
		json_writer_null(w);
	json_writer_string_field(w, "warning", b->warning);
	batch_json_columns(w, p->desc);
	json_writer_uint_field(w, "frames_omitted", p->omitted);
	json_writer_key(w, "frames");
	json_writer_array_begin(w);
	for (size_t i = 0; p->desc && i < p->n; i++)
		batch_json_frame(w, p->desc,
				 p->bytes + i * engine_ppt_frame_size(p->desc),
				 &p->meta[i]);
	json_writer_array_end(w);
	json_writer_object_end(w);
}

void batch_json_ppt(struct json_writer *w, const struct batch_ppt *ppt)
{
	const struct engine_ppt_info *in;

	json_writer_key(w, "ppt");
	if (!ppt || !ppt->info.enabled) {
		json_writer_null(w);
		return;
	}
	in = &ppt->info;
	json_writer_object_begin(w);
	json_writer_int_field(w, "pid", (int)in->pid);
	json_writer_int_field(w, "agent_pid", (int)in->agent_pid);
	json_writer_bool_field(w, "target_gone", in->target_gone);
	json_writer_bool_field(w, "traced", in->traced);
	json_writer_int_field(w, "probe_errno", in->probe_errno);
	json_writer_key(w, "counters");
	json_writer_array_begin(w);
	for (uint32_t i = 0; i < in->ncounters; i++)
		json_writer_string(w, in->counters[i]);
	json_writer_array_end(w);
	json_writer_string_field(w, "warning", in->warning);
	json_writer_key(w, "buffers");
	json_writer_array_begin(w);
	for (size_t i = 0; i < ppt->n; i++)
		batch_json_buffer(w, &ppt->buf[i]);
	json_writer_array_end(w);
	json_writer_object_end(w);
}

static void batch_text_frame(FILE *f, const struct ppt_desc *d,
			     const unsigned char *bytes,
			     const struct engine_ppt_frame *m)
{
	struct engine_ppt_cell cell[BATCH_PPT_CELLS];
	const char *type;
	size_t n =
		engine_ppt_cells(d, bytes, false, &type, cell, BATCH_PPT_CELLS);

	fprintf(f, "  %10u %-12s", m->index, type ? type : "?");
	if (!type) {
		fputs(" (type discriminator out of range)\n", f);
		return;
	}
	for (size_t c = 0; c < n; c++)
		fprintf(f, " %s=%s", cell[c].name, cell[c].text);
	fputc('\n', f);
}

void batch_print_ppt_text(FILE *f, const struct batch_ppt *ppt,
			  unsigned max_rows)
{
	const struct engine_ppt_info *in;

	if (!ppt || !ppt->info.enabled)
		return;
	in = &ppt->info;
	fprintf(f, "\nppt: process %d%s, agent pid %d, %zu buffer%s", in->pid,
		in->target_gone ? " (exited)" : "", (int)in->agent_pid, ppt->n,
		ppt->n == 1 ? "" : "s");
	for (uint32_t i = 0; i < in->ncounters; i++)
		fprintf(f, "%s%s", i ? "," : ", counters ", in->counters[i]);
	fputc('\n', f);
	if (in->warning[0])
		fprintf(f, "ppt warning: %s\n", in->warning);
	if (in->probe_said && !in->traced)
		fprintf(f,
			"ppt: the probe could not map corotop's region: %s\n",
			in->probe_errno ? strerror(in->probe_errno)
					: "no rendezvous");
	for (size_t i = 0; i < ppt->n; i++) {
		const struct batch_ppt_buffer *p = &ppt->buf[i];
		const struct engine_ppt_buffer *b = &p->b;
		size_t shown = 0;

		fprintf(f,
			"buffer %s: %s, %s, %" PRIu64 " x %u bytes, %.1f "
			"frames/s, %" PRIu64 " delivered, %" PRIu64
			" lost, %" PRIu64 " torn\n",
			b->name, batch_ppt_state(b->state),
			b->dynamic ? "dynamic" : "static", b->nframes,
			b->frame_size, b->fps, b->delivered, b->lost, b->torn);
		if (b->warning[0])
			fprintf(f, "  warning: %s\n", b->warning);
		for (size_t k = p->n; p->desc && k-- > 0 && shown < max_rows;
		     shown++)
			batch_text_frame(
				f, p->desc,
				p->bytes + k * engine_ppt_frame_size(p->desc),
				&p->meta[k]);
	}
}

/* An address: a string, so that no reader rounds it. */
static void batch_json_addr(struct json_writer *w, const char *key,
			    uint64_t addr)
{
	json_writer_key(w, key);
	json_writer_hex(w, "0x", addr, 0);
}

/* corotop -p PID --list-buffers -f json: one object, the buffers found. */
void batch_print_buffers_json(FILE *f, int pid,
			      const struct engine_buffer_list *l)
{
	struct json_writer jw, *w = &jw;

	json_writer_init(w, f);
	json_writer_object_begin(w);
	json_writer_int_field(w, "pid", pid);
	json_writer_key(w, "buffers");
	json_writer_array_begin(w);
	for (size_t i = 0; i < l->n; i++) {
		const struct engine_listed_buffer *e = &l->e[i];

		json_writer_object_begin(w);
		json_writer_string_field(w, "name", e->name);
		json_writer_string_field(
			w, "spelling", e->spec_spelling ? "spec" : "generator");
		json_writer_string_field(w, "object", e->object);
		batch_json_addr(w, "hmem_addr", e->hmem_addr);
		batch_json_addr(w, "stat_addr", e->stat_addr);
		batch_json_addr(w, "json_addr", e->json_addr);
		json_writer_int_field(w, "agent_pid", (int)e->agent_pid);
		json_writer_bool_field(w, "agent_alive", e->agent_alive);
		json_writer_int_field(w, "hmem", (int)e->hmem);
		json_writer_string_field(w, "abi", e->abi);
		json_writer_uint_field(w, "frame_size", e->frame_size);
		json_writer_string_field(w, "types", e->types);
		json_writer_string_field(w, "error", e->error);
		json_writer_object_end(w);
	}
	json_writer_array_end(w);
	json_writer_string_field(w, "warning", l->warning);
	json_writer_object_end(w);
	json_writer_raw(w, "\n");
	json_writer_finish(w);
}

/* ... and as text, a few lines per buffer. */
void batch_print_buffers_text(FILE *f, int pid,
			      const struct engine_buffer_list *l)
{
	fprintf(f, "process %d: %zu ppt buffer%s\n", pid, l->n,
		l->n == 1 ? "" : "s");
	for (size_t i = 0; i < l->n; i++) {
		const struct engine_listed_buffer *e = &l->e[i];

		fprintf(f, "%-16s %s  %s\n", e->name,
			e->spec_spelling ? "__ppt_NAME_*" : "_ppt_*_NAME",
			e->object);
		if (e->agent_pid)
			fprintf(f, "  in use by agent pid %d (%s)\n",
				(int)e->agent_pid,
				e->agent_alive ? "running" : "not running");
		else
			fprintf(f, "  free\n");
		if (e->described)
			fprintf(f,
				"  ABI %s, %u-byte frames, %s layout%s: "
				"%s\n",
				e->abi, e->frame_size,
				e->resize ? "dynamic" : "static",
				e->rendezvous ? ", corotop probe" : "",
				e->types);
		else
			fprintf(f, "  not usable: %s\n", e->error);
	}
	if (l->warning[0])
		fprintf(f, "skipped: %s\n", l->warning);
}

int batch_list_buffers(int pid, bool json, FILE *out)
{
	struct engine_buffer_list l;
	char err[512];

	if (!engine_list_buffers(pid, &l, err, sizeof(err))) {
		fprintf(stderr, "corotop: %s\n", err);
		return 1;
	}
	if (json)
		batch_print_buffers_json(out, pid, &l);
	else
		batch_print_buffers_text(out, pid, &l);
	engine_buffer_list_finish(&l);
	return 0;
}
