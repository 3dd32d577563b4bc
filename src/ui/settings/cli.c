/*
 * cli: parse corotop's options.
 *
 * Options end at "--" or at the first word that is not an option, which
 * starts the target command, so "corotop -b ./server --port 80" and
 * "corotop -b -- ./server --port 80" mean the same.  Every mistake produces a
 * single line that names what was wrong and what to do instead; main() turns
 * CLI_ERROR into exit code 2.
 */
#define _GNU_SOURCE
#include "ui/settings/cli.h"

#include "engine/engine.h"

#include <ctype.h>

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "corotop/ctp.h"

const char cli_usage[] =
	"usage: corotop [options] -- COMMAND [ARGS...]   run COMMAND under "
	"the engine\n"
	"       corotop [options] --shm PATH [--sock PATH]  observe an "
	"existing cTP region\n"
	"       corotop [options] -p PID               attach to a running "
	"process (ppt)\n"
	"       corotop [options] --replay FILE        replay a recording "
	"(--record)\n"
	"       corotop [options] --cacheray FILE|-    memory accesses of a "
	"Cacheray trace\n"
	"       corotop convert --to chrome|jsonl|folded|speedscope|heph FILE\n"
	"                                              [-o OUT]\n"
	"       corotop serve [--listen ADDR:PORT] [--top-where K] [options] "
	"(-- COMMAND | -p PID | --shm PATH)\n"
	"                                              serve /metrics, "
	"/snapshot, /healthz\n"
	"\n"
	"  -b, --batch              no curses: print a snapshot every delay\n"
	"  -n, --iterations N       with --batch: exit after N snapshots\n"
	"  -d, --delay TENTHS       refresh interval in tenths of a second "
	"(default 10)\n"
	"  -f, --format text|json   batch output format (json: one object "
	"per line)\n"
	"      --stations N         stations to preallocate (default 4096)\n"
	"      --jsonl FILE         append every harvested event as one JSON "
	"line\n"
	"      --record FILE        record the run as a Heph trace (replay: "
	"--replay FILE);\n"
	"                           (FILE.zst: zstd-compressed, about 1/7 "
	"the size)\n"
	"      --output FILE        append the target's stdout and stderr "
	"here (else: the\n"
	"                           TUI's output view (o); batch: our "
	"stderr)\n"
	"      --replay FILE        show a recording, with time controls "
	"(batch: one\n"
	"                           snapshot per delay of trace time, then "
	"the end)\n"
	"      --paused             with --replay: start paused at the "
	"beginning\n"
	"      --at LIST            with --replay: these moments, comma-"
	"separated (12.5s,\n"
	"                           1:30, 250ms, 50%, end); batch prints "
	"one snapshot at\n"
	"                           each, the TUI starts paused at the last\n"
	"      --cacheray FILE      read a Cacheray trace (a file, - for "
	"stdin, or a FIFO)\n"
	"  -C, --no-color           monochrome (also when NO_COLOR is set)\n"
	"  -M, --no-mouse           do not use the mouse\n"
	"  -s, --sort COLUMN        initial sort column (id, state, tid, age, "
	"in-state, ...)\n"
	"  -F, --filter TEXT        initial filter (text, !regex, state=S "
	"tid=N)\n"
	"      --folded FILE        on exit, write the hot stacks as "
	"flamegraph.pl folded stacks\n"
	"      --speedscope FILE    on exit, write them as a speedscope "
	"profile (JSON)\n"
	"      --hot-stacks N       hot stacks in batch output (default 50; "
	"text shows 10 at most)\n"
	"      --hot-by WHAT        hot stacks (H, batch): a row per function "
	"stack\n"
	"                           (default), line stack or stack as sampled\n"
	"                           (function|line|address)\n"
	"      --hot-window SECS    the hot-stacks window (1-3600, default "
	"30)\n"
	"      --hot-half-life SECS its decay half-life (0-3600, 0 none; "
	"default 10)\n"
	"      --sample HZ          sample the target's CPU stacks HZ times "
	"per CPU-second\n"
	"                           per thread (1-10000; default off)\n"
	"      --parked-stacks      record where each coroutine of the target "
	"parks\n"
	"                           (its stack at every suspend; default "
	"off)\n"
	"      --runtime LIST       frames of these libraries or functions "
	"are the runtime's,\n"
	"                           not the program's (WHERE, NAME): "
	"name prefixes,\n"
	"                           comma-separated (libmysched,mysched::,"
	"sched_)\n"
	"      --own-lib LIST       shared libraries whose frames are the "
	"program's\n"
	"                           (name prefixes, comma-separated: "
	"libmyapp)\n"
	"      --no-auto            do not trace a program that does not call "
	"the probe\n"
	"                           through its ucontext/Boost.Context "
	"switches (LD_PRELOAD)\n"
	"  -p, --pid PID            attach to running process PID through "
	"its ppt buffers\n"
	"      --list-buffers       with -p: list its ppt buffers and exit\n"
	"      --force-attach       take over buffers another agent holds "
	"(its pid is shown)\n"
	"  -c, --counters LIST      perf counters per ppt frame, up to 3 "
	"(cycles,instructions)\n"
	"      --buffer NAME        attach only this ppt buffer\n"
	"      --ppt-block N        frames in each ppt data block (default "
	"65536)\n"
	"      --ppt-frames N       ppt frames per buffer in batch output "
	"(default 100)\n"
	"      --shm PATH           observe this region read-only\n"
	"      --sock PATH          its wake socket (accepted; observers "
	"poll)\n"
	"      --listen ADDR:PORT   serve: the address to serve on (default "
	"127.0.0.1:9464;\n"
	"                           port 0: any free port, printed on "
	"stderr; not loopback:\n"
	"                           only with --web-config)\n"
	"      --web-config FILE    serve: TLS and basic auth (the "
	"Prometheus exporters'\n"
	"                           YAML web configuration)\n"
	"      --top-where K        serve: WHERE locations in "
	"corotop_suspended_where\n"
	"                           (0-1000, default 20; the rest as "
	"\"other\")\n"
	"  -h, --help               show this help\n"
	"  -V, --version            show the version\n";

enum {
	OPT_JSONL = 256,
	OPT_RECORD,
	OPT_STATIONS,
	OPT_SHM,
	OPT_SOCK,
	OPT_SORT,
	OPT_FOLDED,
	OPT_SPEEDSCOPE,
	OPT_HOT_STACKS,
	OPT_HOT_BY,
	OPT_HOT_WINDOW,
	OPT_HOT_HALF_LIFE,
	OPT_SAMPLE,
	OPT_PARKED,
	OPT_LIST_BUFFERS,
	OPT_FORCE_ATTACH,
	OPT_BUFFER,
	OPT_PPT_BLOCK,
	OPT_PPT_FRAMES,
	OPT_REPLAY,
	OPT_PAUSED,
	OPT_AT,
	OPT_CACHERAY,
	OPT_NO_AUTO,
	OPT_OUTPUT,
	OPT_LISTEN,
	OPT_TOP_WHERE,
	OPT_WEB_CONFIG,
	OPT_RUNTIME,
	OPT_OWN_LIB,
};

static const struct option cli_options[] = {
	{"batch", no_argument, NULL, 'b'},
	{"iterations", required_argument, NULL, 'n'},
	{"delay", required_argument, NULL, 'd'},
	{"format", required_argument, NULL, 'f'},
	{"stations", required_argument, NULL, OPT_STATIONS},
	{"jsonl", required_argument, NULL, OPT_JSONL},
	{"record", required_argument, NULL, OPT_RECORD},
	{"output", required_argument, NULL, OPT_OUTPUT},
	{"replay", required_argument, NULL, OPT_REPLAY},
	{"paused", no_argument, NULL, OPT_PAUSED},
	{"at", required_argument, NULL, OPT_AT},
	{"cacheray", required_argument, NULL, OPT_CACHERAY},
	{"shm", required_argument, NULL, OPT_SHM},
	{"sock", required_argument, NULL, OPT_SOCK},
	{"no-color", no_argument, NULL, 'C'},
	{"no-colour", no_argument, NULL, 'C'},
	{"no-mouse", no_argument, NULL, 'M'},
	{"sort", required_argument, NULL, OPT_SORT},
	{"filter", required_argument, NULL, 'F'},
	{"folded", required_argument, NULL, OPT_FOLDED},
	{"speedscope", required_argument, NULL, OPT_SPEEDSCOPE},
	{"hot-stacks", required_argument, NULL, OPT_HOT_STACKS},
	{"hot-by", required_argument, NULL, OPT_HOT_BY},
	{"hot-window", required_argument, NULL, OPT_HOT_WINDOW},
	{"hot-half-life", required_argument, NULL, OPT_HOT_HALF_LIFE},
	{"sample", required_argument, NULL, OPT_SAMPLE},
	{"parked-stacks", no_argument, NULL, OPT_PARKED},
	{"runtime", required_argument, NULL, OPT_RUNTIME},
	{"own-lib", required_argument, NULL, OPT_OWN_LIB},
	{"no-auto", no_argument, NULL, OPT_NO_AUTO},
	{"pid", required_argument, NULL, 'p'},
	{"list-buffers", no_argument, NULL, OPT_LIST_BUFFERS},
	{"force-attach", no_argument, NULL, OPT_FORCE_ATTACH},
	{"counters", required_argument, NULL, 'c'},
	{"buffer", required_argument, NULL, OPT_BUFFER},
	{"ppt-block", required_argument, NULL, OPT_PPT_BLOCK},
	{"ppt-frames", required_argument, NULL, OPT_PPT_FRAMES},
	{"listen", required_argument, NULL, OPT_LISTEN},
	{"web-config", required_argument, NULL, OPT_WEB_CONFIG},
	{"top-where", required_argument, NULL, OPT_TOP_WHERE},
	{"help", no_argument, NULL, 'h'},
	{"version", no_argument, NULL, 'V'},
	{NULL, 0, NULL, 0},
};

static bool cli_number(const char *s, unsigned long min, unsigned long max,
		       unsigned long *out)
{
	char *end;
	unsigned long v;

	/* Digits only: strtoul would skip blanks and accept a sign. */
	if (!s || *s < '0' || *s > '9')
		return false;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return false;
	*out = v;
	return true;
}

/*
 * The numeric options: each a digits-only number in [min, max] stored in
 * a field of struct cli, refused otherwise with "OPTION expects NOUN, got
 * 'VALUE'".  Adding one is an entry here (and in cli_options).
 */
enum cli_field_type {
	CLI_F_UINT = 0, /* unsigned */
	CLI_F_U32,	/* uint32_t */
	CLI_F_INT,	/* int */
};

struct cli_number_option {
	int opt;	  /* getopt_long's value */
	const char *name; /* as messages spell it */
	unsigned long min, max;
	size_t field; /* offsetof(struct cli, ...) */
	enum cli_field_type type;
	const char *noun;
	bool has_flag; /* also set a bool when given: */
	size_t flag;   /* offsetof(struct cli, ...) */
};

static const struct cli_number_option cli_numbers[] = {
	{'n', "--iterations", 1, UINT_MAX, offsetof(struct cli, iterations),
	 CLI_F_UINT, "a count of snapshots (1 or more)", false, 0},
	{'d', "--delay", 1, 36000, offsetof(struct cli, delay_tenths),
	 CLI_F_UINT, "tenths of a second from 1 to 36000", true,
	 offsetof(struct cli, delay_set)},
	{OPT_STATIONS, "--stations", 1, CTP_MAX_STATIONS_LIMIT,
	 offsetof(struct cli, stations), CLI_F_U32, "a count from 1 to 1048576",
	 false, 0},
	{OPT_HOT_STACKS, "--hot-stacks", 0, 10000,
	 offsetof(struct cli, hot_stacks), CLI_F_UINT,
	 "a count from 0 to 10000", false, 0},
	{OPT_HOT_WINDOW, "--hot-window", 1, 3600,
	 offsetof(struct cli, hot_window_s), CLI_F_UINT,
	 "seconds from 1 to 3600", false, 0},
	{OPT_HOT_HALF_LIFE, "--hot-half-life", 0, 3600,
	 offsetof(struct cli, hot_half_life_s), CLI_F_UINT,
	 "seconds from 0 to 3600", true,
	 offsetof(struct cli, hot_half_life_set)},
	{OPT_SAMPLE, "--sample", 1, 10000, offsetof(struct cli, sample_hz),
	 CLI_F_UINT, "samples per CPU-second from 1 to 10000", false, 0},
	{'p', "--pid", 1, INT_MAX, offsetof(struct cli, pid), CLI_F_INT,
	 "a process id", false, 0},
	{OPT_PPT_BLOCK, "--ppt-block", 1, 1u << 22,
	 offsetof(struct cli, ppt_block_frames), CLI_F_U32,
	 "frames from 1 to 4194304", false, 0},
	{OPT_PPT_FRAMES, "--ppt-frames", 0, 100000,
	 offsetof(struct cli, ppt_batch_frames), CLI_F_UINT,
	 "a count from 0 to 100000", false, 0},
	{OPT_TOP_WHERE, "--top-where", 0, 1000, offsetof(struct cli, top_where),
	 CLI_F_UINT, "a count from 0 to 1000", true,
	 offsetof(struct cli, top_where_set)},
};

static const struct cli_number_option *cli_number_option(int opt)
{
	for (size_t i = 0; i < sizeof(cli_numbers) / sizeof(*cli_numbers); i++)
		if (cli_numbers[i].opt == opt)
			return &cli_numbers[i];
	return NULL;
}

/* Store arg as option o says, or the message in err. */
static enum cli_result cli_set_number(struct cli *out,
				      const struct cli_number_option *o,
				      const char *arg, char *err, size_t errlen)
{
	char *base = (char *)out;
	unsigned long v;

	if (!cli_number(arg, o->min, o->max, &v)) {
		snprintf(err, errlen, "corotop: %s expects %s, got '%s'",
			 o->name, o->noun, arg ? arg : "");
		return CLI_ERROR;
	}
	switch (o->type) {
	case CLI_F_UINT:
		*(unsigned *)(base + o->field) = (unsigned)v;
		break;
	case CLI_F_U32:
		*(uint32_t *)(base + o->field) = (uint32_t)v;
		break;
	case CLI_F_INT:
		*(int *)(base + o->field) = (int)v;
		break;
	}
	if (o->has_flag)
		*(bool *)(base + o->flag) = true;
	return CLI_OK;
}

/*
 * The options that only store: a text kept as given (a path, a name, a
 * filter; checked by whoever uses it), or a switch turned on.
 */
struct cli_store_option {
	int opt;      /* getopt_long's value */
	size_t field; /* offsetof(struct cli, ...) */
};

static const struct cli_store_option cli_texts[] = {
	{OPT_JSONL, offsetof(struct cli, jsonl)},
	{OPT_RECORD, offsetof(struct cli, record)},
	{OPT_OUTPUT, offsetof(struct cli, output)},
	{OPT_REPLAY, offsetof(struct cli, replay)},
	{OPT_AT, offsetof(struct cli, at)},
	{OPT_CACHERAY, offsetof(struct cli, cacheray)},
	{OPT_SHM, offsetof(struct cli, shm)},
	{OPT_SOCK, offsetof(struct cli, sock)},
	{OPT_SORT, offsetof(struct cli, sort)},
	{'F', offsetof(struct cli, filter)},
	{OPT_FOLDED, offsetof(struct cli, folded)},
	{OPT_SPEEDSCOPE, offsetof(struct cli, speedscope)},
	{OPT_BUFFER, offsetof(struct cli, buffer)},
	{OPT_LISTEN, offsetof(struct cli, listen)},
	{OPT_WEB_CONFIG, offsetof(struct cli, web_config)},
};

static const struct cli_store_option cli_switches[] = {
	{'b', offsetof(struct cli, batch)},
	{OPT_PAUSED, offsetof(struct cli, paused)},
	{'C', offsetof(struct cli, no_color)},
	{'M', offsetof(struct cli, no_mouse)},
	{OPT_PARKED, offsetof(struct cli, parked_stacks)},
	{OPT_NO_AUTO, offsetof(struct cli, no_auto)},
	{OPT_LIST_BUFFERS, offsetof(struct cli, list_buffers)},
	{OPT_FORCE_ATTACH, offsetof(struct cli, force_attach)},
};

/* Store what option c says, if it is one of the tables above. */
static bool cli_store(struct cli *out, int c, const char *arg)
{
	char *base = (char *)out;

	for (size_t i = 0; i < sizeof(cli_texts) / sizeof(*cli_texts); i++)
		if (cli_texts[i].opt == c) {
			*(const char **)(base + cli_texts[i].field) = arg;
			return true;
		}
	for (size_t i = 0; i < sizeof(cli_switches) / sizeof(*cli_switches);
	     i++)
		if (cli_switches[i].opt == c) {
			*(bool *)(base + cli_switches[i].field) = true;
			return true;
		}
	return false;
}

/*
 * How to name the option getopt complained about: the long option as typed
 * (without any "=value"), or "-x" for a short one.  getopt leaves optopt at
 * the option's value for long options, which is not a character for the
 * long-only ones, so the word itself is the better source.
 */
static const char *cli_option_name(const char *word, int optopt_value,
				   char *buf, size_t n)
{
	if (strncmp(word, "--", 2) == 0) {
		size_t len = strcspn(word, "=");

		snprintf(buf, n, "%.*s", (int)len, word);
	} else if (optopt_value > 0 && optopt_value < 128) {
		snprintf(buf, n, "-%c", optopt_value);
	} else {
		snprintf(buf, n, "%s", word);
	}
	return buf;
}

static enum cli_result cli_fail(char *err, size_t errlen, const char *fmt,
				const char *a)
{
	int n = snprintf(err, errlen, "corotop: ");

	if (n > 0 && (size_t)n < errlen)
		snprintf(err + n, errlen - (size_t)n, fmt, a);
	return CLI_ERROR;
}

/* --replay and --cacheray read a file: nothing runs, nothing attaches. */
static enum cli_result cli_check_file_mode(struct cli *out, char *err,
					   size_t errlen)
{
	const char *what = out->replay ? "--replay" : "--cacheray";

	if (out->replay && out->cacheray)
		return cli_fail(err, errlen, "%s",
				"give either --replay FILE or --cacheray FILE, "
				"not both");
	if (out->command || out->shm || out->pid)
		return cli_fail(err, errlen,
				"%s reads a file: give no command, -p or --shm "
				"with it",
				what);
	if (out->record || out->jsonl || out->folded || out->speedscope ||
	    out->sample_hz || out->parked_stacks)
		return cli_fail(err, errlen,
				"%s reads a file: --record, --jsonl, --folded, "
				"--speedscope, --sample and --parked-stacks "
				"need a running target",
				what);
	if (out->runtime || out->own_libs)
		return cli_fail(err, errlen,
				"%s reads a file: its WHERE and NAME were "
				"picked when it was recorded, so --runtime and "
				"--own-lib go with a running target",
				what);
	if ((out->paused || out->at) && !out->replay)
		return cli_fail(err, errlen, "%s goes with --replay FILE",
				out->paused ? "--paused" : "--at");
	return CLI_OK;
}

enum cli_result cli_parse(int argc, char **argv, struct cli *out, char *err,
			  size_t errlen)
{
	char opt[64];
	int c;

	memset(out, 0, sizeof(*out));
	out->delay_tenths = 10;
	out->stations = 4096;
	out->hot_stacks = 50;
	out->ppt_batch_frames = 100;
	out->top_where = 20;
	opterr = 0;
	optind = 0; /* GNU: full re-initialisation, so tests can call again */
	while ((c = getopt_long(argc, argv, "+:bn:d:f:s:hVCMF:p:c:",
				cli_options, NULL)) != -1) {
		const struct cli_number_option *num = cli_number_option(c);

		if (num) {
			if (cli_set_number(out, num, optarg, err, errlen) !=
			    CLI_OK)
				return CLI_ERROR;
			continue;
		}
		if (cli_store(out, c, optarg))
			continue;
		switch (c) {
		case 'f':
			if (strcmp(optarg, "text") == 0)
				out->format = CLI_TEXT;
			else if (strcmp(optarg, "json") == 0)
				out->format = CLI_JSON;
			else
				return cli_fail(err, errlen,
						"--format expects 'text' or "
						"'json', got '%s'",
						optarg);
			break;
		case 's':
			/* htop's -s COLUMN: a sort, never a count.  -s N once
			 * sized the region (CHANGELOG.md); a number now says
			 * where that went. */
			if (isdigit((unsigned char)optarg[0]))
				return cli_fail(err, errlen,
						"-s sorts by a column, like "
						"htop's (got '%s'); the "
						"stations to preallocate are "
						"--stations N",
						optarg);
			out->sort = optarg;
			break;
		case 'c': {
			/* Named here, before any process is looked at: a
			 * typo is a usage error (exit 2). */
			char why[256];

			if (!engine_ppt_counters_valid(optarg, why,
						       sizeof(why)))
				return cli_fail(err, errlen, "-c: %s", why);
			out->counters = optarg;
			break;
		}
		case OPT_RUNTIME:
		case OPT_OWN_LIB: {
			const char **to = c == OPT_RUNTIME ? &out->runtime
							   : &out->own_libs;
			char why[256];

			/* One list: a second one would silently replace
			 * the first. */
			if (*to)
				return cli_fail(err, errlen,
						"%s was given twice: give one "
						"comma-separated list",
						c == OPT_RUNTIME ? "--runtime"
								 : "--own-lib");
			*to = optarg;
			if (!engine_runtime_valid(out->runtime, out->own_libs,
						  why, sizeof(why)))
				return cli_fail(err, errlen, "%s", why);
			break;
		}
		case OPT_HOT_BY: {
			enum engine_hot_by by;

			if (!engine_hot_by_parse(optarg, &by))
				return cli_fail(err, errlen,
						"--hot-by expects 'function', "
						"'line' or 'address', got '%s'",
						optarg);
			out->hot_by = (unsigned)by;
			break;
		}
		case 'h':
			return CLI_HELP;
		case 'V':
			return CLI_VERSION;
		case ':':
			return cli_fail(err, errlen,
					"option '%s' needs a value; see "
					"'corotop --help'",
					cli_option_name(argv[optind - 1],
							optopt, opt,
							sizeof(opt)));
		default:
			if (strncmp(argv[optind - 1], "--", 2) == 0 &&
			    strchr(argv[optind - 1], '=') && optopt)
				return cli_fail(
					err, errlen,
					"option '%s' takes no value; "
					"see 'corotop --help'",
					cli_option_name(argv[optind - 1],
							optopt, opt,
							sizeof(opt)));
			return cli_fail(err, errlen,
					"unknown option '%s'; see 'corotop "
					"--help'",
					cli_option_name(argv[optind - 1],
							optopt, opt,
							sizeof(opt)));
		}
	}
	if (optind < argc)
		out->command = &argv[optind];
	if (out->replay || out->cacheray)
		return cli_check_file_mode(out, err, errlen);
	if (out->paused || out->at)
		return cli_fail(err, errlen, "%s goes with --replay FILE",
				out->paused ? "--paused" : "--at");
	if (out->command && out->shm)
		return cli_fail(err, errlen,
				"give either a command or --shm %s, not both",
				out->shm);
	if (out->pid && (out->command || out->shm))
		return cli_fail(err, errlen, "%s",
				"-p PID attaches to a running process: give "
				"no command and no --shm with it");
	if (!out->command && !out->shm && !out->pid)
		return cli_fail(err, errlen, "%s",
				"nothing to watch: give a command after --, "
				"-p PID, or --shm PATH; see 'corotop --help'");
	if (!out->pid &&
	    (out->list_buffers || out->force_attach || out->counters ||
	     out->buffer || out->ppt_block_frames))
		return cli_fail(err, errlen, "%s",
				"--list-buffers, --force-attach, -c, --buffer "
				"and --ppt-block go with -p PID");
	if (out->sock && !out->shm)
		return cli_fail(err, errlen, "%s",
				"--sock only goes with --shm");
	if (out->shm && (out->folded || out->speedscope))
		return cli_fail(err, errlen, "%s",
				"--folded and --speedscope need a command to "
				"run: an observer (--shm) has no hot stacks");
	if ((out->sample_hz || out->parked_stacks) && out->shm)
		return cli_fail(err, errlen, "%s",
				"--sample and --parked-stacks only go with a "
				"command: an observed program is already "
				"running");
	if (out->output && !out->command)
		return cli_fail(err, errlen, "%s",
				"--output goes with a command to run (corotop "
				"--output FILE -- CMD): the output of a "
				"program corotop did not start is not its to "
				"take");
	return CLI_OK;
}
