/*
 * webconfig: corotop serve's --web-config FILE, the Prometheus exporters'
 * web configuration (exporter-toolkit's --web.config.file), in YAML:
 *
 *   tls_server_config:
 *     cert_file: server.crt      # PEM; relative paths: to FILE's folder
 *     key_file: server.key
 *   basic_auth_users:
 *     alice: $2y$10$...          # bcrypt hashes (htpasswd -B)
 *   allow_plaintext: true        # corotop's own: no TLS on purpose
 *
 * As exporter-toolkit does, a key it does not know is refused -- and so is
 * one of exporter-toolkit's that corotop does not implement (client
 * certificates, cipher suites, HTTP headers): a setting silently ignored
 * would be a hole.  The file is read whole, at most WEBCONFIG_MAX bytes;
 * the certificate and key files are read into memory too.
 */
#ifndef COROTOP_SERVE_WEBCONFIG_H
#define COROTOP_SERVE_WEBCONFIG_H

#include <stdbool.h>
#include <stddef.h>

#define WEBCONFIG_MAX (64u << 10)    /* the YAML file */
#define WEBCONFIG_PEM_MAX (1u << 20) /* a certificate or key file */
#define WEBCONFIG_USERS_MAX 64

struct webconfig_user {
	char *name;
	char *hash; /* bcrypt, as crypt(3) reads it */
};

struct webconfig {
	char *cert_pem, *key_pem; /* NULL: no TLS */
	struct webconfig_user users[WEBCONFIG_USERS_MAX];
	size_t nusers; /* 0: no basic auth */
	bool allow_plaintext;
};

/* Read path into c; false with why (the file, the line, the key). */
bool webconfig_load(struct webconfig *c, const char *path, char *err,
		    size_t errlen);
void webconfig_finish(struct webconfig *c);

#endif
