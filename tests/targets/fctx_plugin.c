/*
 * fctx_plugin: a plugin that switches with Boost.Context's fcontext and is
 * loaded RTLD_LOCAL by a host that does not link Boost (fctx_host.c), the
 * way a Python extension module or a JNI library is.  Built twice:
 * libfctx-plugin-a links Debian's libboost_context, libfctx-plugin-b links
 * libtest-fcontext-b (fcontext_b.S, another build of the same interface,
 * which counts its switches in fcontext_b_jumps).
 *
 *   int plugin_run(int rounds, char *out, size_t len)
 *
 * ping-pongs `rounds` times between the caller and a context it makes,
 * the context adding up what it is sent; writes one line to out
 * ("plugin X: N rounds, sum S" and, for B, whether its own library made
 * every switch) and returns 0, or 1 when something is off.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#ifndef PLUGIN_NAME
#error "PLUGIN_NAME must be set"
#endif

#include "fcontext.h"
#ifdef PLUGIN_COUNTS
extern uint64_t fcontext_b_jumps;
#endif

static uint64_t sum;

int plugin_run(int rounds, char *out, size_t len);

static void plugin_entry(transfer_t t)
{
	for (;;) {
		sum += (uint64_t)(uintptr_t)t.data;
		t = jump_fcontext(t.fctx, t.data);
	}
}

__attribute__((visibility("default"))) int plugin_run(int rounds, char *out,
						      size_t len)
{
	size_t size = 64 * 1024;
	char *stack = malloc(size);
	fcontext_t c;
	uint64_t want = 0;
	int bad = 0;
#ifdef PLUGIN_COUNTS
	uint64_t j0 = fcontext_b_jumps;
#endif

	if (!stack)
		return 1;
	sum = 0;
	c = make_fcontext(stack + size, size, plugin_entry);
	for (int i = 1; i <= rounds; i++) {
		transfer_t t = jump_fcontext(c, (void *)(uintptr_t)i);

		c = t.fctx;
		want += (uint64_t)i;
	}
	bad = sum != want;
#ifdef PLUGIN_COUNTS
	/* Every switch, both ways, by this plugin's own library. */
	bad |= fcontext_b_jumps - j0 != 2 * (uint64_t)rounds;
	snprintf(out, len,
		 "plugin %s: %d rounds, sum %llu, own library's switches %llu",
		 PLUGIN_NAME, rounds, (unsigned long long)sum,
		 (unsigned long long)(fcontext_b_jumps - j0));
#else
	snprintf(out, len, "plugin %s: %d rounds, sum %llu", PLUGIN_NAME,
		 rounds, (unsigned long long)sum);
#endif
	/* The context is left suspended: its stack is not freed. */
	return bad;
}
