/*
 * pptfix-pie: a PIE with buffer alpha (generator spelling), beta (the
 * protocol document's spelling), gamma from libpptfix.so (referenced only
 * through a function: no copy here), and three that must be skipped: half
 * (only _hmem), a name too long, and a name with a dot in it.
 */
#include "pptfix.h"

PPTFIX_SYM int _ppt_hmem_alpha;
PPTFIX_SYM struct pptfix_stat _ppt_stat_alpha;
PPTFIX_SYM const char *_ppt_json_alpha = "{}";

PPTFIX_SYM int __ppt_beta_hmem;
PPTFIX_SYM struct pptfix_stat __ppt_beta_stat;
PPTFIX_SYM const char *__ppt_beta_json = "{}";

PPTFIX_SYM int _ppt_hmem_half;

PPTFIX_SYM int
	_ppt_hmem_toolong_0123456789_0123456789_0123456789_0123456789_0123456789_x;
PPTFIX_SYM struct pptfix_stat
	_ppt_stat_toolong_0123456789_0123456789_0123456789_0123456789_0123456789_x;
PPTFIX_SYM const char *
	_ppt_json_toolong_0123456789_0123456789_0123456789_0123456789_0123456789_x;

PPTFIX_SYM int bad_hmem __asm__("_ppt_hmem_bad.name");
PPTFIX_SYM struct pptfix_stat bad_stat __asm__("_ppt_stat_bad.name");
PPTFIX_SYM const char *bad_json __asm__("_ppt_json_bad.name");

int main(void)
{
	uintptr_t g[3];

	pptfix_print("alpha", (uintptr_t)&_ppt_hmem_alpha,
		     (uintptr_t)&_ppt_stat_alpha, (uintptr_t)&_ppt_json_alpha);
	pptfix_print("beta", (uintptr_t)&__ppt_beta_hmem,
		     (uintptr_t)&__ppt_beta_stat, (uintptr_t)&__ppt_beta_json);
	pptfix_lib_addrs(g);
	pptfix_print("gamma", g[0], g[1], g[2]);
	pptfix_lib2_addrs(g);
	pptfix_print("epsilon", g[0], g[1], g[2]);
	return pptfix_wait();
}
