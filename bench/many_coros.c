/*
 * many_coros: a traced program that opens N coroutines, records one event
 * on each (every tenth resumes, the others suspend at a distinct address),
 * prints "ready N" on stderr and then idles until a signal ends it.  The
 * target of bench/rss.sh:
 *
 *     corotop -b -d 5 --stations 131072 -- many_coros 100000
 *
 * It links the real probe, which attaches through the CTP_* environment
 * corotop sets; run without corotop it stays untraced and only idles.
 *
 * Usage: many_coros [coroutines]   (default 100000)
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "corotop/probe.h"

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 100000;
	struct corotop_coro *c;

	if (n < 1) {
		fprintf(stderr, "usage: many_coros [coroutines >= 1]\n");
		return 2;
	}
	c = calloc((size_t)n, sizeof(*c));
	if (!c) {
		fprintf(stderr, "many_coros: out of memory\n");
		return 1;
	}
	for (long i = 0; i < n; i++) {
		corotop_coro_open(&c[i], 0x7f0000000000u + (uint64_t)i * 64);
		if (i % 10 == 0)
			corotop_coro_resume(&c[i], 0);
		else
			corotop_coro_suspend(&c[i],
					     0x401000u + (uint64_t)i * 16);
	}
	fprintf(stderr, "many_coros: ready %ld (%s)\n", n,
		corotop_probe_live_ ? "traced" : "untraced");
	for (;;)
		pause();
}
