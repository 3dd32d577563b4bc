/*
 * test-mapscopy: the launched program's maps copied by its probe
 * (src/probe/mapscopy.c): only in the process whose pid corotop set in
 * COROTOP_MAPS_PID, beside the region the path names, holding this
 * process's mappings, errno untouched; nothing for another pid, a value
 * that is no number, or a region path without a directory.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "corotop/ctp.h"
#include "probe/probe_internal.h"

static char dir[] = "/tmp/corotop-mapscopy.XXXXXX";
static char shm[128], maps[128];

static void set_pid(const char *v)
{
	assert_int_equal(setenv(CTP_ENV_MAPS_PID, v, 1), 0);
}

static void test_copied_for_its_pid(void **state)
{
	char pid[16], *text = NULL;
	size_t cap = 0;
	FILE *f;
	ssize_t n;
	bool self = false;

	(void)state;
	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	set_pid(pid);
	errno = 4242;
	probe_maps_copy(shm);
	assert_int_equal(errno, 4242);
	f = fopen(maps, "r");
	assert_non_null(f);
	/* Our own executable is mapped: its name is in the copy. */
	while ((n = getline(&text, &cap, f)) > 0)
		self |= strstr(text, "test-mapscopy") != NULL;
	free(text);
	fclose(f);
	assert_true(self);
	assert_int_equal(unlink(maps), 0);
}

static void test_not_for_others(void **state)
{
	char other[16];

	(void)state;
	snprintf(other, sizeof(other), "%d", (int)getpid() + 1);
	set_pid(other);
	probe_maps_copy(shm);
	set_pid("12x");
	probe_maps_copy(shm);
	unsetenv(CTP_ENV_MAPS_PID);
	probe_maps_copy(shm);
	snprintf(other, sizeof(other), "%d", (int)getpid());
	set_pid(other);
	probe_maps_copy("ctp.shm"); /* no directory */
	assert_int_equal(access(maps, F_OK), -1);
	assert_int_equal(access("target.maps", F_OK), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_copied_for_its_pid),
		cmocka_unit_test(test_not_for_others),
	};
	int rc;

	if (!mkdtemp(dir))
		return 1;
	snprintf(shm, sizeof(shm), "%s/ctp.shm", dir);
	snprintf(maps, sizeof(maps), "%s/%s", dir, CTP_MAPS_FILE);
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	unlink(maps);
	rmdir(dir);
	return rc;
}
