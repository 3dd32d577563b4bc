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

#include "common/jsonstr.h"
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

static void batch_json_columns(FILE *f, const struct ppt_desc *d)
{
	fputs(",\"types\":[", f);
	for (size_t t = 0; t < engine_ppt_types(d); t++) {
		size_t ncols;
		const char *name = engine_ppt_type(d, t, &ncols);

		fputs(t ? ",{\"name\":" : "{\"name\":", f);
		jsonstr_write_cstr(f, name);
		fputs(",\"columns\":[", f);
		for (size_t c = 0; c < ncols; c++) {
			if (c)
				fputc(',', f);
			jsonstr_write_cstr(f, engine_ppt_column(d, t, c));
		}
		fputs("]}", f);
	}
	fputc(']', f);
}

static void batch_json_frame(FILE *f, const struct ppt_desc *d,
			     const unsigned char *bytes,
			     const struct engine_ppt_frame *m)
{
	struct engine_ppt_cell cell[BATCH_PPT_CELLS];
	const char *type;
	size_t n =
		engine_ppt_cells(d, bytes, true, &type, cell, BATCH_PPT_CELLS);

	fprintf(f, "{\"pos\":%" PRIu64 ",\"seq\":%u,\"ts\":%" PRIu64 ",",
		m->pos, m->index, m->ts);
	if (!type) {
		fputs("\"type\":null,\"values\":{}}", f);
		return;
	}
	fputs("\"type\":", f);
	jsonstr_write_cstr(f, type);
	fputs(",\"values\":{", f);
	for (size_t c = 0; c < n; c++) {
		if (c)
			fputc(',', f);
		jsonstr_write_cstr(f, cell[c].name);
		fprintf(f, ":%s", cell[c].text);
	}
	fputs("}}", f);
}

static void batch_json_buffer(FILE *f, const struct batch_ppt_buffer *p)
{
	const struct engine_ppt_buffer *b = &p->b;

	fputs("{\"name\":", f);
	jsonstr_write_cstr(f, b->name);
	fputs(",\"object\":", f);
	jsonstr_write_cstr(f, b->object);
	fprintf(f,
		",\"state\":\"%s\",\"layout\":\"%s\",\"rendezvous\":%s,"
		"\"frame_size\":%u,\"nframes\":%" PRIu64
		",\"delivered\":%" PRIu64 ",\"lost\":%" PRIu64
		",\"torn\":%" PRIu64 ",\"resizes\":%" PRIu64
		",\"frames_per_sec\":%.1f,\"counters_setup\":%s,"
		"\"attach_latency_ns\":",
		batch_ppt_state(b->state), b->dynamic ? "dynamic" : "static",
		b->rendezvous ? "true" : "false", b->frame_size, b->nframes,
		b->delivered, b->lost, b->torn, b->resizes, b->fps,
		b->counters_setup ? "true" : "false");
	if (b->attach_latency_ns)
		fprintf(f, "%" PRIu64, b->attach_latency_ns);
	else
		fputs("null", f);
	fputs(",\"warning\":", f);
	jsonstr_write_cstr(f, b->warning);
	batch_json_columns(f, p->desc);
	fprintf(f, ",\"frames_omitted\":%" PRIu64 ",\"frames\":[", p->omitted);
	for (size_t i = 0; p->desc && i < p->n; i++) {
		if (i)
			fputc(',', f);
		batch_json_frame(f, p->desc,
				 p->bytes + i * engine_ppt_frame_size(p->desc),
				 &p->meta[i]);
	}
	fputs("]}", f);
}

void batch_json_ppt(FILE *f, const struct batch_ppt *ppt)
{
	const struct engine_ppt_info *in;

	if (!ppt || !ppt->info.enabled) {
		fputs(",\"ppt\":null", f);
		return;
	}
	in = &ppt->info;
	fprintf(f,
		",\"ppt\":{\"pid\":%d,\"agent_pid\":%d,\"target_gone\":%s,"
		"\"traced\":%s,\"probe_errno\":%d,\"counters\":[",
		(int)in->pid, (int)in->agent_pid,
		in->target_gone ? "true" : "false",
		in->traced ? "true" : "false", in->probe_errno);
	for (uint32_t i = 0; i < in->ncounters; i++) {
		if (i)
			fputc(',', f);
		jsonstr_write_cstr(f, in->counters[i]);
	}
	fputs("],\"warning\":", f);
	jsonstr_write_cstr(f, in->warning);
	fputs(",\"buffers\":[", f);
	for (size_t i = 0; i < ppt->n; i++) {
		if (i)
			fputc(',', f);
		batch_json_buffer(f, &ppt->buf[i]);
	}
	fputs("]}", f);
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

/* corotop -p PID --list-buffers -f json: one object, the buffers found. */
void batch_print_buffers_json(FILE *f, int pid,
			      const struct engine_buffer_list *l)
{
	fprintf(f, "{\"pid\":%d,\"buffers\":[", pid);
	for (size_t i = 0; i < l->n; i++) {
		const struct engine_listed_buffer *e = &l->e[i];

		fprintf(f, "%s{\"name\":", i ? "," : "");
		jsonstr_write_cstr(f, e->name);
		fprintf(f, ",\"spelling\":\"%s\",\"object\":",
			e->spec_spelling ? "spec" : "generator");
		jsonstr_write_cstr(f, e->object);
		fprintf(f,
			",\"hmem_addr\":\"0x%llx\",\"stat_addr\":"
			"\"0x%llx\",\"json_addr\":\"0x%llx\","
			"\"agent_pid\":%d,\"agent_alive\":%s,"
			"\"hmem\":%d,\"abi\":",
			(unsigned long long)e->hmem_addr,
			(unsigned long long)e->stat_addr,
			(unsigned long long)e->json_addr, (int)e->agent_pid,
			e->agent_alive ? "true" : "false", (int)e->hmem);
		jsonstr_write_cstr(f, e->abi);
		fprintf(f, ",\"frame_size\":%u,\"types\":", e->frame_size);
		jsonstr_write_cstr(f, e->types);
		fprintf(f, ",\"error\":");
		jsonstr_write_cstr(f, e->error);
		fprintf(f, "}");
	}
	fprintf(f, "],\"warning\":");
	jsonstr_write_cstr(f, l->warning);
	fprintf(f, "}\n");
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
