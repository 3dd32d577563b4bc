/*
 * fctx_return: a Boost.Context fcontext whose entry returns.  Boost's
 * trampoline then ends the process with _exit(0) (make_fcontext's
 * assembly); so must it under the preload.
 *
 *   fctx-return
 *
 * Prints "main: switching", "entry: returning" (stdout unbuffered: _exit
 * flushes nothing), and never "main: back"; exit status 0.
 */
#include <stdio.h>
#include <stdlib.h>

#include "fcontext.h"

static void entry(transfer_t t)
{
	(void)t;
	printf("entry: returning\n");
}

int main(void)
{
	static char stack[64 * 1024];
	fcontext_t c;

	setvbuf(stdout, NULL, _IONBF, 0);
	c = make_fcontext(stack + sizeof(stack), sizeof(stack), entry);
	printf("main: switching\n");
	jump_fcontext(c, NULL);
	printf("main: back\n");
	return 3;
}
