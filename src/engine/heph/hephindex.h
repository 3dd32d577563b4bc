/*
 * hephindex: the index of a Heph trace file built by walking its packets
 * (hephindex.c), for hephfile.c alone: it maps the file and calls these;
 * everyone else reads the index through hephfile.h.
 */
#ifndef COROTOP_HEPHINDEX_H
#define COROTOP_HEPHINDEX_H

#include <stdbool.h>
#include <stddef.h>

#include "engine/heph/hephfile.h"

struct heph_zst;

/* Index the plain bytes f->map, f->size (f zeroed but for those and
 * in_order, true): events, options and problems into f.  mapped: f->map
 * is a file's pages (read ahead; a fault in a second walking thread is
 * handed to the caller's SIGBUS guard, as one walk's would be). */
void heph_index_build(struct heph_file *f, bool mapped);
/* Index the compressed file zs frame by frame; f->map becomes the arena
 * of the options kept (f->size its length).  False, with why, when the
 * file decompresses to more than HEPHFILE_ZST_RATIO allows. */
bool heph_index_build_zst(struct heph_file *f, struct heph_zst *zs, char *err,
			  size_t errlen);

#endif
