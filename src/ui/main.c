/*
 * main: the corotop binary.  Picks the subcommand (a table: convert,
 * serve, dump; none: corotop itself), parses the command line (cli.c), builds
 * the engine, and hands it to a front-end: the TUI (tui.c), corotop serve
 * (serve.c) or batch output (batch_loop.c).
 *
 * Signals.  SIGINT, SIGTERM, SIGHUP and SIGCHLD are blocked before any
 * thread starts (threads inherit the mask; the target gets a clean one) and
 * taken synchronously by the front-end (sigtimedwait, signalfd), so cleanup
 * is ordinary code, never a signal handler: the region and socket are
 * removed and the JSONL log is flushed on every way out but SIGKILL.
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
 * corotop serve: the same options and target, no terminal: the engine's
 * state over HTTP instead of printed snapshots, until a signal; the target
 * is handled as in batch mode.
 *
 * Output.  --batch prints text or JSON snapshots.  Without --batch on a
 * terminal, the ncurses interface runs (--cacheray: the memory view,
 * memview.c); without a terminal, or with TERM=dumb, corotop falls back to
 * batch output and says so on stderr.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "engine/engine.h"
#include "ui/batch/batch.h"
#include "ui/convert_cmd.h"
#include "ui/frontend.h"
#include "ui/rows/column.h"
#include "ui/serve/serve.h"
#include "ui/tui/tui.h"

#ifndef COROTOP_VERSION
#define COROTOP_VERSION "0.0.0"
#endif

/* --at: at most this many moments. */
#define FRONTEND_AT_MAX 256

static void main_say(const char *msg)
{
	fprintf(stderr, "corotop: %s\n", msg);
}

/* --folded and --speedscope, after the engine's last rotation; status 0
 * becomes 1 when one could not be written. */
static int main_profiles(struct engine *e, const struct cli *cli, int status)
{
	const struct {
		enum engine_export_format fmt;
		const char *path;
	} out[] = {{ENGINE_EXPORT_FOLDED, cli->folded},
		   {ENGINE_EXPORT_SPEEDSCOPE, cli->speedscope}};
	char err[768];

	if (!cli->folded && !cli->speedscope)
		return status;
	engine_stop(e);
	for (size_t i = 0; i < sizeof(out) / sizeof(*out); i++)
		if (out[i].path && !engine_export(e, out[i].fmt, out[i].path, 0,
						  err, sizeof(err))) {
			main_say(err);
			status = status == 0 ? 1 : status;
		}
	return status;
}

static void main_config_warn(void *ctx, const char *msg)
{
	(void)ctx;
	main_say(msg);
}

/* The engine's configuration: the options' fields (cli.c's table), and
 * what depends on the front-end. */
static void main_engine_config(const struct frontend *r,
			       struct engine_config *cfg)
{
	engine_config_defaults(cfg);
	cli_engine_config(&r->cli, cfg);
	/* The target's output never mixes with ours: the TUI shows it in
	 * its output view, batch mode sends it to stderr (or --output). */
	cfg->output = r->live ? ENGINE_OUTPUT_CAPTURE : ENGINE_OUTPUT_STDERR;
	if (r->live) {
		struct winsize ws;

		if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0) {
			cfg->output_cols = ws.ws_col;
			cfg->output_rows = ws.ws_row;
		}
		cfg->publish_hook = tui_publish_hook;
	}
	/* Batch seeks; --at starts paused there. */
	cfg->replay_play = r->live && !r->cli.paused && !r->cli.at;
	/* COROTOP_SNAPSHOTS=0: sampled stacks as the frame-pointer walk in
	 * the signal handler gives them (docs/TRACING.md compares). */
	cfg->sample_snapshots = !getenv("COROTOP_SNAPSHOTS") ||
				strcmp(getenv("COROTOP_SNAPSHOTS"), "0") != 0;
	cfg->lints = r->conf.lints;
	cfg->linger_ns = (uint64_t)r->conf.linger_s * 1000000000u;
	cfg->names_later = r->live; /* the TUI redraws when they come */
}

/* The command line's checks, before any target starts: -1 to go on, or
 * the exit status. */
static int main_parse(struct frontend *r, int argc, char **argv)
{
	char err[512];

	switch (cli_parse(argc, argv, &r->cli, err, sizeof(err))) {
	case CLI_HELP:
		fputs(cli_usage_text(), stdout);
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
	if (!cli_check_serve(&r->cli, r->serve, err, sizeof(err)) ||
	    !cli_check_paths(&r->cli, err, sizeof(err))) {
		main_say(err);
		return 2;
	}
	if (r->cli.list_buffers)
		return batch_list_buffers(r->cli.pid, r->cli.format == CLI_JSON,
					  stdout);
	if (r->dump && !frontend_dump_check(&r->cli))
		return 2;
	r->live =
		!r->serve && !r->dump && frontend_want_live(&r->cli, &r->note);
	config_defaults(&r->conf);
	if (r->cli.cacheray && !r->live) {
		frontend_batch_note(r->note);
		return frontend_cacheray(&r->cli, &r->conf, false);
	}
	r->have_conf = config_path(r->conf_path, sizeof(r->conf_path));
	if (r->have_conf)
		config_load(&r->conf, r->conf_path, main_config_warn, NULL);
	if (!r->cli.delay_set)
		r->cli.delay_tenths = r->conf.delay_tenths;
	if (r->cli.cacheray)
		return frontend_cacheray(&r->cli, &r->conf, true);
	if (r->cli.sort && column_find(r->cli.sort) < 0) {
		fprintf(stderr,
			"corotop: --sort: no column '%s' (try id, state, tid, "
			"age, in-state, switches, sw/s, run%%, seq, lost, "
			"where)\n",
			r->cli.sort);
		return 2;
	}
	/* -F is parsed here, before a target starts, so a typo costs
	 * nothing; batch mode filters with it, the TUI parses it again. */
	if (r->cli.filter &&
	    !filter_set(&r->filter, r->cli.filter, err, sizeof(err))) {
		fprintf(stderr, "corotop: -F: %s\n", err);
		return 2;
	}
	return -1;
}

/* Block the signals the front-ends take, before any thread starts, so
 * that every thread inherits the mask and they reach only the loop that
 * waits for them. */
static void main_signals(sigset_t *sigs)
{
	const int take[] = {SIGINT, SIGTERM, SIGHUP, SIGCHLD, SIGWINCH};

	sigemptyset(sigs);
	for (size_t i = 0; i < sizeof(take) / sizeof(*take); i++)
		sigaddset(sigs, take[i]);
	sigprocmask(SIG_BLOCK, sigs, NULL);
	signal(SIGPIPE, SIG_IGN);
	/* A file past RLIMIT_FSIZE (--record, --jsonl) fails with EFBIG and
	 * is reported, rather than killing corotop. */
	signal(SIGXFSZ, SIG_IGN);
}

/* corotop itself (serve: corotop serve, dump: corotop dump): the exit
 * status. */
static int main_corotop(int argc, char **argv, bool serve, bool dump)
{
	struct frontend r = {.serve = serve, .dump = dump};
	struct engine_config cfg;
	char err[512];
	bool usage;
	int status;

	filter_init(&r.filter);
	status = main_parse(&r, argc, argv);
	if (status >= 0) {
		filter_finish(&r.filter);
		return status;
	}
	main_signals(&r.sigs);
	if (serve && !frontend_serve_bind(&r, &usage)) {
		filter_finish(&r.filter);
		return usage ? 2 : 1;
	}
	main_engine_config(&r, &cfg);
	r.engine = engine_create(&cfg, err, sizeof(err));
	if (!r.engine) {
		main_say(err);
		serve_destroy(r.sv);
		filter_finish(&r.filter);
		return r.cli.shm ? 2 : 1;
	}
	/* Every usage check is behind (engine_create's too: a --shm path
	 * that is no cTP region), the target not started yet: the note is
	 * true now, and comes before anything the target prints. */
	frontend_batch_note(r.note && !serve);
	if (r.cli.replay)
		frontend_replay_problems(r.engine);
	if (!engine_start(r.engine, err, sizeof(err))) {
		main_say(err);
		serve_destroy(r.sv);
		engine_destroy(r.engine);
		filter_finish(&r.filter);
		return 1;
	}
	if (engine_autotrace_note(r.engine)[0])
		main_say(engine_autotrace_note(r.engine));
	status = r.live	 ? frontend_tui(&r)
		 : serve ? frontend_serve(&r)
			 : frontend_batch(&r);
	filter_finish(&r.filter);
	status = main_profiles(r.engine, &r.cli, status);
	engine_terminate_target(r.engine, 2000);
	/* Once: a --jsonl write that failed while running fails again at
	 * the close, with the same words. */
	if (!engine_destroy(r.engine)) {
		if (strcmp(r.said, engine_output_error()) != 0)
			main_say(engine_output_error());
		if (status == 0)
			status = 1;
	}
	return status;
}

static int main_serve_cmd(int argc, char **argv)
{
	return main_corotop(argc, argv, true, false);
}

static int main_dump_cmd(int argc, char **argv)
{
	frontend_dump_argv(argc, argv);
	return main_corotop(argc, argv, false, true);
}

/* corotop SUBCOMMAND ...: parsed by its own from argv[1] on. */
static const struct {
	const char *name;
	int (*run)(int argc, char **argv);
} main_subcommands[] = {
	{"convert", convert_cmd_main},
	{"serve", main_serve_cmd},
	{"dump", main_dump_cmd},
};

int main(int argc, char **argv)
{
	for (size_t i = 0;
	     argc > 1 &&
	     i < sizeof(main_subcommands) / sizeof(*main_subcommands);
	     i++)
		if (!strcmp(argv[1], main_subcommands[i].name))
			return main_subcommands[i].run(argc - 1, argv + 1);
	return main_corotop(argc, argv, false, false);
}
