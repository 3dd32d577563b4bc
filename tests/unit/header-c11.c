/*
 * Header hygiene, C side: the public headers compile on their own under
 * -std=c11 -pedantic -Werror (see meson.build), and the layout a strict C11
 * compiler produces matches the wire contract.
 */
#include "corotop/calltrace.h"
#include "corotop/ctp.h"
#include "corotop/ppt.h"
#include "corotop/probe.h"

#include <stdio.h>

#define CHECK(e)                                                               \
	do {                                                                   \
		if (!(e)) {                                                    \
			fprintf(stderr, "failed: %s\n", #e);                   \
			return 1;                                              \
		}                                                              \
	} while (0)

int main(void)
{
	CHECK(sizeof(struct ctp_header) == 1024);
	CHECK(sizeof(struct ct_header) == CT_HEADER_SIZE);
	CHECK(sizeof(struct ctp_calltrace_desc) == 64);
	CHECK(sizeof(struct ctp_station) == 1024);
	CHECK(sizeof(struct ctp_epoch) == 64);
	CHECK(offsetof(struct ctp_station, flexible) == 0x240);
	CHECK(offsetof(struct ctp_header, ext) == 0x18);
	CHECK(ctp_seq_event(0, 0, 1) == UINT64_MAX);
	CHECK(ctp_event_seq(3) == 8);
	CHECK(sizeof(struct ppt_control) == 440);
	CHECK(sizeof(struct corotop_rendezvous) == 512);
	return 0;
}
