/*
 * style: which cTP writing style a foreign station's writer follows, told
 * from what its seqs show.  See style.c.
 */
#ifndef COROTOP_ENGINE_CTP_STYLE_H
#define COROTOP_ENGINE_CTP_STYLE_H

#include <stdint.h>

struct harvest;
struct harvest_station;

/*
 * Read station i's seqs once more and decide its style when the evidence
 * allows: st->style becomes HARVEST_STYLE_SEQLOCK or _LITERAL (counted in
 * h->count.styles), or stays HARVEST_STYLE_UNKNOWN.  Harvest thread.
 */
void style_classify(struct harvest *h, uint32_t i, struct harvest_station *st);

#endif
