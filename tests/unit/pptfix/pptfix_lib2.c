/*
 * libpptfix2.so: buffer epsilon, in the protocol document's spelling.  It
 * asks for the same load address as libpptfix.so, so one of the two is
 * moved: a load bias under a non-zero first p_vaddr.
 */
#include "pptfix.h"

PPTFIX_SYM int __ppt_epsilon_hmem;
PPTFIX_SYM struct pptfix_stat __ppt_epsilon_stat;
PPTFIX_SYM const char *__ppt_epsilon_json = "{}";

void pptfix_lib2_addrs(uintptr_t addr[3])
{
	addr[0] = (uintptr_t)&__ppt_epsilon_hmem;
	addr[1] = (uintptr_t)&__ppt_epsilon_stat;
	addr[2] = (uintptr_t)&__ppt_epsilon_json;
}
