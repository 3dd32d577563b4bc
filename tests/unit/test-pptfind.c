/*
 * pptfind: the ppt buffers of a running process (src/engine/ppt/pptfind.c).
 *
 * The fixture programs of pptfix/ run as children: each prints the
 * run-time addresses of the buffers it defines ("NAME HMEM STAT JSON"),
 * then waits on stdin.  The test scans the child and checks every address
 * exactly, the spelling, the sizes, the defining object and the warnings:
 *   pptfix-pie    PIE: alpha (generator spelling), beta (document spelling),
 *                 gamma from libpptfix.so, epsilon from libpptfix2.so (the
 *                 two ask for one load address: one is moved); half, a
 *                 name too long and a name with a dot are skipped with
 *                 warnings;
 *   pptfix-nopie  ET_EXEC: delta;
 *   pptfix-copy   ET_EXEC with a copy of the library's _ppt_hmem_gamma: the
 *                 copy is the one found, _stat and _json the library's,
 *                 though the library is mapped below the executable;
 *   a copy of pptfix-pie replaced on disk while it runs (deleted, and a
 *                 new file at its path): read through map_files as root,
 *                 else skipped with a warning.
 * Damaged ELF files mapped into this process are read without harm, and
 * the maps-line parser (through PPTFIND_TEST_HOOKS) takes hostile lines.
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
#include <fcntl.h>
#include <inttypes.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "engine/ppt/pptfind.h"

bool pptfind_test_maps_line(const char *line, size_t len, uint64_t *start,
			    uint64_t *end, uint64_t *offset, uint64_t *inode,
			    char *path, size_t pathlen, bool *deleted);

#define FIX_PIE PPTFIX_DIR "/pptfix-pie"
#define FIX_NOPIE PPTFIX_DIR "/pptfix-nopie"
#define FIX_COPY PPTFIX_DIR "/pptfix-copy"
#define NO_SUCH_PID ((pid_t)0x7ffffff0)
#define FIX_MAX 8

struct fix_line {
	char name[32];
	uint64_t hmem, stat, json;
};

struct fixture {
	pid_t pid;
	FILE *out; /* the child's stdout */
	int in_fd; /* the child's stdin */
	struct fix_line line[FIX_MAX];
	size_t n;
};

static void fixture_start(struct fixture *f, const char *path)
{
	int to_child[2], from_child[2];
	char buf[512];

	memset(f, 0, sizeof(*f));
	assert_int_equal(pipe(to_child), 0);
	assert_int_equal(pipe(from_child), 0);
	f->pid = fork();
	assert_true(f->pid >= 0);
	if (f->pid == 0) {
		dup2(to_child[0], 0);
		dup2(from_child[1], 1);
		close(to_child[1]);
		close(from_child[0]);
		setenv("LD_LIBRARY_PATH", PPTFIX_DIR, 1);
		execl(path, path, (char *)NULL);
		_exit(127);
	}
	close(to_child[0]);
	close(from_child[1]);
	f->in_fd = to_child[1];
	f->out = fdopen(from_child[0], "r");
	assert_non_null(f->out);
	while (fgets(buf, sizeof(buf), f->out) && strcmp(buf, "ready\n")) {
		struct fix_line *l = &f->line[f->n];

		assert_true(f->n < FIX_MAX);
		assert_int_equal(sscanf(buf,
					"%31s %" SCNx64 " %" SCNx64 " %" SCNx64,
					l->name, &l->hmem, &l->stat, &l->json),
				 4);
		f->n++;
	}
	assert_true(f->n > 0);
}

static void fixture_stop(struct fixture *f)
{
	int status = 0;

	close(f->in_fd);
	fclose(f->out);
	assert_int_equal(waitpid(f->pid, &status, 0), f->pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static const struct fix_line *fix_find(const struct fixture *f,
				       const char *name)
{
	for (size_t i = 0; i < f->n; i++)
		if (!strcmp(f->line[i].name, name))
			return &f->line[i];
	fail_msg("the fixture printed no line %s", name);
	return NULL;
}

static bool ends_with(const char *s, const char *tail)
{
	size_t n = strlen(s), t = strlen(tail);

	return n >= t && !strcmp(s + n - t, tail);
}

/* The buffer's addresses are the fixture's, exactly. */
static void check_buffer(const struct pptfind_buffer *b,
			 const struct fix_line *l, const char *name,
			 enum pptfind_spelling spelling, const char *object)
{
	assert_string_equal(b->name, name);
	assert_int_equal(b->spelling, spelling);
	assert_true(b->hmem_addr == l->hmem);
	assert_true(b->stat_addr == l->stat);
	assert_true(b->json_addr == l->json);
	assert_true(b->hmem_size == sizeof(int));
	assert_true(b->stat_size == sizeof(int32_t));
	assert_true(b->json_size == sizeof(const char *));
	if (!ends_with(b->object, object))
		fail_msg("%s is defined in %s, not in ...%s", name, b->object,
			 object);
}

static uint16_t elf_type(const char *path)
{
	Elf64_Ehdr h;
	FILE *f = fopen(path, "rb");

	assert_non_null(f);
	assert_int_equal(fread(&h, sizeof(h), 1, f), 1);
	fclose(f);
	return h.e_type;
}

/* The span [lo, hi) of the mappings of a file whose path ends with tail. */
static void map_span(pid_t pid, const char *tail, uint64_t *lo, uint64_t *hi)
{
	char path[64], line[1024];
	FILE *m;

	*lo = UINT64_MAX;
	*hi = 0;
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	m = fopen(path, "r");
	assert_non_null(m);
	while (fgets(line, sizeof(line), m)) {
		char *p;
		uint64_t start = strtoull(line, &p, 16);
		uint64_t end = strtoull(p + 1, NULL, 16);

		line[strcspn(line, "\n")] = '\0';
		if (!ends_with(line, tail))
			continue;
		if (start < *lo)
			*lo = start;
		if (end > *hi)
			*hi = end;
	}
	fclose(m);
	assert_true(*lo < *hi);
}

static void test_pie(void **state)
{
	struct fixture f;
	struct pptfind_result r;
	char err[256];

	(void)state;
	assert_int_equal(elf_type(FIX_PIE), ET_DYN);
	fixture_start(&f, FIX_PIE);
#ifdef PPTFIX_LIB_BASE
	{ /* Both libraries asked for one address: one was moved. */
		uint64_t lo1, hi1, lo2, hi2;

		map_span(f.pid, "/libpptfix.so", &lo1, &hi1);
		map_span(f.pid, "/libpptfix2.so", &lo2, &hi2);
		assert_true(lo1 != PPTFIX_LIB_BASE || lo2 != PPTFIX_LIB_BASE);
	}
#endif
	assert_true(pptfind_scan(f.pid, &r, err, sizeof(err)));
	assert_int_equal(r.n, 4);
	check_buffer(&r.buf[0], fix_find(&f, "alpha"), "alpha",
		     PPTFIND_GENERATOR, "/pptfix-pie");
	check_buffer(&r.buf[1], fix_find(&f, "beta"), "beta", PPTFIND_SPEC,
		     "/pptfix-pie");
	check_buffer(&r.buf[2], fix_find(&f, "epsilon"), "epsilon",
		     PPTFIND_SPEC, "/libpptfix2.so");
	check_buffer(&r.buf[3], fix_find(&f, "gamma"), "gamma",
		     PPTFIND_GENERATOR, "/libpptfix.so");
	assert_true(r.objects >= 4); /* the program, 2 libraries, libc ... */
	assert_non_null(strstr(r.warning, "half"));
	assert_non_null(strstr(r.warning, "_ppt_hmem_half"));
	assert_non_null(strstr(r.warning, "\"toolong_0123456789_"));
	assert_non_null(strstr(r.warning, "\"bad.name\""));
	pptfind_result_finish(&r);
	assert_null(r.buf);
	assert_int_equal(r.n, 0);
	fixture_stop(&f);
}

static void test_nopie(void **state)
{
#ifdef PPTFIX_NOPIE
	struct fixture f;
	struct pptfind_result r;
	char err[256];

	(void)state;
	assert_int_equal(elf_type(FIX_NOPIE), ET_EXEC);
	fixture_start(&f, FIX_NOPIE);
	assert_true(pptfind_scan(f.pid, &r, err, sizeof(err)));
	assert_int_equal(r.n, 1);
	check_buffer(&r.buf[0], fix_find(&f, "delta"), "delta",
		     PPTFIND_GENERATOR, "/pptfix-nopie");
	assert_string_equal(r.warning, "");
	pptfind_result_finish(&r);
	fixture_stop(&f);
#else
	(void)state;
	skip(); /* the compiler makes no fixed-address executables */
#endif
}

static void test_copy_relocation(void **state)
{
#ifdef PPTFIX_NOPIE
	struct fixture f;
	struct pptfind_result r;
	const struct fix_line *l, *lib;
	char err[256];
	uint64_t exe_lo, exe_hi, lib_lo, lib_hi;

	(void)state;
	fixture_start(&f, FIX_COPY);
	l = fix_find(&f, "gamma");
	lib = fix_find(&f, "lib");
	/* The fixture is what it claims: the library uses the executable's
	 * copy, and the rest is the library's. */
	assert_true(lib->hmem == l->hmem);
	map_span(f.pid, "/pptfix-copy", &exe_lo, &exe_hi);
	map_span(f.pid, "/libpptfix.so", &lib_lo, &lib_hi);
	assert_true(l->hmem >= exe_lo && l->hmem < exe_hi);
	assert_true(l->stat >= lib_lo && l->stat < lib_hi);
	assert_true(l->json >= lib_lo && l->json < lib_hi);
#ifdef PPTFIX_LIB_BASE
	/* The library comes first in maps: the executable's copy wins only
	 * because the executable is bound first. */
	assert_true(lib_hi <= exe_lo);
#endif
	assert_true(pptfind_scan(f.pid, &r, err, sizeof(err)));
	assert_int_equal(r.n, 1);
	check_buffer(&r.buf[0], l, "gamma", PPTFIND_GENERATOR, "/libpptfix.so");
	assert_string_equal(r.warning, "");
	pptfind_result_finish(&r);
	fixture_stop(&f);
#else
	(void)state;
	skip(); /* the compiler makes no fixed-address executables */
#endif
}

/* The file at the path is not the one mapped any more. */
static void test_replaced_file(void **state)
{
	char dir[] = "/tmp/pptfind-XXXXXX", path[64], err[256], buf[4096];
	struct fixture f;
	struct pptfind_result r;
	ssize_t got;
	int in, out;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/pptfix-moved", dir);
	in = open(FIX_PIE, O_RDONLY);
	out = open(path, O_WRONLY | O_CREAT | O_EXCL, 0700);
	assert_true(in >= 0 && out >= 0);
	while ((got = read(in, buf, sizeof(buf))) > 0)
		assert_int_equal(write(out, buf, (size_t)got), got);
	close(in);
	close(out);
	fixture_start(&f, path);
	/* A new file (another inode) at the same path. */
	assert_int_equal(unlink(path), 0);
	out = open(path, O_WRONLY | O_CREAT | O_EXCL, 0700);
	assert_true(out >= 0);
	assert_int_equal(write(out, "\177ELF", 4), 4);
	close(out);
	assert_true(pptfind_scan(f.pid, &r, err, sizeof(err)));
	if (geteuid() == 0) { /* map_files is readable */
		assert_int_equal(r.n, 4);
		check_buffer(&r.buf[0], fix_find(&f, "alpha"), "alpha",
			     PPTFIND_GENERATOR, "/pptfix-moved (deleted)");
	} else {
		assert_int_equal(r.n, 2); /* from the libraries */
		assert_string_equal(r.buf[0].name, "epsilon");
		assert_string_equal(r.buf[1].name, "gamma");
		assert_non_null(strstr(r.warning, path));
	}
	pptfind_result_finish(&r);
	fixture_stop(&f);
	unlink(path);
	rmdir(dir);
}

/* Read a whole file into a malloc'd buffer. */
static unsigned char *slurp(const char *path, size_t *len)
{
	struct stat st;
	unsigned char *buf;
	int fd = open(path, O_RDONLY);

	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	buf = malloc((size_t)st.st_size);
	assert_non_null(buf);
	assert_int_equal(read(fd, buf, (size_t)st.st_size), st.st_size);
	close(fd);
	*len = (size_t)st.st_size;
	return buf;
}

/*
 * Damaged copies of libpptfix.so (bytes changed in the headers, the
 * section table or anywhere; or cut short), mapped into this process:
 * pptfind reads each, and must not crash or read out of bounds (ASan).
 */
static void test_corrupt_elf(void **state)
{
	enum { FILES = 48, ROUNDS = 4 };
	char dir[] = "/tmp/pptfind-XXXXXX", path[64], err[256];
	unsigned seed = 7;
	size_t len;
	unsigned char *orig = slurp(PPTFIX_DIR "/libpptfix.so", &len);
	unsigned char *copy = malloc(len);
	Elf64_Ehdr eh;

	(void)state;
	assert_non_null(copy);
	assert_non_null(mkdtemp(dir));
	memcpy(&eh, orig, sizeof(eh));
	for (int round = 0; round < ROUNDS; round++) {
		void *map[FILES];
		size_t maplen[FILES];
		struct pptfind_result r;

		for (int i = 0; i < FILES; i++) {
			size_t n = len, at;
			int fd, flips = 1 + rand_r(&seed) % 8;

			memcpy(copy, orig, len);
			for (int k = 0; k < flips; k++) {
				switch (rand_r(&seed) % 3) {
				case 0: /* the ELF header */
					at = (size_t)rand_r(&seed) % 64;
					break;
				case 1: /* the section header table */
					at = eh.e_shoff +
					     (size_t)rand_r(&seed) %
						     (eh.e_shnum *
						      (size_t)eh.e_shentsize);
					break;
				default:
					at = (size_t)rand_r(&seed) % len;
				}
				if (at < len)
					copy[at] = (unsigned char)rand_r(&seed);
			}
			if (rand_r(&seed) % 4 == 0)
				n = 1 + (size_t)rand_r(&seed) % len;
			snprintf(path, sizeof(path), "%s/bad%d.so", dir, i);
			fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
			assert_true(fd >= 0);
			assert_int_equal(write(fd, copy, n), (ssize_t)n);
			map[i] = mmap(NULL, n, PROT_READ, MAP_PRIVATE, fd, 0);
			assert_true(map[i] != MAP_FAILED);
			maplen[i] = n;
			close(fd);
		}
		assert_true(pptfind_scan(getpid(), &r, err, sizeof(err)));
		pptfind_result_finish(&r);
		for (int i = 0; i < FILES; i++) {
			munmap(map[i], maplen[i]);
			snprintf(path, sizeof(path), "%s/bad%d.so", dir, i);
			unlink(path);
		}
	}
	rmdir(dir);
	free(copy);
	free(orig);
}

static void test_errors(void **state)
{
	struct pptfind_result r;
	char err[256];

	(void)state;
	assert_false(pptfind_scan(NO_SUCH_PID, &r, err, sizeof(err)));
	assert_non_null(strstr(err, "no such process"));
	assert_null(r.buf);
	assert_int_equal(r.n, 0);
	assert_false(pptfind_scan(0, &r, err, sizeof(err)));
	/* This test defines no buffers: success, none found. */
	assert_true(pptfind_scan(getpid(), &r, err, sizeof(err)));
	assert_int_equal(r.n, 0);
	assert_true(r.objects >= 2);
	pptfind_result_finish(&r);
}

/* One line through the parser, from a heap copy of exactly its bytes (so
 * that ASan sees any read past it). */
static bool parse(const char *line, size_t len, uint64_t v[4], char *path,
		  bool *deleted)
{
	char *copy = malloc(len ? len : 1);
	bool ok;

	assert_non_null(copy);
	memcpy(copy, line, len);
	ok = pptfind_test_maps_line(copy, len, &v[0], &v[1], &v[2], &v[3], path,
				    4200, deleted);
	free(copy);
	return ok;
}

#define PARSE(s) parse(s, sizeof(s) - 1, v, path, &deleted)

static void test_maps_line(void **state)
{
	static const char good[] =
		"55d0c0a00000-55d0c0a02000 r-xp 00001000 fd:01 1234567 "
		"               /usr/lib/my lib.so (deleted)";
	char path[4200], *junk;
	uint64_t v[4];
	bool deleted;
	unsigned seed = 1;

	(void)state;
	assert_true(PARSE(good));
	assert_true(v[0] == 0x55d0c0a00000ull && v[1] == 0x55d0c0a02000ull);
	assert_true(v[2] == 0x1000 && v[3] == 1234567);
	assert_string_equal(path, "/usr/lib/my lib.so");
	assert_true(deleted);
	assert_true(PARSE("1000-2000 rw-s 0 00:05 7 /dev/zero"));
	assert_string_equal(path, "/dev/zero");
	assert_false(deleted);
	assert_true(PARSE("1000-2000 ---p 00000000 00:00 0"));
	assert_string_equal(path, "");
	assert_true(PARSE("1000-2000 ---p 00000000 00:00 0 "));
	assert_true(PARSE("1000-2000 r--p 0 00:00 0 [vdso]"));
	assert_string_equal(path, "[vdso]");
	/* The padding is not part of the path: nothing is deleted here. */
	assert_true(PARSE("1000-2000 r--p 0 00:00 0  (deleted)"));
	assert_string_equal(path, "(deleted)");
	assert_false(deleted);

	assert_false(PARSE(""));
	assert_false(PARSE("-"));
	assert_false(PARSE("1000"));
	assert_false(PARSE("1000-"));
	assert_false(PARSE("1000-2000"));
	assert_false(PARSE("1000-2000 "));
	assert_false(PARSE("1000-2000 r-"));
	assert_false(PARSE("1000-2000 rwxq 0 00:00 0 /x"));
	assert_false(PARSE("1000-2000 r--p"));
	assert_false(PARSE("1000-2000 r--p 0"));
	assert_false(PARSE("1000-2000 r--p 0 00"));
	assert_false(PARSE("1000-2000 r--p 0 00:"));
	assert_false(PARSE("1000-2000 r--p 0 00:00"));
	assert_false(PARSE("1000-2000 r--p 0 00:00 "));
	assert_false(PARSE("1000-2000 r--p 0 00:00 x /a"));
	assert_false(PARSE("1000-2000 r--p 0 00:00 12/a"));
	assert_false(PARSE("zz-2000 r--p 0 00:00 0 /a"));
	assert_false(PARSE("2000-1000 r--p 0 00:00 0 /a"));
	assert_false(PARSE("2000-2000 r--p 0 00:00 0 /a"));
	assert_false(PARSE("10000000000000000-20000000000000000 r--p 0 0:0 0"));
	assert_false(
		PARSE("1000-2000 r--p 0 00:00 99999999999999999999999 /a"));
	assert_false(PARSE("1000-2000 r--p 0 100000000:00 0 /a"));
	assert_false(
		parse("1000-2000 r\0-p 0 00:00 0 /a", 26, v, path, &deleted));
	/* A line longer than any path. */
	junk = malloc(8192);
	assert_non_null(junk);
	memcpy(junk, "1000-2000 r--p 0 00:00 1 /", 26);
	memset(junk + 26, 'a', 8192 - 26);
	assert_false(parse(junk, 8192, v, path, &deleted));
	/* Random bytes, and the good line cut and mutated: no crash, no
	 * read past the end (ASan), and a cut line never parses as longer. */
	for (int round = 0; round < 20000; round++) {
		size_t len = (size_t)rand_r(&seed) % (sizeof(good) + 8);

		if (round & 1) {
			for (size_t i = 0; i < len; i++)
				junk[i] = (char)rand_r(&seed);
		} else {
			if (len > sizeof(good) - 1)
				len = sizeof(good) - 1;
			memcpy(junk, good, len);
			if (len)
				junk[(size_t)rand_r(&seed) % len] =
					(char)rand_r(&seed);
		}
		if (parse(junk, len, v, path, &deleted))
			assert_true(strlen(path) <= len && v[1] > v[0]);
	}
	free(junk);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pie),
		cmocka_unit_test(test_nopie),
		cmocka_unit_test(test_copy_relocation),
		cmocka_unit_test(test_replaced_file),
		cmocka_unit_test(test_corrupt_elf),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_maps_line),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
