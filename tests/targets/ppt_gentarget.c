/*
 * ppt-gentarget: a buffer written the way the shipped ppt generator's code
 * behaves (UPSTREAM-FACTS.md, "ppt"), without the probe: corotop's agent
 * must work with programs that already run such code.  Written from those
 * facts, not from the generator's output.
 *
 *   - symbols _ppt_hmem_legacy (int), _ppt_stat_legacy (struct {pid_t}),
 *     _ppt_json_legacy (const char * to the Aeson-encoded description);
 *   - every save takes the next index (from 1) first, attached or not;
 *   - it attaches at a save that finds _hmem set and nothing attached:
 *     shmctl(IPC_STAT) for the size, shmat, frames right after the control
 *     block rounded up to a multiple of the frame size; when _hmem goes
 *     back to 0 it shmdt's at its next save;
 *   - the multithreaded write protocol: both seqnos 0, fence, front seqno,
 *     release fence, body, fence, back seqno.
 *
 * One frame type, "sample" {a int, b double}: front seqno at 0, padding,
 * b at 8, a at 16, back seqno at 20; 24 bytes.  Frame with index i carries
 * a = i, b = 2.5 * i.
 *
 * The generator's revisions differ, and so does this stand-in, by option:
 *   --offset round  frames at sizeof(ppt_control) rounded up to the frame
 *                   size (UPSTREAM-FACTS.md; the default)
 *   --offset mod    at sizeof + sizeof % frame size (a revision's code)
 *   --slot plain    frame i in slot i % n (the default)
 *   --slot minus1   in slot (i - 1) % n
 *   --slot rotate   in slot (off + i - 1) % n, off chosen at attach so
 *                   that the first frame after it is in slot 0
 *   --count always  every save takes an index, attached or not (default)
 *   --count attached  only attached saves do
 *   --resize-tag    its description asks for a resizable block (which the
 *                   generated client can not follow)
 * and, like the generator's code, it writes _hmem = 0 itself when its
 * attach fails.
 *
 * Commands on stdin: "save N", "state" ("ok hmem=H stat=S attached=A"),
 * "quit".  Prints "ready PID" first.
 */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/shm.h>
#include <unistd.h>

#include "corotop/ppt.h"

#define FRAME 24u

struct sample {
	int32_t seq;
	int32_t pad;
	double b;
	int32_t a;
	int32_t seq_back;
};
_Static_assert(sizeof(struct sample) == FRAME, "sample layout");

#define T_INT "{\"tag\":\"PIntegral\",\"contents\":[\"PPInt\",null]}"
#define T_BYTE "{\"tag\":\"PIntegral\",\"contents\":[\"PPByte\",null]}"
#define T_DOUBLE "{\"tag\":\"PRational\",\"contents\":[\"PPDouble\",null]}"

__attribute__((used)) int _ppt_hmem_legacy;
__attribute__((used)) struct {
	pid_t ppt_agent_pid;
} _ppt_stat_legacy;
#define GEN_JSON_AFTER_TAGS                                                    \
	"\"metadata\":[],"                                                     \
	"\"emit\":{\"_eBuffer\":{\"ebName\":\"legacy\",\"ebMinElements\":"     \
	"null},"                                                               \
	"\"_eLanguage\":\"ELangCpp\",\"_eTimeRep\":{\"tag\":\"ETimeSpec\","    \
	"\"contents\":\"ETimeClockMonotonic\"},\"_eRuntime\":{"                \
	"\"erMultithread\":"                                                   \
	"true},\"_eTags\":[],\"_eOptions\":[]},"                               \
	"\"target\":{\"tDouble\":8,\"tFloat\":4,\"tInt\":4,\"tTime\":16,"      \
	"\"tCounter\":8,\"tPadTo\":4,\"tCounterCount\":3},"                    \
	"\"frames\":[{\"_flName\":\"sample\",\"_flFrame\":[\"sample\",[]],"    \
	"\"_flLayout\":["                                                      \
	"{\"_lType\":" T_INT ",\"_lOffset\":0,\"_lAlignment\":4,\"_lSize\":4," \
	"\"_lKind\":{\"tag\":\"LKSeqno\",\"contents\":\"FrontSeq\"},"          \
	"\"_lName\":\"__ppt_seqno\"},"                                         \
	"{\"_lType\":" T_BYTE                                                  \
	",\"_lOffset\":4,\"_lAlignment\":1,\"_lSize\":4,"                      \
	"\"_lKind\":{\"tag\":\"LKPadding\",\"contents\":4},"                   \
	"\"_lName\":\"__pad_4\"},"                                             \
	"{\"_lType\":" T_DOUBLE                                                \
	",\"_lOffset\":8,\"_lAlignment\":8,\"_lSize\":8,"                      \
	"\"_lKind\":{\"tag\":\"LKMember\",\"contents\":[{\"fmType\":"          \
	"\"PDouble\",\"fmName\":\"b\",\"fmDifferential\":false},null]},"       \
	"\"_lName\":\"b\"},"                                                   \
	"{\"_lType\":" T_INT                                                   \
	",\"_lOffset\":16,\"_lAlignment\":4,\"_lSize\":4,"                     \
	"\"_lKind\":{\"tag\":\"LKMember\",\"contents\":[{\"fmType\":\"PInt\"," \
	"\"fmName\":\"a\",\"fmDifferential\":false},null]},\"_lName\":\"a\"}," \
	"{\"_lType\":" T_INT                                                   \
	",\"_lOffset\":20,\"_lAlignment\":4,\"_lSize\":4,"                     \
	"\"_lKind\":{\"tag\":\"LKSeqno\",\"contents\":\"BackSeq\"},"           \
	"\"_lName\":\"__ppt_seqno_back\"}]}]}"

/* The description, and the same with a resize tag (--resize-tag): the
 * generated client never reads data_block_hmem, so corotop must attach it
 * static anyway. */
static const char gen_json[] =
	"{\"abi\":\"1.0.0\",\"tags\":[]," GEN_JSON_AFTER_TAGS;
static const char gen_json_resize[] =
	"{\"abi\":\"1.0.0\",\"tags\":[{\"key\":\"resize\",\"value\":\"on\"}]"
	"," GEN_JSON_AFTER_TAGS;
__attribute__((used)) const char *_ppt_json_legacy = gen_json;

static struct ppt_control *ctl;
static struct sample *buf;
static int bufsz, rot;
static atomic_int next_index = 1;
static bool opt_mod, opt_minus1, opt_rotate, opt_attached_only;

static int take_index(void)
{
	return atomic_fetch_add_explicit(&next_index, 1, memory_order_relaxed);
}

static int slot_of(int index)
{
	if (opt_rotate)
		return (rot + index - 1) % bufsz;
	if (opt_minus1)
		return (index - 1) % bufsz;
	return index % bufsz;
}

static int try_attach(void)
{
	int h = __atomic_load_n(&_ppt_hmem_legacy, __ATOMIC_RELAXED);
	struct shmid_ds ds;
	size_t off;

	if (h && !buf) {
		if (shmctl(h, IPC_STAT, &ds) != 0) {
			_ppt_hmem_legacy = 0;
			return 0;
		}
		ctl = shmat(h, NULL, 0);
		if (ctl == (void *)-1) {
			ctl = NULL;
			_ppt_hmem_legacy = 0;
			return 0;
		}
		off = opt_mod ? sizeof(*ctl) + sizeof(*ctl) % FRAME
			      : (sizeof(*ctl) + FRAME - 1) / FRAME * FRAME;
		bufsz = (int)((ds.shm_segsz - off) / FRAME);
		rot = bufsz - ((atomic_load(&next_index) - 1) % bufsz);
		buf = (struct sample *)((char *)ctl + off);
		return 1;
	}
	if (buf && !h) {
		shmdt(ctl);
		ctl = NULL;
		buf = NULL;
	}
	return buf != NULL;
}

static void save(void)
{
	int index = opt_attached_only ? 0 : take_index();
	struct sample *s;

	if (!buf && !__atomic_load_n(&_ppt_hmem_legacy, __ATOMIC_RELAXED))
		return;
	if (!try_attach())
		return;
	if (opt_attached_only)
		index = take_index();
	s = &buf[slot_of(index)];
	__atomic_store_n(&s->seq, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&s->seq_back, 0, __ATOMIC_RELAXED);
	atomic_thread_fence(memory_order_release);
	__atomic_store_n(&s->seq, index, __ATOMIC_RELAXED);
	atomic_thread_fence(memory_order_release);
	s->a = index;
	s->b = 2.5 * index;
	atomic_thread_fence(memory_order_release);
	__atomic_store_n(&s->seq_back, index, __ATOMIC_RELAXED);
}

int main(int argc, char **argv)
{
	char line[128];

	for (int i = 1; i + 1 < argc; i += 2) {
		opt_mod |= !strcmp(argv[i], "--offset") &&
			   !strcmp(argv[i + 1], "mod");
		opt_minus1 |= !strcmp(argv[i], "--slot") &&
			      !strcmp(argv[i + 1], "minus1");
		opt_rotate |= !strcmp(argv[i], "--slot") &&
			      !strcmp(argv[i + 1], "rotate");
		opt_attached_only |= !strcmp(argv[i], "--count") &&
				     !strcmp(argv[i + 1], "attached");
	}
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--resize-tag"))
			_ppt_json_legacy = gen_json_resize;

	prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("ready %d\n", (int)getpid());
	while (fgets(line, sizeof(line), stdin)) {
		unsigned long n = 0;

		if (sscanf(line, "save %lu", &n) == 1) {
			for (unsigned long i = 0; i < n; i++)
				save();
			printf("ok %d\n", atomic_load(&next_index) - 1);
		} else if (!strncmp(line, "state", 5)) {
			printf("ok hmem=%d stat=%d attached=%d\n",
			       _ppt_hmem_legacy,
			       (int)_ppt_stat_legacy.ppt_agent_pid,
			       buf != NULL);
		} else if (!strncmp(line, "quit", 4)) {
			return 0;
		} else {
			puts("err");
		}
	}
	return 0;
}
