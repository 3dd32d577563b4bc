/*
 * ppt wire contract and client API: how a program publishes ppt buffers of
 * frames that an agent (corotop -p PID, or any ppt agent) attaches to while
 * the program runs (docs/WIRE.md, "ppt").
 *
 * Symbols.  A buffer NAME is three global symbols in the program's ELF
 * symbol table, spelled as the shipped ppt generator spells them:
 *
 *   int               _ppt_hmem_NAME   SysV shm id of the control block, or 0
 *   struct ppt_stat   _ppt_stat_NAME   the attached agent's pid, or 0
 *   const char       *_ppt_json_NAME   the buffer's JSON description
 *
 * (the protocol document's own spelling, __ppt_NAME_hmem and so on, is
 * accepted by corotop's agent too).  The agent reads _json, checks and sets
 * _stat, creates the shared memory and writes _hmem last; the client sees
 * _hmem change at its next save and attaches, and detaches when it goes back
 * to 0.  COROTOP_PPT_BUFFER below defines the three symbols.
 *
 * Shared memory (SysV, shmget(IPC_PRIVATE, size, 0600), created by the
 * agent).  Two layouts:
 *   static   one segment: [ ppt_control | padding | frame 0 | frame 1 ... ];
 *            the frames start at the control block's size rounded up to a
 *            multiple of the frame size; data_block_hmem is 0.
 *   dynamic  two segments: the control segment, and the data segment
 *            [ frame 0 | frame 1 ... ] whose id is in data_block_hmem.  To
 *            resize, the agent publishes a new data segment id in
 *            data_block_hmem; the client attaches it at its next save and
 *            acknowledges by storing that id in data_block_hmem_attached.
 * The client tells the two apart by data_block_hmem (0: static), whatever
 * the JSON says, so it follows any agent.
 *
 * Frames.  Every frame type of a buffer has one size.  Layout:
 *   [ front seqno (4) ][ type (4), 1-based, only with >1 type ]
 *   [ members, sorted by size, largest first, padded to their alignment ]
 *   [ end padding to the common size ][ back seqno (4) ]
 * The writer takes frame index i from a counter that starts at 1 (32 bits,
 * wrapping), writes slot i % nframes: both seqnos 0, release fence; front
 * seqno i, release fence; the body, release fence; back seqno i.  A reader
 * that loads back (acquire), copies the body, then loads front (after an
 * acquire fence) and finds front == back == i holds frame i whole.  A slot
 * whose seqnos differ is torn (being written, or its writer died); a gap in
 * the indexes the reader sees is frames lost to overwriting.  Not caught:
 * two savers on one slot at once (a saver lapped by the whole ring in the
 * middle of its frame; docs/WIRE.md, "Reading frames").
 *
 * Ordering contract (who pairs with whom):
 *
 *   agent                                   client
 *   -----                                   ------
 *   (A) control block and _stat written,    (B) _hmem relaxed load at a save;
 *       segments created, then _hmem            shmat, then acquire fence
 *       (process_vm_writev: a syscall,          before reading the control
 *       a full barrier)                          block
 *   (C) back seqno acquire-load, copy,      (D) seqnos 0, release fence,
 *       acquire fence, front seqno load         front, release fence, body,
 *                                               release fence, back
 *   (E) new data_block_hmem, release        (F) data_block_hmem acquire-load
 *                                               at a save; attach; then
 *                                               data_block_hmem_attached,
 *                                               release
 *   (G) data_block_hmem_attached acquire:   the old block gets no new frames
 *       drain the old block, then remove       after (F) stored the ack
 *   A pairs with B, D with C, E with F, F with G.
 */
#ifndef COROTOP_PPT_H
#define COROTOP_PPT_H

#include <stddef.h>
#include <stdint.h>

#include "corotop/ctp.h"
#include "corotop/probe.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- wire: ABI v1 ---- */

#define PPT_ABI "1.0.0"
#define PPT_ABI_MAJOR 1

/* _ppt_stat_NAME.  pid_t is 32 bits on Linux. */
struct ppt_stat {
	int32_t ppt_agent_pid; /* written by the agent, ignored by clients */
};

#define PPT_CLIENT_FLAG_ATTACHED 1ull
#define PPT_CLIENT_FLAG_COUNTERS_SETUP 2ull
#define PPT_MAX_COUNTERS 3u
/* struct perf_event_attr as of PERF_ATTR_SIZE_VER7 (Linux headers 5.13 to
 * 6.2), which the generated code embeds; kept as bytes so that this header
 * does not depend on the installed kernel headers' version. */
#define PPT_PERF_ATTR_SIZE 128u

/*
 * The control block, at the start of the control segment.  Field for field
 * the generated code's struct ppt_control on LP64 (size_t and pointers are
 * 8 bytes).  Shared words are accessed with __atomic builtins.
 */
struct ppt_control {
	uint64_t control_blk_sz;	   /* sizeof(struct ppt_control): 440 */
	uint64_t data_block_hmem;	   /* dynamic: the data segment's id */
	uint64_t data_block_hmem_attached; /* dynamic: the client's ack */
	uint64_t data_block;	/* client: where it mapped the frames */
	uint64_t data_block_sz; /* client: frames in the data block */
	uint32_t nr_perf_ctrs;	/* counters the agent asks for, 0..3 */
	uint32_t pad_;
	CTP_ALIGNAS(8)
	uint8_t counterdata[PPT_MAX_COUNTERS][PPT_PERF_ATTR_SIZE];
	uint64_t client_flags; /* PPT_CLIENT_FLAG_*, written by the client */
};

CTP_STATIC_ASSERT(offsetof(struct ppt_control, data_block_hmem) == 8,
		  "ppt_control.data_block_hmem");
CTP_STATIC_ASSERT(offsetof(struct ppt_control, data_block_sz) == 32,
		  "ppt_control.data_block_sz");
CTP_STATIC_ASSERT(offsetof(struct ppt_control, nr_perf_ctrs) == 40,
		  "ppt_control.nr_perf_ctrs");
CTP_STATIC_ASSERT(offsetof(struct ppt_control, counterdata) == 48,
		  "ppt_control.counterdata");
CTP_STATIC_ASSERT(offsetof(struct ppt_control, client_flags) == 432,
		  "ppt_control.client_flags");
CTP_STATIC_ASSERT(sizeof(struct ppt_control) == 440, "ppt_control size");

/* Frame header words. */
#define PPT_SEQNO_SIZE 4u
#define PPT_FRONT_SEQNO "__ppt_seqno"
#define PPT_BACK_SEQNO "__ppt_seqno_back"
#define PPT_TYPE_NAME "__ppt_type"

/*
 * corotop's rendezvous (late attach).  The probe's own buffer, named
 * "corotop", says in its JSON tags {"key": "corotop", "value":
 * "rendezvous/1"}.  corotop's agent then attaches it in the dynamic layout
 * and puts a corotop_rendezvous at COROTOP_RDV_OFFSET of the control
 * segment, naming the cTP region (and, through its header, the CallTrace
 * region) the probe should map: a process started without corotop becomes
 * traced.  Any other agent creates a plain segment; the probe then finds no
 * rendezvous (segment too small, or no magic) and stays a plain ppt client.
 */
#define COROTOP_PPT_BUFFER_NAME "corotop"
#define COROTOP_RDV_TAG_KEY "corotop"
#define COROTOP_RDV_TAG_VALUE "rendezvous/1"
#define COROTOP_RDV_MAGIC 0x3156445254524f43ull /* "CORTRDV1" */
#define COROTOP_RDV_VERSION 1u
#define COROTOP_RDV_OFFSET 512u
#define COROTOP_RDV_PARKED_STACKS (1u << 0)

/*
 * The doorbell.  The ppt protocol attaches a client at its next saved
 * frame, and the probe saves one at its next transition: a program whose
 * every coroutine is parked and every thread blocked -- a hung server, the
 * case late attach is for -- would never notice the agent.  So the probe
 * also listens on an abstract Unix socket named COROTOP_DOORBELL_FMT with
 * its pid (SOCK_SEQPACKET), on a thread of its own that sleeps in accept:
 * a connection from a process of the same uid makes it run the attach
 * check at once.  Nothing is sent either way; the agent rings right after
 * it wrote _hmem, and again after it wrote it back to 0.
 */
#define COROTOP_DOORBELL_FMT "corotop-doorbell-%d"

struct corotop_rendezvous {
	uint64_t magic;	       /* COROTOP_RDV_MAGIC */
	uint32_t version;      /* COROTOP_RDV_VERSION */
	uint32_t size;	       /* sizeof(struct corotop_rendezvous) */
	uint32_t max_stations; /* as CTP_MAX_STATIONS */
	uint32_t sample_hz;    /* as COROTOP_SAMPLE_HZ; 0: off */
	uint32_t flags;	       /* COROTOP_RDV_* */
	uint32_t engine_pid;
	char shm_path[256];  /* as CTP_SHM_PATH, NUL-terminated */
	char sock_path[108]; /* as CTP_SOCK_PATH, NUL-terminated */
	uint8_t reserved[116];
};

CTP_STATIC_ASSERT(sizeof(struct corotop_rendezvous) == 512,
		  "corotop_rendezvous size");
CTP_STATIC_ASSERT(COROTOP_RDV_OFFSET >= sizeof(struct ppt_control),
		  "rendezvous after the control block");

/* ---- client API: a program's own buffers ---- */

/* Member types.  The C type the member has in the caller's struct: */
enum corotop_ppt_type {
	COROTOP_PPT_INT = 1, /* int32_t */
	COROTOP_PPT_FLOAT,   /* float */
	COROTOP_PPT_DOUBLE,  /* double */
	COROTOP_PPT_TIME,    /* struct timespec (16 bytes on LP64) */
	COROTOP_PPT_COUNTER, /* uint64_t[3]: the agent's perf counters, as
				corotop_ppt_counters reads them */
	COROTOP_PPT_BYTE,    /* uint8_t */
};
/* Or-ed into a type: an interval, a start value immediately followed by an
 * end value of that type in the caller's struct (for a counter,
 * uint64_t start[3] then uint64_t end[3]).  On the wire it becomes the
 * generator's NAME_start / NAME_end pair (NAME_I_start / NAME_I_end per
 * counter I), which agents show as one duration or difference. */
#define COROTOP_PPT_INTERVAL 0x100u

struct corotop_ppt_member {
	const char *name; /* [A-Za-z_][A-Za-z0-9_]*, at most 47 bytes */
	unsigned type;	  /* enum corotop_ppt_type, maybe | INTERVAL */
	size_t offset;	  /* offsetof(the caller's struct, member) */
};

struct corotop_ppt_frame_type {
	const char *name; /* same rules as member names */
	const struct corotop_ppt_member *members;
	unsigned nmembers; /* 1..32 */
};

struct corotop_ppt_client; /* private to the probe */

/*
 * One buffer.  Define it with COROTOP_PPT_BUFFER at file scope, which also
 * defines the three symbols agents look for; never copy it.
 */
struct corotop_ppt_buffer {
	const char *name;
	int *hmem;	       /* &_ppt_hmem_NAME */
	struct ppt_stat *stat; /* &_ppt_stat_NAME */
	const char **json;     /* &_ppt_json_NAME */
	int live;	       /* non-zero while attached (the library's) */
	struct corotop_ppt_client *client; /* set by corotop_ppt_buffer_init */
};

#if defined(__GNUC__)
#define COROTOP_PPT_SYMBOL __attribute__((used, visibility("default")))
#else
#define COROTOP_PPT_SYMBOL
#endif

#define COROTOP_PPT_BUFFER(NAME)                                               \
	COROTOP_PPT_SYMBOL int _ppt_hmem_##NAME;                               \
	COROTOP_PPT_SYMBOL struct ppt_stat _ppt_stat_##NAME;                   \
	COROTOP_PPT_SYMBOL const char *_ppt_json_##NAME;                       \
	struct corotop_ppt_buffer NAME = {#NAME,                               \
					  &_ppt_hmem_##NAME,                   \
					  &_ppt_stat_##NAME,                   \
					  &_ppt_json_##NAME,                   \
					  0,                                   \
					  0}

/* Flags of corotop_ppt_buffer_init. */
#define COROTOP_PPT_RESIZE                                                     \
	(1u << 0) /* advertise the dynamic (resizable)                         \
		     layout: {"key":"resize","value":"on"}                     \
		     in the JSON tags */

/*
 * Lay out the frame types (at most 16) and publish the JSON description;
 * agents see the buffer only after this (before it, _json is NULL).  Call
 * once, before any save.  Returns 0 or a negative errno: -EINVAL (a bad
 * name, type, count or offset; -EEXIST for a buffer already initialized),
 * -ENOMEM.
 */
COROTOP_API int corotop_ppt_buffer_init(struct corotop_ppt_buffer *b,
					const struct corotop_ppt_frame_type *t,
					unsigned ntypes, unsigned flags);
/* Detach and free.  Not while other threads save to b. */
COROTOP_API void corotop_ppt_buffer_finish(struct corotop_ppt_buffer *b);

/* Out-of-line save; use corotop_ppt_save. */
COROTOP_API void corotop_ppt_save_(struct corotop_ppt_buffer *b, unsigned type,
				   const void *frame);

/*
 * Save one frame of type `type` (0-based index into the types given to
 * init) from the caller's struct at `frame`.  Without an agent this is one
 * predictable branch; attached, it never blocks, never allocates (but on
 * the one save that attaches, which maps the segment), never raises a
 * signal, and is safe from any number of threads at once.
 */
static inline void corotop_ppt_save(struct corotop_ppt_buffer *b, unsigned type,
				    const void *frame)
{
	if (COROTOP_LIKELY((__atomic_load_n(b->hmem, __ATOMIC_RELAXED) |
			    __atomic_load_n(&b->live, __ATOMIC_RELAXED)) == 0))
		return;
	corotop_ppt_save_(b, type, frame);
}

/*
 * The calling thread's values of the counters the agent asked for (-c),
 * into v[0..2] (0 where none).  Returns how many count (0 without an agent
 * or counters; the perf events are opened per thread on first use).
 */
COROTOP_API unsigned corotop_ppt_counters(struct corotop_ppt_buffer *b,
					  uint64_t v[3]);

/* The frame size on the wire (bytes, every type), 0 before init. */
COROTOP_API size_t corotop_ppt_frame_size(const struct corotop_ppt_buffer *b);

/* Counters of one buffer, running freely from 0. */
struct corotop_ppt_stats {
	uint64_t saved;	   /* frames written while attached */
	uint64_t skipped;  /* saves while another thread (re)attached */
	uint64_t attaches; /* control segments attached */
	uint64_t detaches; /* ... and let go (_hmem back to 0) */
	uint64_t resizes;  /* data blocks switched (dynamic layout) */
	uint64_t failures; /* shmctl/shmat refused, or a lying segment */
	uint32_t attached; /* 1 while attached */
	uint32_t counters; /* counters the agent asked for */
	uint64_t nframes;  /* frames in the current data block */
};
COROTOP_API void corotop_ppt_stats(const struct corotop_ppt_buffer *b,
				   struct corotop_ppt_stats *out);

#ifdef __cplusplus
}
#endif

#endif
