/*
 * region: the cTP shared-memory file and the wake socket, as the engine owns
 * them (launch mode) or borrows them (observer mode).  See region.c.
 */
#ifndef COROTOP_REGION_H
#define COROTOP_REGION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "corotop/ctp.h"

struct region {
	struct ctp_header *hdr;
	size_t size;
	uint32_t stations; /* mapped stations, bounded by the file size */
	bool owner;	   /* we created it: writable, removed on destroy */
	int listen_fd;	   /* wake socket (owner only), or -1 */
	char dir[256];	   /* private directory (owner only) */
	char shm_path[320];
	char sock_path[320];
	/* The launched target's maps as its probe copied them at its start
	 * (CTP_ENV_MAPS_PID; keptmaps.c reads it once /proc has none). */
	char maps_path[320];
	/* Deep rings after the stations (ctp.h), or NULL / 0; hub_depth
	 * when its rings are that far apart (DEP2), else 0. */
	struct ctp_deep *deep;
	uint32_t depth, hub_depth;
};

/*
 * Create a fresh region with `stations` stations in a new private directory
 * (0700, under $XDG_RUNTIME_DIR or /tmp), the file 0600 O_EXCL|O_NOFOLLOW,
 * plus a listening Unix socket.  On failure returns false with a message.
 */
bool region_create(struct region *r, uint32_t stations, uint32_t hx_flags,
		   char *err, size_t errlen);

/* The same with a deep ring of `depth` epochs per station for corotop's
 * probe (CTP_HX_DEEP); depth 0 creates none.  Each ring has room for a
 * hub's (CTP_STX_HUB): REGION_HUB_DEPTH epochs, less when the stations
 * are so many that the area would pass REGION_HUB_BUDGET bytes (none when
 * that leaves no more than depth); only the pages a station writes are
 * ever touched. */
#define REGION_HUB_DEPTH 1024u
#define REGION_HUB_BUDGET (1ull << 30)
bool region_create_deep(struct region *r, uint32_t stations, uint32_t hx_flags,
			uint32_t depth, char *err, size_t errlen);

/* Map an existing region read-only after validating it as untrusted.
 * The header is validated with pread; the caller reads the mapping under
 * a SIGBUS guard (engine_create), since the file may shrink at any time. */
bool region_open(struct region *r, const char *shm_path, char *err,
		 size_t errlen);
/* Tests: called once region_open has mapped the file (e.g. to truncate
 * it before anyone reads the mapping). */
extern void (*region_open_hook)(const char *path);

/* Unmap; the owner also removes the file, socket and directory. */
void region_finish(struct region *r);

/* Remove the files without unmapping (async-signal-safe, owner only). */
void region_unlink(const struct region *r);

#endif
