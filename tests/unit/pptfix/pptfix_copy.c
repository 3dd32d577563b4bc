/*
 * pptfix-copy: a fixed-address executable that uses libpptfix.so's
 * _ppt_hmem_gamma directly.  Non-PIC code reaches it at a link-time
 * address, so the linker gives the executable a copy (a copy relocation)
 * and the library binds to that copy too: the copy is the buffer's _hmem.
 * _stat and _json stay in the library.  The line "lib" is the library's
 * own view, which must agree.
 */
#include "pptfix.h"

extern int _ppt_hmem_gamma;

int main(void)
{
	uintptr_t g[3];

	pptfix_lib_addrs(g);
	pptfix_print("gamma", (uintptr_t)&_ppt_hmem_gamma, g[1], g[2]);
	pptfix_print("lib", g[0], g[1], g[2]);
	return pptfix_wait();
}
