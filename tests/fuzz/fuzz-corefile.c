/*
 * fuzz-corefile: the core file reader (src/engine/target/corefile.c) on
 * cores made from arbitrary bytes -- what a damaged, truncated or made-up
 * core can hold.
 *
 * The input is read twice: as a core, raw; and as the recipe of one
 * (fuzzin.h) that is valid where the input says so: an ELF header of
 * this machine, up to FZ_PHDRS program headers (PT_LOAD at fixed,
 * disjoint addresses, PT_NOTE, others), each load's bytes in the file or
 * not (a lying offset or size, a file cut short), and notes of every
 * kind the reader takes -- NT_PRSTATUS, NT_PRPSINFO, NT_AUXV, NT_FILE --
 * with right and wrong sizes and counts, and names that are not "CORE".
 * Nothing may crash or read outside the bytes, and:
 *   - every line of the maps text is a maps line whose range is a
 *     segment's, in increasing order, without overlaps;
 *   - a read inside an honest load's bytes (offset and size inside the
 *     file) gives exactly those bytes; a read outside every load fails;
 *   - the thread count is at most the NT_PRSTATUS notes of right size.
 * No file is opened (corefile_create_bytes): NT_FILE's paths are named
 * only.
 *
 * Built as a libFuzzer target with clang (-Dfuzz=true) and, always, with
 * tests/fuzz/driver.c, which replays a seeded pseudo-random corpus.
 */
#include <elf.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/procfs.h>

#include "fuzzin.h"
#include "engine/target/corefile.h"
#include "engine/target/procfs.h"

#define FZ_PHDRS 6
#define FZ_BASE 0x400000u
#define FZ_STRIDE 0x10000u /* load i lies at FZ_BASE + i * FZ_STRIDE */
#define FZ_MAX (64u << 10) /* bytes of a built core */

#if defined(__x86_64__)
#define FZ_MACHINE EM_X86_64
#else
#define FZ_MACHINE EM_AARCH64
#endif

struct fz_core {
	uint8_t b[FZ_MAX];
	size_t n;
};

static size_t fz_put(struct fz_core *c, const void *p, size_t len)
{
	size_t at = c->n;

	if (len > FZ_MAX - c->n)
		len = FZ_MAX - c->n;
	memcpy(c->b + at, p, len);
	c->n += len;
	return at;
}

/* One note: its name "CORE" (or not), type and desc of len bytes. */
static void fz_note(struct fz_core *c, struct fz_in *in, uint32_t type,
		    const void *desc, size_t len)
{
	uint32_t h[3] = {5, (uint32_t)len, type};
	static const uint8_t zero[4];
	char name[8] = "CORE";

	if (fz_u8(in) % 8 == 0)
		name[0] = 'L'; /* another owner's */
	if (fz_u8(in) % 8 == 0)
		h[1] = fz_u32(in); /* a lying size */
	fz_put(c, h, sizeof(h));
	fz_put(c, name, 8);
	fz_put(c, desc, len);
	fz_put(c, zero, (4 - len % 4) % 4);
}

static void fz_notes(struct fz_core *c, struct fz_in *in, unsigned *prstatus)
{
	unsigned n = fz_u8(in) % 8;

	for (unsigned k = 0; k < n; k++) {
		uint8_t desc[1024];
		size_t len = 0;
		uint32_t type = 0;

		switch (fz_u8(in) % 5) {
		case 0: {
			struct elf_prstatus ps;

			memset(&ps, 0, sizeof(ps));
			ps.pr_pid = (int)fz_u16(in);
			for (size_t r = 0; r < sizeof(ps.pr_reg) / 8; r++)
				ps.pr_reg[r] = FZ_BASE + fz_u16(in);
			len = fz_u8(in) % 4 ? sizeof(ps) : fz_u8(in);
			memcpy(desc, &ps, len < sizeof(ps) ? len : sizeof(ps));
			type = NT_PRSTATUS;
			*prstatus += len == sizeof(ps);
			break;
		}
		case 1: {
			struct elf_prpsinfo pi;

			memset(&pi, fz_u8(in), sizeof(pi));
			len = sizeof(pi);
			memcpy(desc, &pi, len);
			type = NT_PRPSINFO;
			break;
		}
		case 2: {
			uint64_t av[8];

			for (size_t i = 0; i < 8; i += 2) {
				av[i] = fz_u8(in) % 40;
				av[i + 1] = FZ_BASE + fz_u16(in) * 16u;
			}
			len = sizeof(av);
			memcpy(desc, av, len);
			type = NT_AUXV;
			break;
		}
		case 3: { /* NT_FILE: count, page, triples, names */
			uint64_t count = fz_u8(in) % 5, page = 4096;
			size_t at = 16;

			if (fz_u8(in) % 8 == 0)
				count = fz_u64(in); /* lying */
			if (fz_u8(in) % 8 == 0)
				page = fz_u64(in);
			memcpy(desc, &count, 8);
			memcpy(desc + 8, &page, 8);
			for (uint64_t i = 0; i < count && i < 5; i++) {
				uint64_t t[3] = {FZ_BASE + (fz_u8(in) % 8) *
								   FZ_STRIDE,
						 0, fz_u8(in) % 4};

				t[1] = t[0] + (fz_u8(in) % 4 + 1) * 0x1000u;
				memcpy(desc + at, t, 24);
				at += 24;
			}
			for (uint64_t i = 0; i < count && i < 5; i++) {
				size_t l = fz_u8(in) % 12;

				for (size_t j = 0; j < l; j++)
					desc[at++] = (uint8_t)('a' + j);
				if (fz_u8(in) % 8)
					desc[at++] = 0;
			}
			len = at;
			type = NT_FILE;
			break;
		}
		default:
			len = fz_u8(in) % 64;
			for (size_t i = 0; i < len; i++)
				desc[i] = fz_u8(in);
			type = fz_u32(in);
		}
		fz_note(c, in, type, desc, len);
	}
}

/* An honest load: where it lies and where its bytes are. */
struct fz_load {
	uint64_t vaddr, filesz, off;
	bool honest;
};

static void fz_check(const uint8_t *bytes, size_t n, const struct fz_load *ld,
		     size_t nld, unsigned prstatus, struct fz_in *in)
{
	char err[256];
	struct corefile *c = corefile_create_bytes(bytes, n, err, sizeof(err));
	const struct corefile_thread *t;
	uint64_t last_end = 0;
	const char *maps, *p, *end;
	bool honest = true;
	size_t len;

	if (!c)
		return;
	for (size_t k = 0; k < nld; k++)
		honest = honest && ld[k].honest;
	if (corefile_threads(c, &t) > prstatus && nld && honest)
		abort();
	maps = corefile_maps(c, &len);
	if (strlen(maps) != len)
		abort();
	for (p = maps, end = maps + len; p < end;) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		struct procfs_maps_line m;

		if (!nl || !procfs_maps_line(p, (size_t)(nl - p), &m) ||
		    m.start >= m.end || m.start < last_end)
			abort();
		last_end = m.end;
		p = nl + 1;
	}
	for (size_t k = 0; k < nld; k++) {
		uint8_t got[256];
		uint64_t at, l;

		if (!ld[k].honest || !ld[k].filesz)
			continue;
		at = fz_u16(in) % ld[k].filesz;
		l = 1 + fz_u8(in) % 255;
		if (l > ld[k].filesz - at)
			l = ld[k].filesz - at;
		if (!corefile_read(c, ld[k].vaddr + at, got, l) ||
		    memcmp(got, bytes + ld[k].off + at, l))
			abort();
	}
	/* Below every load and above them all: nothing. */
	if (honest && (corefile_read(c, 0x1000, err, 8) ||
		       corefile_read(c, UINT64_MAX - 4, err, 8)))
		abort();
	corefile_destroy(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct fz_core c;
	struct fz_in in = {data, size, 0};
	struct fz_load ld[FZ_PHDRS];
	Elf64_Ehdr eh;
	Elf64_Phdr ph[FZ_PHDRS];
	unsigned nph = fz_u8(&in) % (FZ_PHDRS + 1), nld = 0, prstatus = 0;
	unsigned nnotes = 0;
	bool lied;
	size_t notes_at, notes_len, cut;
	char err[256];

	/* Raw. */
	corefile_destroy(corefile_create_bytes(data, size, err, sizeof(err)));

	/* Built. */
	memset(&eh, 0, sizeof(eh));
	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_type = fz_u8(&in) % 16 ? ET_CORE : ET_EXEC;
	eh.e_machine = FZ_MACHINE;
	eh.e_phoff = sizeof(eh);
	eh.e_phentsize = sizeof(Elf64_Phdr);
	eh.e_phnum = (uint16_t)nph;
	if (fz_u8(&in) % 16 == 0)
		eh.e_phnum = fz_u16(&in); /* lying */
	lied = eh.e_phnum != nph;
	c.n = 0;
	fz_put(&c, &eh, sizeof(eh));
	fz_put(&c, ph, sizeof(ph[0]) * nph); /* filled below */
	notes_at = c.n;
	fz_notes(&c, &in, &prstatus);
	notes_len = c.n - notes_at;
	for (unsigned k = 0; k < nph; k++) {
		Elf64_Phdr *h = &ph[k];
		unsigned kind = fz_u8(&in) % 4;

		memset(h, 0, sizeof(*h));
		if (kind == 3) {
			h->p_type = PT_NOTE;
			nnotes++;
			h->p_offset = notes_at;
			h->p_filesz = notes_len;
			if (fz_u8(&in) % 8 == 0)
				h->p_filesz = fz_u64(&in);
			continue;
		}
		if (kind == 2) {
			h->p_type = fz_u32(&in);
			continue;
		}
		h->p_type = PT_LOAD;
		h->p_flags = fz_u8(&in) & 7u;
		h->p_vaddr = FZ_BASE + k * FZ_STRIDE;
		h->p_memsz = 1 + fz_u16(&in) % (FZ_STRIDE - 1);
		h->p_filesz =
			fz_u8(&in) % 4 ? fz_u16(&in) % (h->p_memsz + 1) : 0;
		h->p_offset = c.n;
		ld[nld] = (struct fz_load){h->p_vaddr, h->p_filesz, c.n, true};
		for (uint64_t i = 0; i < h->p_filesz && c.n < FZ_MAX; i++)
			c.b[c.n++] = fz_u8(&in);
		if (fz_u8(&in) % 8 == 0) { /* a lying one */
			h->p_offset = fz_u64(&in);
			h->p_vaddr = fz_u8(&in) % 2 ? h->p_vaddr - FZ_STRIDE / 2
						    : fz_u64(&in);
			h->p_memsz = fz_u64(&in);
			ld[nld].honest = false;
		}
		if (ld[nld].off + ld[nld].filesz > c.n)
			ld[nld].honest = false;
		nld++;
	}
	memcpy(c.b + sizeof(eh), ph, sizeof(ph[0]) * nph);
	/* Lying loads overlap honest ones, and more headers than were
	 * written are read from anything: then nothing is promised. */
	for (unsigned k = 0; k < nld; k++)
		if (!ld[k].honest || lied)
			for (unsigned j = 0; j < nld; j++)
				ld[j].honest = false;
	/* A core cut short, sometimes. */
	cut = fz_u8(&in) % 8 == 0 ? fz_u16(&in) % (c.n + 1) : c.n;
	for (unsigned k = 0; k < nld; k++)
		if (ld[k].off + ld[k].filesz > cut)
			ld[k].honest = false;
	/* Each PT_NOTE reads the same notes. */
	fz_check(c.b, cut, ld, nld, prstatus * nnotes, &in);
	return 0;
}
