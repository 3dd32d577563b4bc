/*
 * config: reading and surgically rewriting the corotop config file.
 *
 * Format.  One `key = value` per line; blank lines and lines whose first
 * non-blank character is `#` are comments, and so is a `#` preceded by a
 * blank inside a line (`delay = 5   # half a second`).  Keys are exact and
 * lower case; a later line wins over an earlier one.  Every key is one row of
 * a const table (name, parser); the lints add `lint.<name>` (on/off) and
 * `lint.<name>.threshold` (a number) for every entry of lint.c's table.
 *
 * Reading never fails on content: a line that does not parse, an unknown
 * key or a bad value is reported as "path:line: message" and skipped, so a
 * config written by a newer corotop still loads.
 *
 * Writing (config_set) is for the setup screen and touches one key only.  The
 * file is read as bytes and split into lines with the same line parser as
 * config_load; the key's line keeps everything but its value (indentation,
 * spacing around `=`, trailing comment, CRLF), every other byte is copied,
 * and the result replaces the file through a temp file and rename(2), so a
 * crash leaves the old file or the new one, never half of each.
 */
#define _GNU_SOURCE
#include "ui/settings/config.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/grow.h"

#define CONFIG_DELAY_MAX 36000
#define CONFIG_LINGER_MAX 86400
#define CONFIG_KEY_MAX 64
#define CONFIG_VALUE_MAX 512

static const char config_header[] =
	"# corotop configuration: one `key = value` per line, `#` starts a\n"
	"# comment.  corotop rewrites only the line of a setting you change\n"
	"# in its setup screen (F2); everything else here is kept as is.\n";

static bool config_fail(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static bool config_fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return false;
}

/* ---- values ---- */

static bool config_bool(const char *v, bool *out)
{
	static const char *const yes[] = {"on", "true", "yes", "1"};
	static const char *const no[] = {"off", "false", "no", "0"};

	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		if (strcasecmp(v, yes[i]) == 0) {
			*out = true;
			return true;
		}
		if (strcasecmp(v, no[i]) == 0) {
			*out = false;
			return true;
		}
	}
	return false;
}

/* A column name as the column table spells it: "in-state", "sw/s", "RUN%". */
static bool config_name_char(int ch)
{
	return isalnum(ch) || ch == '-' || ch == '_' || ch == '/' || ch == '%';
}

static bool config_set_delay(struct config *c, const char *key, const char *v,
			     char *err, size_t errlen)
{
	unsigned long d;
	char *end;

	errno = 0;
	d = *v >= '0' && *v <= '9' ? strtoul(v, &end, 10) : 0;
	if (*v < '0' || *v > '9' || errno || *end || d < 1 ||
	    d > CONFIG_DELAY_MAX)
		return config_fail(err, errlen,
				   "%s: expected tenths of a second from 1 to "
				   "%d, got '%.64s'",
				   key, CONFIG_DELAY_MAX, v);
	c->delay_tenths = (unsigned)d;
	return true;
}

/* "linger": whole seconds, 0 (dead coroutines go at once) to a day. */
static bool config_set_linger(struct config *c, const char *key, const char *v,
			      char *err, size_t errlen)
{
	unsigned long d;
	char *end;

	errno = 0;
	d = *v >= '0' && *v <= '9' ? strtoul(v, &end, 10) : 0;
	if (*v < '0' || *v > '9' || errno || *end || d > CONFIG_LINGER_MAX)
		return config_fail(err, errlen,
				   "%s: expected seconds from 0 to %d, got "
				   "'%.64s'",
				   key, CONFIG_LINGER_MAX, v);
	c->linger_s = (unsigned)d;
	return true;
}

static bool config_set_sort(struct config *c, const char *key, const char *v,
			    char *err, size_t errlen)
{
	size_t n = strlen(v);

	for (size_t i = 0; i < n; i++)
		if (!config_name_char((unsigned char)v[i]))
			n = 0;
	if (!n || n >= sizeof(c->sort_key))
		return config_fail(err, errlen,
				   "%s: expected a column name such as "
				   "'in-state', got '%.64s'",
				   key, v);
	memcpy(c->sort_key, v, n + 1);
	return true;
}

/* Names separated by commas, blanks around them dropped; "" = all. */
static bool config_set_columns(struct config *c, const char *key, const char *v,
			       char *err, size_t errlen)
{
	char out[sizeof(c->columns)];
	size_t n = 0;
	const char *p = v;

	while (*p) {
		const char *start;

		while (*p == ' ' || *p == '\t')
			p++;
		start = p;
		while (config_name_char((unsigned char)*p))
			p++;
		if (p == start)
			goto bad;
		if (n + (size_t)(p - start) + 2 > sizeof(out))
			return config_fail(err, errlen,
					   "%s: the list is longer than %zu "
					   "characters",
					   key, sizeof(out) - 1);
		if (n)
			out[n++] = ',';
		memcpy(out + n, start, (size_t)(p - start));
		n += (size_t)(p - start);
		while (*p == ' ' || *p == '\t')
			p++;
		if (*p == ',' && p[1])
			p++;
		else if (*p)
			goto bad;
	}
	out[n] = '\0';
	memcpy(c->columns, out, n + 1);
	return true;
bad:
	return config_fail(err, errlen,
			   "%s: expected column names separated by commas "
			   "(e.g. 'id,state,in-state'), got '%.64s'",
			   key, v);
}

static bool config_set_flag(bool *field, const char *key, const char *v,
			    char *err, size_t errlen)
{
	if (!config_bool(v, field))
		return config_fail(err, errlen,
				   "%s: expected on or off, got '%.64s'", key,
				   v);
	return true;
}

static bool config_set_invert(struct config *c, const char *key, const char *v,
			      char *err, size_t errlen)
{
	return config_set_flag(&c->sort_invert, key, v, err, errlen);
}

static bool config_set_color(struct config *c, const char *key, const char *v,
			     char *err, size_t errlen)
{
	return config_set_flag(&c->color, key, v, err, errlen);
}

static bool config_set_mouse(struct config *c, const char *key, const char *v,
			     char *err, size_t errlen)
{
	return config_set_flag(&c->mouse, key, v, err, errlen);
}

struct config_key {
	const char *name;
	bool (*set)(struct config *c, const char *key, const char *value,
		    char *err, size_t errlen);
};

static const struct config_key config_keys[] = {
	{"delay", config_set_delay},	    {"sort", config_set_sort},
	{"sort_invert", config_set_invert}, {"color", config_set_color},
	{"mouse", config_set_mouse},	    {"columns", config_set_columns},
	{"linger", config_set_linger},
};

#define CONFIG_NKEYS (sizeof(config_keys) / sizeof(config_keys[0]))

/* "lint.<name>" and "lint.<name>.threshold". */
static int config_lint_key(const char *key, bool *threshold)
{
	static const char suffix[] = ".threshold";
	char name[CONFIG_KEY_MAX];
	size_t n;

	if (strncmp(key, "lint.", 5) != 0)
		return -1;
	key += 5;
	n = strlen(key);
	if (n >= sizeof(name))
		return -1;
	memcpy(name, key, n + 1);
	*threshold = n > sizeof(suffix) - 1 &&
		     strcmp(name + n - (sizeof(suffix) - 1), suffix) == 0;
	if (*threshold)
		name[n - (sizeof(suffix) - 1)] = '\0';
	return lint_find(name);
}

static bool config_set_lint(struct config *c, const char *key, const char *v,
			    int k, bool threshold, char *err, size_t errlen)
{
	double d;
	char *end;

	if (!threshold)
		return config_set_flag(&c->lints.enabled[k], key, v, err,
				       errlen);
	errno = 0;
	d = strtod(v, &end);
	if (!*v || isspace((unsigned char)*v) || *end || errno ||
	    !lint_set_threshold(&c->lints, (enum lint_kind)k, d))
		return config_fail(err, errlen,
				   "%s: expected a number %s, got '%.64s'", key,
				   k == LINT_STORM ? "of switches per second"
						   : "of seconds",
				   v);
	return true;
}

bool config_apply(struct config *c, const char *key, const char *value,
		  char *err, size_t errlen)
{
	struct config tmp = *c;
	bool threshold = false;
	int k;

	for (size_t i = 0; i < CONFIG_NKEYS; i++) {
		if (strcmp(key, config_keys[i].name) != 0)
			continue;
		if (!config_keys[i].set(&tmp, key, value, err, errlen))
			return false;
		*c = tmp;
		return true;
	}
	k = config_lint_key(key, &threshold);
	if (k < 0)
		return config_fail(err, errlen, "unknown key '%.64s'", key);
	if (!config_set_lint(&tmp, key, value, k, threshold, err, errlen))
		return false;
	*c = tmp;
	return true;
}

void config_defaults(struct config *c)
{
	memset(c, 0, sizeof(*c));
	c->delay_tenths = 10;
	c->linger_s = 3;
	snprintf(c->sort_key, sizeof(c->sort_key), "id");
	c->sort_invert = false;
	c->color = true;
	c->mouse = true;
	lint_config_defaults(&c->lints);
}

bool config_path(char *buf, size_t n)
{
	const char *xdg = getenv("XDG_CONFIG_HOME");
	const char *home = getenv("HOME");
	int w;

	/* The XDG spec: a relative XDG_CONFIG_HOME is invalid, ignore it. */
	if (xdg && xdg[0] == '/')
		w = snprintf(buf, n, "%s/corotop/config", xdg);
	else if (home && home[0])
		w = snprintf(buf, n, "%s/.config/corotop/config", home);
	else
		return false;
	return w > 0 && (size_t)w < n;
}

/* ---- lines ---- */

/* Offsets into one line (without its '\n'). */
struct config_line {
	bool blank;  /* empty or a comment */
	bool has_eq; /* not blank: there is a '=' */
	size_t key, key_end;
	size_t value, value_end; /* comment and blanks excluded */
};

static bool config_blank_char(char ch)
{
	return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\v' ||
	       ch == '\f';
}

static void config_line_parse(const char *s, size_t len, struct config_line *l)
{
	size_t i = 0, eq, end;

	memset(l, 0, sizeof(*l));
	while (i < len && config_blank_char(s[i]))
		i++;
	if (i == len || s[i] == '#') {
		l->blank = true;
		return;
	}
	l->key = i;
	for (eq = i; eq < len && s[eq] != '='; eq++)
		;
	l->has_eq = eq < len;
	end = eq;
	while (end > i && config_blank_char(s[end - 1]))
		end--;
	l->key_end = end;
	if (!l->has_eq)
		return;
	i = eq + 1;
	while (i < len && config_blank_char(s[i]))
		i++;
	l->value = i;
	/* A comment: '#' first in the value, or after a blank. */
	for (end = i; end < len; end++)
		if (s[end] == '#' &&
		    (end == i || config_blank_char(s[end - 1])))
			break;
	while (end > i && config_blank_char(s[end - 1]))
		end--;
	l->value_end = end;
}

static void config_report(void (*warn)(void *, const char *), void *ctx,
			  const char *path, size_t line, const char *msg)
{
	char buf[PATH_MAX + 512];

	if (!warn)
		return;
	if (line)
		snprintf(buf, sizeof(buf), "%s:%zu: %s", path, line, msg);
	else
		snprintf(buf, sizeof(buf), "%s: %s", path, msg);
	warn(ctx, buf);
}

static bool config_load_line(struct config *c, const char *s, size_t len,
			     char *err, size_t errlen)
{
	char key[CONFIG_KEY_MAX], value[CONFIG_VALUE_MAX];
	struct config_line l;
	size_t kn, vn;

	config_line_parse(s, len, &l);
	if (l.blank)
		return true;
	kn = l.key_end - l.key;
	if (!l.has_eq || kn == 0)
		return config_fail(err, errlen,
				   "expected 'key = value', got '%.*s'",
				   (int)(len < 64 ? len : 64), s);
	if (kn >= sizeof(key))
		return config_fail(err, errlen, "unknown key '%.*s...'", 64,
				   s + l.key);
	vn = l.value_end - l.value;
	if (vn >= sizeof(value))
		return config_fail(err, errlen,
				   "%.*s: the value is longer than %zu "
				   "characters",
				   (int)kn, s + l.key, sizeof(value) - 1);
	memcpy(key, s + l.key, kn);
	key[kn] = '\0';
	memcpy(value, s + l.value, vn);
	value[vn] = '\0';
	if (memchr(value, '\0', vn))
		return config_fail(err, errlen, "%s: a NUL byte in the value",
				   key);
	return config_apply(c, key, value, err, errlen);
}

bool config_load(struct config *c, const char *path,
		 void (*warn)(void *ctx, const char *msg), void *ctx)
{
	char err[CONFIG_VALUE_MAX], msg[CONFIG_VALUE_MAX];
	char *line = NULL;
	size_t cap = 0, lineno = 0;
	ssize_t got;
	bool ok = true;
	FILE *f;

	config_defaults(c);
	f = fopen(path, "re");
	if (!f) {
		if (errno == ENOENT)
			return true;
		snprintf(msg, sizeof(msg),
			 "cannot read the config file: %s; using the "
			 "defaults",
			 strerror(errno));
		config_report(warn, ctx, path, 0, msg);
		return false;
	}
	while ((got = getline(&line, &cap, f)) >= 0) {
		size_t len = (size_t)got;

		lineno++;
		if (len && line[len - 1] == '\n')
			len--;
		if (!config_load_line(c, line, len, err, sizeof(err)))
			config_report(warn, ctx, path, lineno, err);
	}
	if (ferror(f)) {
		snprintf(msg, sizeof(msg), "reading stopped after line %zu: %s",
			 lineno, strerror(errno));
		config_report(warn, ctx, path, 0, msg);
		ok = false;
	}
	free(line);
	fclose(f);
	return ok;
}

/* ---- writing ---- */

struct config_buf {
	char *p;
	size_t len, cap;
};

static bool config_buf_add(struct config_buf *b, const char *s, size_t n)
{
	if (n >= SIZE_MAX / 4 - b->len) /* len + n + 1 cannot wrap */
		return false;
	if (!grow_array((void **)&b->p, &b->cap, b->len + n + 1, 1))
		return false;
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
	return true;
}

static bool config_buf_str(struct config_buf *b, const char *s)
{
	return config_buf_add(b, s, strlen(s));
}

/* The whole file, or an empty buffer when it does not exist. */
static bool config_read_all(const char *path, struct config_buf *b,
			    bool *exists, mode_t *mode, char *err,
			    size_t errlen)
{
	char chunk[4096];
	struct stat st;
	ssize_t got;
	int fd;

	*exists = false;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT)
			return true;
		return config_fail(err, errlen, "cannot read %s: %s", path,
				   strerror(errno));
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return config_fail(err, errlen, "%s is not a regular file",
				   path);
	}
	*exists = true;
	*mode = st.st_mode & 07777;
	while ((got = read(fd, chunk, sizeof(chunk))) != 0) {
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0 || !config_buf_add(b, chunk, (size_t)got)) {
			close(fd);
			return config_fail(
				err, errlen, "cannot read %s: %s", path,
				got < 0 ? strerror(errno) : "out of memory");
		}
	}
	close(fd);
	return true;
}

/* mkdir -p of path's directory; new directories are 0700. */
static bool config_mkdirs(const char *path, char *err, size_t errlen)
{
	char dir[PATH_MAX];
	char *slash;

	if (snprintf(dir, sizeof(dir), "%s", path) >= (int)sizeof(dir))
		return config_fail(err, errlen, "the path %s is too long",
				   path);
	slash = strrchr(dir, '/');
	if (!slash || slash == dir)
		return true;
	*slash = '\0';
	for (char *p = dir + 1;; p++) {
		bool last = *p == '\0';
		struct stat st;

		if (*p != '/' && !last)
			continue;
		*p = '\0';
		if (mkdir(dir, 0700) < 0 && errno != EEXIST)
			return config_fail(err, errlen,
					   "cannot create the directory %s: "
					   "%s",
					   dir, strerror(errno));
		if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode))
			return config_fail(err, errlen,
					   "%s is in the way: not a directory",
					   dir);
		if (last)
			return true;
		*p = '/';
	}
}

/* The new contents: `in` with key's last line changed, or one appended. */
static bool config_rewrite(const struct config_buf *in, const char *key,
			   const char *value, struct config_buf *out)
{
	size_t klen = strlen(key), hit_at = 0, hit_len = 0;
	struct config_line hit;
	bool found = false;

	memset(&hit, 0, sizeof(hit));
	for (size_t at = 0; at < in->len;) {
		const char *nl = memchr(in->p + at, '\n', in->len - at);
		size_t len = nl ? (size_t)(nl - (in->p + at)) : in->len - at;
		struct config_line l;

		config_line_parse(in->p + at, len, &l);
		if (!l.blank && l.has_eq && l.key_end - l.key == klen &&
		    memcmp(in->p + at + l.key, key, klen) == 0) {
			found = true;
			hit = l;
			hit_at = at;
			hit_len = len;
		}
		at += len + (nl ? 1 : 0);
	}
	if (found) {
		const char *line = in->p + hit_at;
		/* Keep everything but the value itself. */
		bool gap = hit.value_end == hit.value &&
			   hit.value_end < hit_len &&
			   line[hit.value_end] == '#';

		return config_buf_add(out, in->p, hit_at + hit.value) &&
		       config_buf_str(out, value) &&
		       (!gap || config_buf_str(out, " ")) &&
		       config_buf_add(out, line + hit.value_end,
				      in->len - (hit_at + hit.value_end));
	}
	if (in->len == 0 && !config_buf_str(out, config_header))
		return false;
	return config_buf_add(out, in->p ? in->p : "", in->len) &&
	       (in->len == 0 || in->p[in->len - 1] == '\n' ||
		config_buf_str(out, "\n")) &&
	       config_buf_str(out, key) && config_buf_str(out, " = ") &&
	       config_buf_str(out, value) && config_buf_str(out, "\n");
}

static bool config_write_atomic(const char *path, const struct config_buf *b,
				mode_t mode, char *err, size_t errlen)
{
	char tmp[PATH_MAX], dir[PATH_MAX];
	size_t done = 0;
	char *slash;
	int fd, dfd;

	if (snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path) >= (int)sizeof(tmp))
		return config_fail(err, errlen, "the path %s is too long",
				   path);
	fd = mkostemp(tmp, O_CLOEXEC); /* created 0600 */
	if (fd < 0)
		return config_fail(err, errlen, "cannot write next to %s: %s",
				   path, strerror(errno));
	if (fchmod(fd, mode) < 0)
		goto err_io;
	while (done < b->len) {
		ssize_t w = write(fd, b->p + done, b->len - done);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			goto err_io;
		done += (size_t)w;
	}
	if (fsync(fd) < 0)
		goto err_io;
	if (close(fd) < 0) {
		fd = -1;
		goto err_io;
	}
	fd = -1;
	if (rename(tmp, path) < 0)
		goto err_io;
	/* Make the rename itself durable; a failure here loses nothing. */
	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (slash) {
		*(slash == dir ? slash + 1 : slash) = '\0';
		dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dfd >= 0) {
			fsync(dfd);
			close(dfd);
		}
	}
	return true;

err_io:
	config_fail(err, errlen, "cannot write %s: %s", path, strerror(errno));
	if (fd >= 0)
		close(fd);
	unlink(tmp);
	return false;
}

bool config_set(const char *path, const char *key, const char *value, char *err,
		size_t errlen)
{
	struct config_buf in = {0}, out = {0};
	char target[PATH_MAX];
	struct config check;
	struct stat st;
	mode_t mode = 0600;
	bool exists, ok = false;

	/* Only what config_load would accept is written: this also keeps
	 * newlines and comment marks out of the file. */
	config_defaults(&check);
	if (!config_apply(&check, key, value, err, errlen))
		return false;
	/* Write through a symlink (dotfile managers), not over it. */
	if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode) &&
	    realpath(path, target))
		path = target;
	if (!config_read_all(path, &in, &exists, &mode, err, errlen))
		goto out;
	if (!exists && !config_mkdirs(path, err, errlen))
		goto out;
	if (!config_rewrite(&in, key, value, &out)) {
		config_fail(err, errlen, "out of memory");
		goto out;
	}
	ok = config_write_atomic(path, &out, mode, err, errlen);
out:
	free(in.p);
	free(out.p);
	return ok;
}
