/*
 * main: the corotop binary.  Parses the command line, builds the engine,
 * and runs the output loop.
 *
 * Signals.  SIGINT, SIGTERM, SIGHUP and SIGCHLD are blocked before any
 * thread starts (threads inherit the mask; the target gets a clean one) and
 * taken synchronously with sigtimedwait() in the output loop, so cleanup is
 * ordinary code, never a signal handler: the region and socket are removed
 * and the JSONL log is flushed on every way out but SIGKILL.
 *
 * Exit codes: 2 usage error (including a --shm path that is not a cTP
 * region, and a path that names a FIFO, a directory or a socket where a
 * file goes: checked with stat() before anything opens it, since opening a
 * FIFO waits for a writer with the signals blocked), 1 runtime failure, 128+N
 * when stopped by signal N, and otherwise the target's own exit status when it
 * ends first (0 after -n snapshots).
 *
 * Profiles.  --folded and --speedscope are written on every way out but
 * SIGKILL (after the engine's last rotation), atomically; a failure is
 * reported on stderr and turns an exit status of 0 into 1.
 *
 * corotop serve (argv[1]): the same options and target, no terminal: the
 * engine's state over HTTP (ui/serve/serve.c) instead of printed snapshots,
 * until a signal; the target is handled as in batch mode.
 *
 * Output.  --batch prints text or JSON snapshots.  Without --batch on a
 * terminal, the ncurses interface runs (tui.c; --cacheray: the memory
 * view, memview.c); without a terminal, or with TERM=dumb, corotop falls
 * back to batch output and says so on stderr.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/grow.h"
#include "common/pathcheck.h"
#include "engine/engine.h"
#include "ui/batch/batch.h"
#include "ui/batch/batch_cacheray.h"
#include "ui/settings/cli.h"
#include "ui/convert_cmd.h"
#include "ui/rows/column.h"
#include "ui/settings/config.h"
#include "ui/memview/memview.h"
#include "ui/serve/serve.h"
#include "ui/tui/replay_ctl.h"
#include "ui/tui/tui.h"

#ifndef COROTOP_VERSION
#define COROTOP_VERSION "0.0.0"
#endif

struct main_loop {
	struct engine *engine;
	struct cli cli;
	struct snapshot snap;
	sigset_t sigs;
	bool live; /* interactive ncurses interface */
	unsigned printed;
	int sort_column; /* -1: by model id */
	struct filter filter;
	struct order order;
	uint32_t *idx;
	size_t cap_idx;
	struct engine_hot_stack *hot; /* --hot-stacks rows for batch output */
	/* Attach mode: per ppt buffer, what the next snapshot prints from. */
	struct batch_ppt_buffer *ppt;
	uint64_t *ppt_from;
	unsigned char **ppt_bytes;
	struct engine_ppt_frame **ppt_meta;
	size_t nppt;
};

/* Batch text shows a short section, whatever --hot-stacks says. */
#define MAIN_HOT_TEXT_ROWS 10
/* At most this many bytes of ppt frames per buffer and snapshot. */
#define MAIN_PPT_BYTES (16u << 20)
/* ... and the newest ppt frames of each buffer. */
#define MAIN_PPT_TEXT_ROWS 10

/* The rows a batch snapshot prints (-F, --sort), in order, into *n; NULL
 * (every row, snapshot order) without memory. */
static const uint32_t *main_order(struct main_loop *m, size_t *n)
{
	if (!grow_array_fit((void **)&m->idx, &m->cap_idx, m->snap.count,
			    sizeof(*m->idx)))
		return NULL;
	/* The text table is the TUI's (filter.h: a live one waits for a
	 * coroutine's first switch); JSON lists every coroutine. */
	m->filter.unswitched_ns = m->cli.format == CLI_JSON || m->cli.replay
					  ? 0
					  : FILTER_UNSWITCHED_NS;
	*n = filter_select(&m->filter, &m->snap, m->idx);
	if (!order_sort(&m->order, &m->snap, m->idx, *n, m->sort_column, false,
			false))
		return NULL;
	return m->idx;
}

static const char *main_frame_name(void *ctx, uint64_t addr, bool leaf,
				   bool full, char *buf, size_t len)
{
	return engine_frame_name(ctx, addr, leaf, full, buf, len);
}

static const char *main_frame_label(void *ctx, uint64_t addr, bool leaf,
				    enum engine_hot_by by, char *buf,
				    size_t len)
{
	return engine_hot_frame_label(ctx, addr, leaf, by, buf, len);
}

static size_t main_parked(void *ctx, const struct model_coro *c,
			  uint64_t *frames, size_t max, uint64_t *trace_id)
{
	return engine_parked_stack_of(ctx, c, frames, max, trace_id);
}

/* A signal that ends corotop is pending: a long snapshot stops printing
 * rows (the loop takes the signal next). */
static bool main_interrupted(void *ctx)
{
	sigset_t pending;

	(void)ctx;
	return !sigpending(&pending) && (sigismember(&pending, SIGINT) == 1 ||
					 sigismember(&pending, SIGTERM) == 1 ||
					 sigismember(&pending, SIGHUP) == 1);
}

/* The ppt side of a batch snapshot: each buffer's state and the frames
 * delivered since the last snapshot (the newest --ppt-frames of them). */
static void main_ppt(struct main_loop *m, struct batch_ppt *out)
{
	struct engine_ppt_buffer b[64];
	size_t n;

	memset(out, 0, sizeof(*out));
	engine_ppt_info(m->engine, &out->info);
	if (!out->info.enabled)
		return;
	n = engine_ppt_buffers(m->engine, b, 64);
	if (n > m->nppt) {
		/* First snapshot: sized once, buffers never come later. */
		m->ppt = calloc(n, sizeof(*m->ppt));
		m->ppt_from = calloc(n, sizeof(*m->ppt_from));
		m->ppt_bytes = calloc(n, sizeof(*m->ppt_bytes));
		m->ppt_meta = calloc(n, sizeof(*m->ppt_meta));
		if (!m->ppt || !m->ppt_from || !m->ppt_bytes || !m->ppt_meta)
			return;
		m->nppt = n;
	}
	for (size_t i = 0; i < n; i++) {
		struct batch_ppt_buffer *p = &m->ppt[i];
		const struct ppt_desc *d = engine_ppt_desc(m->engine, i);
		uint64_t from = m->ppt_from[i], skipped = 0;
		/* The frame size comes from the target: a byte budget. */
		size_t max = m->cli.ppt_batch_frames;

		p->b = b[i];
		p->desc = d;
		p->n = 0;
		p->omitted = 0;
		if (!d || !max)
			continue;
		if (max > MAIN_PPT_BYTES / engine_ppt_frame_size(d))
			max = MAIN_PPT_BYTES / engine_ppt_frame_size(d);
		if (!m->ppt_bytes[i]) {
			m->ppt_bytes[i] =
				malloc(max * engine_ppt_frame_size(d));
			m->ppt_meta[i] = malloc(max * sizeof(*m->ppt_meta[i]));
			if (!m->ppt_bytes[i] || !m->ppt_meta[i])
				continue;
		}
		if (b[i].next_pos - from > max) {
			p->omitted = b[i].next_pos - max - from;
			from = b[i].next_pos - max;
		}
		p->n = engine_ppt_frames(m->engine, i, from, m->ppt_bytes[i],
					 m->ppt_meta[i], max, &m->ppt_from[i],
					 &skipped);
		p->omitted += skipped;
		p->bytes = m->ppt_bytes[i];
		p->meta = m->ppt_meta[i];
	}
	out->buf = m->ppt;
	out->n = n;
}

static void main_print(struct main_loop *m)
{
	struct batch_ppt ppt;
	struct engine_calltrace_stats ct;
	struct batch_hot hot = {.ct = &ct,
				.s = m->hot,
				.by = (enum engine_hot_by)m->cli.hot_by,
				.name = main_frame_name,
				.label = main_frame_label,
				.parked = main_parked,
				.interrupted = main_interrupted,
				.ctx = m->engine};
	const uint32_t *idx;
	size_t n = 0;

	engine_snapshot(m->engine, &m->snap);
	engine_calltrace_stats(m->engine, &ct);
	if (ct.enabled && m->hot)
		hot.n = engine_hot_rows(m->engine, 0, ENGINE_HOT_BY_TOTAL,
					hot.by, m->hot, m->cli.hot_stacks);
	idx = main_order(m, &n);
	main_ppt(m, &ppt);
	if (m->cli.format == CLI_JSON) {
		batch_print_json(stdout, &m->snap, idx, n, &hot, &ppt);
	} else {
		batch_print_text(stdout, &m->snap, idx, n, 0);
		batch_print_hot_text(stdout, &hot, MAIN_HOT_TEXT_ROWS);
		batch_print_ppt_text(stdout, &ppt, MAIN_PPT_TEXT_ROWS);
	}
	fflush(stdout);
	m->printed++;
}

static int main_target_status(const struct snapshot *s)
{
	if (s->target.term_signal)
		return 128 + s->target.term_signal;
	return s->target.exit_code;
}

/* Runs until the iterations are done, the target ends or a signal. */
static int main_run(struct main_loop *m)
{
	uint64_t period = (uint64_t)m->cli.delay_tenths * 100000000u;
	uint64_t next = clock_now_ns(CLOCK_MONOTONIC) + period;

	for (;;) {
		uint64_t now = clock_now_ns(CLOCK_MONOTONIC);
		struct timespec wait = {0, 0};
		siginfo_t si;
		int sig;

		if (now < next) {
			wait.tv_sec = (time_t)((next - now) / 1000000000u);
			wait.tv_nsec = (long)((next - now) % 1000000000u);
		}
		sig = sigtimedwait(&m->sigs, &si, &wait);
		if (sig == SIGCHLD) {
			if (!engine_reap(m->engine))
				continue;
			/* Harvest the target's last words, then report. */
			engine_stop(m->engine);
			main_print(m);
			return main_target_status(&m->snap);
		}
		if (sig == SIGWINCH)
			continue; /* batch output does not care */
		if (sig > 0)
			return 128 + sig;
		if (sig < 0 && errno != EAGAIN && errno != EINTR)
			return 1;
		if (clock_now_ns(CLOCK_MONOTONIC) < next)
			continue;
		next += period;
		main_print(m);
		if (m->cli.iterations && m->printed >= m->cli.iterations)
			return 0;
		/* An observer whose engine stopped (a region truncated under
		 * it) has nothing more to show: end now, the caller turns the
		 * error into exit 1, rather than repeat it until -n. */
		if (m->snap.observer && m->snap.error)
			return 0;
	}
}

/* --at LIST: the moments, each read as the TUI's "go to" line reads one
 * (replay_ctl.c; + and - from the one before), seeked to in turn; each
 * calls go(m, t) (NULL: only checked).  False with a message when one is
 * no time. */
static bool main_replay_at(struct main_loop *m,
			   void (*go)(struct main_loop *m, uint64_t t))
{
	struct engine_replay_info ri;
	char list[4096], err[160], *save = NULL;
	uint64_t pos;

	engine_replay_info(m->engine, &ri);
	pos = ri.t0;
	snprintf(list, sizeof(list), "%s", m->cli.at);
	for (char *w = strtok_r(list, ",", &save); w;
	     w = strtok_r(NULL, ",", &save)) {
		if (!replay_ctl_parse(w, pos, ri.t0, ri.t1, ri.ran, &pos, err,
				      sizeof(err))) {
			fprintf(stderr, "corotop: --at: %s\n", err);
			return false;
		}
		if (go)
			go(m, pos);
	}
	return true;
}

static void main_replay_print(struct main_loop *m, uint64_t t)
{
	if (m->cli.iterations && m->printed >= m->cli.iterations)
		return;
	engine_replay_seek(m->engine, t);
	main_print(m);
}

static void main_replay_seek(struct main_loop *m, uint64_t t)
{
	engine_replay_seek(m->engine, t);
}

/* --replay in batch: a snapshot every delay of trace time, as fast as they
 * can be printed, then one at the end of the recording; with --at, one at
 * each of its moments. */
static int main_replay_run(struct main_loop *m)
{
	uint64_t period = (uint64_t)m->cli.delay_tenths * 100000000u;
	struct engine_replay_info ri;
	struct timespec zero = {0, 0};
	uint64_t t;

	if (m->cli.at)
		return main_replay_at(m, main_replay_print) ? 0 : 2;
	engine_replay_info(m->engine, &ri);
	for (t = ri.t0 + period; t < ri.t1 && t >= ri.t0; t += period) {
		siginfo_t si;
		int sig = sigtimedwait(&m->sigs, &si, &zero);

		if (sig > 0 && sig != SIGWINCH && sig != SIGCHLD)
			return 128 + sig;
		engine_replay_seek(m->engine, t);
		main_print(m);
		if (m->cli.iterations && m->printed >= m->cli.iterations)
			return 0;
	}
	engine_replay_seek(m->engine, ri.t1);
	main_print(m);
	return 0;
}

/* A recording that could not all be read still replays: say so. */
static void main_replay_problems(struct engine *e)
{
	struct engine_replay_info ri;

	if (!engine_replay_info(e, &ri) || !ri.problems)
		return;
	fprintf(stderr,
		"corotop: %s: %zu packet%s could not be read (the first %s)%s; "
		"replaying the rest\n",
		ri.path, ri.problems, ri.problems == 1 ? "" : "s", ri.problem,
		ri.truncated ? ", and the file ends inside a packet" : "");
}

/* Whether the interactive view can run: a terminal that is not dumb,
 * and no -b.  *fell_back: batch only because there is no terminal, which
 * main_batch_note says once the command line has passed every check --
 * a note before "corotop: --sort: no column 'x'" would say that corotop
 * was about to run, when it never does. */
static bool main_want_live(const struct cli *cli, bool *fell_back)
{
	const char *term = getenv("TERM");

	*fell_back = false;
	if (cli->batch)
		return false;
	if (!isatty(STDOUT_FILENO) || !term || !strcmp(term, "dumb")) {
		*fell_back = true;
		return false;
	}
	return true;
}

static void main_batch_note(bool fell_back)
{
	if (fell_back)
		fprintf(stderr, "corotop: no terminal (or TERM=dumb): printing "
				"batch snapshots instead\n");
}

/* Write one profile; status 0 becomes 1 when it could not be written. */
static int main_profile(struct main_loop *m, enum engine_export_format fmt,
			const char *path, int status)
{
	char err[768];

	if (!path || engine_export(m->engine, fmt, path, 0, err, sizeof(err)))
		return status;
	fprintf(stderr, "corotop: %s\n", err);
	return status == 0 ? 1 : status;
}

/* --folded and --speedscope, after the engine's last rotation. */
static int main_profiles(struct main_loop *m, int status)
{
	if (!m->cli.folded && !m->cli.speedscope)
		return status;
	engine_stop(m->engine);
	status = main_profile(m, ENGINE_EXPORT_FOLDED, m->cli.folded, status);
	return main_profile(m, ENGINE_EXPORT_SPEEDSCOPE, m->cli.speedscope,
			    status);
}

/* corotop -p PID --list-buffers: read-only, text or JSON. */
static int main_list_buffers(const struct cli *cli)
{
	struct engine_buffer_list l;
	char err[512];

	if (!engine_list_buffers(cli->pid, &l, err, sizeof(err))) {
		fprintf(stderr, "corotop: %s\n", err);
		return 1;
	}
	if (cli->format == CLI_JSON)
		batch_print_buffers_json(stdout, cli->pid, &l);
	else
		batch_print_buffers_text(stdout, cli->pid, &l);
	engine_buffer_list_finish(&l);
	return 0;
}

/* --cacheray without a terminal (or with -b): the report, text or JSON. */
static int main_cacheray_batch(const struct cli *cli)
{
	char err[512];
	int rc = batch_cacheray_run(cli->cacheray, cli->format == CLI_JSON,
				    stdout, err, sizeof(err));

	if (rc)
		fprintf(stderr, "corotop: %s\n", err);
	return rc;
}

/* --cacheray on a terminal: the interactive memory view, with the delay,
 * colour and mouse settings the coroutine TUI gets. */
static int main_cacheray_view(const struct cli *cli, const struct config *conf)
{
	struct memview_options o = {
		.delay_tenths = cli->delay_tenths,
		.color = conf->color && !cli->no_color,
		.mouse = conf->mouse && !cli->no_mouse,
	};

	return memview_run(cli->cacheray, &o);
}

/* The paths on the command line, before anything opens them (and before
 * the signals are blocked): a FIFO given as a file would make the open
 * wait forever, and a profile that can not be written would be lost at
 * the end of a long run.  --cacheray reads a FIFO on purpose. */
static bool main_check_paths(const struct cli *cli, char *err, size_t errlen)
{
	return (!cli->shm || pathcheck_input("--shm", cli->shm, err, errlen)) &&
	       (!cli->replay ||
		pathcheck_input("--replay", cli->replay, err, errlen)) &&
	       (!cli->record ||
		pathcheck_output("--record", cli->record, err, errlen)) &&
	       (!cli->jsonl ||
		pathcheck_output("--jsonl", cli->jsonl, err, errlen)) &&
	       (!cli->output ||
		pathcheck_output("--output", cli->output, err, errlen)) &&
	       (!cli->folded ||
		pathcheck_replaceable("--folded", cli->folded, err, errlen)) &&
	       (!cli->speedscope ||
		pathcheck_replaceable("--speedscope", cli->speedscope, err,
				      errlen));
}

/* corotop serve watches a target: --listen and --top-where are its own,
 * and what only prints (-n) or reads a file has no place in it. */
static bool main_serve_usage(const struct cli *cli, bool serve, char *err,
			     size_t errlen)
{
	if (!serve && (cli->listen || cli->top_where_set || cli->web_config)) {
		snprintf(err, errlen,
			 "--listen, --web-config and --top-where go with "
			 "corotop serve");
		return false;
	}
	if (serve && (cli->replay || cli->cacheray || cli->list_buffers ||
		      cli->iterations)) {
		snprintf(err, errlen,
			 "corotop serve watches a target (-- COMMAND, -p PID "
			 "or --shm PATH): --replay, --cacheray, "
			 "--list-buffers and -n are not for it");
		return false;
	}
	return true;
}

static struct serve *main_serve_create(struct main_loop *m, bool *usage,
				       char *err, size_t errlen)
{
	struct serve_options o = {
		.listen = m->cli.listen,
		.web_config = m->cli.web_config,
		.top_where = m->cli.top_where,
		.delay_tenths = m->cli.delay_tenths,
		.hot_stacks = m->cli.hot_stacks,
		.filter = m->cli.filter ? &m->filter : NULL,
		.sort_column = m->cli.sort ? column_find(m->cli.sort) : -1,
	};

	return serve_create(&o, usage, err, errlen);
}

static void main_config_warn(void *ctx, const char *msg)
{
	(void)ctx;
	fprintf(stderr, "corotop: %s\n", msg);
}

/* Hide the columns not named in the config's comma-separated list. */
static void main_columns(const char *list, bool *hidden)
{
	char buf[256], *save = NULL;

	if (!*list)
		return;
	for (int c = 0; c < COL_COUNT; c++)
		hidden[c] = c != COL_ID;
	snprintf(buf, sizeof(buf), "%s", list);
	for (char *w = strtok_r(buf, ",", &save); w;
	     w = strtok_r(NULL, ",", &save)) {
		int c = column_find(w);

		if (c >= 0)
			hidden[c] = false;
	}
}

int main(int argc, char **argv)
{
	struct main_loop m = {0};
	struct engine_config cfg;
	struct config conf;
	char err[512], conf_path[512], said[200] = "";
	bool have_conf, note = false;
	int status;
	/* corotop serve: parsed as corotop's own options from argv[1] on. */
	bool serve = argc > 1 && !strcmp(argv[1], "serve");
	struct serve *sv = NULL;

	if (argc > 1 && !strcmp(argv[1], "convert"))
		return convert_cmd_main(argc - 1, argv + 1);
	if (serve) {
		argc--;
		argv++;
	}
	switch (cli_parse(argc, argv, &m.cli, err, sizeof(err))) {
	case CLI_HELP:
		fputs(cli_usage, stdout);
		return 0;
	case CLI_VERSION:
		printf("corotop %s\n", COROTOP_VERSION);
		return 0;
	case CLI_ERROR:
		fprintf(stderr, "%s\n", err);
		return 2;
	case CLI_OK:
		break;
	}
	if (!main_serve_usage(&m.cli, serve, err, sizeof(err))) {
		fprintf(stderr, "corotop: %s\n", err);
		return 2;
	}
	if (!main_check_paths(&m.cli, err, sizeof(err))) {
		fprintf(stderr, "corotop: %s\n", err);
		return 2;
	}
	if (m.cli.list_buffers)
		return main_list_buffers(&m.cli);
	if (m.cli.cacheray && (m.cli.batch || !main_want_live(&m.cli, &note))) {
		main_batch_note(note);
		return main_cacheray_batch(&m.cli);
	}
	config_defaults(&conf);
	have_conf = config_path(conf_path, sizeof(conf_path));
	if (have_conf)
		config_load(&conf, conf_path, main_config_warn, NULL);
	if (!m.cli.delay_set)
		m.cli.delay_tenths = conf.delay_tenths;
	if (m.cli.cacheray)
		return main_cacheray_view(&m.cli, &conf);
	m.live = !serve && main_want_live(&m.cli, &note);
	if (m.cli.sort && column_find(m.cli.sort) < 0) {
		fprintf(stderr,
			"corotop: --sort: no column '%s' (try id, state, tid, "
			"age, in-state, switches, sw/s, run%%, seq, lost, "
			"where)\n",
			m.cli.sort);
		return 2;
	}
	/* -F is parsed here, before a target starts, so a typo costs
	 * nothing; batch mode filters with it, the TUI parses it again. */
	filter_init(&m.filter);
	if (m.cli.filter &&
	    !filter_set(&m.filter, m.cli.filter, err, sizeof(err))) {
		fprintf(stderr, "corotop: -F: %s\n", err);
		filter_finish(&m.filter);
		return 2;
	}
	sigemptyset(&m.sigs);
	sigaddset(&m.sigs, SIGINT);
	sigaddset(&m.sigs, SIGTERM);
	sigaddset(&m.sigs, SIGHUP);
	sigaddset(&m.sigs, SIGCHLD);
	sigaddset(&m.sigs, SIGWINCH);
	/* Blocked before any thread starts, so every thread inherits the
	 * mask and these signals reach only the loop that waits for them
	 * (sigtimedwait here, signalfd in tui.c). */
	sigprocmask(SIG_BLOCK, &m.sigs, NULL);
	signal(SIGPIPE, SIG_IGN);
	/* A file past RLIMIT_FSIZE (--record, --jsonl) fails with EFBIG and
	 * is reported, rather than killing corotop. */
	signal(SIGXFSZ, SIG_IGN);
	if (serve) {
		bool usage;

		sv = main_serve_create(&m, &usage, err, sizeof(err));
		if (!sv) {
			fprintf(stderr, "corotop serve: %s\n", err);
			filter_finish(&m.filter);
			return usage ? 2 : 1;
		}
	}

	engine_config_defaults(&cfg);
	cfg.argv = m.cli.command;
	/* The target's output never mixes with ours: the TUI shows it in
	 * its output view, batch mode sends it to stderr (or --output). */
	cfg.output = m.live ? ENGINE_OUTPUT_CAPTURE : ENGINE_OUTPUT_STDERR;
	cfg.output_path = m.cli.output;
	if (m.live) {
		struct winsize ws;

		if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0) {
			cfg.output_cols = ws.ws_col;
			cfg.output_rows = ws.ws_row;
		}
	}
	cfg.shm_path = m.cli.shm;
	cfg.stations = m.cli.stations;
	cfg.jsonl_path = m.cli.jsonl;
	cfg.record_path = m.cli.record;
	cfg.replay_path = m.cli.replay;
	/* Batch seeks; --at starts paused there. */
	cfg.replay_play = m.live && !m.cli.paused && !m.cli.at;
	cfg.sample_hz = m.cli.sample_hz;
	/* COROTOP_SNAPSHOTS=0: sampled stacks as the frame-pointer walk in
	 * the signal handler gives them (docs/TRACING.md compares). */
	cfg.sample_snapshots = !getenv("COROTOP_SNAPSHOTS") ||
			       strcmp(getenv("COROTOP_SNAPSHOTS"), "0") != 0;
	cfg.parked_stacks = m.cli.parked_stacks;
	cfg.runtime = m.cli.runtime;
	cfg.own_libs = m.cli.own_libs;
	cfg.no_auto = m.cli.no_auto;
	cfg.attach_pid = m.cli.pid;
	cfg.force_attach = m.cli.force_attach;
	cfg.counters = m.cli.counters;
	cfg.ppt_block_frames = m.cli.ppt_block_frames;
	cfg.ppt_buffer = m.cli.buffer;
	if (m.cli.hot_window_s)
		cfg.hot.window_s = m.cli.hot_window_s;
	if (m.cli.hot_half_life_set)
		cfg.hot.half_life_s = m.cli.hot_half_life_s;
	cfg.lints = conf.lints;
	cfg.linger_ns = (uint64_t)conf.linger_s * 1000000000u;
	if (m.live)
		cfg.publish_hook = tui_publish_hook;
	cfg.names_later = m.live; /* the TUI redraws when they come */
	m.engine = engine_create(&cfg, err, sizeof(err));
	if (!m.engine) {
		fprintf(stderr, "corotop: %s\n", err);
		serve_destroy(sv);
		return m.cli.shm ? 2 : 1;
	}
	/* Every usage check is behind (engine_create's too: a --shm path
	 * that is no cTP region), the target not started yet: the note is
	 * true now, and comes before anything the target prints. */
	main_batch_note(note && !serve);
	if (m.cli.replay)
		main_replay_problems(m.engine);
	if (!engine_start(m.engine, err, sizeof(err))) {
		fprintf(stderr, "corotop: %s\n", err);
		serve_destroy(sv);
		engine_destroy(m.engine);
		return 1;
	}
	if (engine_autotrace_note(m.engine)[0])
		fprintf(stderr, "corotop: %s\n",
			engine_autotrace_note(m.engine));
	snapshot_init(&m.snap);
	if (m.cli.hot_stacks)
		m.hot = calloc(m.cli.hot_stacks, sizeof(*m.hot));
	if (m.live) {
		struct tui_options to = {
			.delay_tenths = m.cli.delay_tenths,
			.color = conf.color && !m.cli.no_color,
			.mouse = conf.mouse && !m.cli.no_mouse,
			.sort_column = column_find(m.cli.sort ? m.cli.sort
							      : conf.sort_key),
			.sort_invert = m.cli.sort ? false : conf.sort_invert,
			.filter = m.cli.filter,
			.lints = conf.lints,
			.config_path = have_conf ? conf_path : NULL,
			.folded_path = m.cli.folded,
			.hot_by = m.cli.hot_by,
		};

		main_columns(conf.columns, to.hidden);

		/* --at: paused there (a time that is none: a usage error). */
		if (m.cli.at && !main_replay_at(&m, main_replay_seek))
			status = 2;
		else
			status = tui_run(m.engine, &to);
	} else if (sv) {
		status = serve_run(sv, m.engine, &m.sigs);
		serve_destroy(sv); /* no request reaches the engine after */
	} else {
		m.sort_column = m.cli.sort ? column_find(m.cli.sort) : -1;
		order_init(&m.order);
		status = m.cli.replay ? main_replay_run(&m) : main_run(&m);
		order_finish(&m.order);
		free(m.idx);
		/* The engine stopped on an error (a --shm region truncated
		 * under it): the snapshots said so, and so does the exit
		 * status. */
		if (status == 0 && m.printed && m.snap.error) {
			fprintf(stderr, "corotop: %s\n", m.snap.error);
			snprintf(said, sizeof(said), "%s", m.snap.error);
			status = 1;
		}
	}
	filter_finish(&m.filter);
	status = main_profiles(&m, status);
	free(m.hot);
	for (size_t i = 0; i < m.nppt; i++) {
		free(m.ppt_bytes[i]);
		free(m.ppt_meta[i]);
	}
	free(m.ppt);
	free(m.ppt_from);
	free(m.ppt_bytes);
	free(m.ppt_meta);
	engine_terminate_target(m.engine, 2000);
	if (!engine_destroy(m.engine)) {
		/* Once: a --jsonl write that failed while running fails
		 * again at the close, with the same words. */
		if (strcmp(said, engine_output_error()) != 0)
			fprintf(stderr, "corotop: %s\n", engine_output_error());
		if (status == 0)
			status = 1;
	}
	snapshot_finish(&m.snap);
	return status;
}
