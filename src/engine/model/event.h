/*
 * event: one transition of a coroutine as the harvest delivers it from a
 * cTP station -- struct harvest_event, named after where it comes from --
 * and as the model, the recorder and the JSONL log take it.  It lives here,
 * beside the model that consumes it, so a consumer includes the event
 * without the harvester (engine/ctp/harvest.h), which makes them.  Data
 * only.
 */
#ifndef COROTOP_EVENT_H
#define COROTOP_EVENT_H

#include <stdint.h>

#include "corotop/ctp.h"

struct harvest_event {
	uint64_t n; /* event number on the station */
	uint64_t ts;
	uint64_t tid;
	uint64_t addr;
	uint64_t seq;	/* raw seq value as written */
	uint64_t check; /* first 8 reserved bytes (writer's checksum, if any) */
	uint64_t trace; /* CallTrace id of the parked stack (suspend), or 0 */
	uint64_t probe_id;
	uint32_t station;
	uint32_t slot; /* ring slot it was read from */
	uint8_t is_active;
	/* CTP_EPF_* from the event's flags byte; always 0 from a station no
	 * corotop probe opened (its reserved bytes are another writer's). */
	uint8_t flags;
	/* A census event (CTP_STX_CENSUS): not a transition seen live but
	 * the last one the coroutine made before a late attach, at its real
	 * time; `where` says where its parked stack can be walked from. */
	uint8_t census;
	struct ctp_census where;
};

#endif
