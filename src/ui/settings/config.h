/*
 * config: the corotop config file, ~/.config/corotop/config (or under
 * $XDG_CONFIG_HOME), a plain `key = value` file with `#` comments, written
 * only when a setting changes in the setup screen.  See config.c.
 */
#ifndef COROTOP_CONFIG_H
#define COROTOP_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include "engine/model/lint.h"

struct config {
	unsigned delay_tenths; /* "delay", 1..36000 */
	char sort_key[32];     /* "sort": a column name, e.g. "in-state" */
	bool sort_invert;      /* "sort_invert" */
	bool color;	       /* "color" */
	bool mouse;	       /* "mouse" */
	char columns[256];     /* "columns": visible column names, comma
				  separated; "" = all */
	unsigned linger_s;     /* "linger": seconds a dead coroutine stays
				  listed, 0..86400 */
	/* "lint.<name>" = on|off; "lint.<name>.threshold" = a number, in
	 * seconds for the time lints and switches/s for storm. */
	struct lint_config lints;
};

/* delay 10 (1 s), sort "id" not inverted, color and mouse on, all columns,
 * dead coroutines listed for 3 s, lint_config_defaults. */
void config_defaults(struct config *c);

/* $XDG_CONFIG_HOME/corotop/config when that is an absolute path, else
 * $HOME/.config/corotop/config.  False when neither is usable or buf is too
 * small. */
bool config_path(char *buf, size_t n);

/*
 * Fill c with the defaults, then the file's settings (a later line wins).
 * A missing file leaves the defaults and returns true.  Unknown keys and bad
 * values are reported through `warn` (may be NULL), one "path:line: message"
 * each, and skipped.  False only when the file exists but cannot be read
 * (also reported through `warn`).
 */
bool config_load(struct config *c, const char *path,
		 void (*warn)(void *ctx, const char *msg), void *ctx);

/* Apply one setting to c, as a config line would.  False with a message in
 * err for an unknown key or a bad value (c is then unchanged). */
bool config_apply(struct config *c, const char *key, const char *value,
		  char *err, size_t errlen);

/*
 * Save one setting, keeping every other byte of the file: the key's line
 * (the last one, if repeated) gets the new value, its spacing and trailing
 * comment kept; a key not in the file is appended.  A missing file is
 * created 0600 with a short comment header, and its missing directories
 * 0700.  The write is atomic (a temp file in the same directory, then
 * rename); a symlinked file is written through to its target.  The key and
 * value are checked with config_apply first.
 */
bool config_set(const char *path, const char *key, const char *value, char *err,
		size_t errlen);

#endif
