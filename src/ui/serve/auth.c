/*
 * auth: the checks and their cache (auth.h).  crypt_rn(3) from the
 * system's libcrypt (libxcrypt: $2a$, $2b$ and $2y$ bcrypt); SHA-256 from
 * GnuTLS, which libmicrohttpd's TLS already loads.
 */
#define _GNU_SOURCE
#include "ui/serve/auth.h"

#include <crypt.h>
#include <gnutls/crypto.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define AUTH_DIGEST 32

/* A bcrypt hash of nothing anyone knows, for unknown users. */
static const char auth_dummy[] =
	"$2b$10$CwTycUXWue0Thq9StjUM0uGAPS7UozKic8WKZt.EuyeNqkR/GXSUO";

struct auth_seen {
	int user; /* -1: empty */
	uint8_t digest[AUTH_DIGEST];
};

struct auth {
	pthread_mutex_t lock; /* the cache */
	pthread_mutex_t slow; /* one bcrypt at a time, and `data` */
	struct crypt_data *data;
	struct webconfig_user *users;
	size_t nusers;
	struct auth_seen seen[AUTH_CACHE];
	unsigned next;		   /* the cache's entry to replace */
	unsigned long slow_checks; /* under `slow` */
};

struct auth *auth_create(const struct webconfig *c)
{
	struct auth *a = calloc(1, sizeof(*a));

	if (!a)
		return NULL;
	a->data = calloc(1, sizeof(*a->data));
	a->users = calloc(c->nusers ? c->nusers : 1, sizeof(*a->users));
	if (!a->data || !a->users) {
		free(a->data);
		free(a->users);
		free(a);
		return NULL;
	}
	for (size_t i = 0; i < c->nusers; i++) {
		a->users[i].name = strdup(c->users[i].name);
		a->users[i].hash = strdup(c->users[i].hash);
		a->nusers++;
		if (!a->users[i].name || !a->users[i].hash) {
			auth_destroy(a);
			return NULL;
		}
	}
	for (unsigned k = 0; k < AUTH_CACHE; k++)
		a->seen[k].user = -1;
	pthread_mutex_init(&a->lock, NULL);
	pthread_mutex_init(&a->slow, NULL);
	return a;
}

unsigned long auth_slow_checks(struct auth *a)
{
	unsigned long n;

	pthread_mutex_lock(&a->slow);
	n = a->slow_checks;
	pthread_mutex_unlock(&a->slow);
	return n;
}

void auth_destroy(struct auth *a)
{
	if (!a)
		return;
	for (size_t i = 0; i < a->nusers; i++) {
		free(a->users[i].name);
		free(a->users[i].hash);
	}
	free(a->users);
	free(a->data);
	pthread_mutex_destroy(&a->lock);
	pthread_mutex_destroy(&a->slow);
	free(a);
}

/* Equal, in a time that depends on n only. */
static bool auth_same(const void *x, const void *y, size_t n)
{
	const uint8_t *p = x, *q = y;
	uint8_t d = 0;

	for (size_t i = 0; i < n; i++)
		d |= p[i] ^ q[i];
	return d == 0;
}

bool auth_check(struct auth *a, const char *user, const char *password)
{
	uint8_t digest[AUTH_DIGEST];
	const char *hash = auth_dummy, *got;
	int who = -1;
	bool ok = false;

	if (!user || !password)
		return false;
	for (size_t i = 0; i < a->nusers && who < 0; i++)
		if (!strcmp(a->users[i].name, user)) {
			who = (int)i;
			hash = a->users[i].hash;
		}
	if (gnutls_hash_fast(GNUTLS_DIG_SHA256, password, strlen(password),
			     digest) != 0)
		return false;
	if (who >= 0) {
		pthread_mutex_lock(&a->lock);
		for (unsigned k = 0; k < AUTH_CACHE && !ok; k++)
			ok = a->seen[k].user == who &&
			     auth_same(a->seen[k].digest, digest, AUTH_DIGEST);
		pthread_mutex_unlock(&a->lock);
		if (ok)
			return true;
	}
	pthread_mutex_lock(&a->slow);
	/* crypt_rn: libxcrypt's, which fails with NULL rather than a
	 * "*0" string, and which no sanitizer intercepts (ASan's crypt_r
	 * interceptor finds no crypt_r when the link dropped libcrypt). */
	got = crypt_rn(password, hash, a->data, (int)sizeof(*a->data));
	a->slow_checks++;
	ok = who >= 0 && got && strlen(got) == strlen(hash) &&
	     auth_same(got, hash, strlen(hash));
	pthread_mutex_unlock(&a->slow);
	if (ok) {
		pthread_mutex_lock(&a->lock);
		a->seen[a->next].user = who;
		memcpy(a->seen[a->next].digest, digest, AUTH_DIGEST);
		a->next = (a->next + 1) % AUTH_CACHE;
		pthread_mutex_unlock(&a->lock);
	}
	return ok;
}
