/*
 * mkctx_args: makecontext with pointer arguments, as Boost.Context's own
 * ucontext backend calls it (makecontext(&uctx, entry, 1, record)) and as
 * glibc allows: any count, each a 64-bit value on x86-64.
 *
 *   mkctx-args [N...]     (default: 1 6 7 20 32 40)
 *
 * For each N, a context is made whose entry takes N pointers (the
 * addresses of N distinct cells, so every argument has its upper half
 * set), switched to, and checks each argument it got; it prints
 *   args N: ok | args N: argument K is 0x..., not 0x...
 * and swaps back.  Exit status 0 when every N was ok, 1 otherwise.  The
 * output and the status must be the same natively, under LD_PRELOAD of
 * libcorotop-preload and under corotop (e2e-preload-same).
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <ucontext.h>

#define MAXN 40

static ucontext_t main_uc, co_uc;
static char cell[MAXN];
static int bad;

/* What argument k must be. */
static uint64_t want(int k)
{
	return (uint64_t)(uintptr_t)&cell[k];
}

static void check(int n, const uint64_t *got)
{
	for (int k = 0; k < n; k++) {
		if (got[k] != want(k)) {
			printf("args %d: argument %d is %#llx, not %#llx\n", n,
			       k + 1, (unsigned long long)got[k],
			       (unsigned long long)want(k));
			bad = 1;
			return;
		}
	}
	printf("args %d: ok\n", n);
}

#define P uint64_t
static void e1(P a1)
{
	P g[] = {a1};

	check(1, g);
}

static void e6(P a1, P a2, P a3, P a4, P a5, P a6)
{
	P g[] = {a1, a2, a3, a4, a5, a6};

	check(6, g);
}

static void e7(P a1, P a2, P a3, P a4, P a5, P a6, P a7)
{
	P g[] = {a1, a2, a3, a4, a5, a6, a7};

	check(7, g);
}

static void e20(P a1, P a2, P a3, P a4, P a5, P a6, P a7, P a8, P a9, P a10,
		P a11, P a12, P a13, P a14, P a15, P a16, P a17, P a18, P a19,
		P a20)
{
	P g[] = {a1,  a2,  a3,	a4,  a5,  a6,  a7,  a8,	 a9,  a10,
		 a11, a12, a13, a14, a15, a16, a17, a18, a19, a20};

	check(20, g);
}

static void e32(P a1, P a2, P a3, P a4, P a5, P a6, P a7, P a8, P a9, P a10,
		P a11, P a12, P a13, P a14, P a15, P a16, P a17, P a18, P a19,
		P a20, P a21, P a22, P a23, P a24, P a25, P a26, P a27, P a28,
		P a29, P a30, P a31, P a32)
{
	P g[] = {a1,  a2,  a3,	a4,  a5,  a6,  a7,  a8,	 a9,  a10, a11,
		 a12, a13, a14, a15, a16, a17, a18, a19, a20, a21, a22,
		 a23, a24, a25, a26, a27, a28, a29, a30, a31, a32};

	check(32, g);
}

static void e40(P a1, P a2, P a3, P a4, P a5, P a6, P a7, P a8, P a9, P a10,
		P a11, P a12, P a13, P a14, P a15, P a16, P a17, P a18, P a19,
		P a20, P a21, P a22, P a23, P a24, P a25, P a26, P a27, P a28,
		P a29, P a30, P a31, P a32, P a33, P a34, P a35, P a36, P a37,
		P a38, P a39, P a40)
{
	P g[] = {a1,  a2,  a3,	a4,  a5,  a6,  a7,  a8,	 a9,  a10,
		 a11, a12, a13, a14, a15, a16, a17, a18, a19, a20,
		 a21, a22, a23, a24, a25, a26, a27, a28, a29, a30,
		 a31, a32, a33, a34, a35, a36, a37, a38, a39, a40};

	check(40, g);
}
#undef P

#define A(k) want(k - 1)
#define A8(k)                                                                  \
	A(k), A(k + 1), A(k + 2), A(k + 3), A(k + 4), A(k + 5), A(k + 6),      \
		A(k + 7)

static void run(int n)
{
	static char stack[256 * 1024];

	getcontext(&co_uc);
	co_uc.uc_stack.ss_sp = stack;
	co_uc.uc_stack.ss_size = sizeof(stack);
	co_uc.uc_link = &main_uc;
	switch (n) {
	case 1:
		makecontext(&co_uc, (void (*)(void))e1, 1, A(1));
		break;
	case 6:
		makecontext(&co_uc, (void (*)(void))e6, 6, A(1), A(2), A(3),
			    A(4), A(5), A(6));
		break;
	case 7:
		makecontext(&co_uc, (void (*)(void))e7, 7, A(1), A(2), A(3),
			    A(4), A(5), A(6), A(7));
		break;
	case 20:
		makecontext(&co_uc, (void (*)(void))e20, 20, A8(1), A8(9),
			    A(17), A(18), A(19), A(20));
		break;
	case 32:
		makecontext(&co_uc, (void (*)(void))e32, 32, A8(1), A8(9),
			    A8(17), A8(25));
		break;
	case 40:
		makecontext(&co_uc, (void (*)(void))e40, 40, A8(1), A8(9),
			    A8(17), A8(25), A8(33));
		break;
	default:
		printf("args %d: no such case\n", n);
		bad = 1;
		return;
	}
	if (swapcontext(&main_uc, &co_uc) != 0) {
		printf("args %d: swapcontext failed\n", n);
		bad = 1;
	}
}

int main(int argc, char **argv)
{
	static const int all[] = {1, 6, 7, 20, 32, 40};

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc > 1)
		for (int i = 1; i < argc; i++)
			run(atoi(argv[i]));
	else
		for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
			run(all[i]);
	return bad;
}
