/*
 * pptlist: read-only survey of a process's ppt buffers.
 *
 * For each buffer pptfind found: _stat (a pid, and whether it still runs),
 * _hmem, and _json parsed by pptdesc, summarised as the frame types and
 * their columns.  _json is read as the agent reads it (pptsym_json).
 * Nothing is written.
 */
#define _GNU_SOURCE
#include "engine/ppt/pptlist.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/ppt/pptdesc.h"
#include "engine/target/procmem.h"
#include "engine/ppt/pptsym.h"

static void pptlist_types(struct pptlist_entry *e, const struct ppt_desc *d)
{
	size_t off = 0;

	e->types[0] = '\0';
	for (uint32_t t = 0; t < d->ntypes && off < sizeof(e->types); t++) {
		const struct ppt_layout *l = &d->types[t];

		off += (size_t)snprintf(e->types + off, sizeof(e->types) - off,
					"%s%s(", t ? " " : "", l->name);
		for (uint32_t c = 0; c < l->ncols && off < sizeof(e->types);
		     c++)
			off += (size_t)snprintf(e->types + off,
						sizeof(e->types) - off, "%s%s",
						c ? " " : "", l->cols[c].name);
		if (off < sizeof(e->types))
			off += (size_t)snprintf(e->types + off,
						sizeof(e->types) - off, ")");
	}
}

static void pptlist_describe(struct procmem *pm, struct pptlist_entry *e)
{
	char *text = pptsym_json(pm, &e->sym, e->error, sizeof(e->error));
	struct ppt_desc d;
	enum pptdesc_status st;

	if (!text)
		return;
	memset(&d, 0, sizeof(d));
	st = pptdesc_parse(text, strlen(text), &d, e->error, sizeof(e->error));
	free(text);
	snprintf(e->abi, sizeof(e->abi), "%s", d.abi);
	if (st != PPTDESC_OK)
		return;
	e->described = true;
	e->frame_size = d.frame_size;
	e->ntypes = d.ntypes;
	e->resize = d.resize;
	e->rendezvous = d.rendezvous;
	pptlist_types(e, &d);
	pptdesc_finish(&d);
}

bool pptlist_collect(pid_t pid, struct pptlist *out, char *err, size_t errlen)
{
	struct pptfind_result found;
	struct procmem pm;
	char why[128];

	memset(out, 0, sizeof(*out));
	if (!procmem_open(&pm, pid, err, errlen))
		return false;
	if (!pptfind_scan(pid, &found, err, errlen)) {
		procmem_finish(&pm);
		return false;
	}
	snprintf(out->warning, sizeof(out->warning), "%s", found.warning);
	out->e = calloc(found.n ? found.n : 1, sizeof(*out->e));
	if (!out->e) {
		snprintf(err, errlen, "out of memory");
		pptfind_result_finish(&found);
		procmem_finish(&pm);
		return false;
	}
	for (size_t i = 0; i < found.n; i++) {
		struct pptlist_entry *e = &out->e[i];

		e->sym = found.buf[i];
		if (procmem_read(&pm, e->sym.stat_addr, &e->agent_pid,
				 sizeof(e->agent_pid), why, sizeof(why)) &&
		    e->agent_pid > 0)
			e->agent_alive = e->agent_pid != (int32_t)getpid() &&
					 procmem_alive(e->agent_pid);
		procmem_read(&pm, e->sym.hmem_addr, &e->hmem, sizeof(e->hmem),
			     why, sizeof(why));
		pptlist_describe(&pm, e);
	}
	out->n = found.n;
	pptfind_result_finish(&found);
	procmem_finish(&pm);
	return true;
}

void pptlist_finish(struct pptlist *l)
{
	free(l->e);
	memset(l, 0, sizeof(*l));
}
