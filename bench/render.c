/*
 * render: the UI's work per refresh with 100k coroutines -- the snapshot
 * (model copy), the row selection (filter + sort + grouping) and the full
 * draw of the main table.
 *
 * One process: an in-process engine that owns a region of 131072 stations,
 * with this process's probe attached to it.  T threads open N coroutines
 * between them (so grouping by thread has T groups) and record one event on
 * each: every tenth one resumes (R), the others suspend (S) at a distinct
 * address.  The program waits until a snapshot holds all N, then sets up
 * curses the way tui.c does, but on newterm("xterm-256color") writing to
 * /dev/null with a 200x60 screen, 256 colours and UTF-8.
 *
 * Per iteration, exactly what tui_on_prepare does on a refresh:
 *   snapshot  engine_snapshot (copy under the lock, then the lints)
 *   rebuild   table_view_rebuild (filter, sort, group, keep the selection)
 *   draw      erase, table_view_header, table_view_draw, wnoutrefresh,
 *             doupdate (tui_draw is static in tui.c; this is its body)
 * Cases: the default sort (ID), sort by IN-STATE, ID inverted, a substring
 * filter, a regex filter, the field filter state=S, and grouping by thread.
 * "full" is the default case with clearok(curscr) each time, so doupdate
 * rewrites the whole screen instead of the cells that changed.  The churn
 * cases repeat some of them with every coroutine switching before each
 * iteration, untimed, so the snapshot, the filter and the sort see every
 * record changed: every tenth one resumes, the others park at one of two
 * addresses of their own, in turn (200k distinct addresses in all).  The
 * "new-addr" case parks every coroutine at an address never seen before on
 * every iteration: nothing any cache keyed by address can help with, the
 * worst case for a text filter (real programs park at a bounded set of code
 * addresses, or, with upstream probes, at the coroutine's frame, which
 * stays put for its life).
 *
 * Each case runs a few warm-up iterations, then M timed ones; the lines give
 * median and p99 in ms of each part and of their sum.  Target: snapshot +
 * rebuild + draw <= 10 ms median.
 *
 * Usage: render [iterations-per-case] [coroutines] [case-substring]
 *        (default 100 100000, every case)
 */
#define _GNU_SOURCE
#include "bench.h"

#include <curses.h>
#include <inttypes.h>
#include <locale.h>
#include <stdbool.h>

#include "ui/tui/tui.h"

#define STATIONS 131072u
#define THREADS 4
#define WARMUP 3

struct opener {
	struct corotop_coro *c;
	unsigned first, count;
};

/* One thread's share: open, then one record each (probe ids are unique). */
static void *opener_main(void *arg)
{
	struct opener *o = arg;

	for (unsigned i = 0; i < o->count; i++) {
		unsigned k = o->first + i;
		struct corotop_coro *c = &o->c[k];

		corotop_coro_open(c, 0x7f0000000000u + (uint64_t)k * 64);
		if (k % 10 == 0)
			corotop_coro_resume(c, 0);
		else
			corotop_coro_suspend(c, 0x401000u + (uint64_t)k * 16);
	}
	return NULL;
}

/* The colours tui.c sets up (tui_pairs) with 256 colours available. */
static void setup_colors(struct tui *t)
{
	start_color();
	use_default_colors();
	init_pair(PAIR_HEADER, COLOR_BLACK, COLOR_CYAN);
	init_pair(PAIR_TITLE, COLOR_BLACK, COLOR_GREEN);
	init_pair(PAIR_RUNNING, COLOR_GREEN, -1);
	init_pair(PAIR_DEAD, COLORS >= 256 ? 244 : COLOR_BLUE, -1);
	init_pair(PAIR_WARN, COLOR_RED, -1);
	init_pair(PAIR_SELECTED, COLOR_BLACK, COLOR_CYAN);
	init_pair(PAIR_METER, COLOR_CYAN, -1);
	init_pair(PAIR_GROUP, COLOR_YELLOW, -1);
	t->color = has_colors();
}

static void start_curses(struct tui *t, int lines, int cols)
{
	FILE *out = fopen("/dev/null", "w"), *in = fopen("/dev/null", "r");
	SCREEN *scr;

	if (!out || !in)
		bench_die("cannot open /dev/null");
	if (!setlocale(LC_ALL, "C.UTF-8"))
		setlocale(LC_ALL, "");
	scr = newterm("xterm-256color", out, in);
	if (!scr)
		bench_die("newterm(xterm-256color) failed: no terminfo entry?");
	set_term(scr);
	cbreak();
	noecho();
	nonl();
	keypad(stdscr, TRUE);
	nodelay(stdscr, TRUE);
	curs_set(0);
	resize_term(lines, cols);
	setup_colors(t);
	getmaxyx(stdscr, t->lines, t->cols);
}

/* tui_draw's body for the table view. */
static void draw(struct tui *t)
{
	erase();
	table_view_header(t);
	table_view_draw(t);
	wnoutrefresh(stdscr);
	doupdate();
}

enum part { P_SNAP, P_REBUILD, P_DRAW, P_TOTAL, P_COUNT };
static const char *const part_name[P_COUNT] = {"snapshot", "rebuild", "draw",
					       "total"};

struct render_case {
	const char *name;
	int sort_column;
	bool invert;
	const char *filter;
	bool group;
	bool full_repaint;
	bool churn; /* every coroutine switches before each iteration */
	bool fresh; /* churn to addresses never seen before */
};

/* The coroutines, for the churn cases. */
static struct corotop_coro *churn_coro;
static unsigned churn_count, churn_round;

/* Untimed: one new transition on every coroutine (a new address near the
 * old one, and every tenth one resumes), then wait until the engine harvested
 * them all, so the timed snapshot sees every record changed. */
static void churn(struct engine *e, struct tui *t, bool fresh)
{
	uint64_t want, t0 = clock_now_ns(CLOCK_MONOTONIC);

	engine_snapshot(e, &t->snap);
	want = t->snap.t.events + churn_count;
	churn_round++;
	for (unsigned k = 0; k < churn_count; k++) {
		struct corotop_coro *c = &churn_coro[k];

		uint64_t n = (uint64_t)churn_round * churn_count + k;

		if ((k + churn_round) % 10 == 0)
			corotop_coro_resume(c, 0);
		else if (fresh) /* 2^24 addresses before one comes back */
			corotop_coro_suspend(c, 0x400000000ull +
							(n % (1u << 24)) * 16);
		else
			corotop_coro_suspend(c, 0x401000u + (uint64_t)k * 16 +
							(churn_round & 1) * 8);
	}
	do {
		if (clock_now_ns(CLOCK_MONOTONIC) - t0 > 10000000000u)
			bench_die("churn: the engine harvested %" PRIu64
				  " of %u events in 10 s",
				  t->snap.t.events + churn_count - want,
				  churn_count);
		bench_sleep_ns(1000000u);
		engine_snapshot(e, &t->snap);
	} while (t->snap.t.events < want);
}

static void run_case(struct engine *e, struct tui *t,
		     const struct render_case *rc, unsigned iters,
		     double *samples[P_COUNT])
{
	struct bench_dist d[P_COUNT];
	struct bench_load load;
	char err[160];

	t->table.sort_column = rc->sort_column;
	t->table.sort_invert = rc->invert;
	t->table.group_by_thread = rc->group;
	if (!filter_set(&t->table.filter, rc->filter, err, sizeof(err)))
		bench_die("filter '%s': %s", rc->filter, err);
	t->table.selected = 0;
	t->table.top = 0;
	t->selected_id = UINT64_MAX;
	bench_load_start(&load);
	for (unsigned i = 0; i < WARMUP + iters; i++) {
		uint64_t t0, t1, t2, t3;

		if (rc->churn)
			churn(e, t, rc->fresh);
		if (rc->full_repaint)
			clearok(curscr, TRUE);
		t0 = clock_now_ns(CLOCK_MONOTONIC);
		engine_snapshot(e, &t->snap);
		t->have_snap = true;
		t1 = clock_now_ns(CLOCK_MONOTONIC);
		table_view_rebuild(t);
		t2 = clock_now_ns(CLOCK_MONOTONIC);
		draw(t);
		t3 = clock_now_ns(CLOCK_MONOTONIC);
		if (i < WARMUP)
			continue;
		samples[P_SNAP][i - WARMUP] = (double)(t1 - t0) / 1e6;
		samples[P_REBUILD][i - WARMUP] = (double)(t2 - t1) / 1e6;
		samples[P_DRAW][i - WARMUP] = (double)(t3 - t2) / 1e6;
		samples[P_TOTAL][i - WARMUP] = (double)(t3 - t0) / 1e6;
	}
	for (int p = 0; p < P_COUNT; p++)
		d[p] = bench_dist(samples[p], iters);
	printf("render case=%s coroutines=%zu rows=%zu iters=%u", rc->name,
	       t->snap.count, t->table.nrows, iters);
	for (int p = 0; p < P_COUNT; p++)
		printf(" %s_p50_ms=%.2f %s_p99_ms=%.2f", part_name[p], d[p].p50,
		       part_name[p], d[p].p99);
	printf(" others_cores=%.2f target_ms=10 %s\n", bench_load_others(&load),
	       d[P_TOTAL].p50 <= 10.0 ? "PASS" : "MISS");
	fflush(stdout);
}

int main(int argc, char **argv)
{
	static const struct render_case cases[] = {
		{"default", COL_ID, false, "", false, false, false},
		{"sort-in-state", COL_IN_STATE, false, "", false, false, false},
		{"sort-inverted", COL_ID, true, "", false, false, false},
		{"filter-substring", COL_ID, false, "0x4", false, false, false},
		{"filter-regex", COL_ID, false, "!^0x4[0-9a-f]*0$", false,
		 false, false},
		{"filter-state=S", COL_ID, false, "state=S", false, false,
		 false},
		{"group-by-thread", COL_ID, false, "", true, false, false},
		{"default-full-repaint", COL_ID, false, "", false, true, false},
		{"churn-default", COL_ID, false, "", false, false, true},
		{"churn-sort-in-state", COL_IN_STATE, false, "", false, false,
		 true},
		{"churn-filter-substring", COL_ID, false, "0x4", false, false,
		 true},
		{"churn-filter-regex", COL_ID, false, "!^0x4[0-9a-f]*0$", false,
		 false, true},
		{"churn-group-by-thread", COL_ID, false, "", true, false, true},
		{"churn-new-addr-filter-substring", COL_ID, false, "0x4", false,
		 false, true, true},
	};
	unsigned iters = argc > 1 ? (unsigned)atoi(argv[1]) : 100;
	unsigned coros = argc > 2 ? (unsigned)atoi(argv[2]) : 100000;
	struct opener op[THREADS];
	pthread_t th[THREADS];
	struct engine_config cfg;
	struct corotop_coro *c;
	double *samples[P_COUNT];
	struct tui t = {0};
	struct engine *e;
	uint64_t t0;

	if (iters < 1 || coros < 1 || coros > STATIONS)
		bench_die("usage: render [iterations >= 1] [coroutines <= "
			  "%u] [case]",
			  STATIONS);
	if (corotop_probe_live_)
		bench_die("unset the CTP_* environment first");
	c = calloc(coros, sizeof(*c));
	for (int p = 0; p < P_COUNT; p++)
		if (!(samples[p] = calloc(iters, sizeof(double))))
			bench_die("out of memory");
	if (!c)
		bench_die("out of memory");

	engine_config_defaults(&cfg);
	cfg.stations = STATIONS;
	cfg.names_later = true; /* as main.c sets it for the TUI */
	e = bench_engine_create(&cfg);
	/* Symbols as for a launched target: the WHERE cells (drawn, and
	 * matched by the text filters) are named by the engine's names
	 * thread, through the symbolizer. */
	engine_symbolize_pid(e, getpid());
	bench_probe_attach();
	bench_engine_start(e);
	for (int i = 0; i < THREADS; i++) {
		op[i] = (struct opener){c, coros / THREADS * (unsigned)i,
					i == THREADS - 1
						? coros - coros / THREADS *
								  (THREADS - 1)
						: coros / THREADS};
		if (pthread_create(&th[i], NULL, opener_main, &op[i]))
			bench_die("pthread_create failed");
	}
	for (int i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);

	/* The UI state tui_run sets up (selection, filter, snapshot). */
	t.engine = e;
	t.opt.delay_tenths = 10;
	t.opt.color = true;
	t.opt.mouse = false;
	t.opt.sort_column = -1;
	t.opt.lints = cfg.lints;
	t.table.sort_column = COL_ID;
	t.selected_id = UINT64_MAX;
	t.lints = cfg.lints; /* every column shown: t.hidden stays false */
	filter_init(&t.table.filter);
	rowset_init(&t.table.rowset);
	snapshot_init(&t.snap);

	t0 = clock_now_ns(CLOCK_MONOTONIC);
	for (;;) {
		engine_snapshot(e, &t.snap);
		if (t.snap.count >= coros)
			break;
		if (clock_now_ns(CLOCK_MONOTONIC) - t0 > 30000000000u)
			bench_die("snapshot holds %zu of %u coroutines after "
				  "30 s",
				  t.snap.count, coros);
		bench_sleep_ns(10000000u);
	}
	printf("render setup coroutines=%zu threads=%d stations=%u "
	       "screen=200x60 record_bytes=%zu snapshot_mib=%.1f "
	       "harvested_after_ms=%.0f\n",
	       t.snap.count, THREADS, STATIONS, sizeof(struct model_coro),
	       (double)(t.snap.count * sizeof(struct model_coro)) /
		       (1024.0 * 1024.0),
	       (double)(clock_now_ns(CLOCK_MONOTONIC) - t0) / 1e6);
	fflush(stdout);

	churn_coro = c;
	churn_count = coros;
	start_curses(&t, 60, 200);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (argc < 4 || strstr(cases[i].name, argv[3]))
			run_case(e, &t, &cases[i], iters, samples);
	endwin();

	for (unsigned i = 0; i < coros; i++)
		corotop_coro_close(&c[i]);
	corotop_probe_shutdown();
	engine_destroy(e);
	filter_finish(&t.table.filter);
	snapshot_finish(&t.snap);
	free(t.table.rows);
	rowset_finish(&t.table.rowset);
	free(c);
	for (int p = 0; p < P_COUNT; p++)
		free(samples[p]);
	return 0;
}
