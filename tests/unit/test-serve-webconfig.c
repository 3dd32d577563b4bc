/*
 * serve-webconfig: corotop serve's --web-config file (webconfig.c) and the
 * basic-auth checks it feeds (auth.c).
 *   - the exporter-toolkit shape reads: TLS files relative to the file's
 *     folder, users with bcrypt hashes, allow_plaintext;
 *   - refused, with the line: a key nobody knows, an exporter-toolkit key
 *     corotop does not implement (it would be ignored), a hash that is not
 *     bcrypt, TLS without its key file, a file that is not YAML;
 *   - auth: the right password passes, a wrong one and an unknown user do
 *     not, and a verified credential is not checked by bcrypt again.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <sys/stat.h>
#include <unistd.h>

#include "ui/serve/auth.h"
#include "ui/serve/webconfig.h"

/* bcrypt of "s3cret", cost 4 (made by crypt(3)). */
#define HASH "$2b$04$DZy2lXdEmPCzLUHrz00Xue2rLAZejALrGlImooAFXOZZjD42KxO0G"

static char dir[256];

static void put(const char *name, const char *text)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static bool load(const char *text, struct webconfig *c, char *err,
		 size_t errlen)
{
	char path[512];

	put("web.yml", text);
	snprintf(path, sizeof(path), "%s/web.yml", dir);
	return webconfig_load(c, path, err, errlen);
}

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/test-webconfig-XXXXXX");
	assert_non_null(mkdtemp(dir));
	put("cert.pem", "CERT\n");
	put("key.pem", "KEY\n");
	return 0;
}

static int teardown(void **state)
{
	char cmd[300];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static void test_reads_the_exporter_shape(void **state)
{
	struct webconfig c;
	char err[256];

	(void)state;
	assert_true(load("tls_server_config:\n  cert_file: cert.pem\n"
			 "  key_file: key.pem\n"
			 "basic_auth_users:\n  alice: " HASH "\n"
			 "allow_plaintext: false\n",
			 &c, err, sizeof(err)));
	assert_string_equal(c.cert_pem, "CERT\n"); /* beside the file */
	assert_string_equal(c.key_pem, "KEY\n");
	assert_int_equal(c.nusers, 1);
	assert_string_equal(c.users[0].name, "alice");
	assert_string_equal(c.users[0].hash, HASH);
	assert_false(c.allow_plaintext);
	webconfig_finish(&c);
	assert_true(load("basic_auth_users:\n  bob: " HASH
			 "\nallow_plaintext: true\n",
			 &c, err, sizeof(err)));
	assert_null(c.cert_pem);
	assert_true(c.allow_plaintext);
	webconfig_finish(&c);
	assert_true(load("", &c, err, sizeof(err))); /* nothing: allowed */
	webconfig_finish(&c);
}

static void refused(const char *text, const char *why)
{
	struct webconfig c;
	char err[256] = "";

	assert_false(load(text, &c, err, sizeof(err)));
	if (!strstr(err, why))
		fail_msg("want \"%s\" in: %s", why, err);
}

static void test_refuses(void **state)
{
	(void)state;
	refused("tls_server_confg:\n  cert_file: cert.pem\n",
		"unknown key tls_server_confg");
	refused("tls_server_config:\n  cert_file: cert.pem\n"
		"  key_file: key.pem\n  client_ca_file: ca.pem\n",
		"tls_server_config.client_ca_file is not supported");
	refused("http_server_config:\n  http2: false\n",
		"http_server_config is not supported");
	refused("basic_auth_users:\n  alice: plain\n", "not bcrypt");
	refused("tls_server_config:\n  cert_file: cert.pem\n",
		"needs cert_file and key_file");
	refused("tls_server_config:\n  cert_file: cert.pem\n"
		"  key_file: missing.pem\n",
		"missing.pem");
	refused("allow_plaintext: maybe\n", "true or false");
	refused("[1, 2\n", "line");
	refused("- a list\n", "not a YAML mapping");
}

static void test_auth(void **state)
{
	struct webconfig c;
	struct auth *a;
	char err[256];
	unsigned long slow;

	(void)state;
	assert_true(load("basic_auth_users:\n  alice: " HASH "\n", &c, err,
			 sizeof(err)));
	a = auth_create(&c);
	assert_non_null(a);
	assert_false(auth_check(a, "alice", "wrong"));
	assert_false(auth_check(a, "mallory", "s3cret"));
	assert_false(auth_check(a, "alice", NULL));
	assert_false(auth_check(a, NULL, NULL));
	assert_true(auth_check(a, "alice", "s3cret"));
	slow = auth_slow_checks(a);
	/* Remembered: a flood of the same credential costs no bcrypt. */
	for (int i = 0; i < 100; i++)
		assert_true(auth_check(a, "alice", "s3cret"));
	assert_int_equal(auth_slow_checks(a), slow);
	/* A wrong password still is checked (and fails). */
	assert_false(auth_check(a, "alice", "s3cret!"));
	assert_int_equal(auth_slow_checks(a), slow + 1);
	auth_destroy(a);
	webconfig_finish(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reads_the_exporter_shape),
		cmocka_unit_test(test_refuses),
		cmocka_unit_test(test_auth),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
