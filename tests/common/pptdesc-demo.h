/*
 * pptdesc-demo: the ppt description of a buffer "demo" with two frame types
 * ("tick": a time interval, a double, an int; "io": a counter interval and
 * an int), as the shipped generator writes it (Aeson) and in the protocol
 * document's plain spelling, plus the macros that spell members.  Shared by
 * the unit test (tests/unit/test-pptdesc.c) and the fuzz target
 * (tests/fuzz/fuzz-pptdesc.c), which mutates it.  The JSON is laid out by
 * hand, one member a line, out of clang-format's reach.
 */
#ifndef COROTOP_TEST_PPTDESC_DEMO_H
#define COROTOP_TEST_PPTDESC_DEMO_H

/* clang-format off */

/* ---- the generator's spelling (Aeson), as in its output ----------------- */

#define T_INT "{\"tag\":\"PIntegral\",\"contents\":[\"PPInt\",null]}"
#define T_BYTE "{\"tag\":\"PIntegral\",\"contents\":[\"PPByte\",null]}"
#define T_DOUBLE "{\"tag\":\"PRational\",\"contents\":[\"PPDouble\",null]}"
#define T_TIME "{\"tag\":\"PTime\",\"contents\":null}"
#define T_COUNTER(i) "{\"tag\":\"PCounter\",\"contents\":[" #i ",null]}"

#define MEMBER(type, off, align, size, kind, name)                             \
	"{\"_lType\":" type ",\"_lOffset\":" #off ",\"_lAlignment\":" #align   \
	",\"_lSize\":" #size ",\"_lKind\":" kind ",\"_lName\":\"" name "\"}"
#define K_SEQ(which) "{\"tag\":\"LKSeqno\",\"contents\":\"" which "\"}"
#define K_FM(fmtype, name, diff, side)                                         \
	"{\"tag\":\"LKMember\",\"contents\":[{\"fmType\":\"" fmtype            \
	"\",\"fmName\":\"" name "\",\"fmDifferential\":" diff "}," side "]}"
#define SIDE(tag, i, n) "{\"tag\":\"" tag "\",\"contents\":[" #i "," #n "]}"

#define FRONT MEMBER(T_INT, 0, 4, 4, K_SEQ("FrontSeq"), "__ppt_seqno")
#define DISCRIM                                                                \
	MEMBER(T_INT, 4, 4, 4,                                                 \
	       "{\"tag\":\"LKTypeDescrim\",\"contents\":2}", "__ppt_type")
#define BACK MEMBER(T_INT, 60, 4, 4, K_SEQ("BackSeq"), "__ppt_seqno_back")
#define COST(i, off_s, off_e)                                                  \
	MEMBER(T_COUNTER(i), off_s, 8, 8,                                      \
	       K_FM("PCounter", "cost", "true", SIDE("IntBegin", i, 2)),       \
	       "cost_" #i "_start") ","                                        \
	MEMBER(T_COUNTER(i), off_e, 8, 8,                                      \
	       K_FM("PCounter", "cost", "true", SIDE("IntEnd", i, 2)),         \
	       "cost_" #i "_end")

#define TICK_FRAME                                                             \
	"{\"_flName\":\"tick\",\"_flFrame\":[\"tick\",[]],\"_flLayout\":["     \
	FRONT ","                                                              \
	DISCRIM ","                                                            \
	MEMBER(T_BYTE, 8, 1, 8, "{\"tag\":\"LKPadding\",\"contents\":8}",      \
	       "__pad_8") ","                                                  \
	MEMBER(T_TIME, 16, 16, 16,                                             \
	       K_FM("PTime", "work", "true", SIDE("IntBegin", 0, 1)),          \
	       "work_start") ","                                               \
	MEMBER(T_TIME, 32, 16, 16,                                             \
	       K_FM("PTime", "work", "true", SIDE("IntEnd", 0, 1)),            \
	       "work_end") ","                                                 \
	MEMBER(T_DOUBLE, 48, 8, 8, K_FM("PDouble", "load", "false", "null"),   \
	       "load") ","                                                     \
	MEMBER(T_INT, 56, 4, 4, K_FM("PInt", "count", "false", "null"),        \
	       "count") ","                                                    \
	BACK "]}"

#define IO_FRAME                                                               \
	"{\"_flName\":\"io\",\"_flFrame\":[\"io\",[]],\"_flLayout\":["         \
	FRONT ","                                                              \
	DISCRIM ","                                                            \
	COST(0, 8, 16) ","                                                     \
	COST(1, 24, 32) ","                                                    \
	COST(2, 40, 48) ","                                                    \
	MEMBER(T_INT, 56, 4, 4, K_FM("PInt", "fd", "false", "null"), "fd") "," \
	BACK "]}"

#define EMIT                                                                   \
	"{\"_eBuffer\":{\"ebName\":\"demo\",\"ebMinElements\":null},"          \
	"\"_eLanguage\":\"ELangC\",\"_eTimeRep\":{\"tag\":\"ETimeSpec\","      \
	"\"contents\":\"ETimeClockMonotonic\"},\"_eRuntime\":{"                \
	"\"erMultithread\":true},\"_eTags\":[],\"_eOptions\":[]}"

static const char pptdesc_demo_generator[] =
	"{\"abi\":\"1.0.0\","
	"\"tags\":[{\"key\":\"corotop\",\"value\":\"client/1\"}],"
	"\"metadata\":[],\"emit\":" EMIT ","
	"\"target\":{\"tDouble\":8,\"tFloat\":4,\"tInt\":4,\"tTime\":16,"
	"\"tCounter\":8,\"tPadTo\":4,\"tCounterCount\":3},"
	"\"frames\":[" TICK_FRAME "," IO_FRAME "]}";

/* ---- the protocol document's plain spelling of the same buffer --------- */

#define P(name, type, off, size, kind, extra)                                  \
	"{\"name\":\"" name "\",\"type\":\"" type "\",\"offset\":" #off        \
	",\"size\":" #size ",\"alignment\":1,\"kind\":\"" kind "\"" extra "}"
#define P_HEAD                                                                 \
	P("__ppt_seqno", "int", 0, 4, "front_seqno", "") ","                   \
	P("__ppt_type", "int", 4, 4, "type", "")
#define P_BACK P("__ppt_seqno_back", "int", 60, 4, "back_seqno", "")
#define P_COST(i, s, e)                                                        \
	P("cost_" #i "_start", "counter", s, 8, "member",                      \
	  ",\"interval\":\"begin\",\"counter\":" #i) ","                       \
	P("cost_" #i "_end", "counter", e, 8, "member",                        \
	  ",\"interval\":\"end\",\"counter\":" #i)

static const char pptdesc_demo_plain[] =
	"{\"abi\":\"1.0.0\",\"tags\":[{\"key\":\"corotop\",\"value\":"
	"\"client/1\"}],\"metadata\":{},\"buffer\":{\"name\":\"demo\","
	"\"emit\":{},\"frames\":["
	"{\"name\":\"tick\",\"members\":["
	P_HEAD ","
	P("__pad_8", "byte", 8, 8, "padding", "") ","
	P("work_start", "time", 16, 16, "member", ",\"interval\":\"begin\"") ","
	P("work_end", "time", 32, 16, "member", ",\"interval\":\"end\"") ","
	P("load", "double", 48, 8, "member", "") ","
	P("count", "int", 56, 4, "member", ",\"interval\":null") ","
	P_BACK "]},"
	"{\"name\":\"io\",\"members\":["
	P_HEAD ","
	P_COST(0, 8, 16) ","
	P_COST(1, 24, 32) ","
	P_COST(2, 40, 48) ","
	P("fd", "int", 56, 4, "member", "") ","
	P_BACK "]}]}}";

/* clang-format on */

#endif
