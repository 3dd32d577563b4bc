/*
 * pptdesc: a ppt buffer's JSON description (_ppt_json_NAME) turned into
 * validated frame layouts the agent can decode.  See pptdesc.c and
 * docs/WIRE.md ("ppt descriptions") for the shapes accepted.
 *
 * Two spellings of the same description are accepted:
 *   - the shipped generator's (Aeson generic encoding): top-level "abi",
 *     "tags", "metadata", "emit", "target", "frames"; a frame is
 *     {"_flName", "_flFrame", "_flLayout": [member...]}, a member is
 *     {"_lType", "_lOffset", "_lAlignment", "_lSize", "_lKind", "_lName"}
 *     with tagged types ({"tag":"PIntegral","contents":["PPInt",null]}) and
 *     kinds ({"tag":"LKSeqno","contents":"FrontSeq"}, "LKTypeDescrim",
 *     "LKMember" [frame member, null | {"tag":"IntBegin"|"IntEnd",...}],
 *     "LKPadding");
 *   - the protocol document's: the same under "buffer": {"emit", "frames"},
 *     and plain members {"name", "type": "int"|"byte"|"float"|"double"|
 *     "time"|"counter", "offset", "size", "alignment", "kind":
 *     "front_seqno"|"back_seqno"|"type"|"member"|"padding", optional
 *     "interval": "begin"|"end", optional "counter": I}; a frame is
 *     {"name", "members"}.
 *
 * Untrusted: every offset, size and count is checked against the frame (an
 * offset past the frame, a size of 0, a type count of 10^9, overlapping
 * members, a missing seqno are errors); nothing here trusts the text.
 */
#ifndef COROTOP_PPTDESC_H
#define COROTOP_PPTDESC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PPTDESC_MAX_TYPES 64
#define PPTDESC_MAX_MEMBERS 256 /* per frame type, padding included */
#define PPTDESC_MAX_FRAME 65536 /* bytes */
#define PPTDESC_NAME_MAX 64

enum ppt_mtype {
	PPT_T_INT = 0, /* int32 */
	PPT_T_BYTE,    /* uint8 */
	PPT_T_FLOAT,
	PPT_T_DOUBLE,
	PPT_T_TIME,    /* timespec (or timeval): two int64 */
	PPT_T_COUNTER, /* uint64 */
};

enum ppt_kind {
	PPT_K_FRONT = 0, /* front seqno */
	PPT_K_BACK,	 /* back seqno */
	PPT_K_TYPE,	 /* type discriminator, 1-based */
	PPT_K_MEMBER,
	PPT_K_PADDING,
};

enum ppt_interval {
	PPT_I_NONE = 0,
	PPT_I_BEGIN,
	PPT_I_END,
};

struct ppt_member {
	char name[PPTDESC_NAME_MAX];
	enum ppt_mtype type;
	enum ppt_kind kind;
	enum ppt_interval interval;
	int counter; /* counter index 0..2 of a counter member, else -1 */
	uint32_t offset, size;
};

/* What is shown: one column per member, an interval's begin/end pair
 * folded into one (end - begin); seqnos, discriminator, padding dropped. */
struct ppt_column {
	char name[PPTDESC_NAME_MAX]; /* "work" for work_start/work_end */
	enum ppt_mtype type;
	bool interval;
	uint16_t begin; /* member index (the value, or the interval start) */
	uint16_t end;	/* member index of the end; == begin when not */
};

struct ppt_layout {
	char name[PPTDESC_NAME_MAX];
	struct ppt_member *members;
	uint32_t nmembers;
	struct ppt_column *cols;
	uint32_t ncols;
};

struct ppt_desc {
	char abi[16];		      /* as written, e.g. "1.0.0" */
	char name[PPTDESC_NAME_MAX];  /* the buffer name it claims, or "" */
	bool resize;		      /* tag resize=on (dynamic layout) */
	bool rendezvous;	      /* tag corotop=rendezvous/1 */
	bool corotop_client;	      /* tag corotop=client/1 or rendezvous/1 */
	bool timeval;		      /* times are timeval (usec), else ns */
	uint32_t frame_size;	      /* bytes, every type */
	uint32_t front_off, back_off; /* the seqnos (same in every type) */
	uint32_t type_off;	      /* UINT32_MAX: one type, no field */
	uint32_t counter_count;	      /* target.tCounterCount, else 3 */
	struct ppt_layout *types;     /* index = discriminator - 1 */
	uint32_t ntypes;
};

enum pptdesc_status {
	PPTDESC_OK = 0,
	PPTDESC_BAD_JSON,     /* not JSON, or not an object */
	PPTDESC_ABI_MISMATCH, /* abi major is not 1 (d->abi says which) */
	PPTDESC_BAD_LAYOUT,   /* JSON, but the layouts lie */
};

/* Parse and validate; on failure err says what (with the ABI versions
 * for PPTDESC_ABI_MISMATCH: "buffer ABI 2.0.0, corotop speaks 1.x") and
 * *d holds nothing to free (abi is still filled when it was read). */
enum pptdesc_status pptdesc_parse(const char *json, size_t len,
				  struct ppt_desc *d, char *err, size_t errlen);
void pptdesc_finish(struct ppt_desc *d);

#endif
