/*
 * cray-fixture: the memory view's fixture trace, the same records as the
 * 'cacheray' UI flow writes (tests/ui/cacheray_trace.py, whose docstring
 * lists the counts), written with cacheray-trace.h.  Include it after
 * cacheray-trace.h.
 */
#ifndef COROTOP_TEST_CRAY_FIXTURE_H
#define COROTOP_TEST_CRAY_FIXTURE_H

/* 106 records, 1976 bytes. */
static inline void tw_cray_fixture(struct tw *w)
{
	w->n = 0;
	tw_add(w, 0x10000, 16, 8, "struct counter");
	tw_accesses(w, 40, W, 0x10000, 8, 1);
	tw_accesses(w, 30, W, 0x10010, 8, 2);
	tw_accesses(w, 10, R, 0x10018, 8, 2);
	for (int i = 0; i < 5; i++) {
		tw_access(w, R | ATOMIC, 0x10040, 8, 1);
		tw_access(w, W | ATOMIC, 0x10040, 8, 1);
	}
	tw_accesses(w, 2, W | UNALIGNED, 0x10043, 4, 2);
	tw_add(w, 0x20000, 32, 1, "struct node");
	tw_accesses(w, 3, R, 0x20000, 8, 1);
	tw_remove(w, 0x20000);
	tw_accesses(w, 1, R, 0x20000, 8, 1);
	tw_add(w, 0x20000, 32, 1, "struct node");
	tw_accesses(w, 2, W, 0x20008, 8, 1);
	tw_accesses(w, 4, R, 0x30000, 8, 1);
}

#endif
