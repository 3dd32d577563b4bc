/*
 * test-record: --record, --replay and corotop convert through the corotop
 * binary, as a user runs them.
 *
 *   - the round trip: the demo recorded while a batch run prints JSON (and
 *     ended by the test once four snapshots came and one showed a parked
 *     stack), then replayed headless; the replay's final snapshot holds
 *     every coroutine of the live one with the same id, state, switches,
 *     seq, thread, address, losses and age, and the same totals;
 *   - the file itself: packet by packet with the Heph decoder -- the epoch
 *     first (23 bytes), only whole packets, every stream's counter counting
 *     up by one, only running/suspended/lost events, addr and seq on every
 *     interval, corotop_end last, losses summing to what the live run
 *     counted;
 *   - SIGINT while recording: exit 130, a complete file that replays;
 *   - a file that can not be written (/dev/full, a missing directory): a
 *     message naming --record, exit 1, the target never started;
 *   - a recording cut inside a packet still replays, and stderr names the
 *     byte offset;
 *   - corotop convert: chrome output parses and every event has the keys
 *     the format requires, jsonl lines are coroTracer records, folded lines
 *     are "frames weight"; usage mistakes exit 2;
 *   - compressed (--record FILE.zst): zstd frames; convert --to heph makes
 *     the plain file (whole packets, corotop_end last), and jsonl from
 *     either is the same, line for line; both replay; one cut inside a
 *     frame replays and says so.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "e2e.h"
#include "engine/engine.h"
#include "engine/heph/heph.h"

#define MAX_LINES 256

static char rec[300], out[300];
static char zrec[300], zplain[300]; /* compressed, and made plain */

static int setup(void **state)
{
	if (setup_xdg(state))
		return -1;
	snprintf(rec, sizeof(rec), "%s.heph", xdg);
	snprintf(out, sizeof(out), "%s.out", xdg);
	snprintf(zrec, sizeof(zrec), "%s.heph.zst", xdg);
	snprintf(zplain, sizeof(zplain), "%s.plain.heph", xdg);
	return 0;
}

static int teardown(void **state)
{
	unlink(rec);
	unlink(out);
	unlink(zrec);
	unlink(zplain);
	return teardown_xdg(state);
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;

	assert_non_null(f);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	assert_true(n >= 0);
	rewind(f);
	buf = malloc((size_t)n + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	buf[n] = 0;
	fclose(f);
	*len = (size_t)n;
	return buf;
}

/* ---- the file, packet by packet ---- */

struct rec_shape {
	size_t packets, intervals, lost_events, stacks, births;
	uint64_t lost; /* count attributes summed */
	bool end_last;
};

static bool attr_u64(const struct heph_packet *p, const char *name, uint64_t *v)
{
	struct heph_attr a;
	uint32_t pos = 0;

	while (heph_attr_next(p, &pos, &a))
		if (a.name_len == strlen(name) &&
		    !memcmp(a.name, name, a.name_len) && a.type == HEPH_U64) {
			*v = heph_attr_u64(&a, 0);
			return true;
		}
	return false;
}

static bool has_attr(const struct heph_packet *p, const char *name,
		     uint8_t type)
{
	struct heph_attr a;
	uint32_t pos = 0;

	while (heph_attr_next(p, &pos, &a))
		if (a.name_len == strlen(name) &&
		    !memcmp(a.name, name, a.name_len) && a.type == type)
			return true;
	return false;
}

static bool desc_is(const struct heph_packet *p, const char *s)
{
	return p->desc_len == strlen(s) && !memcmp(p->desc, s, p->desc_len);
}

/* Every check on the bytes of a recording. */
static void check_file(const char *path, struct rec_shape *sh)
{
	/* Streams' next counters (few threads: a small table). */
	uint32_t ids[64], next[64];
	size_t nstreams = 0, len, off = 0;
	char *buf = slurp(path, &len), err[160];
	const uint8_t *b = (const uint8_t *)buf;

	memset(sh, 0, sizeof(*sh));
	while (off < len) {
		struct heph_packet p;
		enum heph_status st =
			heph_decode(b + off, len - off, &p, err, sizeof(err));
		size_t k;

		if (st != HEPH_OK)
			fail_msg("packet at byte %zu: %s", off, err);
		if (!sh->packets) {
			/* The epoch first, exactly the spec's 23 bytes. */
			assert_int_equal(p.kind, HEPH_META);
			assert_int_equal(p.size, 23);
			assert_int_equal(p.option_len, 5);
			assert_memory_equal(p.option, "epoch", 5);
		}
		sh->packets++;
		sh->end_last = p.kind == HEPH_META && p.option_len == 11 &&
			       !memcmp(p.option, "corotop_end", 11);
		if (p.kind == HEPH_META) {
			sh->births += p.option_len == 13 &&
				      !memcmp(p.option, "corotop_birth", 13);
			off += p.size;
			continue;
		}
		for (k = 0; k < nstreams && ids[k] != p.stream; k++)
			;
		if (k == nstreams) {
			assert_true(nstreams < 64);
			ids[nstreams] = p.stream;
			next[nstreams++] = 0;
		}
		if (p.counter != next[k])
			fail_msg("stream %u: counter %u, want %u (byte %zu)",
				 p.stream, p.counter, next[k], off);
		next[k]++;
		assert_true(p.start <= p.end);
		if (desc_is(&p, "lost")) {
			uint64_t count = 0;

			assert_true(attr_u64(&p, "count", &count));
			assert_true(count > 0);
			sh->lost += count;
			sh->lost_events++;
		} else {
			uint64_t v;

			assert_true(desc_is(&p, "running") ||
				    desc_is(&p, "suspended"));
			assert_true(attr_u64(&p, "addr", &v));
			assert_true(attr_u64(&p, "seq", &v));
			sh->intervals++;
			if (has_attr(&p, "stack", HEPH_U64 | HEPH_ARRAY)) {
				assert_true(desc_is(&p, "suspended"));
				sh->stacks++;
			}
		}
		off += p.size;
	}
	assert_int_equal(off, len); /* only whole packets */
	free(buf);
}

/* ---- the round trip ---- */

/* The coroutine of `id` in a snapshot's array, or NULL. */
static __attribute__((unused)) const struct jv *by_id(const struct jv *co,
						      uint64_t id)
{
	for (size_t i = 0; i < co->n; i++)
		if (json_u64(&co->items[i], "id") == id)
			return &co->items[i];
	return NULL;
}

static __attribute__((unused)) void same(const struct jv *a, const struct jv *b,
					 const char *path)
{
	const struct jv *x = json_get(a, path), *y = json_get(b, path);

	assert_non_null(x);
	assert_non_null(y);
	assert_int_equal(x->t, y->t);
	if (x->t == J_NUM || x->t == J_STR)
		if (strcmp(x->s, y->s))
			fail_msg("%s: live %s, replay %s", path, x->s, y->s);
}

/* Some coroutine of snapshot v has a parked stack. */
static __attribute__((unused)) bool any_parked_stack(const struct jv *v)
{
	const struct jv *co = json_need(v, "coroutines", J_ARR);

	for (size_t i = 0; i < co->n; i++)
		if (json_get(&co->items[i], "parked_stack"))
			return true;
	return false;
}

static void test_round_trip(void **state)
{
#ifndef ITEST_DEMO
	(void)state;
	skip();
#else
	char *live[] = {ITEST_COROTOP, "-b",	   "-f",
			"json",	       "-d",	   "5",
			"--record",    rec,	   "--parked-stacks",
			"--",	       ITEST_DEMO, "-d",
			"120",	       "-c",	   "300",
			NULL};
	char *replay[] = {ITEST_COROTOP, "--replay", rec, "-b", "-f",
			  "json",	 "-d",	     "5", NULL};
	char *ll[MAX_LINES], *rl[MAX_LINES], *line;
	const struct jv *lc, *rc;
	struct proc lp, rp;
	struct rec_shape sh;
	struct jv lv, rv, first;
	uint64_t end = it_now() + 60ull * 1000000000u;
	size_t nl, nr, off = 0, snaps = 0;
	bool ready = false;
	pid_t demo = 0;
	int code;

	(void)state;
	/* The demo runs until the test ends it (SIGTERM; -d 120 only ends
	 * it if the test failed): once four snapshots came (the recording
	 * spans 2 s at least) and one shows a parked stack (walked while
	 * the demo lives, so the file holds some).  A demo that ended by
	 * itself after 2 s left neither on a machine that starved corotop
	 * meanwhile. */
	proc_start(&lp, live);
	while (!ready && it_now() < end &&
	       (line = proc_line_by(&lp, &off, end)) != NULL) {
		check_snapshot(line, false, &first);
		demo = (pid_t)json_u64(&first, "target.pid");
		if (!snaps++) { /* recording: it says where */
			assert_string_equal(
				json_need(&first, "engine.record.path", J_STR)
					->s,
				rec);
			assert_false(json_need(&first, "engine.record.stopped",
					       J_BOOL)
					     ->b);
		}
		ready = snaps >= 4 && any_parked_stack(&first);
		json_free(&first);
		free(line);
	}
	if (demo > 0)
		kill(demo, SIGTERM); /* it exits 0 */
	code = exit_code(proc_finish(&lp, 60000));
	if (!ready)
		fail_msg("no parked stack in 4 snapshots or more within 60 s "
			 "(%zu read); exit %d; stderr: %s",
			 snaps, code, lp.ebuf);
	if (code)
		fail_msg("corotop exit %d; stderr: %s", code, lp.ebuf);
	nl = split_lines(lp.obuf + off, ll, MAX_LINES);
	assert_true(nl >= 1 && nl <= MAX_LINES);
	check_snapshot(ll[nl - 1], true, &lv);
	assert_int_equal(json_u64(&lv, "target.exit_status"), 0);
	assert_int_equal(json_u64(&lv, "engine.record.dropped"), 0);

	code = run(&rp, replay, 60000);
	if (code)
		fail_msg("replay exit %d; stderr: %s", code, rp.ebuf);
	assert_string_equal(rp.ebuf, ""); /* no problems in our own file */
	nr = split_lines(rp.obuf, rl, MAX_LINES);
	assert_true(nr >= 4 && nr <= MAX_LINES); /* 2 s at 0.5 s, + the end */
	/* Positions go forward a delay at a time, the last at the end. */
	check_snapshot(rl[0], false, &first);
	assert_int_equal(json_u64(&first, "replay.pos_ns"), 500000000);
	assert_int_equal(json_u64(&first, "ts"),
			 json_u64(&first, "replay.t0") + 500000000);
	json_free(&first);
	check_snapshot(rl[nr - 1], true, &rv);
	assert_int_equal(json_u64(&rv, "replay.pos_ns") +
				 json_u64(&rv, "replay.t0"),
			 json_u64(&rv, "replay.t1"));
	assert_int_equal(json_need(&lv, "replay", J_NULL)->t, J_NULL);

	/* The totals. */
	same(&lv, &rv, "events.harvested");
	same(&lv, &rv, "events.lost");
	same(&lv, &rv, "counts.running");
	same(&lv, &rv, "counts.suspended");
	same(&lv, &rv, "counts.dead");
	same(&lv, &rv, "counts.seen");
	same(&lv, &rv, "target.pid");
	same(&lv, &rv, "target.exit_status");
	/* Every coroutine, field by field ("where" differs: the live run
	 * can not name addresses once the target is gone; the recording
	 * can). */
	lc = json_need(&lv, "coroutines", J_ARR);
	rc = json_need(&rv, "coroutines", J_ARR);
	assert_true(lc->n > 300);
	assert_int_equal(lc->n, rc->n);
	for (size_t i = 0; i < lc->n; i++) {
		static const char *const keys[] = {
			"probe_id", "state", "tid",    "addr",	  "seq",
			"switches", "lost",  "age_ns", "run_pct", "name",
		};
		const struct jv *a = &lc->items[i];
		const struct jv *b = by_id(rc, json_u64(a, "id"));

		if (!b)
			fail_msg("coroutine %s not replayed",
				 json_get(a, "id")->s);
		for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++)
			same(a, b, keys[k]);
		/* The recording names what the live run could not (a
		 * coroutine that never ran, born as the demo ended, has no
		 * address to name). */
		if (json_u64(a, "switches") > 0 &&
		    !strncmp(json_need(b, "where", J_STR)->s, "0x", 2))
			fail_msg("coroutine %s at %s not named in the replay",
				 json_get(a, "id")->s,
				 json_need(b, "where", J_STR)->s);
	}

	/* The file that made it. */
	check_file(rec, &sh);
	assert_true(sh.end_last);
	assert_int_equal(sh.lost, json_u64(&lv, "events.lost"));
	assert_int_equal(sh.intervals, json_u64(&lv, "events.harvested"));
	assert_int_equal(sh.births, json_u64(&lv, "counts.seen"));
	assert_true(sh.stacks > 0); /* --parked-stacks */
	json_free(&lv);
	json_free(&rv);
	proc_free(&lp);
	proc_free(&rp);
	assert_xdg_empty();
#endif
}

/* SIGINT while recording a target that runs forever: 130, and a file that
 * ends with whole packets and the end marker.  SIGINT comes once a snapshot
 * shows harvested events (waited for, with a deadline), so the file has
 * intervals on any machine. */
static void test_sigint_completes_the_file(void **state)
{
	char *live[] = {ITEST_COROTOP, "-b",	   "-f", "json", "-d",
			"5",	       "--record", rec,	 "--",	 ITEST_WRITER,
			"run",	       "60",	   "8",	 NULL};
	char *replay[] = {ITEST_COROTOP, "--replay", rec, "-b",
			  "-f",		 "json",     NULL};
	struct rec_shape sh;
	struct proc p, r;
	uint64_t harvested = 0, end;
	size_t off = 0;
	int status;

	(void)state;
	proc_start(&p, live);
	end = it_now() + 30ull * 1000000000u;
	while (!harvested && it_now() < end) {
		char *line = proc_next_line(&p, &off, 1000);
		struct jv v;

		if (!line)
			continue;
		json_must_parse(line, &v);
		harvested = json_u64(&v, "events.harvested");
		json_free(&v);
		free(line);
	}
	kill(p.pid, SIGINT);
	status = proc_finish(&p, 10000);
	if (!harvested)
		fail_msg("no events harvested within 30 s; stderr: %s", p.ebuf);
	assert_int_equal(exit_code(status), 130);
	check_file(rec, &sh);
	assert_true(sh.end_last);
	assert_true(sh.intervals > 0);
	assert_int_equal(run(&r, replay, 30000), 0);
	assert_string_equal(r.ebuf, "");
	proc_free(&p);
	proc_free(&r);
	assert_xdg_empty();
}

static void test_unwritable_file(void **state)
{
	char bad[320];
	char *full[] = {ITEST_COROTOP, "-b",  "--record", "/dev/full", "--",
			ITEST_WRITER,  "run", "1",	  "2",	       NULL};
	char *missing[] = {ITEST_COROTOP, "-b",	 "--record", bad, "--",
			   ITEST_WRITER,  "run", "1",	     "2", NULL};
	struct proc p;

	(void)state;
	assert_int_equal(run(&p, full, 10000), 1);
	assert_non_null(strstr(p.ebuf, "--record"));
	assert_non_null(strstr(p.ebuf, "No space left on device"));
	assert_string_equal(p.obuf, "");
	proc_free(&p);
	snprintf(bad, sizeof(bad), "%s.missing/rec.heph", xdg);
	assert_int_equal(run(&p, missing, 10000), 1);
	assert_non_null(strstr(p.ebuf, "--record"));
	assert_non_null(strstr(p.ebuf, "No such file or directory"));
	proc_free(&p);
	assert_xdg_empty();
}

/* --jsonl onto a full device: exit 1, and the reason said once, with
 * its strerror text (it said only "failed", twice). */
static void test_unwritable_jsonl(void **state)
{
	char *full[] = {
		ITEST_COROTOP, "-b", "-d",	   "5",	  "-n", "3", "--jsonl",
		"/dev/full",   "--", ITEST_WRITER, "run", "1",	"2", NULL};
	const char *say = "writing the --jsonl file failed: No space left "
			  "on device";
	struct proc p;
	char *at;

	(void)state;
	assert_int_equal(run(&p, full, 60000), 1);
	at = strstr(p.ebuf, say);
	if (!at || strstr(at + 1, say))
		fail_msg("want the reason once: %s", p.ebuf);
	proc_free(&p);
	assert_xdg_empty();
}

/* The recorder's books in one snapshot line. */
struct books {
	uint64_t bytes, intervals, dropped;
	bool stopped;
};

static __attribute__((unused)) struct books books_of(const char *line,
						     bool *warned)
{
	struct books b;
	struct jv v;

	json_must_parse(line, &v);
	assert_string_equal(json_need(&v, "engine.record.path", J_STR)->s, rec);
	b.bytes = json_u64(&v, "engine.record.bytes");
	b.intervals = json_u64(&v, "engine.record.intervals");
	b.dropped = json_u64(&v, "engine.record.dropped");
	b.stopped = json_need(&v, "engine.record.stopped", J_BOOL)->b;
	*warned = json_get(&v, "engine.warning")->t == J_STR &&
		  strstr(json_get(&v, "engine.warning")->s, "--record stopped");
	/* The target (-d 120) outlives the test: harvesting goes on. */
	assert_true(json_need(&v, "target.running", J_BOOL)->b);
	/* The -F that keeps each snapshot small held. */
	assert_int_equal(json_need(&v, "coroutines", J_ARR)->n, 0);
	json_free(&v);
	return b;
}

/*
 * A recording that hits RLIMIT_FSIZE mid-run: harvesting goes on, the
 * snapshots say why recording stopped, corotop exits 1 naming it, and the
 * file holds whole packets only (it replays without a problem).  The books
 * stop with the file: the snapshot that first says "stopped" and the two
 * after it report the same intervals, bytes and drops, and the intervals
 * are the file's.  Every wait is for a condition, with a deadline: how soon
 * the limit is hit depends on the machine.
 */
static void test_record_stops_at_file_limit(void **state)
{
#ifndef ITEST_DEMO
	(void)state;
	skip();
#else
	/* About 12 MB/s of recording in a plain build, less under the
	 * sanitizers: the limit is hit within seconds either way. */
	/* The filter matches no coroutine: at this spawn rate tens of
	 * thousands live at once, and printing them all (megabytes a
	 * snapshot) slowed a loaded CI machine past the demo's 120 s.
	 * The books under test are in "engine", which is always printed. */
	char *live[] = {
		ITEST_COROTOP,	"-b",	 "-f", "json",
		"-d",		"3",	 "-F", "no-coroutine-has-this-name",
		"--record",	rec,	 "--", ITEST_DEMO,
		"-d",		"600",	 "-c", "100",
		"--spawn-rate", "12000", NULL};
	char *replay[] = {ITEST_COROTOP, "--replay", rec, "-b",
			  "-n",		 "1",	     NULL};
	/* The CallTrace region (38 MB) must fit under the limit; the child
	 * inherits it (this process writes nothing that big). */
	struct rlimit lim, old;
	struct books prev = {0}, b, at_stop;
	uint64_t end;
	struct rec_shape sh;
	struct proc p, r;
	size_t off = 0, lines = 0;
	bool warned;
	char *line;

	(void)state;
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
	lim = (struct rlimit){40u << 20, old.rlim_max}; /* the soft limit */
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
	proc_start(&p, live);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
	/* Snapshots until one says the recording stopped.  The books only
	 * grow meanwhile.  The first may already say stopped: it is due at
	 * 0.3 s, but a loaded machine may print it after the limit.  How
	 * soon the limit comes depends on the machine (about 12 MB/s here,
	 * a fraction of it on a loaded one): the deadline is for progress,
	 * 60 s without a byte more, not for the whole 40 MiB. */
	end = it_now() + 60ull * 1000000000u;
	for (;;) {
		uint64_t now = it_now();

		line = proc_next_line(
			&p, &off,
			now < end ? (unsigned)((end - now) / 1000000u) : 0);
		if (!line)
			fail_msg("no snapshot said '--record stopped', and "
				 "none recorded a byte more for 60 s (%zu "
				 "snapshots, %llu bytes); stderr: %s",
				 lines, (unsigned long long)prev.bytes,
				 p.ebuf ? p.ebuf : "");
		b = books_of(line, &warned);
		free(line);
		if (!lines++)
			assert_true(b.bytes > 0); /* the epoch, at creation */
		assert_true(b.bytes >= prev.bytes);
		if (b.bytes > prev.bytes)
			end = it_now() + 60ull * 1000000000u;
		assert_true(b.intervals >= prev.intervals);
		assert_true(b.dropped >= prev.dropped);
		/* The warning is read before the books (engine_query.c):
		 * one snapshot may say stopped before it warns, never the
		 * other way round. */
		assert_true(!warned || b.stopped);
		prev = b;
		if (b.stopped)
			break;
	}
	at_stop = b;
	print_message("stopped at snapshot %zu: %llu bytes, %llu intervals, "
		      "%llu dropped\n",
		      lines, (unsigned long long)b.bytes,
		      (unsigned long long)b.intervals,
		      (unsigned long long)b.dropped);
	assert_true(at_stop.bytes <= 40u << 20);
	assert_true(at_stop.intervals > 0);
	/* Two later snapshots: the books stay where the file stopped. */
	for (int k = 0; k < 2; k++) {
		line = proc_next_line(&p, &off, 30000);
		if (!line)
			fail_msg("snapshot %d after the stop never came",
				 k + 1);
		b = books_of(line, &warned);
		free(line);
		assert_true(b.stopped && warned);
		assert_int_equal(b.intervals, at_stop.intervals);
		assert_int_equal(b.bytes, at_stop.bytes);
		assert_int_equal(b.dropped, at_stop.dropped);
	}
	kill(p.pid, SIGINT);
	assert_int_equal(exit_code(proc_finish(&p, 30000)), 130);
	assert_non_null(strstr(p.ebuf, "--record: "));
	assert_non_null(strstr(p.ebuf, "File too large"));
	check_file(rec, &sh); /* whole packets only */
	assert_false(sh.end_last);
	assert_int_equal(sh.intervals, at_stop.intervals); /* the file's */
	assert_true(sh.intervals > 100000);
	assert_true(sh.packets > 0);
	assert_int_equal(run(&r, replay, 30000), 0);
	assert_string_equal(r.ebuf, "");
	proc_free(&p);
	proc_free(&r);
#endif
}

/* Record the writer (no demo needed) for the tests below. */
static void record_writer(void)
{
	char *live[] = {ITEST_COROTOP, "-b",  "-d", "3", "--record", rec, "--",
			ITEST_WRITER,  "run", "1",  "8", NULL};
	struct proc p;
	int code = run(&p, live, 30000);

	if (code)
		fail_msg("corotop exit %d; stderr: %s", code, p.ebuf);
	proc_free(&p);
}

static void test_truncated_recording_replays(void **state)
{
	char *replay[] = {ITEST_COROTOP, "--replay", out, "-b",
			  "-f",		 "json",     NULL};
	char *lines[MAX_LINES], want[64];
	size_t len, n;
	char *buf;
	struct proc p;
	struct jv v;
	FILE *f;

	(void)state;
	record_writer();
	buf = slurp(rec, &len);
	assert_true(len > 200);
	/* Cut 7 bytes into the last packet but one. */
	f = fopen(out, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(buf, 1, len - 40, f), len - 40);
	fclose(f);
	assert_int_equal(run(&p, replay, 30000), 0);
	assert_non_null(strstr(p.ebuf, "could not be read"));
	snprintf(want, sizeof(want), "at byte ");
	assert_non_null(strstr(p.ebuf, want));
	assert_non_null(strstr(p.ebuf, "ends inside a packet"));
	n = split_lines(p.obuf, lines, MAX_LINES);
	assert_true(n >= 1);
	check_snapshot(lines[n - 1], false, &v);
	json_free(&v);
	free(buf);
	proc_free(&p);
}

/* The recording shrinks under a replay (another process truncates it):
 * the next moment faults on the mapping, the engine says so and keeps the
 * last complete snapshot, and nothing crashes. */
static void test_replay_survives_truncation(void **state)
{
	struct engine_config cfg;
	struct engine_replay_info ri;
	struct snapshot s;
	struct engine *e;
	char err[256];
	size_t before;

	(void)state;
	record_writer();
	engine_config_defaults(&cfg);
	cfg.replay_path = rec;
	e = engine_create(&cfg, err, sizeof(err));
	if (!e)
		fail_msg("%s", err);
	assert_true(engine_start(e, err, sizeof(err)));
	assert_true(engine_replay_info(e, &ri));
	assert_true(ri.events > 0);
	snapshot_init(&s);
	engine_replay_seek(e, ri.t0 + (ri.t1 - ri.t0) / 2);
	engine_snapshot(e, &s);
	assert_null(s.error);
	before = s.count;
	assert_true(before > 0);
	assert_int_equal(truncate(rec, 64), 0);
	engine_replay_seek(e, ri.t1);
	engine_snapshot(e, &s);
	assert_non_null(s.error);
	assert_non_null(strstr(s.error, "SIGBUS"));
	assert_int_equal(s.count, before); /* the last complete one */
	assert_int_equal(s.ts, ri.t0 + (ri.t1 - ri.t0) / 2);
	snapshot_finish(&s);
	engine_destroy(e);
}

/* ---- convert ---- */

static void test_convert_chrome(void **state)
{
	char *conv[] = {ITEST_COROTOP, "convert", "--to", "chrome",
			rec,	       "-o",	  out,	  NULL};
	const struct jv *ev;
	size_t len, x = 0, m = 0;
	struct rec_shape sh;
	struct proc p;
	struct jv v;
	char *buf;

	(void)state;
	record_writer();
	check_file(rec, &sh);
	assert_int_equal(run(&p, conv, 30000), 0);
	assert_non_null(strstr(p.ebuf, "trace events written"));
	buf = slurp(out, &len);
	json_must_parse(buf, &v);
	ev = json_need(&v, "traceEvents", J_ARR);
	for (size_t i = 0; i < ev->n; i++) {
		const struct jv *e = &ev->items[i];
		const char *ph = json_need(e, "ph", J_STR)->s;

		json_need(e, "name", J_STR);
		json_need(e, "pid", J_NUM);
		json_need(e, "tid", J_NUM);
		if (!strcmp(ph, "s") || !strcmp(ph, "f")) {
			/* A migration's flow (tests/check/chrome_check.py
			 * checks every field of every phase). */
			json_need(e, "id", J_NUM);
			continue;
		}
		json_need(e, "args", J_OBJ);
		if (!strcmp(ph, "X")) {
			json_need(e, "ts", J_NUM);
			json_need(e, "dur", J_NUM);
			assert_true(json_need(e, "dur", J_NUM)->num >= 0);
			x++;
		} else {
			assert_string_equal(ph, "M");
			if (strcmp(json_need(e, "name", J_STR)->s,
				   "thread_sort_index"))
				json_need(e, "args.name", J_STR);
			m++;
		}
	}
	assert_int_equal(x, sh.intervals + sh.lost_events);
	assert_true(m >= 2); /* a process and a thread at least */
	json_free(&v);
	free(buf);
	proc_free(&p);
	/* To stdout with -o - (and nothing else on stdout). */
	conv[6] = "-";
	assert_int_equal(run(&p, conv, 30000), 0);
	json_must_parse(p.obuf, &v);
	json_free(&v);
	proc_free(&p);
}

static void test_convert_jsonl_and_folded(void **state)
{
	char *jl[] = {ITEST_COROTOP, "convert", "--to", "jsonl", rec, NULL};
	char *fo[] = {ITEST_COROTOP, "convert", "-q", "--to",
		      "folded",	     rec,	NULL};
	char **lines = calloc(1u << 20, sizeof(*lines));
	uint64_t last = 0;
	struct rec_shape sh;
	struct proc p;
	size_t n;

	(void)state;
	assert_non_null(lines);
	record_writer();
	check_file(rec, &sh);
	assert_int_equal(run(&p, jl, 30000), 0);
	n = split_lines(p.obuf, lines, 1u << 20);
	assert_int_equal(n, sh.intervals);
	for (size_t i = 0; i < n; i++) {
		struct jv v;

		json_must_parse(lines[i], &v);
		assert_int_equal(v.n, 6);
		need_uint(&v, "probe_id");
		need_uint(&v, "tid");
		assert_int_equal(strlen(json_need(&v, "addr", J_STR)->s), 18);
		need_uint(&v, "seq");
		json_need(&v, "is_active", J_BOOL);
		assert_true(json_u64(&v, "ts") >= last); /* start order */
		last = json_u64(&v, "ts");
		json_free(&v);
	}
	proc_free(&p);
	/* The writer parks nowhere: no stacks to fold, which is an error
	 * that says why, not an empty profile. */
	assert_int_equal(run(&p, fo, 30000), 1);
	assert_string_equal(p.obuf, "");
	assert_non_null(strstr(p.ebuf, "holds no parked stacks to fold"));
	proc_free(&p);
	free(lines);
}

/* ---- compressed ---- */

static void test_record_compressed(void **state)
{
#ifndef ITEST_DEMO
	(void)state;
	skip();
#else
	char *live[] = {ITEST_COROTOP, "-b", "-d", "5",	 "--record", zrec, "--",
			ITEST_DEMO,    "-d", "2",  "-c", "300",	     NULL};
	char *unz[] = {ITEST_COROTOP, "convert", "--to", "heph",
		       zrec,	      "-o",	 zplain, NULL};
	char *jz[] = {ITEST_COROTOP, "convert", "-q", "--to",
		      "jsonl",	     zrec,	NULL};
	char *jp[] = {ITEST_COROTOP, "convert", "-q", "--to",
		      "jsonl",	     zplain,	NULL};
	char *rz[] = {ITEST_COROTOP, "--replay", zrec, "-b",
		      "-f",	     "json",	 NULL};
	char *rcut[] = {ITEST_COROTOP, "--replay", rec, "-b",
			"-f",	       "json",	   NULL};
	struct rec_shape sh;
	struct proc p, q;
	size_t len;
	char *z;
	FILE *f;
	int code;

	(void)state;
	code = run(&p, live, 60000);
	if (code)
		fail_msg("corotop exit %d; stderr: %s", code, p.ebuf);
	proc_free(&p);
	z = slurp(zrec, &len);
	assert_true(len > 8);
	assert_memory_equal(z, "\x28\xb5\x2f\xfd", 4); /* a zstd frame */
	/* The plain Heph, for tools that do not read zstd. */
	assert_int_equal(run(&p, unz, 30000), 0);
	assert_non_null(strstr(p.ebuf, "bytes of Heph written"));
	proc_free(&p);
	check_file(zplain, &sh);
	assert_true(sh.end_last);
	assert_true(sh.intervals > 0);
	/* Either converts to the same lines. */
	assert_int_equal(run(&p, jz, 30000), 0);
	assert_int_equal(run(&q, jp, 30000), 0);
	assert_true(strlen(p.obuf) > 0);
	assert_string_equal(p.obuf, q.obuf);
	proc_free(&p);
	proc_free(&q);
	assert_int_equal(run(&p, rz, 30000), 0);
	assert_string_equal(p.ebuf, "");
	proc_free(&p);
	/* Cut inside its last frames: replays, and says where. */
	f = fopen(rec, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(z, 1, len * 2 / 3, f), len * 2 / 3);
	fclose(f);
	assert_int_equal(run(&p, rcut, 30000), 0);
	assert_non_null(strstr(p.ebuf, "zstd frame cut"));
	proc_free(&p);
	free(z);
#endif
}

static void test_convert_usage(void **state)
{
	char *nofmt[] = {ITEST_COROTOP, "convert", rec, NULL};
	char *badfmt[] = {ITEST_COROTOP, "convert", "--to", "xml", rec, NULL};
	char *nofile[] = {ITEST_COROTOP, "convert", "--to", "chrome", NULL};
	char *missing[] = {ITEST_COROTOP, "convert",	       "--to",
			   "chrome",	  "/nonexistent.heph", NULL};
	struct proc p;

	(void)state;
	assert_int_equal(run(&p, nofmt, 10000), 2);
	assert_non_null(strstr(p.ebuf, "--to"));
	proc_free(&p);
	assert_int_equal(run(&p, badfmt, 10000), 2);
	assert_non_null(strstr(p.ebuf, "xml"));
	proc_free(&p);
	assert_int_equal(run(&p, nofile, 10000), 2);
	proc_free(&p);
	assert_int_equal(run(&p, missing, 10000), 1);
	assert_non_null(strstr(p.ebuf, "/nonexistent.heph"));
	proc_free(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_sigint_completes_the_file),
		cmocka_unit_test(test_unwritable_file),
		cmocka_unit_test(test_unwritable_jsonl),
		cmocka_unit_test(test_record_stops_at_file_limit),
		cmocka_unit_test(test_truncated_recording_replays),
		cmocka_unit_test(test_replay_survives_truncation),
		cmocka_unit_test(test_convert_chrome),
		cmocka_unit_test(test_convert_jsonl_and_folded),
		cmocka_unit_test(test_convert_usage),
		cmocka_unit_test(test_record_compressed),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
