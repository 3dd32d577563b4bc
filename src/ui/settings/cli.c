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

#include "common/pathcheck.h"
#include "corotop/ctp.h"

/* The synopsis above the options in --help. */
static const char cli_synopsis[] =
	"usage: corotop [options] -- COMMAND [ARGS...]   run COMMAND under "
	"the engine\n"
	"       corotop [options] --shm PATH [--sock PATH]  observe an "
	"existing cTP region\n"
	"       corotop [options] -p PID               attach to a running "
	"process (ppt)\n"
	"       corotop [options] --core FILE [--exe PROGRAM]  a core "
	"dump's coroutines\n"
	"       corotop [options] --replay FILE        replay a recording "
	"(--record)\n"
	"       corotop [options] --cacheray FILE|-    memory accesses of a "
	"Cacheray trace\n"
	"       corotop dump (-p PID | --core FILE) [--json]  every "
	"coroutine, once\n"
	"       corotop convert --to chrome|jsonl|folded|speedscope|heph FILE\n"
	"                                              [-o OUT]\n"
	"       corotop serve [--listen ADDR:PORT] [--top-where K] [options] "
	"(-- COMMAND | -p PID | --shm PATH)\n"
	"                                              serve /metrics, "
	"/snapshot, /healthz\n"
	"\n";

/* getopt_long's values of the options without a letter. */
enum {
	OPT_JSONL = 256,
	OPT_RECORD,
	OPT_STATIONS,
	OPT_SHM,
	OPT_SOCK,
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
	OPT_NO_SCAN,
	OPT_NONBLOCKING,
	OPT_BUFFER,
	OPT_PPT_BLOCK,
	OPT_PPT_FRAMES,
	OPT_REPLAY,
	OPT_CORE,
	OPT_EXE,
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

/* What an option is, and so how its value is taken. */
enum cli_kind {
	CLI_K_SWITCH, /* no value: sets a bool */
	CLI_K_TEXT,   /* a text kept as given (a path, a name, a filter) */
	CLI_K_NUMBER, /* digits only, in [min, max] */
	CLI_K_OWN,    /* checked by the row's own parse function */
	CLI_K_HELP,
	CLI_K_VERSION,
};

/* The type of a field an option fills in. */
enum cli_type {
	CLI_T_NONE = 0, /* no field (the engine's: not the engine's) */
	CLI_T_BOOL,
	CLI_T_TEXT,
	CLI_T_UINT, /* unsigned */
	CLI_T_U32,
	CLI_T_U64,
	CLI_T_INT,
};

#define CLI_NO_FLAG SIZE_MAX

struct cli_opt;
typedef enum cli_result (*cli_parse_fn)(struct cli *out,
					const struct cli_opt *o,
					const char *arg, char *err,
					size_t errlen);

/*
 * One row per option: getopt's table, the checks of its value, the
 * field of struct cli it fills, the engine_config field that field goes
 * to (cli_engine_config), and its lines of --help all come from here.
 * The rows are in --help's order; a row without help (an alias) is
 * accepted but not listed.  tests/check/manpage.py checks docs/corotop.1
 * against --help.
 */
struct cli_opt {
	const char *name; /* the long name, without "--" */
	int key;	  /* its letter, or an OPT_ value */
	const char *arg;  /* the value's name in --help; NULL: none */
	enum cli_kind kind;
	enum cli_type type;	/* the field's */
	size_t field;		/* offsetof(struct cli, ...) */
	size_t flag;		/* a bool set when given, or CLI_NO_FLAG */
	unsigned long min, max; /* CLI_K_NUMBER */
	const char *noun;	/* ... "--x expects NOUN, got 'v'" */
	enum cli_type cfg_type; /* the engine_config field's, or NONE */
	size_t cfg;		/* offsetof(struct engine_config, ...) */
	cli_parse_fn parse;	/* CLI_K_OWN */
	const char *help;	/* lines of --help (NULL: not listed) */
};

#define F(x) offsetof(struct cli, x)
#define CFG(t, x) CLI_T_##t, offsetof(struct engine_config, x)
#define NOCFG CLI_T_NONE, 0
#define SWITCH(name, key, field, cfg, help)                                    \
	{                                                                      \
		name, key, NULL, CLI_K_SWITCH, CLI_T_BOOL, F(field),           \
			CLI_NO_FLAG, 0, 0, NULL, cfg, NULL, help               \
	}
#define TEXT(name, key, arg, field, cfg, help)                                 \
	{                                                                      \
		name, key, arg, CLI_K_TEXT, CLI_T_TEXT, F(field), CLI_NO_FLAG, \
			0, 0, NULL, cfg, NULL, help                            \
	}
#define NUMBER(name, key, arg, type, field, flag, min, max, noun, cfg, help)   \
	{                                                                      \
		name, key, arg, CLI_K_NUMBER, CLI_T_##type, F(field), flag,    \
			min, max, noun, cfg, NULL, help                        \
	}
#define OWN(name, key, arg, type, field, fn, cfg, help)                        \
	{                                                                      \
		name, key, arg, CLI_K_OWN, CLI_T_##type, F(field),             \
			CLI_NO_FLAG, 0, 0, NULL, cfg, fn, help                 \
	}

static enum cli_result cli_parse_format(struct cli *out,
					const struct cli_opt *o,
					const char *arg, char *err,
					size_t errlen);
static enum cli_result cli_parse_sort(struct cli *out, const struct cli_opt *o,
				      const char *arg, char *err,
				      size_t errlen);
static enum cli_result cli_parse_counters(struct cli *out,
					  const struct cli_opt *o,
					  const char *arg, char *err,
					  size_t errlen);
static enum cli_result cli_parse_libs(struct cli *out, const struct cli_opt *o,
				      const char *arg, char *err,
				      size_t errlen);
static enum cli_result cli_parse_hot_by(struct cli *out,
					const struct cli_opt *o,
					const char *arg, char *err,
					size_t errlen);

static const struct cli_opt cli_opts[] = {
	SWITCH("batch", 'b', batch, NOCFG,
	       "no curses: print a snapshot every delay"),
	NUMBER("iterations", 'n', "N", UINT, iterations, CLI_NO_FLAG, 1,
	       UINT_MAX, "a count of snapshots (1 or more)", NOCFG,
	       "with --batch: exit after N snapshots"),
	NUMBER("delay", 'd', "TENTHS", UINT, delay_tenths, F(delay_set), 1,
	       36000, "tenths of a second from 1 to 36000", NOCFG,
	       "refresh interval in tenths of a second (default 10)"),
	OWN("format", 'f', "text|json", NONE, format, cli_parse_format, NOCFG,
	    "batch output format (json: one object per line)"),
	NUMBER("stations", OPT_STATIONS, "N", U32, stations, CLI_NO_FLAG, 1,
	       CTP_MAX_STATIONS_LIMIT, "a count from 1 to 1048576",
	       CFG(U32, stations), "stations to preallocate (default 4096)"),
	TEXT("jsonl", OPT_JSONL, "FILE", jsonl, CFG(TEXT, jsonl_path),
	     "append every harvested event as one JSON line"),
	TEXT("record", OPT_RECORD, "FILE", record, CFG(TEXT, record_path),
	     "record the run as a Heph trace (replay: --replay FILE);\n"
	     "(FILE.zst: zstd-compressed, about 1/7 the size)"),
	TEXT("output", OPT_OUTPUT, "FILE", output, CFG(TEXT, output_path),
	     "append the target's stdout and stderr here (else: the\n"
	     "TUI's output view (o); batch: our stderr)"),
	TEXT("replay", OPT_REPLAY, "FILE", replay, CFG(TEXT, replay_path),
	     "show a recording, with time controls (batch: one\n"
	     "snapshot per delay of trace time, then the end)"),
	SWITCH("paused", OPT_PAUSED, paused, NOCFG,
	       "with --replay: start paused at the beginning"),
	TEXT("at", OPT_AT, "LIST", at, NOCFG,
	     "with --replay: these moments, comma-separated (12.5s,\n"
	     "1:30, 250ms, 50%, end); batch prints one snapshot at\n"
	     "each, the TUI starts paused at the last"),
	TEXT("cacheray", OPT_CACHERAY, "FILE", cacheray, NOCFG,
	     "read a Cacheray trace (a file, - for stdin, or a FIFO)"),
	SWITCH("no-color", 'C', no_color, NOCFG,
	       "monochrome (also when NO_COLOR is set)"),
	SWITCH("no-colour", 'C', no_color, NOCFG, NULL),
	SWITCH("no-mouse", 'M', no_mouse, NOCFG, "do not use the mouse"),
	OWN("sort", 's', "COLUMN", TEXT, sort, cli_parse_sort, NOCFG,
	    "initial sort column (id, state, tid, age, in-state, ...)"),
	TEXT("filter", 'F', "TEXT", filter, NOCFG,
	     "initial filter (text, !regex, state=S tid=N)"),
	TEXT("folded", OPT_FOLDED, "FILE", folded, NOCFG,
	     "on exit, write the hot stacks as flamegraph.pl folded stacks"),
	TEXT("speedscope", OPT_SPEEDSCOPE, "FILE", speedscope, NOCFG,
	     "on exit, write them as a speedscope profile (JSON)"),
	NUMBER("hot-stacks", OPT_HOT_STACKS, "N", UINT, hot_stacks, CLI_NO_FLAG,
	       0, 10000, "a count from 0 to 10000", NOCFG,
	       "hot stacks in batch output (default 50; text shows 10 at "
	       "most)"),
	OWN("hot-by", OPT_HOT_BY, "WHAT", NONE, hot_by, cli_parse_hot_by, NOCFG,
	    "hot stacks (H, batch): a row per function stack\n"
	    "(default), line stack or stack as sampled\n"
	    "(function|line|address)"),
	NUMBER("hot-window", OPT_HOT_WINDOW, "SECS", UINT, hot_window_s,
	       CLI_NO_FLAG, 1, 3600, "seconds from 1 to 3600",
	       CFG(UINT, hot.window_s),
	       "the hot-stacks window (1-3600, default 30)"),
	NUMBER("hot-half-life", OPT_HOT_HALF_LIFE, "SECS", UINT,
	       hot_half_life_s, F(hot_half_life_set), 0, 3600,
	       "seconds from 0 to 3600", CFG(UINT, hot.half_life_s),
	       "its decay half-life (0-3600, 0 none; default 10)"),
	NUMBER("sample", OPT_SAMPLE, "HZ", UINT, sample_hz, CLI_NO_FLAG, 1,
	       10000, "samples per CPU-second from 1 to 10000",
	       CFG(UINT, sample_hz),
	       "sample the target's CPU stacks HZ times per CPU-second\n"
	       "per thread (1-10000; default off)"),
	SWITCH("parked-stacks", OPT_PARKED, parked_stacks,
	       CFG(BOOL, parked_stacks),
	       "record where each coroutine of the target parks\n"
	       "(its stack at every suspend; default off)"),
	OWN("runtime", OPT_RUNTIME, "LIST", TEXT, runtime, cli_parse_libs,
	    CFG(TEXT, runtime),
	    "frames of these libraries or functions are the runtime's,\n"
	    "not the program's (WHERE, NAME): name prefixes,\n"
	    "comma-separated (libmysched,mysched::,sched_)"),
	OWN("own-lib", OPT_OWN_LIB, "LIST", TEXT, own_libs, cli_parse_libs,
	    CFG(TEXT, own_libs),
	    "shared libraries whose frames are the program's\n"
	    "(name prefixes, comma-separated: libmyapp)"),
	SWITCH("no-auto", OPT_NO_AUTO, no_auto, CFG(BOOL, no_auto),
	       "do not trace a program that does not call the probe\n"
	       "through its ucontext/Boost.Context switches (LD_PRELOAD)"),
	NUMBER("pid", 'p', "PID", INT, pid, CLI_NO_FLAG, 1, INT_MAX,
	       "a process id", CFG(INT, attach_pid),
	       "attach to running process PID through its ppt buffers\n"
	       "(none: its memory is scanned for parked contexts)"),
	SWITCH("no-scan", OPT_NO_SCAN, no_scan, CFG(BOOL, no_scan),
	       "with -p: refuse a process that publishes no ppt buffer\n"
	       "instead of scanning its memory"),
	SWITCH("nonblocking", OPT_NONBLOCKING, nonblocking,
	       CFG(BOOL, nonblocking),
	       "with -p, scanning: never stop the target's threads, not\n"
	       "even briefly; running threads show no stack and what is\n"
	       "read may be torn"),
	TEXT("core", OPT_CORE, "FILE", core, CFG(TEXT, core_path),
	     "the coroutines of a core file (gcore's, the kernel's),\n"
	     "frozen at the moment of the dump"),
	TEXT("exe", OPT_EXE, "PROGRAM", exe, CFG(TEXT, core_exe),
	     "with --core: read the program's code and symbols from\n"
	     "PROGRAM (default: the path the core names)"),
	SWITCH("list-buffers", OPT_LIST_BUFFERS, list_buffers, NOCFG,
	       "with -p: list its ppt buffers and exit"),
	SWITCH("force-attach", OPT_FORCE_ATTACH, force_attach,
	       CFG(BOOL, force_attach),
	       "take over buffers another agent holds (its pid is shown)"),
	OWN("counters", 'c', "LIST", TEXT, counters, cli_parse_counters,
	    CFG(TEXT, counters),
	    "perf counters per ppt frame, up to 3 (cycles,instructions)"),
	TEXT("buffer", OPT_BUFFER, "NAME", buffer, CFG(TEXT, ppt_buffer),
	     "attach only this ppt buffer"),
	NUMBER("ppt-block", OPT_PPT_BLOCK, "N", U32, ppt_block_frames,
	       CLI_NO_FLAG, 1, 1u << 22, "frames from 1 to 4194304",
	       CFG(U64, ppt_block_frames),
	       "frames in each ppt data block (default 65536)"),
	NUMBER("ppt-frames", OPT_PPT_FRAMES, "N", UINT, ppt_batch_frames,
	       CLI_NO_FLAG, 0, 100000, "a count from 0 to 100000", NOCFG,
	       "ppt frames per buffer in batch output (default 100)"),
	TEXT("shm", OPT_SHM, "PATH", shm, CFG(TEXT, shm_path),
	     "observe this region read-only"),
	TEXT("sock", OPT_SOCK, "PATH", sock, NOCFG,
	     "its wake socket (accepted; observers poll)"),
	TEXT("listen", OPT_LISTEN, "ADDR:PORT", listen, NOCFG,
	     "serve: the address to serve on (default 127.0.0.1:9464;\n"
	     "port 0: any free port, printed on stderr; not loopback:\n"
	     "only with --web-config)"),
	TEXT("web-config", OPT_WEB_CONFIG, "FILE", web_config, NOCFG,
	     "serve: TLS and basic auth (the Prometheus exporters'\n"
	     "YAML web configuration)"),
	NUMBER("top-where", OPT_TOP_WHERE, "K", UINT, top_where,
	       F(top_where_set), 0, 1000, "a count from 0 to 1000", NOCFG,
	       "serve: WHERE locations in corotop_suspended_where\n"
	       "(0-1000, default 20; the rest as \"other\")"),
	{"help", 'h', NULL, CLI_K_HELP, CLI_T_NONE, 0, CLI_NO_FLAG, 0, 0, NULL,
	 NOCFG, NULL, "show this help"},
	{"version", 'V', NULL, CLI_K_VERSION, CLI_T_NONE, 0, CLI_NO_FLAG, 0, 0,
	 NULL, NOCFG, NULL, "show the version"},
};

#undef F
#undef CFG
#undef NOCFG
#undef SWITCH
#undef TEXT
#undef NUMBER
#undef OWN

#define CLI_NOPTS (sizeof(cli_opts) / sizeof(*cli_opts))

/* getopt_long's tables, built from cli_opts on first use. */
static struct option cli_longopts[CLI_NOPTS + 1];
static char cli_shortopts[3 * CLI_NOPTS + 3];

static void cli_getopt_tables(void)
{
	size_t s = 0;

	if (cli_longopts[0].name)
		return;
	/* +: stop at the command; leading ':': a missing value is ':'. */
	cli_shortopts[s++] = '+';
	cli_shortopts[s++] = ':';
	for (size_t i = 0; i < CLI_NOPTS; i++) {
		const struct cli_opt *o = &cli_opts[i];
		bool value = o->kind != CLI_K_SWITCH && o->kind != CLI_K_HELP &&
			     o->kind != CLI_K_VERSION;

		cli_longopts[i] = (struct option){
			o->name, value ? required_argument : no_argument, NULL,
			o->key};
		if (o->key < 128 && !memchr(cli_shortopts, o->key, s)) {
			cli_shortopts[s++] = (char)o->key;
			if (value)
				cli_shortopts[s++] = ':';
		}
	}
	cli_shortopts[s] = '\0';
}

/* The row getopt_long's value c stands for (the first: aliases share). */
static const struct cli_opt *cli_opt_of(int c)
{
	for (size_t i = 0; i < CLI_NOPTS; i++)
		if (cli_opts[i].key == c)
			return &cli_opts[i];
	return NULL;
}

const char *cli_usage_text(void)
{
	static char text[8192];
	size_t n;

	if (text[0])
		return text;
	n = (size_t)snprintf(text, sizeof(text), "%s", cli_synopsis);
	for (size_t i = 0; i < CLI_NOPTS && n < sizeof(text); i++) {
		const struct cli_opt *o = &cli_opts[i];
		char head[64];
		const char *h = o->help;

		if (!h)
			continue;
		if (o->key < 128)
			snprintf(head, sizeof(head), "  -%c, --%s%s%s", o->key,
				 o->name, o->arg ? " " : "",
				 o->arg ? o->arg : "");
		else
			snprintf(head, sizeof(head), "      --%s%s%s", o->name,
				 o->arg ? " " : "", o->arg ? o->arg : "");
		/* The help starts in column 27, each of its lines. */
		while (h && n < sizeof(text)) {
			const char *nl = strchr(h, '\n');
			int len = nl ? (int)(nl - h) : (int)strlen(h);

			n += (size_t)snprintf(text + n, sizeof(text) - n,
					      "%-26s %.*s\n", head, len, h);
			head[0] = '\0';
			h = nl ? nl + 1 : NULL;
		}
	}
	return text;
}

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

/* Store v in the field of type t at p. */
static void cli_put(void *p, enum cli_type t, unsigned long v, const char *s)
{
	switch (t) {
	case CLI_T_NONE:
		break;
	case CLI_T_BOOL:
		*(bool *)p = v != 0;
		break;
	case CLI_T_TEXT:
		*(const char **)p = s;
		break;
	case CLI_T_UINT:
		*(unsigned *)p = (unsigned)v;
		break;
	case CLI_T_U32:
		*(uint32_t *)p = (uint32_t)v;
		break;
	case CLI_T_U64:
		*(uint64_t *)p = v;
		break;
	case CLI_T_INT:
		*(int *)p = (int)v;
		break;
	}
}

/* ... and read it back: the value, the text, and whether it is set. */
static bool cli_get(const void *p, enum cli_type t, unsigned long *v,
		    const char **s)
{
	*v = 0;
	*s = NULL;
	switch (t) {
	case CLI_T_NONE:
		return false;
	case CLI_T_BOOL:
		*v = *(const bool *)p;
		break;
	case CLI_T_TEXT:
		*s = *(const char *const *)p;
		return *s != NULL;
	case CLI_T_UINT:
		*v = *(const unsigned *)p;
		break;
	case CLI_T_U32:
		*v = *(const uint32_t *)p;
		break;
	case CLI_T_U64:
		*v = (unsigned long)*(const uint64_t *)p;
		break;
	case CLI_T_INT:
		*v = (unsigned long)*(const int *)p;
		break;
	}
	return *v != 0;
}

/* Take option o's value arg (NULL for a switch), or the message in err. */
static enum cli_result cli_take(struct cli *out, const struct cli_opt *o,
				const char *arg, char *err, size_t errlen)
{
	char *base = (char *)out;
	unsigned long v = 1;

	switch (o->kind) {
	case CLI_K_HELP:
		return CLI_HELP;
	case CLI_K_VERSION:
		return CLI_VERSION;
	case CLI_K_OWN:
		return o->parse(out, o, arg, err, errlen);
	case CLI_K_NUMBER:
		if (!cli_number(arg, o->min, o->max, &v)) {
			snprintf(err, errlen,
				 "corotop: --%s expects %s, got '%s'", o->name,
				 o->noun, arg ? arg : "");
			return CLI_ERROR;
		}
		break;
	case CLI_K_SWITCH:
	case CLI_K_TEXT:
		break;
	}
	cli_put(base + o->field, o->type, v, arg);
	if (o->flag != CLI_NO_FLAG)
		*(bool *)(base + o->flag) = true;
	return CLI_OK;
}

void cli_engine_config(const struct cli *c, struct engine_config *cfg)
{
	const char *base = (const char *)c;

	cfg->argv = c->command;
	for (size_t i = 0; i < CLI_NOPTS; i++) {
		const struct cli_opt *o = &cli_opts[i];
		unsigned long v;
		const char *s;
		bool set;

		if (o->cfg_type == CLI_T_NONE)
			continue;
		set = cli_get(base + o->field, o->type, &v, &s);
		/* Given, or the engine's default stays. */
		if (o->flag != CLI_NO_FLAG)
			set = *(const bool *)(base + o->flag);
		if (set)
			cli_put((char *)cfg + o->cfg, o->cfg_type, v, s);
	}
}

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

/* --core reads a file: nothing runs, nothing attaches. */
static enum cli_result cli_check_core(struct cli *out, char *err, size_t errlen)
{
	if (out->command || out->shm || out->pid || out->replay ||
	    out->cacheray)
		return cli_fail(err, errlen, "%s",
				"--core reads a core file: give no command, "
				"-p, --shm, --replay or --cacheray with it");
	if (out->record || out->jsonl || out->sample_hz || out->parked_stacks ||
	    out->output || out->list_buffers || out->force_attach ||
	    out->counters || out->buffer || out->ppt_block_frames ||
	    out->no_scan || out->nonblocking)
		return cli_fail(err, errlen, "%s",
				"--core reads a core file: --record, --jsonl, "
				"--sample, --parked-stacks, --output and the "
				"-p options need a running target");
	if (out->paused || out->at)
		return cli_fail(err, errlen, "%s goes with --replay FILE",
				out->paused ? "--paused" : "--at");
	return CLI_OK;
}

/* -f text|json. */
static enum cli_result cli_parse_format(struct cli *out,
					const struct cli_opt *o,
					const char *arg, char *err,
					size_t errlen)
{
	(void)o;
	if (strcmp(arg, "text") == 0)
		out->format = CLI_TEXT;
	else if (strcmp(arg, "json") == 0)
		out->format = CLI_JSON;
	else
		return cli_fail(err, errlen,
				"--format expects 'text' or 'json', got '%s'",
				arg);
	return CLI_OK;
}

/* htop's -s COLUMN: a sort, never a count.  -s N once sized the region
 * (CHANGELOG.md); a number now says where that went.  The column is
 * checked by the caller. */
static enum cli_result cli_parse_sort(struct cli *out, const struct cli_opt *o,
				      const char *arg, char *err, size_t errlen)
{
	(void)o;
	if (isdigit((unsigned char)arg[0]))
		return cli_fail(err, errlen,
				"-s sorts by a column, like htop's (got '%s'); "
				"the stations to preallocate are --stations N",
				arg);
	out->sort = arg;
	return CLI_OK;
}

/* -c LIST: named here, before any process is looked at, so that a typo
 * is a usage error (exit 2). */
static enum cli_result cli_parse_counters(struct cli *out,
					  const struct cli_opt *o,
					  const char *arg, char *err,
					  size_t errlen)
{
	char why[256];

	(void)o;
	if (!engine_ppt_counters_valid(arg, why, sizeof(why)))
		return cli_fail(err, errlen, "-c: %s", why);
	out->counters = arg;
	return CLI_OK;
}

/* --runtime LIST, --own-lib LIST: one list each (a second one would
 * silently replace the first), checked together. */
static enum cli_result cli_parse_libs(struct cli *out, const struct cli_opt *o,
				      const char *arg, char *err, size_t errlen)
{
	const char **to = (const char **)((char *)out + o->field);
	char why[256], name[32];

	snprintf(name, sizeof(name), "--%s", o->name);
	if (*to)
		return cli_fail(err, errlen,
				"%s was given twice: give one comma-separated "
				"list",
				name);
	*to = arg;
	if (!engine_runtime_valid(out->runtime, out->own_libs, why,
				  sizeof(why)))
		return cli_fail(err, errlen, "%s", why);
	return CLI_OK;
}

/* --hot-by function|line|address. */
static enum cli_result cli_parse_hot_by(struct cli *out,
					const struct cli_opt *o,
					const char *arg, char *err,
					size_t errlen)
{
	enum engine_hot_by by;

	(void)o;
	if (!engine_hot_by_parse(arg, &by))
		return cli_fail(err, errlen,
				"--hot-by expects 'function', 'line' or "
				"'address', got '%s'",
				arg);
	out->hot_by = (unsigned)by;
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
	cli_getopt_tables();
	opterr = 0;
	optind = 0; /* GNU: full re-initialisation, so tests can call again */
	while ((c = getopt_long(argc, argv, cli_shortopts, cli_longopts,
				NULL)) != -1) {
		const struct cli_opt *o = cli_opt_of(c);
		enum cli_result r;

		if (o) {
			r = cli_take(out, o, optarg, err, errlen);
			if (r != CLI_OK)
				return r;
			continue;
		}
		if (c == ':')
			return cli_fail(err, errlen,
					"option '%s' needs a value; see "
					"'corotop --help'",
					cli_option_name(argv[optind - 1],
							optopt, opt,
							sizeof(opt)));
		if (strncmp(argv[optind - 1], "--", 2) == 0 &&
		    strchr(argv[optind - 1], '=') && optopt)
			return cli_fail(err, errlen,
					"option '%s' takes no value; see "
					"'corotop --help'",
					cli_option_name(argv[optind - 1],
							optopt, opt,
							sizeof(opt)));
		return cli_fail(err, errlen,
				"unknown option '%s'; see 'corotop --help'",
				cli_option_name(argv[optind - 1], optopt, opt,
						sizeof(opt)));
	}
	if (optind < argc)
		out->command = &argv[optind];
	if (out->exe && !out->core)
		return cli_fail(err, errlen, "%s",
				"--exe PROGRAM goes with --core FILE");
	if (out->core)
		return cli_check_core(out, err, errlen);
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

bool cli_check_paths(const struct cli *cli, char *err, size_t errlen)
{
	return (!cli->shm || pathcheck_input("--shm", cli->shm, err, errlen)) &&
	       (!cli->replay ||
		pathcheck_input("--replay", cli->replay, err, errlen)) &&
	       (!cli->core ||
		pathcheck_input("--core", cli->core, err, errlen)) &&
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

bool cli_check_serve(const struct cli *cli, bool serve, char *err,
		     size_t errlen)
{
	if (!serve && (cli->listen || cli->top_where_set || cli->web_config)) {
		snprintf(err, errlen,
			 "--listen, --web-config and --top-where go with "
			 "corotop serve");
		return false;
	}
	if (serve && (cli->replay || cli->cacheray || cli->core ||
		      cli->list_buffers || cli->iterations)) {
		snprintf(err, errlen,
			 "corotop serve watches a target (-- COMMAND, -p PID "
			 "or --shm PATH): --replay, --cacheray, --core, "
			 "--list-buffers and -n are not for it");
		return false;
	}
	return true;
}
