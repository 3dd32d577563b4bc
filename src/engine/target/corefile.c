/*
 * corefile: a process as an ELF core file holds it, for corotop --core.
 *
 * What a core is.  An ELF file of type ET_CORE: one PT_LOAD per mapping
 * of the process (its address range, its permissions, and the bytes the
 * dump kept: p_filesz of them at p_offset, none for code the kernel's
 * coredump_filter or gdb's gcore left out), and PT_NOTE segments:
 *   NT_PRSTATUS  one per thread: its id and registers (pc, sp, fp);
 *   NT_PRPSINFO  the process's id, command and arguments;
 *   NT_AUXV      its auxiliary vector: AT_ENTRY (which file is the
 *                program), AT_SYSINFO_EHDR (the vDSO);
 *   NT_FILE      the file behind each file mapping, and its offset there.
 * Both the kernel's cores and gcore's have all four.
 *
 * Reading memory.  An address is looked up among the PT_LOADs (sorted by
 * address, binary search); the bytes the core holds are read from it
 * (pread), the others, in a file mapping, from the file at the offset
 * NT_FILE gives -- the code of the program and its libraries, which no
 * default dump keeps.  --exe replaces the program's path (the file
 * holding AT_ENTRY) for that.  A file that is no longer there (or not a
 * regular file: a FIFO named by a lying core is never opened) leaves its
 * bytes unreadable; corefile_info counts it.
 *
 * Untrusted input.  The core may be truncated (a dump cut by ulimit -c)
 * or made up: every count and offset is bounded against the file's size
 * and the limits below before it is used, reads are preads (no mapping:
 * no SIGBUS), and notes of the wrong size are ignored.  Nothing it says
 * is written anywhere; the paths it names are only opened for reading,
 * non-blocking, and kept only when they are regular files.
 *
 * The maps text.  The rest of corotop reads a process's mappings as the
 * text of /proc/PID/maps (framecheck, fcsave, ctxscan, the symbolizer):
 * corefile_maps writes the core's in that form.  A core does not say
 * which anonymous mapping is the heap; the first writable one that
 * starts within 32 MiB after the program's last mapping is (the kernel
 * randomizes the heap's start within 32 MiB after it: arch_randomize_brk).
 * Each file gets a made-up device and inode (00:01, its index + 1), as
 * libdwfl skips file lines with inode 0.
 *
 * Immutable once made: any thread may read.
 */
#define _GNU_SOURCE
#include "engine/target/corefile.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/procfs.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/grow.h"

/* Bounds on what a core may claim. */
#define COREFILE_SEGMENTS_MAX (1u << 20) /* PT_LOADs and PT_NOTEs */
#define COREFILE_NOTES_MAX (64u << 20)	 /* bytes of notes, all told */
#define COREFILE_THREADS_MAX (1u << 16)
#define COREFILE_FILES_MAX 4096u	 /* distinct files NT_FILE names */
#define COREFILE_HEAP_SPAN (32ull << 20) /* arch_randomize_brk's range */

#if defined(__x86_64__)
#define COREFILE_MACHINE EM_X86_64
#elif defined(__aarch64__)
#define COREFILE_MACHINE EM_AARCH64
#else
#define COREFILE_MACHINE EM_NONE
#endif

/* One PT_LOAD: a mapping. */
struct corefile_seg {
	uint64_t start, end; /* the address range */
	uint64_t off;	     /* its bytes in the core */
	uint64_t filesz;     /* ... how many (a prefix of the range) */
	uint64_t file_off;   /* its offset in its file (file >= 0) */
	int32_t file;	     /* index in files, or -1: anonymous */
	uint32_t flags;	     /* PF_R, PF_W, PF_X */
};

/* One file mapping NT_FILE names. */
struct corefile_fmap {
	uint64_t start, end, off; /* off: in the file, of start */
	int32_t file;
};

/* One file NT_FILE names. */
struct corefile_file {
	char *path; /* as named (or --exe's, for the program) */
	int fd;	    /* -1: not opened */
};

struct corefile {
	int fd;			  /* the core; -1: bytes */
	const uint8_t *mem;	  /* corefile_create_bytes: the core */
	uint64_t size;		  /* of the core */
	struct corefile_seg *seg; /* sorted by start */
	size_t nseg, seg_cap;
	struct corefile_fmap *fmap; /* NT_FILE's, in its order */
	size_t nfmap, fmap_cap;
	struct corefile_file *files;
	size_t nfiles, files_cap;
	struct corefile_thread *threads;
	size_t nthreads, threads_cap;
	char *maps;
	size_t maps_len;
	uint64_t entry, vdso; /* AT_ENTRY, AT_SYSINFO_EHDR (0: unknown) */
	int32_t prog;	      /* the program's file, or -1 */
	struct corefile_info info;
};

/* ---- the core's bytes -------------------------------------------------- */

/* Exactly n bytes at offset off of an open file. */
static bool file_at(int fd, uint64_t off, void *buf, size_t n)
{
	if (off > (uint64_t)INT64_MAX - n)
		return false;
	while (n) {
		ssize_t got = pread(fd, buf, n, (off_t)off);

		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			return false;
		buf = (char *)buf + got;
		off += (uint64_t)got;
		n -= (size_t)got;
	}
	return true;
}

/* Exactly n bytes at offset off of the core. */
static bool core_at(const struct corefile *c, uint64_t off, void *buf, size_t n)
{
	if (off > c->size || n > c->size - off)
		return false;
	if (c->mem) {
		memcpy(buf, c->mem + off, n);
		return true;
	}
	return file_at(c->fd, off, buf, n);
}

/* ---- the notes ----------------------------------------------------------- */

static void core_prstatus(struct corefile *c, const uint8_t *d, size_t n)
{
	struct elf_prstatus ps;
	struct corefile_thread t = {0};

	if (n != sizeof(ps) || c->nthreads >= COREFILE_THREADS_MAX ||
	    !grow_array((void **)&c->threads, &c->threads_cap, c->nthreads + 1,
			sizeof(*c->threads)))
		return;
	memcpy(&ps, d, sizeof(ps));
	t.tid = ps.pr_pid;
#if defined(__x86_64__)
	/* user_regs_struct's order: rbp 4, rip 16, rsp 19. */
	t.fp = ps.pr_reg[4];
	t.pc = ps.pr_reg[16];
	t.sp = ps.pr_reg[19];
#elif defined(__aarch64__)
	/* x0..x30, sp, pc: fp is x29. */
	t.fp = ps.pr_reg[29];
	t.sp = ps.pr_reg[31];
	t.pc = ps.pr_reg[32];
#endif
	c->threads[c->nthreads++] = t;
}

static void core_prpsinfo(struct corefile *c, const uint8_t *d, size_t n)
{
	struct elf_prpsinfo pi;

	if (n != sizeof(pi))
		return;
	memcpy(&pi, d, sizeof(pi));
	c->info.pid = pi.pr_pid;
	memcpy(c->info.command, pi.pr_fname, sizeof(pi.pr_fname));
	c->info.command[sizeof(pi.pr_fname)] = '\0';
	memcpy(c->info.args, pi.pr_psargs, sizeof(pi.pr_psargs));
	c->info.args[sizeof(pi.pr_psargs)] = '\0';
	/* Printable only: it is shown. */
	for (char *p = c->info.command; *p; p++)
		if (*p < 0x20 || *p > 0x7e)
			*p = '?';
	for (char *p = c->info.args; *p; p++)
		if (*p < 0x20 || *p > 0x7e)
			*p = '?';
}

static void core_auxv(struct corefile *c, const uint8_t *d, size_t n)
{
	for (size_t i = 0; i + 16 <= n; i += 16) {
		uint64_t type, val;

		memcpy(&type, d + i, 8);
		memcpy(&val, d + i + 8, 8);
		if (type == AT_ENTRY)
			c->entry = val;
		else if (type == AT_SYSINFO_EHDR)
			c->vdso = val;
		else if (type == AT_NULL)
			break;
	}
}

/* The index of path among the files (added when new), or -1. */
static int32_t core_file_index(struct corefile *c, const char *path, size_t len)
{
	for (size_t k = 0; k < c->nfiles; k++)
		if (!strncmp(c->files[k].path, path, len) &&
		    !c->files[k].path[len])
			return (int32_t)k;
	if (c->nfiles >= COREFILE_FILES_MAX ||
	    !grow_array((void **)&c->files, &c->files_cap, c->nfiles + 1,
			sizeof(*c->files)))
		return -1;
	c->files[c->nfiles].path = strndup(path, len);
	c->files[c->nfiles].fd = -1;
	if (!c->files[c->nfiles].path)
		return -1;
	return (int32_t)c->nfiles++;
}

/* The index of the first of the first n segments (sorted) that ends
 * after a (n: none). */
static size_t core_seg_from(const struct corefile *c, size_t n, uint64_t a)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (c->seg[mid].end <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The segment holding address a, or NULL. */
static struct corefile_seg *core_seg_at(struct corefile *c, uint64_t a)
{
	size_t lo = 0, hi = c->nseg;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (a < c->seg[mid].start)
			hi = mid;
		else if (a >= c->seg[mid].end)
			lo = mid + 1;
		else
			return &c->seg[mid];
	}
	return NULL;
}

/* NT_FILE: count, page size, count (start, end, page offset) triples,
 * then count NUL-terminated paths: kept as fmap entries, matched with
 * the segments once every note is read (core_file_segments). */
static void core_nt_file(struct corefile *c, const uint8_t *d, size_t n)
{
	uint64_t count, page;
	const char *name;
	size_t left;

	if (n < 16)
		return;
	memcpy(&count, d, 8);
	memcpy(&page, d + 8, 8);
	if (!page || (page & (page - 1)) || page > (1ull << 30) ||
	    count > (n - 16) / 24)
		return;
	name = (const char *)d + 16 + count * 24;
	left = n - 16 - (size_t)count * 24;
	for (uint64_t k = 0; k < count; k++) {
		const char *nul = memchr(name, '\0', left);
		struct corefile_fmap m;
		uint64_t pgoff;
		size_t len;

		if (!nul)
			return;
		len = (size_t)(nul - name);
		memcpy(&m.start, d + 16 + k * 24, 8);
		memcpy(&m.end, d + 16 + k * 24 + 8, 8);
		memcpy(&pgoff, d + 16 + k * 24 + 16, 8);
		m.file = len && m.end > m.start && pgoff <= UINT64_MAX / page
				 ? core_file_index(c, name, len)
				 : -1;
		m.off = pgoff * page;
		if (m.file >= 0 && c->nfmap < COREFILE_SEGMENTS_MAX &&
		    grow_array((void **)&c->fmap, &c->fmap_cap, c->nfmap + 1,
			       sizeof(*c->fmap)))
			c->fmap[c->nfmap++] = m;
		left -= len + 1;
		name = nul + 1;
	}
}

/* One PT_NOTE segment's notes. */
static void core_notes(struct corefile *c, const uint8_t *d, size_t n)
{
	size_t i = 0;

	while (n - i >= 12) {
		uint32_t namesz, descsz, type;
		size_t name_end, desc_end;

		memcpy(&namesz, d + i, 4);
		memcpy(&descsz, d + i + 4, 4);
		memcpy(&type, d + i + 8, 4);
		name_end = i + 12 + (((size_t)namesz + 3) & ~(size_t)3);
		if (namesz > n || name_end > n || descsz > n - name_end)
			return;
		desc_end = name_end + (((size_t)descsz + 3) & ~(size_t)3);
		/* "CORE" notes (LINUX ones are the registers' other sets). */
		if (namesz == 5 && !memcmp(d + i + 12, "CORE", 5)) {
			const uint8_t *desc = d + name_end;

			if (type == NT_PRSTATUS)
				core_prstatus(c, desc, descsz);
			else if (type == NT_PRPSINFO)
				core_prpsinfo(c, desc, descsz);
			else if (type == NT_AUXV)
				core_auxv(c, desc, descsz);
			else if (type == NT_FILE)
				core_nt_file(c, desc, descsz);
		}
		if (desc_end > n)
			return;
		i = desc_end;
	}
}

/* ---- the headers --------------------------------------------------------- */

static int core_seg_cmp(const void *a, const void *b)
{
	const struct corefile_seg *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* The segments sorted by address; of overlapping ones (a made-up core)
 * the first kept, the others dropped. */
static void core_seg_sort(struct corefile *c)
{
	size_t w = 0;

	if (!c->nseg)
		return;
	qsort(c->seg, c->nseg, sizeof(*c->seg), core_seg_cmp);
	for (size_t k = 0; k < c->nseg; k++)
		if (!w || c->seg[k].start >= c->seg[w - 1].end)
			c->seg[w++] = c->seg[k];
	c->nseg = w;
}

/* The program headers: segments sorted, notes read (after the segments:
 * NT_FILE names theirs).  False with a message. */
static bool core_headers(struct corefile *c, char *err, size_t errlen)
{
	Elf64_Ehdr eh;
	Elf64_Phdr *ph = NULL;
	uint64_t phnum, notes = 0;
	size_t cap = 0;
	bool ok = false;

	if (errlen)
		err[0] = '\0';

	if (!core_at(c, 0, &eh, sizeof(eh)) ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG)) {
		snprintf(err, errlen, "not an ELF file");
		return false;
	}
	if (eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_ident[EI_DATA] != ELFDATA2LSB ||
	    eh.e_machine != COREFILE_MACHINE) {
		snprintf(err, errlen,
			 "a core of another machine (ELF class %u, data %u, "
			 "machine %u): corotop reads this machine's only",
			 eh.e_ident[EI_CLASS], eh.e_ident[EI_DATA],
			 eh.e_machine);
		return false;
	}
	if (eh.e_type != ET_CORE) {
		snprintf(err, errlen,
			 "an ELF file but not a core (type %u): a program? "
			 "it goes after --exe",
			 eh.e_type);
		return false;
	}
	phnum = eh.e_phnum;
	if (phnum == PN_XNUM) { /* the count is in section 0's sh_info */
		Elf64_Shdr sh;

		if (!core_at(c, eh.e_shoff, &sh, sizeof(sh))) {
			snprintf(err, errlen, "its section 0 is cut off");
			return false;
		}
		phnum = sh.sh_info;
	}
	if (eh.e_phentsize != sizeof(Elf64_Phdr) || !phnum ||
	    phnum > COREFILE_SEGMENTS_MAX ||
	    !grow_array_fit((void **)&ph, &cap, (size_t)phnum, sizeof(*ph)) ||
	    !core_at(c, eh.e_phoff, ph, (size_t)phnum * sizeof(*ph))) {
		snprintf(err, errlen,
			 "its program headers (%" PRIu64 " at offset %" PRIu64
			 ") are not there: a truncated or damaged core",
			 phnum, (uint64_t)eh.e_phoff);
		free(ph);
		return false;
	}
	for (uint64_t k = 0; k < phnum; k++) {
		const Elf64_Phdr *p = &ph[k];
		struct corefile_seg s;

		if (p->p_type != PT_LOAD || !p->p_memsz ||
		    p->p_vaddr > UINT64_MAX - p->p_memsz)
			continue;
		s = (struct corefile_seg){
			.start = p->p_vaddr,
			.end = p->p_vaddr + p->p_memsz,
			.off = p->p_offset,
			.filesz = p->p_filesz < p->p_memsz ? p->p_filesz
							   : p->p_memsz,
			.file = -1,
			.flags = p->p_flags,
		};
		/* What the file holds of it (a dump cut short holds less). */
		if (s.off > c->size || s.filesz > c->size - s.off) {
			c->info.truncated = true;
			s.filesz = s.off > c->size ? 0 : c->size - s.off;
		}
		c->info.dumped += s.filesz;
		if (!grow_array((void **)&c->seg, &c->seg_cap, c->nseg + 1,
				sizeof(*c->seg)))
			goto out;
		c->seg[c->nseg++] = s;
	}
	core_seg_sort(c);
	for (uint64_t k = 0; k < phnum; k++) {
		const Elf64_Phdr *p = &ph[k];
		uint8_t *d;

		if (p->p_type != PT_NOTE || !p->p_filesz)
			continue;
		if (p->p_filesz > COREFILE_NOTES_MAX - notes)
			break;
		notes += p->p_filesz;
		d = malloc((size_t)p->p_filesz);
		if (!d)
			goto out;
		if (core_at(c, p->p_offset, d, (size_t)p->p_filesz))
			core_notes(c, d, (size_t)p->p_filesz);
		else
			c->info.truncated = true;
		free(d);
	}
	if (!c->nseg) {
		snprintf(err, errlen, "a core with no memory in it");
		goto out;
	}
	ok = true;
out:
	if (!ok && !err[0])
		snprintf(err, errlen, "out of memory reading the core");
	free(ph);
	return ok;
}

/* ---- the files ------------------------------------------------------------
 */

/* The permissions (PF_*) of the bytes at offset off of ELF file fd: its
 * PT_LOAD's that holds them; PF_R when it is no ELF file or none does.
 * A file that is gone (fd < 0) may have held code there: r-x, so that
 * return addresses into it are still believed (their bytes cannot be
 * read: framecheck keeps what it cannot check). */
static uint32_t core_file_flags(int fd, uint64_t off)
{
	Elf64_Ehdr eh;
	Elf64_Phdr ph;

	if (fd < 0)
		return PF_R | PF_X;
	if (!file_at(fd, 0, &eh, sizeof(eh)) ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_phentsize != sizeof(ph) || eh.e_phnum > 256)
		return PF_R;
	for (unsigned k = 0; k < eh.e_phnum; k++) {
		uint64_t lo;

		if (!file_at(fd, eh.e_phoff + k * sizeof(ph), &ph, sizeof(ph)))
			break;
		lo = ph.p_offset & ~(uint64_t)4095;
		if (ph.p_type == PT_LOAD && off >= lo &&
		    off - ph.p_offset < ph.p_filesz)
			return ph.p_flags & (PF_R | PF_W | PF_X);
		if (ph.p_type == PT_LOAD && off >= lo && off < ph.p_offset &&
		    ph.p_filesz)
			return ph.p_flags & (PF_R | PF_W | PF_X);
	}
	return PF_R;
}

/* NT_FILE's mappings onto the segments: a segment inside one is that
 * file's, at its offset; the parts of one that no segment covers (gcore
 * writes no PT_LOAD for the code it leaves out, the kernel an empty one)
 * become segments of their own, holding no bytes of the core, with the
 * permissions the file's program headers give that offset. */
static void core_file_segments(struct corefile *c)
{
	size_t nseg = c->nseg;

	for (size_t k = 0; k < c->nfmap; k++) {
		const struct corefile_fmap *m = &c->fmap[k];
		uint64_t at = m->start;
		size_t i = core_seg_from(c, nseg, m->start);

		/* The first nseg are sorted: the added ones follow. */
		for (; at < m->end; i++) {
			const struct corefile_seg *s =
				i < nseg ? &c->seg[i] : NULL;
			uint64_t gap_end =
				s && s->start < m->end ? s->start : m->end;

			if (gap_end > at &&
			    grow_array((void **)&c->seg, &c->seg_cap,
				       c->nseg + 1, sizeof(*c->seg))) {
				uint64_t off = m->off + (at - m->start);

				c->seg[c->nseg++] = (struct corefile_seg){
					.start = at,
					.end = gap_end,
					.file = m->file,
					.file_off = off,
					.flags = core_file_flags(
						c->files[m->file].fd, off),
				};
			}
			if (!s || s->start >= m->end)
				break;
			if (s->start >= m->start && s->end <= m->end) {
				c->seg[i].file = m->file;
				c->seg[i].file_off =
					m->off + (s->start - m->start);
			}
			at = s->end;
			/* core_seg_from found i: s may begin before m. */
		}
	}
	/* NT_FILE entries that overlap (a made-up core) made overlapping
	 * segments: sorted, the later dropped. */
	core_seg_sort(c);
}

/* The program's file: the one NT_FILE maps at AT_ENTRY, else its
 * lowest file mapping's; named exe from now on when given. */
static void core_name_program(struct corefile *c, const char *exe)
{
	int32_t prog = -1;

	for (size_t k = 0; k < c->nfmap && c->entry; k++)
		if (c->fmap[k].start <= c->entry && c->entry < c->fmap[k].end)
			prog = c->fmap[k].file;
	if (prog < 0) {
		size_t low = 0;

		for (size_t k = 1; k < c->nfmap; k++)
			if (c->fmap[k].start < c->fmap[low].start)
				low = k;
		prog = c->nfmap ? c->fmap[low].file : -1;
	}
	c->prog = prog;
	if (prog < 0)
		return;
	snprintf(c->info.program, sizeof(c->info.program), "%s",
		 c->files[prog].path);
	if (exe) {
		char *p = strdup(exe);

		if (p) {
			free(c->files[prog].path);
			c->files[prog].path = p;
		}
	}
	snprintf(c->info.exe, sizeof(c->info.exe), "%s", c->files[prog].path);
}

/* Every file opened for reading (not in a core made of bytes). */
static void core_open_files(struct corefile *c)
{
	if (c->mem)
		return;
	for (size_t k = 0; k < c->nfiles; k++) {
		struct stat st;
		int fd = open(c->files[k].path,
			      O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);

		if (fd >= 0 && (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))) {
			close(fd);
			fd = -1;
		}
		c->files[k].fd = fd;
		c->info.unreadable += fd < 0;
	}
}

/* ---- the maps text ----------------------------------------------------------
 */

/* The segments as /proc/PID/maps lines. */
static bool core_write_maps(struct corefile *c)
{
	uint64_t prog_end = 0, heap = 0;
	size_t cap = 0;
	int32_t prog = c->prog;

	for (size_t k = 0; k < c->nseg; k++)
		if (prog >= 0 && c->seg[k].file == prog)
			prog_end = c->seg[k].end;
	for (size_t k = 0; prog_end && !heap && k < c->nseg; k++) {
		const struct corefile_seg *s = &c->seg[k];

		if (s->file < 0 && (s->flags & PF_W) && s->start >= prog_end &&
		    s->start - prog_end <= COREFILE_HEAP_SPAN)
			heap = s->start;
	}
	for (size_t k = 0; k < c->nseg; k++) {
		const struct corefile_seg *s = &c->seg[k];
		const char *path = s->file >= 0 ? c->files[s->file].path
				   : s->start == c->vdso ? "[vdso]"
				   : s->start == heap	 ? "[heap]"
							 : "";
		size_t need = strlen(path) + 128;
		int n;

		if (!grow_array((void **)&c->maps, &cap, c->maps_len + need, 1))
			return false;
		n = snprintf(c->maps + c->maps_len, need,
			     "%" PRIx64 "-%" PRIx64 " %c%c%cp %08" PRIx64
			     " %s %d%s%s\n",
			     s->start, s->end, s->flags & PF_R ? 'r' : '-',
			     s->flags & PF_W ? 'w' : '-',
			     s->flags & PF_X ? 'x' : '-',
			     s->file >= 0 ? s->file_off : 0,
			     s->file >= 0 ? "00:01" : "00:00",
			     s->file >= 0 ? s->file + 1 : 0, path[0] ? " " : "",
			     path);
		if (n < 0 || (size_t)n >= need)
			return false;
		c->maps_len += (size_t)n;
	}
	if (!grow_array((void **)&c->maps, &cap, c->maps_len + 1, 1))
		return false;
	c->maps[c->maps_len] = '\0';
	return true;
}

/* ---- the whole -------------------------------------------------------------
 */

static struct corefile *core_make(struct corefile *c, const char *exe,
				  char *err, size_t errlen)
{
	if (errlen)
		err[0] = '\0';
	if (!core_headers(c, err, errlen))
		goto err;
	if (!c->nthreads) {
		snprintf(err, errlen,
			 "a core with no thread in it (no NT_PRSTATUS note)");
		goto err;
	}
	if (!c->info.pid)
		c->info.pid = c->threads[0].tid;
	core_name_program(c, exe);
	core_open_files(c);
	core_file_segments(c);
	if (!core_write_maps(c)) {
		snprintf(err, errlen, "out of memory reading the core");
		goto err;
	}
	c->info.entry = c->entry;
	c->info.threads = (uint32_t)c->nthreads;
	c->info.segments = (uint32_t)c->nseg;
	c->info.files = (uint32_t)c->nfiles;
	if (c->mem)
		c->info.unreadable = (uint32_t)c->nfiles;
	return c;
err:
	corefile_destroy(c);
	return NULL;
}

struct corefile *corefile_create(const char *path, const char *exe, char *err,
				 size_t errlen)
{
	struct corefile *c = calloc(1, sizeof(*c));
	char *abs = NULL;
	struct stat st;

	if (!c) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	c->fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (c->fd < 0 || fstat(c->fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "cannot open the core %s: %s", path,
			 c->fd < 0 ? strerror(errno) : "not a regular file");
		corefile_destroy(c);
		return NULL;
	}
	c->size = (uint64_t)st.st_size;
	/* Its absolute path: the symbols open files by their paths. */
	if (exe && (access(exe, R_OK) < 0 || !(abs = realpath(exe, NULL)))) {
		snprintf(err, errlen, "cannot read the program %s: %s", exe,
			 strerror(errno));
		corefile_destroy(c);
		return NULL;
	}
	c = core_make(c, abs, err, errlen);
	free(abs);
	if (c)
		return c;
	/* core_make's message, with the file named. */
	{
		char why[256];

		snprintf(why, sizeof(why), "%s", err);
		snprintf(err, errlen, "%s: %s", path, why);
	}
	return NULL;
}

struct corefile *corefile_create_bytes(const void *bytes, size_t len, char *err,
				       size_t errlen)
{
	struct corefile *c = calloc(1, sizeof(*c));

	if (!c) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	c->fd = -1;
	c->mem = bytes;
	c->size = len;
	return core_make(c, NULL, err, errlen);
}

void corefile_destroy(struct corefile *c)
{
	if (!c)
		return;
	for (size_t k = 0; k < c->nfiles; k++) {
		if (c->files[k].fd >= 0)
			close(c->files[k].fd);
		free(c->files[k].path);
	}
	if (c->fd >= 0)
		close(c->fd);
	free(c->files);
	free(c->seg);
	free(c->fmap);
	free(c->threads);
	free(c->maps);
	free(c);
}

/* ---- reading
 * ----------------------------------------------------------------- */

bool corefile_read(const struct corefile *c, uint64_t addr, void *buf,
		   size_t len)
{
	if (len && addr > UINT64_MAX - len)
		return false;
	while (len) {
		const struct corefile_seg *s =
			core_seg_at((struct corefile *)c, addr);
		uint64_t in, n;
		bool ok;

		if (!s)
			return false;
		in = addr - s->start;
		n = s->end - addr < len ? s->end - addr : len;
		if (in < s->filesz) {
			if (n > s->filesz - in)
				n = s->filesz - in;
			ok = core_at(c, s->off + in, buf, (size_t)n);
		} else {
			/* Left out of the dump: the file's, when it has one. */
			ok = s->file >= 0 && c->files[s->file].fd >= 0 &&
			     s->file_off <= UINT64_MAX - in &&
			     file_at(c->files[s->file].fd, s->file_off + in,
				     buf, (size_t)n);
		}
		if (!ok)
			return false;
		buf = (char *)buf + n;
		addr += n;
		len -= (size_t)n;
	}
	return true;
}

bool corefile_writable(const struct corefile *c, uint64_t addr, size_t len)
{
	const struct corefile_seg *s = core_seg_at((struct corefile *)c, addr);

	return s && (s->flags & PF_W) && len <= s->end - addr;
}

const char *corefile_maps(const struct corefile *c, size_t *len)
{
	*len = c->maps_len;
	return c->maps;
}

size_t corefile_threads(const struct corefile *c,
			const struct corefile_thread **out)
{
	*out = c->threads;
	return c->nthreads;
}

void corefile_info(const struct corefile *c, struct corefile_info *out)
{
	*out = c->info;
}
