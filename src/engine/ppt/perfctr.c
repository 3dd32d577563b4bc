/*
 * perfctr: counter names to perf_event_attr, and whether the kernel lets
 * us count them.
 *
 * The attributes count user space only (exclude_kernel, exclude_hv), which
 * perf_event_paranoid 2 -- the usual default -- allows for one's own
 * processes.  Each counter is tried on the target with perf_event_open
 * before it goes into a control block, so a refusal is reported here with
 * the reason (a virtual machine without hardware counters says ENOENT, a
 * paranoid setting EACCES) and the rest keeps working: the client only
 * ever sees counters that opened here.
 */
#define _GNU_SOURCE
#include "engine/ppt/perfctr.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The control block's slots are PERF_ATTR_SIZE_VER7 (128) bytes, whatever
 * size the installed headers give perf_event_attr (136 from Linux 6.3):
 * attributes are built and read through these two copies, and say size 128
 * to the kernel, which accepts any size it knows. */
#define PERFCTR_COPY                                                           \
	(sizeof(struct perf_event_attr) < PPT_PERF_ATTR_SIZE                   \
		 ? sizeof(struct perf_event_attr)                              \
		 : PPT_PERF_ATTR_SIZE)

struct perfctr_kind {
	const char *name;
	uint32_t type;
	uint64_t config;
};

static const struct perfctr_kind perfctr_kinds[] = {
	{"cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES},
	{"instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS},
	{"cache-references", PERF_TYPE_HARDWARE,
	 PERF_COUNT_HW_CACHE_REFERENCES},
	{"cache-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES},
	{"branches", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS},
	{"branch-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES},
	{"ref-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_REF_CPU_CYCLES},
	{"task-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK},
	{"cpu-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK},
	{"page-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS},
	{"minor-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MIN},
	{"major-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MAJ},
	{"context-switches", PERF_TYPE_SOFTWARE,
	 PERF_COUNT_SW_CONTEXT_SWITCHES},
	{"cpu-migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS},
};

#define PERFCTR_KINDS (sizeof(perfctr_kinds) / sizeof(perfctr_kinds[0]))

const char *perfctr_known(void)
{
	static char list[512];

	if (!list[0]) {
		size_t off = 0;

		for (size_t i = 0; i < PERFCTR_KINDS && off < sizeof(list); i++)
			off += (size_t)snprintf(list + off, sizeof(list) - off,
						"%s%s", i ? "," : "",
						perfctr_kinds[i].name);
	}
	return list;
}

static void perfctr_attr(const struct perfctr_kind *k, uint8_t *out)
{
	struct perf_event_attr a;

	memset(&a, 0, sizeof(a));
	a.size = PERFCTR_COPY;
	a.type = k->type;
	a.config = k->config;
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	memset(out, 0, PPT_PERF_ATTR_SIZE);
	memcpy(out, &a, PERFCTR_COPY);
}

bool perfctr_parse(const char *list, struct perfctr_set *out, char *err,
		   size_t errlen)
{
	const char *p = list;

	memset(out, 0, sizeof(*out));
	while (*p) {
		size_t len = strcspn(p, ",");
		const struct perfctr_kind *k = NULL;

		for (size_t i = 0; i < PERFCTR_KINDS; i++)
			if (strlen(perfctr_kinds[i].name) == len &&
			    !strncmp(perfctr_kinds[i].name, p, len))
				k = &perfctr_kinds[i];
		if (!k) {
			snprintf(err, errlen,
				 "unknown counter '%.*s' (known: %s)",
				 (int)(len < 40 ? len : 40), p,
				 perfctr_known());
			return false;
		}
		if (out->n == PPT_MAX_COUNTERS) {
			snprintf(err, errlen,
				 "at most %u counters (ppt's control block "
				 "has room for %u)",
				 PPT_MAX_COUNTERS, PPT_MAX_COUNTERS);
			return false;
		}
		snprintf(out->names[out->n], PERFCTR_NAME_MAX, "%s", k->name);
		perfctr_attr(k, out->attrs[out->n]);
		out->n++;
		p += len;
		if (*p == ',')
			p++;
	}
	if (!out->n) {
		snprintf(err, errlen, "no counter named (known: %s)",
			 perfctr_known());
		return false;
	}
	return true;
}

static const char *perfctr_why(int err)
{
	switch (err) {
	case ENOENT:
	case EOPNOTSUPP:
		return "this machine has no such counter (virtual machines "
		       "often have no hardware counters)";
	case EACCES:
	case EPERM:
		return "not permitted (see /proc/sys/kernel/"
		       "perf_event_paranoid; 2 or less allows counting your "
		       "own processes in user space)";
	case ENOSYS:
		return "this kernel has no perf events";
	default:
		return strerror(err);
	}
}

void perfctr_probe(struct perfctr_set *s, pid_t pid)
{
	uint32_t kept = 0;
	size_t off = 0;

	s->refused[0] = '\0';
	for (uint32_t i = 0; i < s->n; i++) {
		struct perf_event_attr a;
		int fd;

		memset(&a, 0, sizeof(a));
		memcpy(&a, s->attrs[i], PERFCTR_COPY);
		fd = (int)syscall(SYS_perf_event_open, &a, pid, -1, -1,
				  PERF_FLAG_FD_CLOEXEC);
		if (fd >= 0) {
			close(fd);
			if (kept != i) {
				memcpy(s->names[kept], s->names[i],
				       PERFCTR_NAME_MAX);
				memcpy(s->attrs[kept], s->attrs[i],
				       PPT_PERF_ATTR_SIZE);
			}
			kept++;
			continue;
		}
		if (off < sizeof(s->refused))
			off += (size_t)snprintf(
				s->refused + off, sizeof(s->refused) - off,
				"%scounter %s refused: %s", off ? "; " : "",
				s->names[i], perfctr_why(errno));
	}
	s->n = kept;
}
