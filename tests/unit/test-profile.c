/*
 * profile, folded, speedscope, framenames: what the hot-stack exports
 * write (src/engine/export/profile.c, folded.c, speedscope.c, framenames.c).
 *
 *   folded      golden text: root first, ';' between frames, one line per
 *               distinct name sequence (weights summed), sorted; stacks
 *               without weight left out;
 *   speedscope  golden text, and parsed strictly (tests/common/json-check):
 *               frames numbered by first appearance, samples root first,
 *               weights summed to endValue, every index in range;
 *   fold        samples of one stack (names and files) merged, weights
 *               summed, in folded's order (names root first, a prefix
 *               first); same names with other files stay apart; the total
 *               kept; the writers' output of a folded profile is the same
 *               as before folding (folded) or has one sample per stack;
 *   write       atomic: the file appears complete under its name, no
 *               temporary left behind; a failure says what and where and
 *               leaves the old file alone;
 *   names       return addresses named by addr - 1 with addr's offset,
 *               module+offset and hex fallbacks, no ';' in folded names.
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

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/symbols/framenames.h"
#include "engine/export/profile.h"
#include "json-check.h"

static void sample_profile(struct profile *p)
{
	assert_true(profile_init(p, "corotop: ./demo \"x\""));
	assert_true(profile_add(p, (const char *[]){"leaf1", "mid", "main"},
				(const char *[]){"a.c", NULL, "m.c"}, 3, 5));
	assert_true(profile_add(p, (const char *[]){"leaf2", "mid", "main"},
				(const char *[]){"b.c", NULL, "m.c"}, 3, 3));
	assert_true(profile_add(p, (const char *[]){"leaf1", "mid", "main"},
				(const char *[]){"a.c", NULL, "m.c"}, 3, 2));
	assert_true(profile_add(p, (const char *[]){"idle"}, NULL, 1, 0));
	assert_true(profile_add(p, (const char *[]){"mid", "main"},
				(const char *[]){NULL, "m.c"}, 2, 1));
}

static char *render(const struct profile *p, const struct profile_format *f)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);

	assert_non_null(m);
	assert_true(f->write(m, p));
	assert_int_equal(fclose(m), 0);
	return buf;
}

static void test_folded_golden(void **state)
{
	struct profile p;
	char *out;

	(void)state;
	sample_profile(&p);
	out = render(&p, &profile_folded);
	assert_string_equal(out, "main;mid 1\n"
				 "main;mid;leaf1 7\n"
				 "main;mid;leaf2 3\n");
	free(out);
	profile_finish(&p);
}

static const char speedscope_golden[] =
	"{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\","
	"\"shared\":{\"frames\":[{\"name\":\"leaf1\",\"file\":\"a.c\"},"
	"{\"name\":\"mid\"},{\"name\":\"main\",\"file\":\"m.c\"},"
	"{\"name\":\"leaf2\",\"file\":\"b.c\"}]},"
	"\"profiles\":[{\"type\":\"sampled\","
	"\"name\":\"corotop: ./demo \\\"x\\\"\",\"unit\":\"none\","
	"\"startValue\":0,\"endValue\":11,"
	"\"samples\":[[2,1,0],[2,1,3],[2,1,0],[2,1]],"
	"\"weights\":[5,3,2,1]}],"
	"\"name\":\"corotop: ./demo \\\"x\\\"\",\"activeProfileIndex\":0,"
	"\"exporter\":\"corotop\"}\n";

static void test_speedscope_golden_and_valid(void **state)
{
	const struct jv *frames, *prof, *samples, *weights;
	struct profile p;
	struct jv v;
	uint64_t sum = 0;
	char *out;

	(void)state;
	sample_profile(&p);
	out = render(&p, &profile_speedscope);
	assert_string_equal(out, speedscope_golden);
	json_must_parse(out, &v);
	assert_string_equal(
		json_need(&v, "$schema", J_STR)->s,
		"https://www.speedscope.app/file-format-schema.json");
	frames = json_need(&v, "shared.frames", J_ARR);
	prof = json_need(&v, "profiles", J_ARR);
	assert_int_equal(prof->n, 1);
	prof = &prof->items[0];
	assert_string_equal(json_need(prof, "type", J_STR)->s, "sampled");
	assert_string_equal(json_need(prof, "unit", J_STR)->s, "none");
	samples = json_need(prof, "samples", J_ARR);
	weights = json_need(prof, "weights", J_ARR);
	assert_int_equal(samples->n, weights->n);
	for (size_t i = 0; i < samples->n; i++) {
		const struct jv *s = &samples->items[i];

		assert_int_equal(s->t, J_ARR);
		for (size_t k = 0; k < s->n; k++) {
			assert_true(json_is_uint(&s->items[k]));
			assert_true(s->items[k].num < (double)frames->n);
		}
		/* Root first: every sample starts at main. */
		assert_string_equal(
			json_need(&frames->items[(size_t)s->items[0].num],
				  "name", J_STR)
				->s,
			"main");
		assert_true(json_is_uint(&weights->items[i]));
		sum += strtoull(weights->items[i].s, NULL, 10);
	}
	assert_int_equal(sum, json_u64(prof, "endValue"));
	assert_int_equal(json_u64(prof, "startValue"), 0);
	for (size_t i = 0; i < frames->n; i++)
		json_need(&frames->items[i], "name", J_STR);
	json_free(&v);
	free(out);
	profile_finish(&p);
}

static void test_empty_profiles(void **state)
{
	struct profile p;
	struct jv v;
	char *out;

	(void)state;
	assert_true(profile_init(&p, "empty"));
	out = render(&p, &profile_folded);
	assert_string_equal(out, "");
	free(out);
	out = render(&p, &profile_speedscope);
	json_must_parse(out, &v);
	assert_int_equal(json_need(&v, "profiles", J_ARR)->items[0].n, 7);
	json_free(&v);
	free(out);
	profile_finish(&p);
}

static void test_fold(void **state)
{
	struct profile p;
	char *before, *after;

	(void)state;
	sample_profile(&p);
	/* The same names as leaf1's stack, another file: another frame. */
	assert_true(profile_add(&p, (const char *[]){"leaf1", "mid", "main"},
				(const char *[]){"z.c", NULL, "m.c"}, 3, 4));
	before = render(&p, &profile_folded);
	assert_true(profile_fold(&p));
	assert_int_equal(p.ns, 4);
	assert_int_equal(p.total, 15);
	/* main;mid, then main;mid;leaf1 a.c (5 + 2), z.c, then leaf2. */
	assert_int_equal(p.s[0].n, 2);
	assert_int_equal(p.s[0].weight, 1);
	assert_int_equal(p.s[1].weight, 7);
	assert_string_equal(p.frames[p.s[1].first].file, "a.c");
	assert_int_equal(p.s[2].weight, 4);
	assert_string_equal(p.frames[p.s[2].first].file, "z.c");
	assert_int_equal(p.s[3].weight, 3);
	assert_string_equal(p.frames[p.s[3].first].name, "leaf2");
	assert_int_equal(p.nframes, 2 + 3 + 3 + 3);
	after = render(&p, &profile_folded);
	assert_string_equal(after, before);
	assert_string_equal(after, "main;mid 1\n"
				   "main;mid;leaf1 11\n"
				   "main;mid;leaf2 3\n");
	free(after);
	free(before);
	/* Folding twice changes nothing; more samples may follow. */
	assert_true(profile_fold(&p));
	assert_int_equal(p.ns, 4);
	assert_true(profile_add(&p, (const char *[]){"idle"}, NULL, 1, 2));
	assert_int_equal(p.total, 17);
	profile_finish(&p);
	/* An empty profile folds to one. */
	assert_true(profile_init(&p, "empty"));
	assert_true(profile_fold(&p));
	assert_int_equal(p.ns, 0);
	assert_int_equal(p.nframes, 0);
	profile_finish(&p);
}

static int dir_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	assert_non_null(d);
	while ((de = readdir(d)))
		n += de->d_name[0] != '.';
	closedir(d);
	return n;
}

static void test_atomic_write(void **state)
{
	char dir[] = "/tmp/test-profile.XXXXXX", path[128], err[256];
	char buf[256] = {0};
	struct profile p;
	struct stat st;
	FILE *f;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/out.folded", dir);
	f = fopen(path, "w");
	fputs("old\n", f);
	fclose(f);
	sample_profile(&p);
	assert_true(profile_write(&p, &profile_folded, path, err, sizeof(err)));
	f = fopen(path, "r");
	assert_true(fread(buf, 1, sizeof(buf) - 1, f) > 0);
	fclose(f);
	assert_string_equal(buf,
			    "main;mid 1\nmain;mid;leaf1 7\nmain;mid;leaf2 3\n");
	assert_int_equal(dir_entries(dir), 1); /* no temporary left */
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	/* A directory that does not exist: a message naming the file. */
	snprintf(path, sizeof(path), "%s/missing/out.json", dir);
	assert_false(
		profile_write(&p, &profile_speedscope, path, err, sizeof(err)));
	assert_non_null(strstr(err, path));
	assert_non_null(strstr(err, "speedscope"));
	assert_non_null(strstr(err, "No such file"));
	/* A target that is a directory: rename fails, nothing is left. */
	snprintf(path, sizeof(path), "%s/adir", dir);
	assert_int_equal(mkdir(path, 0700), 0);
	assert_false(
		profile_write(&p, &profile_folded, path, err, sizeof(err)));
	assert_non_null(strstr(err, "adir"));
	assert_int_equal(dir_entries(dir), 2);
	rmdir(path);
	snprintf(path, sizeof(path), "%s/out.folded", dir);
	unlink(path);
	rmdir(dir);
	profile_finish(&p);
}

static void test_frame_names(void **state)
{
	struct framenames *c = framenames_create(4, 1 << 16);
	struct symtab_sym s = {.function = "burn_cpu",
			       .module = "demo",
			       .file = "workload.c",
			       .line = 42,
			       .offset = 0x11};
	struct framename n;
	char buf[128];

	(void)state;
	assert_non_null(c);
	assert_int_equal(framename_key(0x1000, true), 0x1000);
	assert_int_equal(framename_key(0x1000, false), 0xfff);
	/* A return address 0x1000 is named by its call at 0xfff. */
	framenames_put(c, 0xfff, &s);
	assert_false(framenames_get(c, 0x1000, &n));
	assert_true(framenames_get(c, 0xfff, &n));
	assert_string_equal(framename_full(&n, 0x1000, false, buf, sizeof(buf)),
			    "burn_cpu+0x12 (workload.c:42)");
	assert_string_equal(
		framename_function(&n, 0x1000, false, buf, sizeof(buf)),
		"burn_cpu");
	/* The innermost frame is named by itself. */
	assert_string_equal(framename_full(&n, 0xfff, true, buf, sizeof(buf)),
			    "burn_cpu+0x11 (workload.c:42)");
	/* Module only, then nothing. */
	s = (struct symtab_sym){.module = "libx.so", .offset = 0x200};
	framenames_put(c, 0x41ff, &s);
	assert_true(framenames_get(c, 0x41ff, &n));
	assert_null(n.function);
	assert_string_equal(
		framename_function(&n, 0x4200, false, buf, sizeof(buf)),
		"libx.so+0x201");
	assert_string_equal(framename_full(&n, 0x4200, false, buf, sizeof(buf)),
			    "libx.so+0x201");
	assert_string_equal(
		framename_function(NULL, 0x4200, false, buf, sizeof(buf)),
		"0x4200");
	assert_string_equal(
		framename_full(NULL, 0x7f00, true, buf, sizeof(buf)), "0x7f00");
	/* ';' would split a folded frame. */
	s = (struct symtab_sym){.function = "operator;weird", .module = "m"};
	framenames_put(c, 0x5000, &s);
	assert_true(framenames_get(c, 0x5000, &n));
	assert_string_equal(
		framename_function(&n, 0x5000, true, buf, sizeof(buf)),
		"operator?weird");
	/* Bounded: the fifth name is not kept. */
	framenames_put(c, 0x6000, &s);
	framenames_put(c, 0x7000, &s);
	assert_int_equal(framenames_count(c), 4);
	assert_false(framenames_get(c, 0x7000, &n));
	framenames_destroy(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_folded_golden),
		cmocka_unit_test(test_speedscope_golden_and_valid),
		cmocka_unit_test(test_fold),
		cmocka_unit_test(test_empty_profiles),
		cmocka_unit_test(test_atomic_write),
		cmocka_unit_test(test_frame_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
