/*
 * frontend: the three front-ends corotop hands a started engine to -- the
 * TUI (tui.c), batch output (batch_loop.c) and corotop serve (serve.c) --
 * each set up from the command line and the config file, and what one run
 * of corotop holds from its command line to its exit.
 */
#ifndef COROTOP_FRONTEND_H
#define COROTOP_FRONTEND_H

#include <signal.h>
#include <stdbool.h>

#include "engine/engine.h"
#include "ui/rows/filter.h"
#include "ui/settings/cli.h"
#include "ui/settings/config.h"

struct serve;

/* What one run of corotop holds, from the command line to the exit. */
struct frontend {
	struct cli cli;
	struct config conf;
	bool have_conf;
	char conf_path[512];
	bool serve, live, note;
	bool dump; /* corotop dump: one grouped snapshot (batch_loop_dump) */
	struct filter filter;
	sigset_t sigs;
	struct serve *sv; /* corotop serve: bound before the target starts */
	struct engine *engine;
	char said[200]; /* the engine's error, as batch output ended on it */
};

/* The TUI; --at: paused at its last moment. */
int frontend_tui(struct frontend *r);
/* corotop dump's command line: --json is -f json (argv rewritten in
 * place); then its checks (false: said, exit 2). */
void frontend_dump_argv(int argc, char **argv);
bool frontend_dump_check(const struct cli *cli);
/* Batch output: live, or a replay's moments (dump: one). */
int frontend_batch(struct frontend *r);
/* corotop serve's server, bound before the target starts (an address in
 * use costs nothing); false with the message said, *usage: exit 2. */
bool frontend_serve_bind(struct frontend *r, bool *usage);
/* ... and served until a signal (r->sv is destroyed). */
int frontend_serve(struct frontend *r);
/* Whether the interactive view can run: a terminal that is not dumb,
 * and no -b.  *fell_back: batch only because there is no terminal, which
 * frontend_batch_note says once the command line has passed every check
 * -- a note before "corotop: --sort: no column 'x'" would say that
 * corotop was about to run, when it never does. */
bool frontend_want_live(const struct cli *cli, bool *fell_back);
void frontend_batch_note(bool fell_back);
/* --cacheray: on a terminal (live), the interactive memory view with the
 * delay, colour and mouse settings the coroutine TUI gets; else the
 * report, text or JSON. */
int frontend_cacheray(const struct cli *cli, const struct config *conf,
		      bool live);
/* A recording that could not all be read still replays: say so. */
void frontend_replay_problems(struct engine *e);

#endif
