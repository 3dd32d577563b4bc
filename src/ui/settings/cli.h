/*
 * cli: the corotop command line, parsed into a struct cli.  See cli.c.
 */
#ifndef COROTOP_CLI_H
#define COROTOP_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum cli_result {
	CLI_OK = 0,
	CLI_HELP,
	CLI_VERSION,
	CLI_ERROR, /* message in err; exit 2 */
};

enum cli_format {
	CLI_TEXT = 0,
	CLI_JSON,
};

struct cli {
	char **command;	 /* launch mode: NULL-terminated argv */
	const char *shm; /* observer mode */
	const char *sock;
	const char *jsonl;
	const char *record;   /* --record FILE: a Heph trace of the run */
	const char *output;   /* --output FILE: the target's stdout, stderr */
	const char *replay;   /* --replay FILE: show a recording */
	bool paused;	      /* --paused: replay starts paused */
	const char *at;	      /* --at LIST: replay at these moments */
	const char *cacheray; /* --cacheray FILE (- : stdin) */
	const char *core;     /* --core FILE: a core file's process */
	const char *exe;      /* --exe PROGRAM: its code (with --core) */
	bool batch;
	unsigned iterations; /* 0 = forever */
	unsigned delay_tenths;
	bool delay_set; /* -d given: overrides the config file */
	enum cli_format format;
	uint32_t stations;
	bool no_color;	    /* -C: monochrome */
	bool no_mouse;	    /* -M */
	bool no_auto;	    /* --no-auto: no libcorotop-preload */
	const char *sort;   /* --sort COLUMN (validated by the caller) */
	const char *filter; /* -F TEXT: initial filter */
	/* Hot stacks: profiles written on exit, rows in batch output. */
	const char *folded;	/* --folded FILE */
	const char *speedscope; /* --speedscope FILE */
	unsigned hot_stacks;	/* --hot-stacks N (default 50) */
	unsigned hot_by;	/* --hot-by: enum engine_hot_by (0: function) */
	unsigned hot_window_s;	/* --hot-window (0: the engine's default) */
	unsigned hot_half_life_s; /* --hot-half-life, when hot_half_life_set */
	bool hot_half_life_set;
	unsigned sample_hz; /* --sample HZ: the target's sampler, 0 = off */
	bool parked_stacks; /* --parked-stacks */
	/* Which frames are the program's: --runtime LIST, --own-lib LIST
	 * (checked by engine_runtime_valid). */
	const char *runtime;
	const char *own_libs;
	/* Attach mode: -p PID and its ppt options. */
	int pid;		   /* 0: none */
	bool list_buffers;	   /* --list-buffers: print them and exit */
	bool force_attach;	   /* --force-attach */
	bool no_scan;		   /* --no-scan */
	bool nonblocking;	   /* --nonblocking */
	const char *counters;	   /* -c LIST */
	const char *buffer;	   /* --buffer NAME: only this one */
	uint32_t ppt_block_frames; /* --ppt-block N: data block size in frames
				      (0: default) */
	unsigned ppt_batch_frames; /* --ppt-frames N: frames per buffer in batch
				      output */
	/* corotop serve (main.c refuses them elsewhere). */
	const char *listen; /* --listen ADDR:PORT, or NULL: 127.0.0.1:9464 */
	const char *web_config; /* --web-config FILE (serve), or NULL */
	unsigned top_where;	/* --top-where K (default 20) */
	bool top_where_set;
};

enum cli_result cli_parse(int argc, char **argv, struct cli *out, char *err,
			  size_t errlen);
/* --help: the synopsis, then a line or more per option of cli.c's table. */
const char *cli_usage_text(void);
/* The engine_config fields the options given fill in (the rest keep what
 * cfg had: engine_config_defaults). */
struct engine_config;
void cli_engine_config(const struct cli *c, struct engine_config *cfg);
/* The paths on the command line, before anything opens them (and before
 * the signals are blocked): a FIFO given as a file would make the open
 * wait forever, and a profile that can not be written would be lost at
 * the end of a long run.  --cacheray reads a FIFO on purpose.  False
 * with the message in err (a usage error). */
bool cli_check_paths(const struct cli *cli, char *err, size_t errlen);
/* corotop serve watches a target: --listen, --web-config and --top-where
 * are its own, and what only prints (-n) or reads a file has no place in
 * it.  False with the message in err (a usage error). */
bool cli_check_serve(const struct cli *cli, bool serve, char *err,
		     size_t errlen);

#endif
