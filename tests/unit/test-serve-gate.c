/*
 * serve-gate: the connection rules of corotop serve (src/ui/serve/gate.c),
 * on socket pairs: the gate's end is "the server's socket", the other end
 * sees EOF once the gate shut it.
 *   - past `soft` connections, an arrival shuts the oldest one still
 *     waiting for its request -- never one already answered;
 *   - ... taken from the address with the most waiting, so a crowd's
 *     burst of reconnections never shuts a lone client's connection;
 *   - past `per_ip` from one address, the oldest waiting from that address
 *     goes, not another address's;
 *   - a connection waiting past the deadline is shut by the sweep (and by
 *     the next arrival); an answered one is not;
 *   - a slot that left is free again, and the table full shuts the
 *     arrival itself.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "ui/serve/gate.h"

struct conn {
	int fd[2]; /* [0]: the gate's, [1]: the client's */
	uintptr_t token;
};

static struct sockaddr_in from(int last)
{
	struct sockaddr_in a = {.sin_family = AF_INET};

	a.sin_addr.s_addr = htonl(0x7f000000u | (unsigned)last);
	return a;
}

static void open_conn(struct gate *g, struct conn *c, int last)
{
	struct sockaddr_in a = from(last);

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, c->fd), 0);
	fcntl(c->fd[1], F_SETFL, O_NONBLOCK);
	c->token = gate_enter(g, c->fd[0], (struct sockaddr *)&a);
}

/* The gate shut it: its client reads EOF (not EAGAIN). */
static bool shut(const struct conn *c)
{
	char b;

	return read(c->fd[1], &b, 1) == 0;
}

static void close_conn(struct gate *g, struct conn *c)
{
	gate_leave(g, c->token);
	close(c->fd[0]);
	close(c->fd[1]);
}

static void test_soft_limit_evicts_oldest_waiting(void **state)
{
	struct gate *g = gate_create(8, 3, 8, 60000000000ull);
	struct conn c[4];

	(void)state;
	for (int i = 0; i < 3; i++)
		open_conn(g, &c[i], 2);
	gate_answered(g, c[0].token); /* the oldest, but answered */
	open_conn(g, &c[3], 3);
	assert_true(c[3].token != 0);
	assert_false(shut(&c[0]));
	assert_true(shut(&c[1])); /* the oldest still waiting */
	assert_false(shut(&c[2]));
	assert_false(shut(&c[3]));
	for (int i = 0; i < 4; i++)
		close_conn(g, &c[i]);
	gate_destroy(g);
}

static void test_crowd_evicts_its_own(void **state)
{
	struct gate *g = gate_create(16, 4, 16, 60000000000ull);
	struct conn crowd[10], lone;

	(void)state;
	for (int i = 0; i < 3; i++)
		open_conn(g, &crowd[i], 2);
	open_conn(g, &lone, 1); /* the honest one, its request being read */
	/* A burst: seven more from the crowd, each past the soft limit. */
	for (int i = 3; i < 10; i++) {
		open_conn(g, &crowd[i], 2);
		assert_true(crowd[i].token != 0);
	}
	assert_false(shut(&lone));
	for (int i = 0; i < 7; i++)
		assert_true(shut(&crowd[i])); /* the crowd's oldest, in order */
	for (int i = 7; i < 10; i++)
		assert_false(shut(&crowd[i]));
	close_conn(g, &lone);
	for (int i = 0; i < 10; i++)
		close_conn(g, &crowd[i]);
	gate_destroy(g);
}

static void test_per_ip_evicts_that_address(void **state)
{
	struct gate *g = gate_create(8, 8, 2, 60000000000ull);
	struct conn other, c[3];

	(void)state;
	open_conn(g, &other, 9); /* older, another address */
	for (int i = 0; i < 3; i++)
		open_conn(g, &c[i], 2);
	assert_false(shut(&other));
	assert_true(shut(&c[0]));
	assert_false(shut(&c[1]));
	assert_false(shut(&c[2]));
	close_conn(g, &other);
	for (int i = 0; i < 3; i++)
		close_conn(g, &c[i]);
	gate_destroy(g);
}

static void test_deadline(void **state)
{
	struct gate *g = gate_create(8, 8, 8, 1000000ull); /* 1 ms */
	struct gate_stats st;
	struct conn waiting, answered;
	struct timespec ms5 = {0, 5000000};

	(void)state;
	open_conn(g, &waiting, 2);
	open_conn(g, &answered, 2);
	gate_answered(g, answered.token);
	nanosleep(&ms5, NULL); /* past the deadline, however slow */
	/* Shut by this sweep, or already by the second arrival when the
	 * machine took more than 1 ms between the two. */
	(void)gate_sweep(g);
	assert_true(shut(&waiting));
	assert_false(shut(&answered));
	assert_int_equal(gate_sweep(g), 0); /* once */
	gate_stats(g, &st);
	assert_int_equal(st.expired, 1);
	close_conn(g, &waiting);
	close_conn(g, &answered);
	gate_destroy(g);
}

static void test_table_full(void **state)
{
	struct gate *g = gate_create(2, 8, 8, 60000000000ull);
	struct conn c[3];

	(void)state;
	open_conn(g, &c[0], 2);
	open_conn(g, &c[1], 2);
	gate_answered(g, c[0].token);
	gate_answered(g, c[1].token);
	open_conn(g, &c[2], 2);
	assert_int_equal(c[2].token, 0); /* no slot: the arrival is shut */
	assert_true(shut(&c[2]));
	close_conn(g, &c[0]); /* its slot free again */
	open_conn(g, &c[0], 2);
	assert_true(c[0].token != 0);
	assert_false(shut(&c[0]));
	for (int i = 0; i < 3; i++)
		close_conn(g, &c[i]);
	gate_destroy(g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_soft_limit_evicts_oldest_waiting),
		cmocka_unit_test(test_crowd_evicts_its_own),
		cmocka_unit_test(test_per_ip_evicts_that_address),
		cmocka_unit_test(test_deadline),
		cmocka_unit_test(test_table_full),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
