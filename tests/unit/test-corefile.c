/*
 * corefile: a process as an ELF core file holds it
 * (src/engine/target/corefile.c), on cores this test writes: their
 * threads and process notes; memory read from the core and, past what it
 * holds, from the mapped file (this test's own executable, whose bytes
 * the test reads too); the segments gcore leaves out, made from NT_FILE
 * with the file's own permissions; --exe's path in their place; the heap
 * and the vDSO named in the maps text; a core of more than 65534
 * segments (PN_XNUM); a truncated core; the refusals (no ELF, a program,
 * another machine, no thread).  procmem_open_core reads through it and
 * writes nothing; framecheck_create_core checks with its maps and code.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <sys/procfs.h>
#include <unistd.h>

#include "engine/target/corefile.h"
#include "engine/target/framecheck.h"
#include "engine/target/procmem.h"

#define LOADS_MAX 8

/* A core in the making: headers, notes and loads, then written. */
struct core_spec {
	Elf64_Phdr ph[LOADS_MAX + 1];
	const void *data[LOADS_MAX + 1];
	unsigned n;
	uint8_t notes[8192];
	size_t nnotes;
};

static void spec_note(struct core_spec *c, uint32_t type, const void *desc,
		      size_t len)
{
	uint32_t h[3] = {5, (uint32_t)len, type};

	memcpy(c->notes + c->nnotes, h, 12);
	memcpy(c->notes + c->nnotes + 12, "CORE\0\0\0", 8);
	memcpy(c->notes + c->nnotes + 20, desc, len);
	c->nnotes += 20 + ((len + 3) & ~(size_t)3);
}

static void spec_thread(struct core_spec *c, pid_t tid, uint64_t pc,
			uint64_t sp, uint64_t fp)
{
	struct elf_prstatus ps;

	memset(&ps, 0, sizeof(ps));
	ps.pr_pid = tid;
#if defined(__x86_64__)
	ps.pr_reg[16] = pc;
	ps.pr_reg[19] = sp;
	ps.pr_reg[4] = fp;
#elif defined(__aarch64__)
	ps.pr_reg[32] = pc;
	ps.pr_reg[31] = sp;
	ps.pr_reg[29] = fp;
#endif
	spec_note(c, NT_PRSTATUS, &ps, sizeof(ps));
}

static void spec_load(struct core_spec *c, uint64_t at, uint64_t memsz,
		      const void *bytes, uint64_t filesz, uint32_t flags)
{
	c->ph[c->n] = (Elf64_Phdr){.p_type = PT_LOAD,
				   .p_flags = flags,
				   .p_vaddr = at,
				   .p_memsz = memsz,
				   .p_filesz = filesz};
	c->data[c->n++] = bytes;
}

/* Write it to a temporary file; its path (static). */
static const char *spec_write(struct core_spec *c, bool xnum, size_t cut)
{
	static char path[] = "/tmp/corotop-test-core-XXXXXX";
	Elf64_Ehdr eh;
	Elf64_Shdr sh;
	unsigned nph = c->n + 1;
	uint64_t off;
	int fd;

	strcpy(path, "/tmp/corotop-test-core-XXXXXX");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	memset(&eh, 0, sizeof(eh));
	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_ident[EI_VERSION] = EV_CURRENT;
	eh.e_type = ET_CORE;
#if defined(__x86_64__)
	eh.e_machine = EM_X86_64;
#else
	eh.e_machine = EM_AARCH64;
#endif
	eh.e_phoff = sizeof(eh);
	eh.e_phentsize = sizeof(Elf64_Phdr);
	eh.e_phnum = xnum ? PN_XNUM : (uint16_t)nph;
	off = sizeof(eh) + nph * sizeof(Elf64_Phdr);
	if (xnum) {
		eh.e_shoff = off;
		eh.e_shentsize = sizeof(sh);
		eh.e_shnum = 1;
		off += sizeof(sh);
	}
	/* The notes, then each load's bytes. */
	c->ph[c->n] = (Elf64_Phdr){
		.p_type = PT_NOTE, .p_offset = off, .p_filesz = c->nnotes};
	off += c->nnotes;
	for (unsigned k = 0; k < c->n; k++) {
		c->ph[k].p_offset = off;
		off += c->ph[k].p_filesz;
	}
	assert_int_equal(pwrite(fd, &eh, sizeof(eh), 0), sizeof(eh));
	assert_int_equal(
		pwrite(fd, c->ph, nph * sizeof(Elf64_Phdr), sizeof(eh)),
		nph * sizeof(Elf64_Phdr));
	if (xnum) {
		memset(&sh, 0, sizeof(sh));
		sh.sh_info = nph;
		assert_int_equal(pwrite(fd, &sh, sizeof(sh), eh.e_shoff),
				 sizeof(sh));
	}
	assert_int_equal(pwrite(fd, c->notes, c->nnotes, c->ph[c->n].p_offset),
			 c->nnotes);
	for (unsigned k = 0; k < c->n; k++)
		if (c->ph[k].p_filesz)
			assert_int_equal(pwrite(fd, c->data[k],
						c->ph[k].p_filesz,
						c->ph[k].p_offset),
					 c->ph[k].p_filesz);
	if (cut)
		assert_int_equal(ftruncate(fd, (off_t)cut), 0);
	close(fd);
	return path;
}

/* NT_FILE of one file: its mappings [start, end) at page offsets. */
static void spec_files(struct core_spec *c, const char *path,
		       const uint64_t (*m)[3], unsigned n)
{
	uint8_t d[4096];
	uint64_t count = n, page = 4096;
	size_t at = 16;

	memcpy(d, &count, 8);
	memcpy(d + 8, &page, 8);
	for (unsigned k = 0; k < n; k++, at += 24)
		memcpy(d + at, m[k], 24);
	for (unsigned k = 0; k < n; k++) {
		memcpy(d + at, path, strlen(path) + 1);
		at += strlen(path) + 1;
	}
	spec_note(c, NT_FILE, d, at);
}

/* This test's executable: its path, and the file offset and size of
 * its executable PT_LOAD (page-aligned). */
static void own_code(char *path, size_t n, uint64_t *off, uint64_t *size)
{
	Elf64_Ehdr eh;
	Elf64_Phdr ph;
	ssize_t len = readlink("/proc/self/exe", path, n - 1);
	int fd;

	assert_true(len > 0);
	path[len] = '\0';
	fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, &eh, sizeof(eh), 0), sizeof(eh));
	*size = 0;
	for (unsigned k = 0; k < eh.e_phnum; k++) {
		assert_int_equal(pread(fd, &ph, sizeof(ph),
				       (off_t)(eh.e_phoff + k * sizeof(ph))),
				 sizeof(ph));
		if (ph.p_type == PT_LOAD && (ph.p_flags & PF_X)) {
			*off = ph.p_offset & ~4095ull;
			*size = (ph.p_offset + ph.p_filesz - *off + 4095) &
				~4095ull;
			break;
		}
	}
	close(fd);
	assert_true(*size > 0);
}

static uint8_t stack_bytes[8192], heap_bytes[4096], vdso_bytes[4096];

static void test_threads_and_notes(void **state)
{
	struct core_spec c = {0};
	struct elf_prpsinfo pi;
	const struct corefile_thread *t;
	struct corefile_info info;
	char err[256];
	struct corefile *cf;
	const char *path;

	(void)state;
	spec_thread(&c, 4242, 0x1111, 0x7000, 0x7100);
	spec_thread(&c, 4243, 0x2222, 0x7800, 0);
	memset(&pi, 0, sizeof(pi));
	pi.pr_pid = 4242;
	strcpy(pi.pr_fname, "server\x01");
	strcpy(pi.pr_psargs, "server --port 80");
	spec_note(&c, NT_PRPSINFO, &pi, sizeof(pi));
	spec_load(&c, 0x6000, 0x2000, stack_bytes, 0x2000, PF_R | PF_W);
	path = spec_write(&c, false, 0);
	cf = corefile_create(path, NULL, err, sizeof(err));
	unlink(path);
	assert_non_null(cf);
	assert_int_equal(corefile_threads(cf, &t), 2);
	assert_int_equal(t[0].tid, 4242);
	assert_int_equal(t[0].pc, 0x1111);
	assert_int_equal(t[0].sp, 0x7000);
	assert_int_equal(t[0].fp, 0x7100);
	assert_int_equal(t[1].tid, 4243);
	assert_int_equal(t[1].sp, 0x7800);
	corefile_info(cf, &info);
	assert_int_equal(info.pid, 4242);
	assert_string_equal(info.command, "server?"); /* printable only */
	assert_string_equal(info.args, "server --port 80");
	assert_int_equal(info.threads, 2);
	assert_int_equal(info.dumped, 0x2000);
	assert_false(info.truncated);
	corefile_destroy(cf);
}

static void test_memory_and_files(void **state)
{
	struct core_spec c = {0};
	char exe[4096], err[256], line[512];
	uint64_t off, size, auxv[6];
	uint8_t got[64], want[64], page0[4096];
	struct corefile_info info;
	const char *maps;
	struct corefile *cf;
	struct procmem pm;
	const char *path;
	size_t len;
	int fd;

	(void)state;
	own_code(exe, sizeof(exe), &off, &size);
	fd = open(exe, O_RDONLY);
	assert_int_equal(pread(fd, page0, sizeof(page0), 0), sizeof(page0));
	assert_int_equal(pread(fd, want, sizeof(want), (off_t)off + 100),
			 sizeof(want));
	close(fd);
	for (size_t i = 0; i < sizeof(stack_bytes); i++)
		stack_bytes[i] = (uint8_t)(i * 7);
	spec_thread(&c, 7, 0x400000 + off + 16, 0x7ff000001000, 0);
	/* The program: its first page dumped (the ELF header), its code
	 * left out entirely (gcore writes no load for it). */
	{
		const uint64_t m[2][3] = {
			{0x400000, 0x401000, 0},
			{0x400000 + off, 0x400000 + off + size, off / 4096}};

		spec_files(&c, exe, m, 2);
	}
	auxv[0] = AT_ENTRY;
	auxv[1] = 0x400000 + off + 8;
	auxv[2] = AT_SYSINFO_EHDR;
	auxv[3] = 0x7ff0000f0000;
	auxv[4] = AT_NULL;
	auxv[5] = 0;
	spec_note(&c, NT_AUXV, auxv, sizeof(auxv));
	spec_load(&c, 0x400000, 0x1000, page0, 0x1000, PF_R);
	/* The heap, 1 MiB after the program's end; a stack; the vDSO. */
	spec_load(&c, 0x400000 + off + size + 0x100000, 0x1000, heap_bytes,
		  0x1000, PF_R | PF_W);
	spec_load(&c, 0x7ff000000000, 0x2000, stack_bytes, 0x2000, PF_R | PF_W);
	spec_load(&c, 0x7ff0000f0000, 0x1000, vdso_bytes, 0x1000, PF_R | PF_X);
	path = spec_write(&c, false, 0);
	cf = corefile_create(path, NULL, err, sizeof(err));
	unlink(path);
	assert_non_null(cf);
	corefile_info(cf, &info);
	assert_string_equal(info.program, exe);
	assert_string_equal(info.exe, exe);
	assert_int_equal(info.entry, 0x400000 + off + 8);
	assert_int_equal(info.files, 1);
	assert_int_equal(info.unreadable, 0);
	/* From the core, across two loads' boundary not: one load. */
	assert_true(corefile_read(cf, 0x7ff000000ff0, got, 32));
	assert_memory_equal(got, stack_bytes + 0xff0, 32);
	/* The code, from the file. */
	assert_true(corefile_read(cf, 0x400000 + off + 100, got, 64));
	assert_memory_equal(got, want, 64);
	/* Nothing between the loads, nor past the stack. */
	assert_false(corefile_read(cf, 0x7ff000002000 - 8, got, 16));
	assert_false(corefile_read(cf, 0x200000, got, 8));
	maps = corefile_maps(cf, &len);
	assert_int_equal(strlen(maps), len);
	snprintf(line, sizeof(line), "%lx-%lx r-xp %08lx 00:01 1 %s\n",
		 (unsigned long)(0x400000 + off),
		 (unsigned long)(0x400000 + off + size), (unsigned long)off,
		 exe);
	assert_non_null(strstr(maps, line));
	snprintf(line, sizeof(line), "%lx-%lx rw-p 00000000 00:00 0 [heap]\n",
		 (unsigned long)(0x400000 + off + size + 0x100000),
		 (unsigned long)(0x400000 + off + size + 0x101000));
	assert_non_null(strstr(maps, line));
	assert_non_null(strstr(maps, "7ff0000f0000-7ff0000f1000 r-xp "
				     "00000000 00:00 0 [vdso]\n"));
	assert_non_null(strstr(maps, "7ff000000000-7ff000002000 rw-p "
				     "00000000 00:00 0\n"));
	/* procmem on it: reads, never writes. */
	procmem_open_core(&pm, cf);
	assert_int_equal(pm.pid, 7);
	assert_true(
		procmem_read(&pm, 0x7ff000000010, got, 8, err, sizeof(err)));
	assert_memory_equal(got, stack_bytes + 0x10, 8);
	assert_false(
		procmem_write(&pm, 0x7ff000000010, got, 8, err, sizeof(err)));
	assert_non_null(strstr(err, "read only"));
	assert_true(procmem_writable(&pm, 0x7ff000000010, 8));
	assert_false(procmem_writable(&pm, 0x400000, 8));
	assert_int_equal(procmem_seize(&pm), -EPERM);
	/* framecheck on it: the code is the program's. */
	{
		struct framecheck *fc = framecheck_create_core(cf);

		assert_non_null(fc);
		assert_int_equal(framecheck_frame(fc, 0x200000, true),
				 FRAMECHECK_NOT_CODE);
		assert_int_equal(
			framecheck_frame(fc, 0x400000 + off + 16, true),
			FRAMECHECK_OK);
		framecheck_destroy(fc);
	}
	corefile_destroy(cf);

	/* --exe: the program's path replaced; the core's kept as program. */
	path = spec_write(&c, false, 0);
	cf = corefile_create(path, "/bin/sh", err, sizeof(err));
	unlink(path);
	assert_non_null(cf);
	corefile_info(cf, &info);
	assert_string_equal(info.program, exe);
	assert_string_not_equal(info.exe, exe);
	assert_non_null(strstr(corefile_maps(cf, &len), info.exe));
	assert_null(strstr(corefile_maps(cf, &len), exe));
	corefile_destroy(cf);
	/* A --exe that is not there: refused, by name. */
	path = spec_write(&c, false, 0);
	assert_null(corefile_create(path, "/nonexistent", err, sizeof(err)));
	unlink(path);
	assert_non_null(strstr(err, "/nonexistent"));
}

static void test_xnum_and_truncated(void **state)
{
	struct core_spec c = {0};
	struct corefile_info info;
	char err[256];
	uint8_t got[16];
	struct corefile *cf;
	const char *path;

	(void)state;
	for (size_t i = 0; i < sizeof(stack_bytes); i++)
		stack_bytes[i] = (uint8_t)(i * 13 + 1);
	spec_thread(&c, 9, 0, 0x10000, 0);
	spec_load(&c, 0x10000, 0x2000, stack_bytes, 0x2000, PF_R | PF_W);
	/* The count in section 0. */
	path = spec_write(&c, true, 0);
	cf = corefile_create(path, NULL, err, sizeof(err));
	unlink(path);
	assert_non_null(cf);
	assert_true(corefile_read(cf, 0x11000, got, 16));
	assert_memory_equal(got, stack_bytes + 0x1000, 16);
	corefile_destroy(cf);
	/* Cut 0x1000 bytes into the load: what is there reads, the rest
	 * not, and the core says it was truncated. */
	path = spec_write(&c, false, 0);
	{
		size_t at = (size_t)c.ph[0].p_offset;

		unlink(path);
		path = spec_write(&c, false, at + 0x1000);
	}
	cf = corefile_create(path, NULL, err, sizeof(err));
	unlink(path);
	assert_non_null(cf);
	corefile_info(cf, &info);
	assert_true(info.truncated);
	assert_int_equal(info.dumped, 0x1000);
	assert_true(corefile_read(cf, 0x10ff0, got, 16));
	assert_memory_equal(got, stack_bytes + 0xff0, 16);
	assert_false(corefile_read(cf, 0x10ff8, got, 16));
	corefile_destroy(cf);
}

static void test_refusals(void **state)
{
	struct core_spec c = {0};
	char exe[4096], err[256];
	const char *path;
	uint64_t off, size;

	(void)state;
	own_code(exe, sizeof(exe), &off, &size);
	assert_null(corefile_create(exe, NULL, err, sizeof(err)));
	assert_non_null(strstr(err, "not a core"));
	assert_null(corefile_create("/etc/hostname", NULL, err, sizeof(err)));
	assert_non_null(strstr(err, "not an ELF file"));
	assert_null(
		corefile_create("/nonexistent/core", NULL, err, sizeof(err)));
	assert_non_null(strstr(err, "/nonexistent/core"));
	assert_null(corefile_create("/dev/null", NULL, err, sizeof(err)));
	assert_non_null(strstr(err, "not a regular file"));
	/* No thread. */
	spec_load(&c, 0x10000, 0x1000, stack_bytes, 0x1000, PF_R);
	path = spec_write(&c, false, 0);
	assert_null(corefile_create(path, NULL, err, sizeof(err)));
	unlink(path);
	assert_non_null(strstr(err, "no thread"));
	/* Another machine. */
	spec_thread(&c, 1, 0, 0, 0);
	path = spec_write(&c, false, 0);
	{
		int fd = open(path, O_WRONLY);
		uint16_t m = EM_RISCV;

		assert_int_equal(
			pwrite(fd, &m, 2, offsetof(Elf64_Ehdr, e_machine)), 2);
		close(fd);
	}
	assert_null(corefile_create(path, NULL, err, sizeof(err)));
	unlink(path);
	assert_non_null(strstr(err, "another machine"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_threads_and_notes),
		cmocka_unit_test(test_memory_and_files),
		cmocka_unit_test(test_xnum_and_truncated),
		cmocka_unit_test(test_refusals),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
