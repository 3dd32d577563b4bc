/*
 * probe-fixture: this process's probe attached to a region it created
 * itself (engine/ctp/region.h), for the unit tests of the probe's API --
 * the region R, the environment the probe reads, a station's address, and
 * the teardown that puts everything back.
 */
#ifndef COROTOP_TEST_PROBE_FIXTURE_H
#define COROTOP_TEST_PROBE_FIXTURE_H

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "corotop/ctp.h"
#include "corotop/probe.h"
#include "engine/ctp/region.h"

static struct region R;

static __attribute__((unused)) struct ctp_station *station(struct region *r,
							   uint32_t i)
{
	return (struct ctp_station *)((char *)r->hdr + CTP_HEADER_SIZE) + i;
}

static __attribute__((unused)) void set_env(const char *shm, const char *sock,
					    const char *max)
{
	setenv(CTP_ENV_SHM, shm, 1);
	setenv(CTP_ENV_SOCK, sock, 1);
	setenv(CTP_ENV_MAX, max, 1);
}

static __attribute__((unused)) void clear_env(void)
{
	unsetenv(CTP_ENV_SHM);
	unsetenv(CTP_ENV_SOCK);
	unsetenv(CTP_ENV_MAX);
}

/* The first coroutine's station: the probe takes station 0 for its
 * process when it attaches (CTP_STX_PROCESS, docs/WIRE.md "Processes"). */
#define P0 1u

/* A region of `max` stations with extension flags; the probe initialized
 * on it (the caller checks what it expects of the attach), its process
 * station checked. */
static __attribute__((unused)) void
probe_fixture_attach(struct region *r, uint32_t max, uint32_t flags)
{
	char err[256], maxs[16];
	struct ctp_station *s;

	assert_true(region_create(r, max, flags, err, sizeof(err)));
	snprintf(maxs, sizeof(maxs), "%u", max);
	set_env(r->shm_path, r->sock_path, maxs);
	assert_true(corotop_probe_init());
	s = station(r, 0);
	assert_true(atomic_load(&s->ext.gen) == 1);
	assert_true(s->ext.flags & CTP_STX_PROCESS);
	assert_int_equal(s->ext.pid, (uint32_t)getpid());
	assert_true(s->ext.image != 0);
	assert_true(s->probe_id == 0);
}

static __attribute__((unused)) int teardown(void **state)
{
	(void)state;
	corotop_probe_shutdown();
	clear_env();
	if (R.hdr || R.owner)
		region_finish(&R);
	return 0;
}

#endif
