/* pptfix-nopie: a fixed-address executable (ET_EXEC) with buffer delta. */
#include "pptfix.h"

PPTFIX_SYM int _ppt_hmem_delta;
PPTFIX_SYM struct pptfix_stat _ppt_stat_delta;
PPTFIX_SYM const char *_ppt_json_delta = "{}";

int main(void)
{
	pptfix_print("delta", (uintptr_t)&_ppt_hmem_delta,
		     (uintptr_t)&_ppt_stat_delta, (uintptr_t)&_ppt_json_delta);
	return pptfix_wait();
}
