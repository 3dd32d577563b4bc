/*
 * longwait-target: coroutines that park for good, with and without the
 * probe's long-wait marks, for e2e-longwait (issue 16: an idle keep-alive
 * connection is not a lost wakeup).  Started by corotop; each coroutine
 * runs once (a resume) and parks:
 *
 *   probe id 0x4c570000 "idle-conn"  corotop_coro_suspend_long: this
 *                                    suspend is expected to last
 *   probe id 0x4c570001 "keepalive"  corotop_coro_set_long_waits(true),
 *                                    then two plain suspends (the second
 *                                    after a resume): every suspend marked
 *   probe id 0x4c570002 "once"       corotop_coro_suspend_long, resumed,
 *                                    then a plain suspend: the mark ended
 *                                    with the resume
 *   probe id 0x4c570003 "stuck"      a plain suspend
 *
 * The first two must never be flagged lost-wakeup, the last two must once
 * parked past the threshold.  Then it sleeps for argv[1] seconds (60) and
 * exits; corotop's SIGINT ends it sooner.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <time.h>

#include "corotop/probe.h"

#define LONGWAIT_ID(k) (0x4c570000ull + (k))

static struct corotop_coro coro[4];
static const char *const names[4] = {"idle-conn", "keepalive", "once", "stuck"};

int main(int argc, char **argv)
{
	long secs = argc > 1 ? strtol(argv[1], NULL, 10) : 60;
	struct timespec t = {secs > 0 ? secs : 60, 0};

	for (unsigned k = 0; k < 4; k++) {
		corotop_coro_open_named(&coro[k], LONGWAIT_ID(k), names[k],
					COROTOP_NAME_STATIC);
		corotop_coro_resume(&coro[k], 0);
	}
	corotop_coro_suspend_long(&coro[0], 0x100);

	corotop_coro_set_long_waits(&coro[1], true);
	corotop_coro_suspend(&coro[1], 0x200);
	corotop_coro_resume(&coro[1], 0x201);
	corotop_coro_suspend(&coro[1], 0x202);

	corotop_coro_suspend_long(&coro[2], 0x300);
	corotop_coro_resume(&coro[2], 0x301);
	corotop_coro_suspend(&coro[2], 0x302);

	corotop_coro_suspend(&coro[3], 0x400);

	while (nanosleep(&t, &t) != 0)
		;
	for (unsigned k = 0; k < 4; k++)
		corotop_coro_close(&coro[k]);
	return 0;
}
