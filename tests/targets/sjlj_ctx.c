/*
 * sjlj-ctx: coroutines in the shape of QEMU's (util/coroutine-ucontext.c):
 * each is made with makecontext -- in a ucontext_t local to the function
 * that makes them all, as QEMU's -- and started with one swapcontext, whose
 * trampoline saves its place with sigsetjmp and jumps straight back to its
 * creator with siglongjmp; every switch after that is a sigsetjmp on the
 * way out and a siglongjmp into the other side's buffer.  A coroutine that
 * is done jumps back to its caller one last time and its stack is
 * munmap()ed, as QEMU frees a coroutine its pool does not keep.
 *
 *   sjlj-ctx N K
 *       N coroutines, entered round-robin by main until each has yielded
 *       K times and finished; prints the sum of what they computed and
 *       exits 0.  Each coroutine is resumed K + 2 times (its start, K + 1
 *       entries) and suspends as often.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <ucontext.h>

#define STACK (64 * 1024)

enum { CO_ENTER = 1, CO_YIELD, CO_DONE };

struct co {
	sigjmp_buf env;
	char *stack;
	struct co *caller;
	sigjmp_buf *start_env; /* the creator's, for the trampoline's jump */
	unsigned id, left;
	uint64_t sum;
	int done;
};

static struct co root_co;
static struct co *self = &root_co;
static unsigned yields;

/* QEMU's qemu_coroutine_switch: save here, jump there. */
static int co_switch(struct co *from, struct co *to, int action)
{
	int ret = sigsetjmp(from->env, 0);

	if (ret == 0) {
		self = to;
		siglongjmp(to->env, action);
	}
	return ret;
}

static void co_yield (void)
{
	struct co *me = self;

	co_switch(me, me->caller, CO_YIELD);
}

static void body(struct co *c)
{
	for (unsigned k = 0; k < yields; k++) {
		c->sum += (uint64_t)c->id * 1000003u + k;
		co_yield ();
	}
}

/* The two halves of the coroutine's address, as QEMU passes it. */
static void trampoline(int lo, int hi)
{
	struct co *c = (struct co *)(((uintptr_t)(unsigned)hi << 32) |
				     (uintptr_t)(unsigned)lo);

	if (!sigsetjmp(c->env, 0))
		siglongjmp(*c->start_env, 1);
	body(c);
	c->done = 1;
	co_switch(c, c->caller, CO_DONE);
	abort(); /* never entered again */
}

static struct co *co_new(unsigned id)
{
	struct co *c = calloc(1, sizeof(*c));
	sigjmp_buf start;
	ucontext_t uc, back; /* QEMU's are locals too: every coroutine is
			      * made in the same ucontext_t */
	uintptr_t p = (uintptr_t)c;

	if (!c)
		exit(1);
	c->id = id;
	c->stack = mmap(NULL, STACK, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (c->stack == MAP_FAILED)
		exit(1);
	getcontext(&uc);
	uc.uc_link = &back;
	uc.uc_stack.ss_sp = c->stack;
	uc.uc_stack.ss_size = STACK;
	makecontext(&uc, (void (*)(void))trampoline, 2,
		    (int)(unsigned)(p & 0xffffffffu), (int)(unsigned)(p >> 32));
	c->start_env = &start;
	if (!sigsetjmp(start, 0))
		swapcontext(&back, &uc);
	return c;
}

static void co_enter(struct co *c)
{
	c->caller = self;
	co_switch(self, c, CO_ENTER);
}

int main(int argc, char **argv)
{
	unsigned n = argc > 2 ? (unsigned)strtoul(argv[1], NULL, 10) : 0;
	struct co **cs;
	unsigned left;
	uint64_t sum = 0;

	if (argc < 3 || !n) {
		fprintf(stderr, "usage: sjlj-ctx N K\n");
		return 2;
	}
	yields = (unsigned)strtoul(argv[2], NULL, 10);
	cs = calloc(n, sizeof(*cs));
	if (!cs)
		return 1;
	for (unsigned k = 0; k < n; k++)
		cs[k] = co_new(k);
	for (left = n; left;) {
		for (unsigned k = 0; k < n; k++) {
			if (!cs[k] || cs[k]->done)
				continue;
			co_enter(cs[k]);
			if (cs[k]->done) {
				sum += cs[k]->sum;
				munmap(cs[k]->stack, STACK);
				free(cs[k]);
				cs[k] = NULL;
				left--;
			}
		}
	}
	printf("sjlj-ctx: %u coroutines, %u yields each, sum %llu\n", n, yields,
	       (unsigned long long)sum);
	free(cs);
	return 0;
}
