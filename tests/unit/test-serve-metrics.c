/*
 * test-serve-metrics: corotop serve's metrics renderer and request
 * dispatch (src/ui/serve/metrics.c, route.c).  A hand-built snapshot is
 * rendered in both formats and the text is read back line by line: every
 * family has one HELP and one TYPE before its samples, a WHERE with
 * quotes, backslashes and a newline is escaped, the top K locations are
 * followed by "other", the gauge histogram's buckets are cumulative and
 * its count is the +Inf bucket, and OpenMetrics ends with "# EOF".  The
 * strict parsers of the real consumers read the real thing in e2e-serve.
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

#include "ui/serve/metrics.h"
#include "ui/serve/route.h"

static struct snapshot snap;

#define NCORO 9

/* Suspended at 0x100 (x4), 0x200 (x2, named with quotes, a backslash and a
 * newline), 0x300 (x1); two running; one dead; one suspended at 0x400. */
static int setup(void **state)
{
	static const uint64_t where[NCORO] = {0x100, 0x100, 0x100, 0x100, 0x200,
					      0x200, 0x300, 0x400, 0};
	struct model_coro *c;

	(void)state;
	snapshot_init(&snap);
	snap.ts = 100000000000ull; /* 100 s */
	snap.t.events = 500;
	snap.t.census = 20;
	snap.t.lost = 3;
	snap.t.stations_allocated = 9;
	snap.t.stations_max = 4096;
	snap.target.pid = 42;
	snap.target.running = true;
	snap.coro = c = calloc(NCORO + 2, sizeof(*c));
	snap.count = NCORO + 2;
	snap.cap = NCORO + 2;
	for (size_t i = 0; i < NCORO; i++) {
		c[i].id = i + 1;
		c[i].state = i < 8 ? MODEL_SUSPENDED : MODEL_DEAD;
		c[i].last_addr = where[i];
		c[i].birth_ts = 1000000000ull * i;
		/* In state 0.5 s, 2 s, ... */
		c[i].state_ts = snap.ts - 500000000ull * (i + 1);
	}
	c[NCORO - 1].dead_ts = c[NCORO - 1].state_ts;
	for (size_t i = NCORO; i < NCORO + 2; i++) {
		c[i].id = i + 1;
		c[i].state = MODEL_RUNNING;
		c[i].state_ts = snap.ts - 2000000ull; /* 2 ms */
	}
	snap.t.suspended = 8;
	snap.t.dead = 1;
	snap.t.running = 2;
	snap.warn_counts[LINT_LOST_WAKEUP] = 3;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	snapshot_finish(&snap);
	return 0;
}

static const char *fake_where(void *ctx, const struct snapshot *s,
			      uint64_t addr, char *buf, size_t n)
{
	(void)ctx;
	(void)s;
	if (addr == 0x200)
		snprintf(buf, n, "say \"hi\" C:\\dir\nnext (a.c:1)");
	else
		snprintf(buf, n, "fn_%llx+0x12 (file.c:42)",
			 (unsigned long long)addr);
	return buf;
}

static char *render(enum metrics_format fmt, unsigned k)
{
	struct engine_stats st = {.sleeps = 7, .scans = 9};
	struct metrics_input in = {
		.s = &snap, .stats = &st, .top_where = k, .where = fake_where};
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	assert_non_null(f);
	assert_true(metrics_render(f, &in, fmt));
	assert_int_equal(fclose(f), 0);
	return text;
}

/* The sample line that starts with `prefix`, or NULL. */
static const char *line_of(const char *text, const char *prefix)
{
	for (const char *p = text; p && *p;) {
		if (!strncmp(p, prefix, strlen(prefix)))
			return p;
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return NULL;
}

static double value_of(const char *text, const char *prefix)
{
	const char *l = line_of(text, prefix);

	assert_non_null(l);
	return strtod(l + strlen(prefix), NULL);
}

/* Every sample follows a HELP and a TYPE of its family, each family has
 * exactly one of each, and counters are named per format. */
static void check_families(const char *text, bool om)
{
	char family[128] = "";
	int helps = 0, types = 0;

	for (const char *p = text; *p;) {
		const char *end = strchr(p, '\n');
		char name[128], type[32];
		size_t len;

		assert_non_null(end); /* every line ends */
		len = (size_t)(end - p);
		if (sscanf(p, "# HELP %127s", name) == 1) {
			assert_string_not_equal(name, family);
			snprintf(family, sizeof(family), "%s", name);
			helps++;
		} else if (sscanf(p, "# TYPE %127s %31s", name, type) == 2) {
			assert_string_equal(name, family);
			if (!strcmp(type, "counter")) {
				size_t n = strlen(name);
				bool total = n > 6 &&
					     !strcmp(name + n - 6, "_total");

				assert_true(om ? !total : total);
			}
			assert_true(om || strcmp(type, "gaugehistogram"));
			types++;
		} else if (!strncmp(p, "# UNIT ", 7)) {
			assert_true(om);
		} else if (!strncmp(p, "# EOF", 5)) {
			assert_true(om);
			assert_int_equal(len, 5);
			assert_string_equal(end, "\n"); /* the last line */
		} else {
			/* A sample of the current family. */
			assert_true(family[0]);
			assert_int_equal(strncmp(p, family, strlen(family)), 0);
		}
		p = end + 1;
	}
	assert_int_equal(helps, types);
	assert_true(helps > 15);
	if (om)
		assert_non_null(strstr(text, "\n# EOF\n"));
	else
		assert_null(strstr(text, "# EOF"));
}

static void test_families(void **state)
{
	char *p4 = render(METRICS_PROMETHEUS, 20);
	char *om = render(METRICS_OPENMETRICS, 20);

	(void)state;
	check_families(p4, false);
	check_families(om, true);
	/* A counter: _total on its sample in both formats. */
	assert_non_null(strstr(p4, "# TYPE corotop_events_lost_total counter\n"
				   "corotop_events_lost_total 3\n"));
	assert_non_null(strstr(om, "# TYPE corotop_events_lost counter\n"
				   "corotop_events_lost_total 3\n"));
	assert_int_equal(value_of(om, "corotop_switches_total "), 480);
	assert_int_equal(
		value_of(om, "corotop_coroutines{state=\"suspended\"} "), 8);
	assert_int_equal(value_of(om, "corotop_lints{kind=\"lost_wakeup\"} "),
			 3);
	assert_int_equal(value_of(om, "corotop_lints{kind=\"dead_station\"} "),
			 0);
	assert_non_null(strstr(om,
			       "# UNIT corotop_suspended_oldest_age_seconds "
			       "seconds\n"));
	/* The oldest suspended coroutine was born at 0: 100 s old. */
	assert_true(value_of(om, "corotop_suspended_oldest_age_seconds ") ==
		    100.0);
	assert_true(value_of(om, "corotop_suspended_longest_seconds ") == 4.0);
	assert_int_equal(value_of(om, "corotop_target_up "), 1);
	assert_null(strstr(om, "corotop_target_exit_status"));
	free(p4);
	free(om);
}

static void test_escaping(void **state)
{
	char *om = render(METRICS_OPENMETRICS, 20);
	const char *want = "corotop_suspended_where{where=\"say \\\"hi\\\" "
			   "C:\\\\dir\\nnext (a.c:1)\"} 2\n";
	FILE *f;
	char *buf = NULL;
	size_t len = 0;

	(void)state;
	assert_non_null(strstr(om, want));
	free(om);
	/* Bytes that are not UTF-8 become U+FFFD; UTF-8 stays. */
	f = open_memstream(&buf, &len);
	metrics_label_value(f, "a\xff\xc3\xa9\xe2\x82");
	fclose(f);
	assert_string_equal(buf, "a\xef\xbf\xbd\xc3\xa9\xef\xbf\xbd"
				 "\xef\xbf\xbd");
	free(buf);
}

static void test_top_where(void **state)
{
	char *om = render(METRICS_OPENMETRICS, 2);
	const char *a, *b, *other;

	(void)state;
	a = line_of(om, "corotop_suspended_where{where=\"fn_100+0x12 "
			"(file.c:42)\"} 4\n");
	b = line_of(om, "corotop_suspended_where{where=\"say");
	other = line_of(om, "corotop_suspended_where{where=\"other\"} 2\n");
	assert_non_null(a);
	assert_non_null(b);
	assert_non_null(other);
	assert_true(a < b && b < other); /* most first, other last */
	assert_null(strstr(om, "fn_300"));
	free(om);
	/* K = 0: everything is other. */
	om = render(METRICS_PROMETHEUS, 0);
	assert_non_null(
		strstr(om, "corotop_suspended_where{where=\"other\"} 8\n"));
	assert_null(strstr(om, "fn_100"));
	free(om);
}

/* A suspended coroutine that has not switched yet (last_addr 0: opened,
 * not harvested) has no WHERE: no series names address 0, and "other"
 * does not count it either. */
static void test_where_unswitched(void **state)
{
	char *om;

	(void)state;
	snap.coro[7].last_addr = 0; /* the one at 0x400 */
	om = render(METRICS_OPENMETRICS, 10);
	assert_null(strstr(om, "fn_0+"));
	assert_null(strstr(om, "fn_400"));
	assert_non_null(
		strstr(om, "corotop_suspended_where{where=\"other\"} 0\n"));
	free(om);
	om = render(METRICS_PROMETHEUS, 0);
	assert_non_null(
		strstr(om, "corotop_suspended_where{where=\"other\"} 7\n"));
	/* Still suspended: the state counts are the snapshot's. */
	assert_non_null(
		strstr(om, "corotop_coroutines{state=\"suspended\"} 8\n"));
	free(om);
	snap.coro[7].last_addr = 0x400;
}

static void check_histogram(const char *text, bool om)
{
	static const char *states[] = {"running", "suspended", "dead"};
	static const uint64_t counts[] = {2, 8, 1};

	for (size_t k = 0; k < 3; k++) {
		char prefix[160];
		double prev = 0, inf;

		for (size_t b = 0; b < METRICS_STATE_BUCKETS; b++) {
			double v;

			snprintf(prefix, sizeof(prefix),
				 "corotop_coroutine_state_seconds_bucket{state="
				 "\"%s\",le=\"%g\"} ",
				 states[k], metrics_state_bounds[b]);
			v = value_of(text, prefix);
			assert_true(v >= prev); /* cumulative */
			prev = v;
		}
		snprintf(prefix, sizeof(prefix),
			 "corotop_coroutine_state_seconds_bucket{state=\"%s\","
			 "le=\"+Inf\"} ",
			 states[k]);
		inf = value_of(text, prefix);
		assert_true(inf >= prev);
		assert_true(inf == (double)counts[k]);
		snprintf(prefix, sizeof(prefix),
			 "corotop_coroutine_state_seconds_%scount{state=\"%s\"}"
			 " ",
			 om ? "g" : "", states[k]);
		assert_true(value_of(text, prefix) == inf);
	}
	/* Running 2 ms each: both in le=0.01, neither in le=0.001. */
	assert_true(value_of(text, "corotop_coroutine_state_seconds_bucket{"
				   "state=\"running\",le=\"0.001\"} ") == 0);
	assert_true(value_of(text, "corotop_coroutine_state_seconds_bucket{"
				   "state=\"running\",le=\"0.01\"} ") == 2);
	/* Suspended 0.5, 1, ... 4 s: 0.5 and 1 within le=1 (not above). */
	assert_true(value_of(text, "corotop_coroutine_state_seconds_bucket{"
				   "state=\"suspended\",le=\"1\"} ") == 2);
}

static void test_histogram(void **state)
{
	char *p4 = render(METRICS_PROMETHEUS, 20);
	char *om = render(METRICS_OPENMETRICS, 20);

	(void)state;
	assert_non_null(strstr(om, "# TYPE corotop_coroutine_state_seconds "
				   "gaugehistogram\n"));
	assert_non_null(strstr(p4, "# TYPE corotop_coroutine_state_seconds "
				   "histogram\n"));
	check_histogram(om, true);
	check_histogram(p4, false);
	free(p4);
	free(om);
}

static void test_exited(void **state)
{
	char *om;

	(void)state;
	snap.target.running = false;
	snap.target.exited = true;
	snap.target.exit_code = -1;
	snap.target.term_signal = 9;
	om = render(METRICS_OPENMETRICS, 20);
	assert_int_equal(value_of(om, "corotop_target_up "), 0);
	assert_int_equal(value_of(om, "corotop_target_exit_status "), 137);
	check_families(om, true);
	free(om);
	snap.target.running = true;
	snap.target.exited = false;
	snap.target.term_signal = 0;
}

/* Attach mode: per-buffer counters, the buffer's name escaped. */
static void test_ppt(void **state)
{
	struct engine_ppt_info info = {.enabled = true, .nbuffers = 2};
	struct engine_ppt_buffer buf[2] = {
		{.name = "probe",
		 .state = ENGINE_PPT_ATTACHED,
		 .delivered = 10,
		 .lost = 2,
		 .torn = 1},
		{.name = "my\"buf", .state = ENGINE_PPT_GONE, .delivered = 5},
	};
	struct metrics_input in = {.s = &snap,
				   .ppt = &info,
				   .buf = buf,
				   .nbuf = 2,
				   .top_where = 3,
				   .where = fake_where};
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	(void)state;
	assert_true(metrics_render(f, &in, METRICS_OPENMETRICS));
	fclose(f);
	check_families(text, true);
	assert_non_null(strstr(text, "# TYPE corotop_ppt_frames_lost counter\n"
				     "corotop_ppt_frames_lost_total{buffer="
				     "\"probe\"} 2\n"
				     "corotop_ppt_frames_lost_total{buffer="
				     "\"my\\\"buf\"} 0\n"));
	assert_non_null(strstr(
		text,
		"corotop_ppt_frames_delivered_total{buffer=\"probe\"} 10\n"));
	assert_non_null(
		strstr(text, "corotop_ppt_attached{buffer=\"probe\"} 1\n"));
	assert_non_null(
		strstr(text, "corotop_ppt_attached{buffer=\"my\\\"buf\"} 0\n"));
	/* No stats: no engine counters, still valid. */
	assert_null(strstr(text, "corotop_engine_scans"));
	free(text);
}

static void test_route(void **state)
{
	struct route r;

	(void)state;
	r = route_request("GET", "/metrics", NULL);
	assert_int_equal(r.kind, ROUTE_METRICS);
	assert_int_equal(r.status, 200);
	assert_int_equal(r.fmt, METRICS_PROMETHEUS);
	r = route_request("HEAD", "/healthz", NULL);
	assert_int_equal(r.kind, ROUTE_HEALTHZ);
	r = route_request("GET", "/snapshot", "*/*");
	assert_int_equal(r.kind, ROUTE_SNAPSHOT);
	r = route_request("POST", "/metrics", NULL);
	assert_int_equal(r.status, 405);
	r = route_request("get", "/metrics", NULL); /* methods are exact */
	assert_int_equal(r.status, 405);
	r = route_request("GET", "/metrics/", NULL);
	assert_int_equal(r.status, 404);
	r = route_request("POST", "/etc/passwd", NULL);
	assert_int_equal(r.status, 404);
	r = route_request(NULL, NULL, NULL);
	assert_int_equal(r.status, 404);

	assert_false(route_wants_openmetrics(NULL));
	assert_false(route_wants_openmetrics(""));
	assert_false(route_wants_openmetrics("text/plain"));
	assert_false(route_wants_openmetrics("*/*"));
	assert_true(route_wants_openmetrics("application/openmetrics-text"));
	assert_true(route_wants_openmetrics(
		"Application/OpenMetrics-Text ; version=1.0.0"));
	assert_true(route_wants_openmetrics(
		"application/openmetrics-text;version=1.0.0,application/"
		"openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0."
		"4;q=0.5,*/*;q=0.1"));
	assert_false(route_wants_openmetrics(
		"application/openmetrics-text;q=0.5, text/plain"));
	assert_false(
		route_wants_openmetrics("application/openmetrics-text;q=0"));
	assert_false(
		route_wants_openmetrics("application/openmetrics-text;q=2"));
	assert_false(
		route_wants_openmetrics("application/openmetrics-text;q=abc"));
	assert_true(route_wants_openmetrics(
		"text/plain;q=0.2,application/openmetrics-text;q=0.900"));
	assert_false(route_wants_openmetrics(",;,;=,q=,;q"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_families),
		cmocka_unit_test(test_escaping),
		cmocka_unit_test(test_top_where),
		cmocka_unit_test(test_where_unswitched),
		cmocka_unit_test(test_histogram),
		cmocka_unit_test(test_exited),
		cmocka_unit_test(test_ppt),
		cmocka_unit_test(test_route),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
