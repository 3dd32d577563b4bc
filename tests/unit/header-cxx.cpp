/*
 * Header hygiene, C++ side: the public headers compile as C++17 and C++20
 * under -pedantic -Werror (see meson.build), and a C++ compiler lays the
 * structs out exactly as the C wire contract says.
 */
#include "corotop/calltrace.h"
#include "corotop/ctp.h"
#include "corotop/ppt.h"
#include "corotop/probe.h"

#include <cstdio>
#include <type_traits>

#define CHECK(e)                                                               \
	do {                                                                   \
		if (!(e)) {                                                    \
			std::fprintf(stderr, "failed: %s\n", #e);              \
			return 1;                                              \
		}                                                              \
	} while (0)

static_assert(std::is_standard_layout<ctp_station>::value,
	      "station is standard layout");
static_assert(std::is_standard_layout<ctp_header>::value,
	      "header is standard layout");
static_assert(std::is_standard_layout<ct_header>::value,
	      "calltrace header is standard layout");

int main()
{
	CHECK(sizeof(ctp_header) == 1024);
	CHECK(sizeof(ct_header) == CT_HEADER_SIZE);
	CHECK(sizeof(ct_bucket) == 32 && sizeof(ct_slot) == 32);
	CHECK(offsetof(ct_header, active) == 0x80);
	CHECK(alignof(ctp_header) == 1024);
	CHECK(sizeof(ctp_station) == 1024);
	CHECK(alignof(ctp_epoch) == 64);
	CHECK(offsetof(ctp_station, slots) == 0x40);
	CHECK(offsetof(ctp_station, ext) == 0x240);
	CHECK(offsetof(ctp_header, ext) == 0x18);
	CHECK(offsetof(ctp_epoch, seq) == 0x18);
	CHECK(offsetof(ctp_epoch, is_active) == 0x3F);
	CHECK(sizeof(corotop_coro) == 144);
	CHECK(ctp_seq_event(2, 5, 0) == 5);
	CHECK(ctp_seq_event(0, 5, 0) == UINT64_MAX);
	CHECK(sizeof(ppt_control) == 440);
	CHECK(offsetof(ppt_control, client_flags) == 432);
	return 0;
}
