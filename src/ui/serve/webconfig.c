/*
 * webconfig: --web-config FILE read with libyaml's document API (the whole
 * file is a few lines); see webconfig.h for the format and the rules.
 */
#define _GNU_SOURCE
#include "ui/serve/webconfig.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

/* exporter-toolkit's keys that corotop does not implement: refused by
 * name, so the message says why. */
static const char *const webconfig_unsupported[] = {
	"client_auth_type",
	"client_ca_file",
	"cipher_suites",
	"curve_preferences",
	"min_version",
	"max_version",
	"prefer_server_cipher_suites",
	"client_allowed_sans",
	"http_server_config",
};

static bool webconfig_fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return false;
}

/* Up to max bytes of a regular file, NUL-terminated, into *out. */
static bool webconfig_read(const char *path, size_t max, char **out,
			   size_t *len, char *err, size_t errlen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	struct stat st;
	char *buf;
	ssize_t got;

	if (fd < 0)
		return webconfig_fail(err, errlen, "cannot open %s: %s", path,
				      strerror(errno));
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    (uint64_t)st.st_size > max) {
		close(fd);
		return webconfig_fail(err, errlen,
				      "%s: not a regular file of at most %zu "
				      "bytes",
				      path, max);
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		close(fd);
		return webconfig_fail(err, errlen, "out of memory");
	}
	got = read(fd, buf, (size_t)st.st_size);
	close(fd);
	if (got != st.st_size) {
		free(buf);
		return webconfig_fail(err, errlen, "cannot read %s", path);
	}
	buf[got] = '\0';
	*out = buf;
	if (len)
		*len = (size_t)got;
	return true;
}

static const char *webconfig_scalar(yaml_node_t *n)
{
	return n && n->type == YAML_SCALAR_NODE
		       ? (const char *)n->data.scalar.value
		       : NULL;
}

static bool webconfig_known_unsupported(const char *key)
{
	for (size_t k = 0; k < sizeof(webconfig_unsupported) /
				       sizeof(webconfig_unsupported[0]);
	     k++)
		if (!strcmp(key, webconfig_unsupported[k]))
			return true;
	return false;
}

/* A key of `section` that is not taken: the message for it. */
static bool webconfig_bad_key(const char *file, const char *section,
			      const char *key, yaml_node_t *n, char *err,
			      size_t errlen)
{
	return webconfig_fail(
		err, errlen,
		webconfig_known_unsupported(key)
			? "%s line %zu: %s%s%s is not supported by corotop "
			  "serve (it would be ignored, which is worse)"
			: "%s line %zu: unknown key %s%s%s",
		file, (size_t)n->start_mark.line + 1, section,
		*section ? "." : "", key);
}

/* A path from the file, resolved against the file's folder. */
static char *webconfig_path(const char *file, const char *p)
{
	const char *slash = strrchr(file, '/');
	char *out = NULL;

	if (p[0] == '/' || !slash)
		return strdup(p);
	if (asprintf(&out, "%.*s/%s", (int)(slash - file), file, p) < 0)
		return NULL;
	return out;
}

static bool webconfig_tls(struct webconfig *c, const char *file,
			  yaml_document_t *doc, yaml_node_t *map, char *err,
			  size_t errlen)
{
	const char *cert = NULL, *key = NULL;
	char *path;
	bool ok;

	if (map->type != YAML_MAPPING_NODE)
		return webconfig_fail(err, errlen,
				      "%s: tls_server_config is not a mapping",
				      file);
	for (yaml_node_pair_t *p = map->data.mapping.pairs.start;
	     p < map->data.mapping.pairs.top; p++) {
		yaml_node_t *k = yaml_document_get_node(doc, p->key);
		yaml_node_t *v = yaml_document_get_node(doc, p->value);
		const char *name = webconfig_scalar(k);

		if (!name)
			return webconfig_fail(err, errlen,
					      "%s: a key that is "
					      "not text",
					      file);
		if (!strcmp(name, "cert_file"))
			cert = webconfig_scalar(v);
		else if (!strcmp(name, "key_file"))
			key = webconfig_scalar(v);
		else
			return webconfig_bad_key(file, "tls_server_config",
						 name, k, err, errlen);
	}
	if (!cert || !key || !*cert || !*key)
		return webconfig_fail(err, errlen,
				      "%s: tls_server_config needs cert_file "
				      "and key_file",
				      file);
	path = webconfig_path(file, cert);
	ok = path && webconfig_read(path, WEBCONFIG_PEM_MAX, &c->cert_pem, NULL,
				    err, errlen);
	free(path);
	if (!ok)
		return false;
	path = webconfig_path(file, key);
	ok = path && webconfig_read(path, WEBCONFIG_PEM_MAX, &c->key_pem, NULL,
				    err, errlen);
	free(path);
	return ok;
}

static bool webconfig_users(struct webconfig *c, const char *file,
			    yaml_document_t *doc, yaml_node_t *map, char *err,
			    size_t errlen)
{
	if (map->type != YAML_MAPPING_NODE)
		return webconfig_fail(err, errlen,
				      "%s: basic_auth_users is not a mapping",
				      file);
	for (yaml_node_pair_t *p = map->data.mapping.pairs.start;
	     p < map->data.mapping.pairs.top; p++) {
		yaml_node_t *k = yaml_document_get_node(doc, p->key);
		const char *name = webconfig_scalar(k);
		const char *hash =
			webconfig_scalar(yaml_document_get_node(doc, p->value));
		struct webconfig_user *u;

		if (!name || !*name || strchr(name, ':') || !hash)
			return webconfig_fail(
				err, errlen,
				"%s line %zu: a user is a name "
				"(no ':') and a bcrypt hash",
				file, (size_t)(k ? k->start_mark.line : 0) + 1);
		if (strncmp(hash, "$2a$", 4) && strncmp(hash, "$2b$", 4) &&
		    strncmp(hash, "$2y$", 4))
			return webconfig_fail(
				err, errlen,
				"%s line %zu: the hash of %s is "
				"not bcrypt ($2y$...; htpasswd "
				"-nbB makes one)",
				file, (size_t)k->start_mark.line + 1, name);
		if (c->nusers == WEBCONFIG_USERS_MAX)
			return webconfig_fail(err, errlen,
					      "%s: more than %u users", file,
					      WEBCONFIG_USERS_MAX);
		u = &c->users[c->nusers++];
		u->name = strdup(name);
		u->hash = strdup(hash);
		if (!u->name || !u->hash)
			return webconfig_fail(err, errlen, "out of memory");
	}
	return true;
}

bool webconfig_load(struct webconfig *c, const char *path, char *err,
		    size_t errlen)
{
	yaml_parser_t parser;
	yaml_document_t doc;
	yaml_node_t *root;
	char *text;
	size_t len;
	bool ok = true;

	memset(c, 0, sizeof(*c));
	if (!webconfig_read(path, WEBCONFIG_MAX, &text, &len, err, errlen))
		return false;
	if (!yaml_parser_initialize(&parser)) {
		free(text);
		return webconfig_fail(err, errlen, "out of memory");
	}
	yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
	if (!yaml_parser_load(&parser, &doc)) {
		ok = webconfig_fail(err, errlen, "%s line %zu: %s", path,
				    (size_t)parser.problem_mark.line + 1,
				    parser.problem ? parser.problem
						   : "not YAML");
		yaml_parser_delete(&parser);
		free(text);
		return false;
	}
	root = yaml_document_get_root_node(&doc);
	if (root && root->type != YAML_MAPPING_NODE)
		ok = webconfig_fail(err, errlen, "%s: not a YAML mapping",
				    path);
	for (yaml_node_pair_t *p = root && ok ? root->data.mapping.pairs.start
					      : NULL;
	     ok && p && p < root->data.mapping.pairs.top; p++) {
		yaml_node_t *k = yaml_document_get_node(&doc, p->key);
		yaml_node_t *v = yaml_document_get_node(&doc, p->value);
		const char *name = webconfig_scalar(k);

		if (!name || !v)
			ok = webconfig_fail(err, errlen,
					    "%s: a key that is not text", path);
		else if (!strcmp(name, "tls_server_config"))
			ok = webconfig_tls(c, path, &doc, v, err, errlen);
		else if (!strcmp(name, "basic_auth_users"))
			ok = webconfig_users(c, path, &doc, v, err, errlen);
		else if (!strcmp(name, "allow_plaintext") &&
			 webconfig_scalar(v) &&
			 (!strcmp(webconfig_scalar(v), "true") ||
			  !strcmp(webconfig_scalar(v), "false")))
			c->allow_plaintext =
				!strcmp(webconfig_scalar(v), "true");
		else if (!strcmp(name, "allow_plaintext"))
			ok = webconfig_fail(err, errlen,
					    "%s line %zu: allow_plaintext is "
					    "true or false",
					    path,
					    (size_t)v->start_mark.line + 1);
		else
			ok = webconfig_bad_key(path, "", name, k, err, errlen);
	}
	yaml_document_delete(&doc);
	yaml_parser_delete(&parser);
	free(text);
	if (!ok)
		webconfig_finish(c);
	return ok;
}

void webconfig_finish(struct webconfig *c)
{
	free(c->cert_pem);
	free(c->key_pem);
	for (size_t i = 0; i < c->nusers; i++) {
		free(c->users[i].name);
		free(c->users[i].hash);
	}
	memset(c, 0, sizeof(*c));
}
