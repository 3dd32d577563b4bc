/*
 * static-target: a statically linked program, which LD_PRELOAD cannot
 * reach: `corotop -- static-target` must say so in one line and run it.
 */
#include <stdio.h>

int main(void)
{
	puts("static-target ran");
	return 0;
}
