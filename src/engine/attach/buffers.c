/*
 * buffers: what callers read of ppt buffers and frames without an engine's
 * state -- a description's frame size, types and columns (the description
 * itself is the agent's: attach_desc), a frame decoded into named cells for
 * people or JSON, a -c list checked, and the buffers a process publishes
 * listed without writing a byte to it (corotop -p PID --list-buffers).
 * Copies into the facade's types (engine/attach/pptview.h).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/attach/attach.h"
#include "engine/ppt/perfctr.h"
#include "engine/ppt/pptdesc.h"
#include "engine/ppt/pptframe.h"
#include "engine/ppt/pptlist.h"

uint32_t attach_frame_size(const struct ppt_desc *d)
{
	return d ? d->frame_size : 0;
}

size_t attach_types(const struct ppt_desc *d)
{
	return d ? d->ntypes : 0;
}

const char *attach_type(const struct ppt_desc *d, size_t t, size_t *ncolumns)
{
	*ncolumns = 0;
	if (!d || t >= d->ntypes)
		return NULL;
	*ncolumns = d->types[t].ncols;
	return d->types[t].name;
}

const char *attach_column(const struct ppt_desc *d, size_t t, size_t c)
{
	if (!d || t >= d->ntypes || c >= d->types[t].ncols)
		return NULL;
	return d->types[t].cols[c].name;
}

size_t attach_cells(const struct ppt_desc *d, const void *frame, bool json,
		    const char **type, struct engine_ppt_cell *out, size_t max)
{
	struct ppt_value v[PPTDESC_MAX_MEMBERS];
	int ty = pptframe_type(d, frame);
	size_t n;

	*type = ty < 0 ? NULL : d->types[ty].name;
	if (ty < 0)
		return 0;
	n = pptframe_decode(d, ty, frame, v,
			    max < PPTDESC_MAX_MEMBERS ? max
						      : PPTDESC_MAX_MEMBERS);
	for (size_t c = 0; c < n; c++) {
		out[c].name = d->types[ty].cols[c].name;
		if (json)
			pptframe_json(&v[c], out[c].text, sizeof(out[c].text));
		else
			pptframe_format(&v[c], out[c].text,
					sizeof(out[c].text));
	}
	return n;
}

bool attach_counters_valid(const char *list, char *why, size_t n)
{
	struct perfctr_set ctr;

	return perfctr_parse(list, &ctr, why, n);
}

bool attach_list_buffers(pid_t pid, struct engine_buffer_list *out, char *err,
			 size_t errlen)
{
	struct pptlist l;

	memset(out, 0, sizeof(*out));
	if (!pptlist_collect(pid, &l, err, errlen))
		return false;
	out->e = l.n ? calloc(l.n, sizeof(*out->e)) : NULL;
	if (l.n && !out->e) {
		snprintf(err, errlen, "out of memory listing %zu buffers", l.n);
		pptlist_finish(&l);
		return false;
	}
	out->n = l.n;
	snprintf(out->warning, sizeof(out->warning), "%s", l.warning);
	for (size_t i = 0; i < l.n; i++) {
		const struct pptlist_entry *s = &l.e[i];
		struct engine_listed_buffer *d = &out->e[i];

		snprintf(d->name, sizeof(d->name), "%s", s->sym.name);
		d->spec_spelling = s->sym.spelling == PPTFIND_SPEC;
		snprintf(d->object, sizeof(d->object), "%s", s->sym.object);
		d->hmem_addr = s->sym.hmem_addr;
		d->stat_addr = s->sym.stat_addr;
		d->json_addr = s->sym.json_addr;
		d->agent_pid = s->agent_pid;
		d->agent_alive = s->agent_alive;
		d->hmem = s->hmem;
		d->described = s->described;
		snprintf(d->abi, sizeof(d->abi), "%s", s->abi);
		d->frame_size = s->frame_size;
		d->resize = s->resize;
		d->rendezvous = s->rendezvous;
		snprintf(d->types, sizeof(d->types), "%s", s->types);
		snprintf(d->error, sizeof(d->error), "%s", s->error);
	}
	pptlist_finish(&l);
	return true;
}

void attach_buffer_list_finish(struct engine_buffer_list *l)
{
	free(l->e);
	l->e = NULL;
	l->n = 0;
}
