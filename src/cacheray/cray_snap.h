/*
 * cray_snap: what the memory view shows, copied from the Cacheray reader
 * at one moment -- totals, types, threads, the hottest lines and the
 * false-sharing suspects, and the member counts of the types the user
 * opened (of every type, for a snapshot that is to stand still while the
 * display is paused) -- so that the display can stand still (paused, or
 * between refreshes) while reading goes on.  No curses.  See cray_snap.c.
 */
#ifndef COROTOP_CRAY_SNAP_H
#define COROTOP_CRAY_SNAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cacheray/cacheray.h"

/* Lines kept per list (hot, suspects). */
#define CRAY_SNAP_LINES 1000u
/* A member row that stands for "this type has no member counts". */
#define CRAY_SNAP_NO_MEMBERS UINT32_MAX

struct cray_type_copy {
	uint32_t index;	  /* in the reader's table: a type's identity */
	const char *name; /* the reader's: valid while the reader lives */
	uint32_t name_len, elemsize;
	uint64_t n[2]; /* reads, writes */
	uint64_t regions;
	bool special;
};

struct cray_thread_copy {
	uint32_t index; /* in the reader's table */
	uint64_t id;
	uint64_t n[2];
	bool other;
};

struct cray_member_copy {
	uint32_t type;	 /* cray_type_copy.index */
	uint32_t offset; /* CRAY_SNAP_NO_MEMBERS: none counted */
	uint64_t n[2];
};

enum cray_note {
	CRAY_NOTE_NONE = 0,
	CRAY_NOTE_TID0,	   /* every access has thread id 0 */
	CRAY_NOTE_ONE_TID, /* every access has the same (other) id */
};

struct cray_snap {
	struct cacheray_totals tot;
	enum cray_note note;
	/* [0] the hottest lines, [1] the false-sharing suspects; the
	 * decoded lines point into the reader's thread and type tables,
	 * whose entries never move and whose ids and names never change. */
	struct cacheray_line *lines[2];
	size_t nlines[2];
	struct cray_type_copy *types; /* those with accesses or regions */
	size_t ntypes;
	struct cray_thread_copy *threads;
	size_t nthreads;
	/* Grouped by type (in index order), then by offset; for the types
	 * opened, or for every type when all_members. */
	struct cray_member_copy *members;
	size_t nmembers, cap_members;
	bool all_members;
	size_t cap_types, cap_threads;
};

void cray_snap_init(struct cray_snap *s);
void cray_snap_finish(struct cray_snap *s);

/*
 * Copy everything from the reader; members for the types whose index has
 * its bit set in open (nopen bits; NULL: none).  False when out of memory
 * (the snapshot then holds what fit).
 */
bool cray_snap_take(struct cray_snap *s, const struct cacheray *c,
		    const uint8_t *open, size_t nopen);

/*
 * The same, with the members of every type (all_members): the snapshot
 * the paused display stands on, so that a type opened while paused shows
 * the member counts of the same moment as the type's totals.  Costs a copy
 * of every member counter in use (at most 4 Mi), once per pause.  False
 * when out of memory (all_members is false then).
 */
bool cray_snap_take_all(struct cray_snap *s, const struct cacheray *c);

/* Whether the snapshot holds the member rows of type index (taken with it
 * open, or with all of them). */
bool cray_snap_has_members(const struct cray_snap *s, uint32_t index);

/* The type copy with this reader index, or NULL. */
const struct cray_type_copy *cray_snap_type(const struct cray_snap *s,
					    uint32_t index);

/* First member row of the type and how many there are (0: none). */
size_t cray_snap_type_members(const struct cray_snap *s, uint32_t index,
			      size_t *first);

#endif
