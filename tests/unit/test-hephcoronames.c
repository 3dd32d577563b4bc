/*
 * hephcoronames: coroutine names in Heph recordings, both ways.
 *   - round trip: the recorder writes a named coroutine's corotop_name
 *     after its birth; the file read back names it by id and by
 *     (substream, time), replay's snapshots carry it (snapshot_name), and
 *     corotop convert puts it in chrome's thread names and args and in
 *     jsonl's lines; an unnamed coroutine stays unnamed everywhere, also
 *     when it reuses a named one's probe id; a coroutine of another
 *     process than the target's (corotop_coro_pid) carries its pid in
 *     replay's snapshots;
 *   - hostile options: a name too long is cut at 47 bytes, control bytes
 *     read '?', id 0 and empty names are ignored, an id named twice gets
 * one of them, a name for an id no birth has names no coroutine, a birth of
 *     the 16-byte form (no id) has no name.
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

#include <unistd.h>

#include "convert/convert.h"
#include "engine/model/snapshot.h"
#include "engine/heph/heph.h"
#include "engine/heph/hephcoronames.h"
#include "engine/record/recorder.h"
#include "engine/replay/replay.h"

#define MS 1000000ull

static char path[64];

static int teardown(void **state)
{
	(void)state;
	if (path[0])
		unlink(path);
	path[0] = '\0';
	return 0;
}

static void event(struct recorder *r, uint32_t station, uint64_t ts,
		  uint64_t seq, bool active)
{
	struct harvest_event ev = {.station = station,
				   .ts = ts,
				   .tid = 100 + station,
				   .addr = 0x1000 + seq,
				   .seq = seq,
				   .is_active = active};

	recorder_event(r, &ev);
}

/* Three coroutines: "worker-1" (probe 7, station 0), an unnamed one
 * (probe 8, station 1), and after worker-1 died, an unnamed one that
 * reuses its probe id 7 (station 0 again). */
static void record(void)
{
	struct recorder *r;
	char err[256];
	int fd;

	snprintf(path, sizeof(path), "/tmp/coronames.XXXXXX");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	r = recorder_create(path, 2, NULL, "names", err, sizeof(err));
	assert_non_null(r);
	recorder_open(r, 0, 7, 10 * MS, 1, "worker-1", 0);
	recorder_open(r, 1, 8, 11 * MS, 2, "", 4242);
	event(r, 0, 12 * MS, 2, true);
	event(r, 1, 13 * MS, 2, true);
	event(r, 0, 14 * MS, 4, false);
	recorder_close(r, 0, 20 * MS);
	recorder_open(r, 0, 7, 30 * MS, 3, NULL, 0);
	event(r, 0, 31 * MS, 2, true);
	recorder_stop(r, 40 * MS);
	assert_true(recorder_destroy(r, err, sizeof(err)));
}

static const struct model_coro *by_id(const struct snapshot *s, uint64_t id)
{
	for (size_t i = 0; i < s->count; i++)
		if (s->coro[i].id == id)
			return &s->coro[i];
	return NULL;
}

static char *convert_to(enum convert_to to)
{
	struct convert_result res;
	struct convert *c;
	char err[256], *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	c = convert_create(path, to, NULL, NULL, &res, err, sizeof(err));
	assert_non_null(c);
	assert_true(convert_write_to(c, f, &res, err, sizeof(err)));
	convert_destroy(c);
	fclose(f);
	return out;
}

static void test_round_trip(void **state)
{
	struct heph_coronames cn;
	struct heph_file hf;
	struct replay rp;
	struct snapshot s;
	char err[256], name[64], *out;
	const struct model_coro *c;

	(void)state;
	record();
	assert_true(heph_file_open(&hf, path, err, sizeof(err)));
	heph_coronames_init(&cn, &hf);
	assert_int_equal(cn.nnames, 1);
	assert_string_equal(heph_coronames_id(&cn, 1), "worker-1");
	assert_null(heph_coronames_id(&cn, 2));
	assert_string_equal(heph_coronames_at(&cn, 7, 12 * MS), "worker-1");
	assert_null(heph_coronames_at(&cn, 8, 13 * MS));
	/* Probe id 7 again, born unnamed: it shadows worker-1. */
	assert_null(heph_coronames_at(&cn, 7, 31 * MS));
	assert_null(heph_coronames_at(&cn, 7, 5 * MS)); /* before any birth */
	heph_coronames_finish(&cn);
	heph_file_close(&hf);

	assert_true(replay_open(&rp, path, 1000 * MS, err, sizeof(err)));
	snapshot_init(&s);
	replay_snapshot(&rp, 15 * MS, &s);
	c = by_id(&s, 1);
	assert_non_null(c);
	assert_string_equal(snapshot_name(&s, c, name, sizeof(name)),
			    "worker-1");
	assert_int_equal(c->pid, 0); /* the target's */
	c = by_id(&s, 2);
	assert_non_null(c);
	assert_string_equal(snapshot_name(&s, c, name, sizeof(name)), "");
	/* It lived in another process: its corotop_coro_pid. */
	assert_int_equal(c->pid, 4242);
	replay_snapshot(&rp, 35 * MS, &s);
	c = by_id(&s, 3);
	assert_non_null(c);
	assert_string_equal(snapshot_name(&s, c, name, sizeof(name)), "");
	snapshot_finish(&s);
	replay_close(&rp);

	out = convert_to(CONVERT_CHROME);
	/* Tracks named by the name, else the probe id in hex. */
	assert_non_null(strstr(out, "\"args\":{\"name\":\"worker-1\"}"));
	assert_non_null(strstr(out, "\"args\":{\"name\":\"coroutine 8\"}"));
	assert_non_null(strstr(out, "\"coroutine\":\"worker-1\""));
	/* The coroutine of process 4242: its track in that process, which
	 * is named; the others in the program's (pid 1: none recorded). */
	assert_non_null(strstr(out, "\"name\":\"process_name\",\"pid\":4242,"
				    "\"tid\":0,\"args\":{\"name\":\"process "
				    "4242\"}"));
	assert_non_null(strstr(out, "\"ph\":\"X\",\"pid\":4242,"));
	assert_non_null(strstr(out, "\"ph\":\"X\",\"pid\":1,"));
	free(out);
	out = convert_to(CONVERT_JSONL);
	/* worker-1's two transitions are named; the others are not. */
	{
		int named = 0, lines = 0;

		for (char *p = out; (p = strchr(p, '\n')); p++)
			lines++;
		for (char *p = out; (p = strstr(p, ",\"name\":\"worker-1\"}"));
		     p++)
			named++;
		assert_int_equal(named, 2);
		assert_int_equal(lines, 4);
	}
	free(out);
}

static void be64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (56 - 8 * i));
}

static void birth(struct heph_enc *e, uint64_t sub, uint64_t ts, uint64_t id)
{
	uint8_t v[24];

	be64(v, sub);
	be64(v + 8, ts);
	be64(v + 16, id);
	assert_true(heph_enc_meta(e, "corotop_birth", v, id ? 24 : 16));
}

static void named(struct heph_enc *e, uint64_t id, const void *name, size_t len)
{
	uint8_t v[128];

	be64(v, id);
	memcpy(v + 8, name, len);
	assert_true(heph_enc_meta(e, "corotop_name", v, 8 + len));
}

static void test_hostile_options(void **state)
{
	static uint8_t buf[4096];
	struct heph_coronames cn;
	struct heph_enc e;
	struct heph_file hf;
	char err[256], want[NAMEPOOL_TEXT_MAX];
	uint8_t long_name[100];
	const char *twice;

	(void)state;
	memset(long_name, 'L', sizeof(long_name));
	heph_enc_init(&e, buf, sizeof(buf));
	assert_true(heph_enc_meta(&e, "corotop", "1", 1));
	birth(&e, 1, 10, 11);
	named(&e, 11, long_name, sizeof(long_name));
	birth(&e, 2, 10, 12);
	named(&e, 12, "a\x1b]0;x\a\xffz", 9);
	birth(&e, 3, 10, 13);
	named(&e, 13, "first", 5);
	named(&e, 13, "second", 6);
	named(&e, 0, "zero", 4);   /* id 0: nobody */
	named(&e, 99, "ghost", 5); /* no birth has id 99 */
	birth(&e, 4, 10, 14);
	named(&e, 14, "", 0);	 /* empty */
	named(&e, 14, "\0x", 2); /* empty after cleaning */
	birth(&e, 5, 10, 0);	 /* 16-byte birth: no id */
	assert_true(heph_enc_event_begin(&e, 1, 0, 1, 10, 20, "running"));
	assert_true(heph_enc_event_end(&e) > 0);
	assert_true(heph_file_index_bytes(&hf, buf, e.len, err, sizeof(err)));
	heph_coronames_init(&cn, &hf);
	memset(want, 'L', NAMEPOOL_TEXT_MAX - 1);
	want[NAMEPOOL_TEXT_MAX - 1] = '\0';
	assert_string_equal(heph_coronames_at(&cn, 1, 15), want);
	assert_string_equal(heph_coronames_id(&cn, 12), "a?]0;x??z");
	twice = heph_coronames_id(&cn, 13);
	assert_non_null(twice);
	assert_true(!strcmp(twice, "first") || !strcmp(twice, "second"));
	assert_null(heph_coronames_id(&cn, 0));
	assert_string_equal(heph_coronames_id(&cn, 99), "ghost");
	assert_null(heph_coronames_at(&cn, 99, 15));
	assert_null(heph_coronames_id(&cn, 14));
	assert_null(heph_coronames_at(&cn, 4, 15));
	assert_null(heph_coronames_at(&cn, 5, 15));
	heph_coronames_finish(&cn);
	heph_file_close(&hf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_round_trip, teardown),
		cmocka_unit_test(test_hostile_options),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
