/*
 * corotop_hooked: the corotop binary with a test hook, for e2e-keeper only
 * (never installed).  COROTOP_TEST_KILL_AT_READ=N makes corotop kill itself
 * with SIGKILL right after its N-th read of the target's output (the
 * output view's copy, output.c): the point where a corotop that read the
 * output itself held bytes not yet written to the --output file.
 */
#include <signal.h>
#include <stdlib.h>

#include "engine/launch/output.h"

static unsigned long kill_at, reads;

static void hooked_read(void)
{
	if (++reads == kill_at)
		raise(SIGKILL);
}

__attribute__((constructor)) static void hooked_init(void)
{
	const char *n = getenv("COROTOP_TEST_KILL_AT_READ");

	if (n && (kill_at = strtoul(n, NULL, 10)) > 0)
		output_test_hook = hooked_read;
}
