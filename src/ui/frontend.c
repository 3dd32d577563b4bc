/*
 * frontend: the TUI, batch output and corotop serve, set up from the
 * command line and the config file (frontend.h).
 */
#define _GNU_SOURCE
#include "ui/frontend.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ui/batch/batch_cacheray.h"
#include "ui/batch/batch_loop.h"
#include "ui/memview/memview.h"
#include "ui/rows/column.h"
#include "ui/serve/serve.h"
#include "ui/tui/replay_ctl.h"
#include "ui/tui/tui.h"

/* --at: at most this many moments. */
#define FRONTEND_AT_MAX 256

static void frontend_say(const char *msg)
{
	fprintf(stderr, "corotop: %s\n", msg);
}

/* --at LIST: the moments, each read as the TUI's "go to" line reads one
 * (replay_ctl.c; + and - from the one before), into at (*n of them).
 * False with a message when one is no time. */
static bool frontend_replay_at(struct engine *e, const char *list, uint64_t *at,
			       size_t *n)
{
	struct engine_replay_info ri;
	char buf[4096], err[160], *save = NULL;
	uint64_t pos;

	engine_replay_info(e, &ri);
	pos = ri.t0;
	*n = 0;
	snprintf(buf, sizeof(buf), "%s", list);
	for (char *w = strtok_r(buf, ",", &save); w;
	     w = strtok_r(NULL, ",", &save)) {
		if (!replay_ctl_parse(w, pos, ri.t0, ri.t1, ri.ran, &pos, err,
				      sizeof(err))) {
			fprintf(stderr, "corotop: --at: %s\n", err);
			return false;
		}
		if (*n < FRONTEND_AT_MAX)
			at[(*n)++] = pos;
	}
	return true;
}

/* A recording that could not all be read still replays: say so. */
void frontend_replay_problems(struct engine *e)
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

int frontend_tui(struct frontend *r)
{
	const struct cli *cli = &r->cli;
	struct tui_options to = {
		.delay_tenths = cli->delay_tenths,
		.color = r->conf.color && !cli->no_color,
		.mouse = r->conf.mouse && !cli->no_mouse,
		.sort_column =
			column_find(cli->sort ? cli->sort : r->conf.sort_key),
		.sort_invert = cli->sort ? false : r->conf.sort_invert,
		.filter = cli->filter,
		.lints = r->conf.lints,
		.config_path = r->have_conf ? r->conf_path : NULL,
		.folded_path = cli->folded,
		.hot_by = cli->hot_by,
	};
	uint64_t at[FRONTEND_AT_MAX];
	size_t nat = 0;

	column_hide_unlisted(r->conf.columns, to.hidden);
	/* --at: paused at the last moment (one that is none: usage). */
	if (cli->at && !frontend_replay_at(r->engine, cli->at, at, &nat))
		return 2;
	if (nat)
		engine_replay_seek(r->engine, at[nat - 1]);
	return tui_run(r->engine, &to);
}

void frontend_dump_argv(int argc, char **argv)
{
	/* Before "--": the target's own arguments are not ours. */
	for (int i = 1; i < argc && strcmp(argv[i], "--"); i++)
		if (!strcmp(argv[i], "--json"))
			argv[i] = (char *)"--format=json";
}

bool frontend_dump_check(const struct cli *cli)
{
	if ((cli->pid > 0 || cli->core) && !cli->command && !cli->shm &&
	    !cli->replay)
		return true;
	frontend_say("dump: which process? corotop dump -p PID [--json], or "
		     "corotop dump --core FILE [--exe PROGRAM] [--json]");
	return false;
}

int frontend_batch(struct frontend *r)
{
	const struct cli *cli = &r->cli;
	struct batch_options o = {
		.json = cli->format == CLI_JSON,
		.iterations = cli->iterations,
		.delay_tenths = cli->delay_tenths,
		.hot_stacks = cli->hot_stacks,
		.hot_by = (enum engine_hot_by)cli->hot_by,
		.ppt_frames = cli->ppt_batch_frames,
		.sort_column = cli->sort ? column_find(cli->sort) : -1,
		.filter = &r->filter,
		.sigs = &r->sigs,
		.dump = r->dump,
	};
	struct batch_loop *b = batch_loop_create(r->engine, &o);
	uint64_t at[FRONTEND_AT_MAX];
	size_t nat = 0;
	int status;

	if (!b) {
		frontend_say("out of memory");
		return 1;
	}
	if (cli->at && !frontend_replay_at(r->engine, cli->at, at, &nat))
		status = 2;
	else if (cli->replay)
		status = batch_loop_replay(b, at, nat);
	else if (r->dump)
		status = batch_loop_dump(b);
	else
		status = batch_loop_live(b);
	/* The engine stopped on an error (a --shm region truncated under
	 * it): the snapshots said so, and so does the exit status. */
	if (status == 0 && batch_loop_error(b)) {
		frontend_say(batch_loop_error(b));
		snprintf(r->said, sizeof(r->said), "%s", batch_loop_error(b));
		status = 1;
	}
	batch_loop_destroy(b);
	return status;
}

/* corotop serve's server, bound before the target starts: an address in
 * use costs nothing.  False with the message said. */
bool frontend_serve_bind(struct frontend *r, bool *usage)
{
	struct serve_options o = {
		.listen = r->cli.listen,
		.web_config = r->cli.web_config,
		.top_where = r->cli.top_where,
		.delay_tenths = r->cli.delay_tenths,
		.hot_stacks = r->cli.hot_stacks,
		.filter = r->cli.filter ? &r->filter : NULL,
		.sort_column = r->cli.sort ? column_find(r->cli.sort) : -1,
	};
	char err[512];

	r->sv = serve_create(&o, usage, err, sizeof(err));
	if (!r->sv)
		fprintf(stderr, "corotop serve: %s\n", err);
	return r->sv != NULL;
}

int frontend_serve(struct frontend *r)
{
	int status = serve_run(r->sv, r->engine, &r->sigs);

	serve_destroy(r->sv); /* no request reaches the engine after */
	r->sv = NULL;
	return status;
}

/* Whether the interactive view can run: a terminal that is not dumb,
 * and no -b.  *fell_back: batch only because there is no terminal, which
 * is said once the command line has passed every check -- a note before
 * "corotop: --sort: no column 'x'" would say that corotop was about to
 * run, when it never does. */
bool frontend_want_live(const struct cli *cli, bool *fell_back)
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

void frontend_batch_note(bool fell_back)
{
	if (fell_back)
		frontend_say(
			"no terminal (or TERM=dumb): printing batch snapshots "
			"instead");
}

/* --cacheray: the report, text or JSON, without a terminal (or with -b);
 * on one, the interactive memory view with the delay, colour and mouse
 * settings the coroutine TUI gets. */
int frontend_cacheray(const struct cli *cli, const struct config *conf,
		      bool live)
{
	struct memview_options o = {
		.delay_tenths = cli->delay_tenths,
		.color = conf->color && !cli->no_color,
		.mouse = conf->mouse && !cli->no_mouse,
	};
	char err[512];
	int rc;

	if (live)
		return memview_run(cli->cacheray, &o);
	rc = batch_cacheray_run(cli->cacheray, cli->format == CLI_JSON, stdout,
				err, sizeof(err));
	if (rc)
		frontend_say(err);
	return rc;
}
