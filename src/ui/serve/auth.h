/*
 * auth: HTTP basic authentication against --web-config's bcrypt users.
 *
 * bcrypt is slow on purpose (tens of milliseconds a check), so a flood of
 * requests must not become a flood of checks: a credential verified once
 * is remembered (the user and a SHA-256 of the password, never the
 * password) and later requests with it cost a hash; checks that miss run
 * one at a time, so wrong passwords cost at most one core; an unknown
 * user is checked against a dummy hash, so the time does not say which
 * users exist.
 */
#ifndef COROTOP_SERVE_AUTH_H
#define COROTOP_SERVE_AUTH_H

#include <stdbool.h>

#include "ui/serve/webconfig.h"

#define AUTH_CACHE 16 /* verified credentials remembered */

struct auth;

/* The users of c (copied); NULL when out of memory. */
struct auth *auth_create(const struct webconfig *c);
void auth_destroy(struct auth *a);
/* Whether user and password (NULL: none given) are one of the users'.
 * Thread-safe. */
bool auth_check(struct auth *a, const char *user, const char *password);
/* bcrypt checks made so far (the cache's misses). */
unsigned long auth_slow_checks(struct auth *a);

#endif
