/*
 * symbolizer: addresses of a live process as names
 * (src/engine/symbols/symbolizer.c).
 *
 * The fixture programs of symfix/ (one PIE, one non-PIE, both linking
 * libsymfix.so and a function built without debug info) run as children:
 * each prints the addresses of its functions and the source line of each
 * function's name, then waits on stdin.  The test symbolizes those
 * addresses in the child's pid and checks names, offsets, modules, files,
 * lines and the exact text of symbolizer_format; then closes the child's
 * stdin and checks that lookups in the exited process fail cleanly.
 *
 * symfix-coro, a C++20 program, runs the same way: its coroutine (the
 * ramp, the resume function, a co_await in the body), a template and a
 * lambda must come out demangled, the coroutine's parts as the coroutine.
 *
 * Each knows its main executable (the module of its entry point): the
 * program's functions are `program`, the library's not.  symfix-stripped
 * (symfix-pie with no symbol table and no DWARF) is named through the
 * debug file its .gnu_debuglink names, beside it.
 *
 * A fixture that exits before its symbolizer is made (a short program's
 * final snapshot): made from the maps keptmaps.c kept while it ran, it
 * names the functions of the exited child, reaped or a zombie, as a
 * symbolizer made in life does; made without them, it can not.
 *
 * A fixture that exits while it is read, at a set point (procfs's test
 * hooks, no timing): after the first page of its maps (spread over
 * several pages: its libraries' lines come in a later read, which then
 * says end of file), the symbolizer names its library from the maps kept
 * before, and a keep takes the copy its probe wrote, not the part it
 * read; and right before its first file is opened, a symbolizer made
 * with no maps kept opens its files by their paths.
 *
 * The rest runs on this process itself: unmapped addresses, the vDSO,
 * the cache (identical results, bounded size), a library dlopen'ed after
 * the symbolizer was created, and the refusals (another uid's process, no
 * such process).
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

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <sys/auxv.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/clock.h"
#include "engine/symbols/keptmaps.h"
#include "engine/symbols/symbolizer.h"
#include "engine/target/procfs.h"

#define FIX_PIE SYMFIX_DIR "/symfix-pie"
#define FIX_NOPIE SYMFIX_DIR "/symfix-nopie"
#define FIX_LIB SYMFIX_DIR "/libsymfix.so"

/*
 * The fixture gives the line of each function's name.  Optimized code puts
 * even the entry on a body line (the line table has several rows at the
 * entry address and, like addr2line, libdw answers with the last), so a
 * plausible line is one of the first few of the function.
 */
#define BODY_SLACK 8

enum fix_fn { FN_MAIN, FN_STATIC, FN_NODEBUG, FN_LIB, FN_COUNT };

static const char *const fix_keys[FN_COUNT] = {
	[FN_MAIN] = "main",
	[FN_STATIC] = "static",
	[FN_NODEBUG] = "nodebug",
	[FN_LIB] = "lib",
};

static const char *const fix_names[FN_COUNT] = {
	[FN_MAIN] = "symfix_main_func",
	[FN_STATIC] = "symfix_static_func",
	[FN_NODEBUG] = "symfix_nodebug_func",
	[FN_LIB] = "symfix_lib_func",
};

struct fixture {
	pid_t pid;
	FILE *out; /* the child's stdout */
	int in_fd; /* the child's stdin */
	uint64_t addr[FN_COUNT];
	int line[FN_COUNT];
};

/* Start the fixture program at path (with arg unless NULL), its stdin
 * and stdout on pipes. */
static void fixture_spawn(struct fixture *f, const char *path, const char *arg)
{
	int to_child[2], from_child[2];

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
		execl(path, path, arg, (char *)NULL);
		_exit(127);
	}
	close(to_child[0]);
	close(from_child[1]);
	f->in_fd = to_child[1];
	f->out = fdopen(from_child[0], "r");
	assert_non_null(f->out);
}

/* The fixture's next line before its "ready"; false at "ready" or EOF. */
static bool fixture_line(struct fixture *f, char *buf, int n)
{
	return fgets(buf, n, f->out) && strcmp(buf, "ready\n");
}

static void fixture_start_arg(struct fixture *f, const char *path,
			      const char *arg)
{
	char buf[256];
	unsigned seen = 0;

	fixture_spawn(f, path, arg);
	while (fixture_line(f, buf, sizeof(buf))) {
		char key[32];
		uint64_t addr;
		int line;

		assert_int_equal(
			sscanf(buf, "%31s %" SCNx64 " %d", key, &addr, &line),
			3);
		for (int i = 0; i < FN_COUNT; i++)
			if (!strcmp(key, fix_keys[i])) {
				f->addr[i] = addr;
				f->line[i] = line;
				seen |= 1u << i;
			}
	}
	assert_int_equal(seen, (1u << FN_COUNT) - 1);
}

static void fixture_start(struct fixture *f, const char *path)
{
	fixture_start_arg(f, path, NULL);
}

/* EOF on its stdin: the child exits.  Returns its exit status. */
static int fixture_stop(struct fixture *f)
{
	int status = 0;

	close(f->in_fd);
	fclose(f->out);
	assert_int_equal(waitpid(f->pid, &status, 0), f->pid);
	return status;
}

/* Start of the first mapping of a file whose path ends in `/name`. */
static uint64_t map_start(pid_t pid, const char *name)
{
	char path[64], line[512], tail[256];
	uint64_t start = 0;
	FILE *m;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	snprintf(tail, sizeof(tail), "/%s\n", name);
	m = fopen(path, "r");
	assert_non_null(m);
	while (fgets(line, sizeof(line), m)) {
		size_t n = strlen(line), t = strlen(tail);

		if (n > t && !strcmp(line + n - t, tail)) {
			start = strtoull(line, NULL, 16);
			break;
		}
	}
	fclose(m);
	assert_true(start != 0);
	return start;
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

static void check_fn(struct symbolizer *s, const struct fixture *f,
		     enum fix_fn fn, const char *module, const char *file)
{
	struct symbol y, y5;
	char buf[256], want[256];

	assert_true(symbolizer_lookup(s, f->addr[fn], &y));
	assert_string_equal(y.module, module);
	assert_non_null(y.function);
	assert_string_equal(y.function, fix_names[fn]);
	assert_true(y.offset == 0);

	assert_true(symbolizer_lookup(s, f->addr[fn] + 5, &y5));
	assert_string_equal(y5.module, module);
	assert_string_equal(y5.function, fix_names[fn]);
	assert_true(y5.offset == 5);
	symbolizer_format(s, f->addr[fn] + 5, buf, sizeof(buf));
	if (!file) {
		assert_null(y.file);
		assert_int_equal(y.line, 0);
		assert_null(y5.file);
		snprintf(want, sizeof(want), "%s+0x5", fix_names[fn]);
		assert_string_equal(buf, want);
		return;
	}
	assert_non_null(y.file);
	assert_string_equal(y.file, file);
	assert_in_range(y.line, f->line[fn], f->line[fn] + BODY_SLACK);
	assert_non_null(y5.file);
	assert_string_equal(y5.file, file);
	assert_in_range(y5.line, f->line[fn], f->line[fn] + BODY_SLACK);
	snprintf(want, sizeof(want), "%s+0x5 (%s:%d)", fix_names[fn], file,
		 y5.line);
	assert_string_equal(buf, want);
	symbolizer_format(s, f->addr[fn], buf, sizeof(buf));
	snprintf(want, sizeof(want), "%s+0x0 (%s:%d)", fix_names[fn], file,
		 y.line);
	assert_string_equal(buf, want);
}

/* The main executable's functions are the program's, the library's not. */
static void check_program(struct symbolizer *s, const struct fixture *f)
{
	struct symbol y;

	assert_true(symbolizer_has_program(s));
	assert_true(symbolizer_lookup(s, f->addr[FN_MAIN], &y));
	assert_true(y.program);
	assert_true(symbolizer_lookup(s, f->addr[FN_NODEBUG], &y));
	assert_true(y.program);
	assert_true(symbolizer_lookup(s, f->addr[FN_LIB], &y));
	assert_false(y.program);
}

static void run_fixture(const char *path, const char *exe_name,
			uint16_t want_type)
{
	struct fixture f;
	struct symbolizer *s, *fresh;
	struct symbol y;
	char err[256], buf[256];
	uint64_t lib_base;

	assert_int_equal(elf_type(path), want_type);
	fixture_start(&f, path);
	s = symbolizer_create(f.pid, err, sizeof(err));
	if (!s)
		fail_msg("symbolizer_create(%d): %s", (int)f.pid, err);

	check_fn(s, &f, FN_MAIN, exe_name, "symfix_main.c");
	check_fn(s, &f, FN_STATIC, exe_name, "symfix_main.c");
	check_fn(s, &f, FN_NODEBUG, exe_name, NULL);
	check_fn(s, &f, FN_LIB, "libsymfix.so", "symfix_lib.c");
	check_program(s, &f);

	/* The ELF header of the library: mapped, but in no function. */
	lib_base = map_start(f.pid, "libsymfix.so");
	assert_true(symbolizer_lookup(s, lib_base + 0x10, &y));
	assert_string_equal(y.module, "libsymfix.so");
	assert_null(y.function);
	assert_null(y.file);
	assert_true(y.offset == 0x10);
	assert_string_equal(
		symbolizer_format(s, lib_base + 0x10, buf, sizeof(buf)),
		"libsymfix.so+0x10");

	/* Not mapped in the child (its page 0). */
	assert_false(symbolizer_lookup(s, 0x10, &y));
	assert_string_equal(symbolizer_format(s, 0x10, buf, sizeof(buf)),
			    "0x10");

	/* The child exits (reaped: /proc/PID is gone).  Its modules stay,
	 * their files opened when they were reported: `fresh`, made while
	 * the child ran but asked nothing then, names every function after
	 * the exit and after refreshes as s did in life; an unmapped
	 * address still has no name. */
	fresh = symbolizer_create(f.pid, err, sizeof(err));
	if (!fresh)
		fail_msg("symbolizer_create(%d): %s", (int)f.pid, err);
	assert_true(WIFEXITED(fixture_stop(&f)));
	symbolizer_refresh(fresh);
	symbolizer_refresh(fresh); /* again: nothing left to do */
	check_fn(fresh, &f, FN_MAIN, exe_name, "symfix_main.c");
	check_fn(fresh, &f, FN_NODEBUG, exe_name, NULL);
	check_fn(fresh, &f, FN_LIB, "libsymfix.so", "symfix_lib.c");
	assert_false(symbolizer_lookup(fresh, 0x20, &y));
	assert_string_equal(symbolizer_format(fresh, 0x20, buf, sizeof(buf)),
			    "0x20");
	/* A symbolizer made after the exit has nothing to read. */
	assert_null(symbolizer_create(f.pid, err, sizeof(err)));
	symbolizer_destroy(fresh);
	symbolizer_destroy(s);
}

/*
 * The child's maps kept while it runs (what the harvest thread does at
 * the first events), then it exits -- reaped, or left a zombie -- and only
 * then is its symbolizer made: from the kept maps, it names the child's
 * functions in its executable and its library, with their lines, and
 * knows the main executable (the kept exe path).  Without them, nothing.
 */
static void run_kept(const char *path, const char *exe_name, bool zombie)
{
	struct keptmaps k;
	struct keptmaps_copy *c;
	struct keptmaps_stats st;
	struct fixture f;
	struct symbolizer *s;
	struct symbol y;
	char err[256], buf[256];
	siginfo_t si;

	keptmaps_init(&k);
	fixture_start(&f, path);
	assert_true(keptmaps_keep(&k, f.pid, clock_now_ns(CLOCK_MONOTONIC), 0));
	keptmaps_get_stats(&k, &st);
	assert_int_equal(st.reads, 1);
	assert_true(st.bytes > 0);
	print_message("kept %zu bytes of maps in %" PRIu64 " us\n", st.bytes,
		      st.last_ns / 1000);
	if (zombie) {
		close(f.in_fd);
		fclose(f.out);
		memset(&si, 0, sizeof(si));
		assert_int_equal(
			waitid(P_PID, (id_t)f.pid, &si, WEXITED | WNOWAIT), 0);
	} else {
		assert_true(WIFEXITED(fixture_stop(&f)));
	}
	/* Gone or a zombie: its maps read empty or not at all. */
	assert_null(symbolizer_create(f.pid, err, sizeof(err)));
	/* A later keep finds nothing and keeps the copy it had. */
	assert_true(keptmaps_keep(&k, f.pid, clock_now_ns(CLOCK_MONOTONIC), 0));

	c = keptmaps_get(&k, f.pid);
	assert_non_null(c);
	assert_null(keptmaps_get(&k, f.pid + 1)); /* another pid's: none */
	s = symbolizer_create_kept(f.pid, &c->view, err, sizeof(err));
	keptmaps_put(&k, c); /* the symbolizer needs it no longer */
	if (!s)
		fail_msg("symbolizer_create_kept(%d): %s", (int)f.pid, err);
	check_fn(s, &f, FN_MAIN, exe_name, "symfix_main.c");
	check_fn(s, &f, FN_STATIC, exe_name, "symfix_main.c");
	check_fn(s, &f, FN_NODEBUG, exe_name, NULL);
	check_fn(s, &f, FN_LIB, "libsymfix.so", "symfix_lib.c");
	check_program(s, &f);
	symbolizer_refresh(s); /* gone from the start: nothing changes */
	check_fn(s, &f, FN_MAIN, exe_name, "symfix_main.c");
	assert_false(symbolizer_lookup(s, 0x10, &y));
	assert_string_equal(symbolizer_format(s, 0x10, buf, sizeof(buf)),
			    "0x10");
	symbolizer_destroy(s);
	if (zombie)
		assert_int_equal(waitpid(f.pid, NULL, 0), f.pid);
	keptmaps_finish(&k);
}

/* The copy of pid's maps its probe writes at its start (probe/mapscopy.c),
 * made here: into a new file named from `file` (a mkstemp template). */
static void write_maps_file(pid_t pid, char *file)
{
	char src[64];
	int fd = mkstemp(file), ch;
	FILE *in, *out;

	assert_true(fd >= 0);
	snprintf(src, sizeof(src), "/proc/%d/maps", (int)pid);
	in = fopen(src, "r");
	out = fdopen(fd, "w");
	assert_non_null(in);
	assert_non_null(out);
	while ((ch = fgetc(in)) != EOF)
		fputc(ch, out);
	fclose(in);
	fclose(out);
}

/* A program that exited before anything kept its maps: the copy its
 * probe wrote at its start (probe/mapscopy.c; made here from the live
 * maps) stands in, /proc/PID opened when it was launched. */
static void test_kept_from_probe_file(void **state)
{
	char file[] = "/tmp/corotop-maps.XXXXXX", err[256];
	struct keptmaps k;
	struct keptmaps_copy *c;
	struct fixture f;
	struct symbolizer *s;

	(void)state;
	keptmaps_init(&k);
	fixture_start(&f, FIX_PIE);
	assert_true(keptmaps_expect(&k, f.pid, file));
	write_maps_file(f.pid, file);
	assert_true(keptmaps_expect(&k, f.pid, file)); /* its name now */
	assert_true(WIFEXITED(fixture_stop(&f))); /* reaped, nothing kept */
	assert_null(keptmaps_get(&k, f.pid));
	assert_true(keptmaps_keep(&k, f.pid, clock_now_ns(CLOCK_MONOTONIC), 0));
	c = keptmaps_get(&k, f.pid);
	assert_non_null(c);
	s = symbolizer_create_kept(f.pid, &c->view, err, sizeof(err));
	keptmaps_put(&k, c);
	if (!s)
		fail_msg("symbolizer_create_kept(%d): %s", (int)f.pid, err);
	check_fn(s, &f, FN_MAIN, "symfix-pie", "symfix_main.c");
	check_fn(s, &f, FN_LIB, "libsymfix.so", "symfix_lib.c");
	symbolizer_destroy(s);
	unlink(file);
	keptmaps_finish(&k);
}

/* Whether a process saw our root is the keeper's from its launch, before
 * any copy is kept, and after the process is gone: a symbolizer made
 * before a copy, whose own look at /proc/PID/root failed at the exit,
 * takes it (symtab_tick, symbolizer_saw_root) and opens the files by
 * their paths. */
static void test_kept_root_known_early(void **state)
{
	struct keptmaps k;
	struct fixture f;

	(void)state;
	keptmaps_init(&k);
	fixture_start(&f, FIX_PIE);
	assert_false(keptmaps_same_root(&k, f.pid)); /* not opened yet */
	assert_true(keptmaps_expect(&k, f.pid, ""));
	assert_null(keptmaps_get(&k, f.pid)); /* no copy */
	assert_true(keptmaps_same_root(&k, f.pid));
	assert_false(keptmaps_same_root(&k, f.pid + 1)); /* another pid */
	assert_true(WIFEXITED(fixture_stop(&f)));
	assert_true(keptmaps_same_root(&k, f.pid)); /* found while it ran */
	keptmaps_finish(&k);
}

static void test_kept_reaped(void **state)
{
	(void)state;
	run_kept(FIX_PIE, "symfix-pie", false);
}

static void test_kept_zombie(void **state)
{
	(void)state;
	run_kept(FIX_NOPIE, "symfix-nopie", true);
}

/* The fixture procfs's hooks stop, once; what its maps' first read got. */
static struct fixture *cut_fixture;
static size_t cut_got;

/* The fixture exits now, and is left a zombie: its memory is gone, its
 * /proc/PID/root too (the exit of a program of a few milliseconds). */
static void cut_now(void)
{
	struct fixture *f = cut_fixture;
	siginfo_t si;

	cut_fixture = NULL;
	close(f->in_fd); /* EOF: it exits */
	f->in_fd = -1;
	memset(&si, 0, sizeof(si));
	assert_int_equal(waitid(P_PID, (id_t)f->pid, &si, WEXITED | WNOWAIT),
			 0);
}

/* procfs_read_hook: after the first read of its maps. */
static void cut_after_maps_read(const char *name, size_t got)
{
	if (!cut_fixture || strcmp(name, "maps"))
		return;
	cut_got = got;
	cut_now();
}

/* procfs_open_hook: before the first file of it is opened. */
static void cut_before_open(const char *path)
{
	if (cut_fixture && !strncmp(path, "root/", 5))
		cut_now();
}

/* Reap the zombie cut_now left. */
static void cut_reap(struct fixture *f)
{
	fclose(f->out);
	assert_int_equal(waitpid(f->pid, NULL, 0), f->pid);
}

/*
 * The fixture exits after the first page of its maps was read, while a
 * symbolizer is made from them (a program of a few milliseconds exits
 * while the walker or the recorder makes the first one): the rest of
 * the read says end of file, and the text read holds its executable's
 * lines, not its library's.  That text is not taken for its maps: the
 * maps kept while it ran are, and its library is named.
 */
static void test_exit_while_maps_read(void **state)
{
	struct keptmaps k;
	struct keptmaps_copy *c;
	struct keptmaps_stats st;
	struct fixture f;
	struct symbolizer *s;
	char err[256];

	(void)state;
	keptmaps_init(&k);
	fixture_start_arg(&f, FIX_PIE, "spread");
	assert_true(keptmaps_keep(&k, f.pid, clock_now_ns(CLOCK_MONOTONIC), 0));
	keptmaps_get_stats(&k, &st);
	c = keptmaps_get(&k, f.pid);
	assert_non_null(c);
	cut_fixture = &f;
	procfs_read_hook = cut_after_maps_read;
	s = symbolizer_create_kept(f.pid, &c->view, err, sizeof(err));
	procfs_read_hook = NULL;
	keptmaps_put(&k, c);
	assert_null(cut_fixture);	 /* it exited during the read */
	assert_true(cut_got < st.bytes); /* after a part of its maps */
	if (!s)
		fail_msg("symbolizer_create_kept(%d): %s", (int)f.pid, err);
	check_fn(s, &f, FN_MAIN, "symfix-pie", "symfix_main.c");
	check_fn(s, &f, FN_LIB, "libsymfix.so", "symfix_lib.c");
	check_program(s, &f);
	symbolizer_destroy(s);
	cut_reap(&f);
	keptmaps_finish(&k);
}

/*
 * The same exit during the first keep of a program launched with its
 * probe's copy of its maps (the waker or harvest thread keeps while it
 * exits): the part read is no copy; the probe's file stands in, and its
 * library is named.
 */
static void test_keep_while_exiting(void **state)
{
	char file[] = "/tmp/corotop-maps.XXXXXX", err[256];
	struct keptmaps k;
	struct keptmaps_copy *c;
	struct fixture f;
	struct symbolizer *s;
	size_t whole;

	(void)state;
	keptmaps_init(&k);
	fixture_start_arg(&f, FIX_PIE, "spread");
	write_maps_file(f.pid, file);
	assert_true(keptmaps_expect(&k, f.pid, file));
	cut_fixture = &f;
	procfs_read_hook = cut_after_maps_read;
	assert_true(keptmaps_keep(&k, f.pid, clock_now_ns(CLOCK_MONOTONIC), 0));
	procfs_read_hook = NULL;
	assert_null(cut_fixture);
	c = keptmaps_get(&k, f.pid);
	assert_non_null(c);
	free(procfs_slurp(AT_FDCWD, file, 1u << 20, &whole));
	assert_true(cut_got < whole);		   /* the read was cut */
	assert_int_equal(c->view.maps_len, whole); /* the file's */
	s = symbolizer_create_kept(f.pid, &c->view, err, sizeof(err));
	keptmaps_put(&k, c);
	if (!s)
		fail_msg("symbolizer_create_kept(%d): %s", (int)f.pid, err);
	check_fn(s, &f, FN_MAIN, "symfix-pie", "symfix_main.c");
	check_fn(s, &f, FN_LIB, "libsymfix.so", "symfix_lib.c");
	symbolizer_destroy(s);
	cut_reap(&f);
	unlink(file);
	keptmaps_finish(&k);
}

/*
 * The fixture exits after its maps were read whole, before its files are
 * opened, while a symbolizer is made with no maps kept (made before any
 * keep): /proc/PID/root is gone, and its files are opened by their paths
 * (it saw our root directory), its functions named.
 */
static void test_exit_before_files_opened(void **state)
{
	struct fixture f;
	struct symbolizer *s;
	char err[256];

	(void)state;
	fixture_start(&f, FIX_PIE);
	cut_fixture = &f;
	procfs_open_hook = cut_before_open;
	s = symbolizer_create(f.pid, err, sizeof(err));
	procfs_open_hook = NULL;
	assert_null(cut_fixture); /* it exited before the first open */
	if (!s)
		fail_msg("symbolizer_create(%d): %s", (int)f.pid, err);
	check_fn(s, &f, FN_MAIN, "symfix-pie", "symfix_main.c");
	check_fn(s, &f, FN_LIB, "libsymfix.so", "symfix_lib.c");
	symbolizer_destroy(s);
	cut_reap(&f);
}

static void test_pie(void **state)
{
	(void)state;
	run_fixture(FIX_PIE, "symfix-pie", ET_DYN);
}

static void test_nopie(void **state)
{
	(void)state;
	run_fixture(FIX_NOPIE, "symfix-nopie", ET_EXEC);
}

#ifdef SYMFIX_STRIPPED
/* A stripped program named through its .gnu_debuglink: its static
 * function too, which only the debug file's symbol table holds. */
static void test_debuglink(void **state)
{
	struct fixture f;
	struct symbolizer *s;
	char err[256], buf[256];

	(void)state;
	fixture_start(&f, SYMFIX_STRIPPED);
	s = symbolizer_create(f.pid, err, sizeof(err));
	if (!s)
		fail_msg("symbolizer_create(%d): %s", (int)f.pid, err);
	check_fn(s, &f, FN_MAIN, "symfix-stripped", "symfix_main.c");
	check_fn(s, &f, FN_STATIC, "symfix-stripped", "symfix_main.c");
	check_fn(s, &f, FN_LIB, "libsymfix.so", "symfix_lib.c");
	check_program(s, &f);
	symbolizer_format(s, f.addr[FN_STATIC], buf, sizeof(buf));
	assert_non_null(strstr(buf, "symfix_static_func+0x0"));
	symbolizer_destroy(s);
	assert_true(WIFEXITED(fixture_stop(&f)));
}
#else
static void test_debuglink(void **state)
{
	(void)state;
	skip();
}
#endif

#ifdef SYMFIX_CORO
/*
 * C++ names as the compiler made them (symfix_coro.cpp): a coroutine's
 * resume function and a point in its body show as the coroutine, a
 * template and a lambda demangled -- the names every output of corotop
 * shows, since they all come from here.
 */
enum cxx_fn { CXX_RAMP, CXX_RESUME, CXX_AWAIT, CXX_TMPL, CXX_LAMBDA, CXX_N };

static const char *const cxx_keys[CXX_N] = {
	[CXX_RAMP] = "ramp", [CXX_RESUME] = "resume", [CXX_AWAIT] = "await",
	[CXX_TMPL] = "tmpl", [CXX_LAMBDA] = "lambda",
};

static void cxx_start(struct fixture *f, uint64_t addr[CXX_N])
{
	char buf[256];
	unsigned seen = 0;

	fixture_spawn(f, SYMFIX_CORO, NULL);
	while (fixture_line(f, buf, sizeof(buf))) {
		char key[32];
		uint64_t a;

		assert_int_equal(sscanf(buf, "%31s %" SCNx64, key, &a), 2);
		for (int i = 0; i < CXX_N; i++)
			if (!strcmp(key, cxx_keys[i])) {
				addr[i] = a;
				seen |= 1u << i;
			}
	}
	assert_int_equal(seen, (1u << CXX_N) - 1);
}

/* addr's function, which must be `want`, and its symbolizer_format. */
static const char *cxx_check(struct symbolizer *s, uint64_t addr,
			     const char *want, char *buf, size_t n)
{
	struct symbol y;

	assert_true(symbolizer_lookup(s, addr, &y));
	assert_string_equal(y.module, "symfix-coro");
	assert_non_null(y.function);
	assert_string_equal(y.function, want);
	return symbolizer_format(s, addr, buf, n);
}

static void test_cxx_names(void **state)
{
	static const char coro[] = "symfix::coro_task(int)";
	uint64_t addr[CXX_N] = {0};
	struct symbolizer *s;
	struct fixture f;
	char err[256], buf[256], want[256];
	struct symbol y;

	(void)state;
	cxx_start(&f, addr);
	s = symbolizer_create(f.pid, err, sizeof(err));
	if (!s)
		fail_msg("symbolizer_create(%d): %s", (int)f.pid, err);
	cxx_check(s, addr[CXX_RAMP], coro, buf, sizeof(buf));
	/* The resume function ("....Frame.actor" with GCC, ".resume" with
	 * Clang) is the coroutine, with no clone marker. */
	cxx_check(s, addr[CXX_RESUME], coro, buf, sizeof(buf));
	snprintf(want, sizeof(want), "%s+0x0", coro);
	assert_true(!strncmp(buf, want, strlen(want)));
	/* A co_await in the body: the coroutine, an offset, its file. */
	cxx_check(s, addr[CXX_AWAIT], coro, buf, sizeof(buf));
	assert_true(symbolizer_lookup(s, addr[CXX_AWAIT], &y));
	assert_true(y.offset > 0);
	assert_non_null(y.file);
	assert_string_equal(y.file, "symfix_coro.cpp");
	snprintf(want, sizeof(want), "%s+0x%" PRIx64 " (symfix_coro.cpp:%d)",
		 coro, y.offset, y.line);
	assert_string_equal(buf, want);
	cxx_check(s, addr[CXX_TMPL], "long symfix::twice<long>(long)", buf,
		  sizeof(buf));
	cxx_check(s, addr[CXX_LAMBDA], "main::{lambda(int)#1}::_FUN(int)", buf,
		  sizeof(buf));
	/* Nothing mangled is left anywhere in what it prints. */
	for (int i = 0; i < CXX_N; i++) {
		symbolizer_format(s, addr[i], buf, sizeof(buf));
		assert_null(strstr(buf, "_Z"));
		assert_null(strstr(buf, "[clone"));
	}
	assert_true(WIFEXITED(fixture_stop(&f)));
	symbolizer_destroy(s);
}
#else
static void test_cxx_names(void **state)
{
	(void)state;
	skip(); /* no C++ compiler: symfix-coro was not built */
}
#endif

static struct symbolizer *self_symbolizer(void)
{
	char err[256];
	struct symbolizer *s = symbolizer_create(getpid(), err, sizeof(err));

	if (!s)
		fail_msg("symbolizer_create(self): %s", err);
	return s;
}

__attribute__((noinline)) int test_symbolizer_marker(int x);
__attribute__((noinline)) int test_symbolizer_marker(int x)
{
	return x * 5 + (int)getpid();
}

static void test_self(void **state)
{
	struct symbolizer *s = self_symbolizer();
	struct symbol y;

	(void)state;
	assert_true(symbolizer_lookup(
		s, (uint64_t)(uintptr_t)&test_symbolizer_marker + 2, &y));
	assert_string_equal(y.module, "test-symbolizer");
	assert_string_equal(y.function, "test_symbolizer_marker");
	assert_true(y.offset == 2);
	assert_string_equal(y.file, "test-symbolizer.c");
	assert_true(y.line > 0);

	assert_true(symbolizer_lookup(s, (uint64_t)(uintptr_t)&getpid, &y));
	assert_string_equal(y.module, "libc.so.6");
	assert_non_null(y.function); /* getpid, or an alias of it */
	assert_true(y.offset == 0);
	symbolizer_destroy(s);
}

static void test_unmapped(void **state)
{
	struct symbolizer *s = self_symbolizer();
	char buf[64], want[64];
	struct symbol y;
	int on_stack = 0;
	uint64_t stack = (uint64_t)(uintptr_t)&on_stack;

	(void)state;
	assert_false(symbolizer_lookup(s, 0x10, &y));
	assert_null(y.module);
	assert_null(y.function);
	assert_null(y.file);
	assert_int_equal(y.line, 0);
	assert_true(y.offset == 0x10);
	assert_string_equal(symbolizer_format(s, 0x10, buf, sizeof(buf)),
			    "0x10");
	assert_string_equal(
		symbolizer_format(s, 0xffffffffffffffffull, buf, sizeof(buf)),
		"0xffffffffffffffff");
	/* the stack is mapped, but not an ELF file */
	assert_false(symbolizer_lookup(s, stack, &y));
	snprintf(want, sizeof(want), "0x%" PRIx64, stack);
	assert_string_equal(symbolizer_format(s, stack, buf, sizeof(buf)),
			    want);
	symbolizer_destroy(s);
}

static void test_format_truncates(void **state)
{
	struct symbolizer *s = self_symbolizer();
	uint64_t a = (uint64_t)(uintptr_t)&test_symbolizer_marker;
	char buf[8];

	(void)state;
	memset(buf, 'x', sizeof(buf));
	assert_ptr_equal(symbolizer_format(s, a, buf, sizeof(buf)), buf);
	assert_string_equal(buf, "test_sy");
	memset(buf, 'x', sizeof(buf));
	assert_ptr_equal(symbolizer_format(s, a, buf, 0), buf);
	assert_int_equal(buf[0], 'x');
	/* NULL symbolizer: plain address, like an unmapped one */
	assert_string_equal(symbolizer_format(NULL, 0x1234, buf, sizeof(buf)),
			    "0x1234");
	symbolizer_destroy(s);
	symbolizer_destroy(NULL);
}

static void test_vdso(void **state)
{
	struct symbolizer *s = self_symbolizer();
	uint64_t base = getauxval(AT_SYSINFO_EHDR);
	struct symbol y;
	bool named = false;

	(void)state;
	if (!base) {
		symbolizer_destroy(s);
		skip();
	}
	assert_true(symbolizer_lookup(s, base, &y));
	assert_string_equal(y.module, "[vdso]");
	/* Somewhere in its first pages there is a named function. */
	for (uint64_t a = base; a < base + 0x2000 && !named; a += 16)
		named = symbolizer_lookup(s, a, &y) && y.function;
	assert_true(named);
	symbolizer_destroy(s);
}

static void test_cache_identical(void **state)
{
	struct symbolizer *s = self_symbolizer();
	uint64_t a = (uint64_t)(uintptr_t)&test_symbolizer_marker + 1;
	struct symbolizer_stats st0, st1;
	struct symbol y1, y2;

	(void)state;
	assert_true(symbolizer_lookup(s, a, &y1));
	symbolizer_stats(s, &st0);
	assert_true(symbolizer_lookup(s, a, &y2));
	symbolizer_stats(s, &st1);
	assert_true(st1.hits == st0.hits + 1);
	assert_true(st1.lookups == st0.lookups + 1);
	assert_ptr_equal(y1.module, y2.module);
	assert_ptr_equal(y1.function, y2.function);
	assert_ptr_equal(y1.file, y2.file);
	assert_int_equal(y1.line, y2.line);
	assert_true(y1.offset == y2.offset);
	/* negative results are cached too */
	assert_false(symbolizer_lookup(s, 0x20, &y1));
	symbolizer_stats(s, &st0);
	assert_false(symbolizer_lookup(s, 0x20, &y2));
	symbolizer_stats(s, &st1);
	assert_true(st1.hits == st0.hits + 1);
	symbolizer_destroy(s);
}

static void test_cache_bounded(void **state)
{
	struct symbolizer *s = self_symbolizer();
	uint64_t fn = (uint64_t)(uintptr_t)&test_symbolizer_marker;
	struct symbolizer_stats st, st2;
	const char *first = NULL;
	struct symbol y;

	(void)state;
	for (int pass = 0; pass < 2; pass++) {
		/* unique addresses: half in no mapping, half in our text */
		for (uint64_t i = 0; i < 40000; i++) {
			bool ok = symbolizer_lookup(s, 0x1000 + i * 16, &y);

			assert_false(ok);
			(void)symbolizer_lookup(s, fn + (i % 4096), &y);
			if (i == 0 && pass == 0)
				first = y.function;
		}
		symbolizer_stats(s, pass ? &st2 : &st);
		assert_true(st.cached <= st.capacity);
	}
	assert_true(st.capacity > 0);
	assert_true(st.clears >= 2);
	assert_true(st2.cached <= st2.capacity);
	/* the same names again: the string pool did not grow */
	assert_true(st2.string_bytes == st.string_bytes);
	/* a string from before the cache was cleared is still valid */
	assert_string_equal(first, "test_symbolizer_marker");
	symbolizer_destroy(s);
}

static void test_refresh_sees_dlopen(void **state)
{
	struct symbolizer *s = self_symbolizer();
	struct symbolizer_stats st0, st1;
	struct symbol y;
	void *h, *fn;

	(void)state;
	h = dlopen(FIX_LIB, RTLD_NOW | RTLD_LOCAL);
	if (!h)
		fail_msg("dlopen %s: %s", FIX_LIB, dlerror());
	fn = dlsym(h, "symfix_lib_func");
	assert_non_null(fn);
	/* Mapped after our maps were read: not known as the library, and
	 * cached as such.  The loader may place it in a hole of a module
	 * read before (under ASan, inside libasan's range: then that module
	 * is what the lookup names), so "not the library" is what holds. */
	for (int k = 0; k < 2; k++)
		if (symbolizer_lookup(s, (uint64_t)(uintptr_t)fn, &y) &&
		    (!y.module || !strcmp(y.module, "libsymfix.so")))
			fail_msg("%p known before the refresh: module %s, "
				 "function %s",
				 fn, y.module ? y.module : "-",
				 y.function ? y.function : "-");

	symbolizer_stats(s, &st0);
	symbolizer_refresh(s);
	symbolizer_stats(s, &st1);
	assert_true(st1.maps_reads == st0.maps_reads + 1);
	/* At least the library we opened (libdw or the sanitizer may map
	 * one of their own meanwhile). */
	assert_true(st1.modules >= st0.modules + 1);
	assert_true(symbolizer_lookup(s, (uint64_t)(uintptr_t)fn, &y));
	assert_string_equal(y.module, "libsymfix.so");
	assert_string_equal(y.function, "symfix_lib_func");
	assert_string_equal(y.file, "symfix_lib.c");

	/* Nothing changed: a refresh does not re-read the maps. */
	symbolizer_refresh(s);
	symbolizer_stats(s, &st0);
	assert_true(st0.maps_reads == st1.maps_reads);
	assert_int_equal(dlclose(h), 0);
	symbolizer_destroy(s);
}

static void test_refuses_bad_pid(void **state)
{
	char err[256];

	(void)state;
	assert_null(symbolizer_create(0, err, sizeof(err)));
	assert_string_equal(err, "0 is not a process id");
	assert_null(symbolizer_create(-5, err, sizeof(err)));
	assert_null(symbolizer_create(INT_MAX, err, sizeof(err)));
	assert_non_null(strstr(err, "/proc/2147483647"));
	assert_non_null(strstr(err, "running"));
	assert_null(symbolizer_create(INT_MAX, NULL, 0)); /* no message */
}

/* symbolizer_create(1) as a user who is not root: refused, with uid 0 in
 * the message.  Exit status 0 when that holds. */
static int refuse_pid1_child(void)
{
	char err[256];
	struct symbolizer *s = symbolizer_create(1, err, sizeof(err));

	if (s) {
		symbolizer_destroy(s);
		return 1;
	}
	return strstr(err, "belongs to uid 0") ? 0 : 2;
}

static void test_refuses_other_uid(void **state)
{
	const uid_t nobody = 65534;
	int status;
	pid_t pid;

	(void)state;
	if (getuid() != 0 || geteuid() != 0) {
		assert_int_equal(refuse_pid1_child(), 0);
		return;
	}
	/* As root: try it as nobody in a child, if we may drop to it. */
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (setgroups(0, NULL) || setgid(nobody) || setuid(nobody))
			_exit(77);
		_exit(refuse_pid1_child());
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	if (WEXITSTATUS(status) == 77)
		skip(); /* root, and no other uid to be */
	assert_int_equal(WEXITSTATUS(status), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pie),
		cmocka_unit_test(test_nopie),
		cmocka_unit_test(test_kept_reaped),
		cmocka_unit_test(test_kept_root_known_early),
		cmocka_unit_test(test_kept_from_probe_file),
		cmocka_unit_test(test_kept_zombie),
		cmocka_unit_test(test_exit_while_maps_read),
		cmocka_unit_test(test_keep_while_exiting),
		cmocka_unit_test(test_exit_before_files_opened),
		cmocka_unit_test(test_debuglink),
		cmocka_unit_test(test_cxx_names),
		cmocka_unit_test(test_self),
		cmocka_unit_test(test_unmapped),
		cmocka_unit_test(test_format_truncates),
		cmocka_unit_test(test_vdso),
		cmocka_unit_test(test_cache_identical),
		cmocka_unit_test(test_cache_bounded),
		cmocka_unit_test(test_refresh_sees_dlopen),
		cmocka_unit_test(test_refuses_bad_pid),
		cmocka_unit_test(test_refuses_other_uid),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
