/* libpptfix.so: buffer gamma, generator spelling, default visibility. */
#include "pptfix.h"

PPTFIX_SYM int _ppt_hmem_gamma;
PPTFIX_SYM struct pptfix_stat _ppt_stat_gamma;
PPTFIX_SYM const char *_ppt_json_gamma = "{\"abi\":\"1.0.0\"}";

void pptfix_lib_addrs(uintptr_t addr[3])
{
	addr[0] = (uintptr_t)&_ppt_hmem_gamma;
	addr[1] = (uintptr_t)&_ppt_stat_gamma;
	addr[2] = (uintptr_t)&_ppt_json_gamma;
}
