/*
 * fctx_host: a host that does not link Boost and loads plugins RTLD_LOCAL
 * (fctx_plugin.c), as a Python interpreter loads extension modules.
 *
 *   fctx-host ROUNDS PLUGIN.so...
 *
 * Loads each plugin with dlopen(RTLD_NOW | RTLD_LOCAL), runs its
 * plugin_run(ROUNDS), prints its line, then runs the first again (after
 * the others were loaded: their libraries must not take its calls).  Exit
 * status 0 when every run was right, 1 when one was not, 2 when a plugin
 * could not be loaded.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

typedef int (*run_fn)(int, char *, size_t);

int main(int argc, char **argv)
{
	run_fn run[8];
	char line[256];
	int rounds, bad = 0, n = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 3)
		return 2;
	rounds = atoi(argv[1]);
	for (int i = 2; i < argc && n < 8; i++) {
		void *h = dlopen(argv[i], RTLD_NOW | RTLD_LOCAL);

		if (!h) {
			printf("cannot load %s: %s\n", argv[i], dlerror());
			return 2;
		}
		run[n] = (run_fn)(void (*)(void))dlsym(h, "plugin_run");
		if (!run[n])
			return 2;
		bad |= run[n](rounds, line, sizeof(line));
		printf("%s\n", line);
		n++;
	}
	bad |= run[0](rounds, line, sizeof(line));
	printf("again: %s\n", line);
	return bad;
}
