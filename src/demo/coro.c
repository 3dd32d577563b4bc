/*
 * coro: the demo's stackful coroutine (see coro.h for the concept).
 *
 * Life of a coroutine:
 *
 *   coro_create   mmap guard page + stack, makecontext(coro_trampoline)
 *   coro_switch_in   (host)  ---- swapcontext ---->  runs fn until it parks
 *   coro_switch_out  (coro)  <--- swapcontext -----  host continues
 *   ... any number of times, from any host thread ...
 *   fn returns: finished = true, a last coro_switch_out, never resumed
 *   coro_destroy  munmap
 *
 * Sanitizers.  ASan must be told about every stack switch, or it mistakes
 * the coroutine stack for a wild region of the thread stack; TSan must be
 * told which fiber runs, or it sees one thread's accesses on two stacks.  The
 * annotations compile away without the sanitizer.
 */
#define _GNU_SOURCE
#include "demo/coro.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CORO_ASAN 1
#endif
#if __has_feature(thread_sanitizer)
#define CORO_TSAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) && !defined(CORO_ASAN)
#define CORO_ASAN 1
#endif
#if defined(__SANITIZE_THREAD__) && !defined(CORO_TSAN)
#define CORO_TSAN 1
#endif

#ifdef CORO_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif
#ifdef CORO_TSAN
#include <sanitizer/tsan_interface.h>
#endif

/*
 * First code on a fresh coroutine stack.  makecontext passes only ints, so
 * the coroutine pointer arrives split in two 32-bit halves.
 */
static void coro_trampoline(unsigned int hi, unsigned int lo)
{
	struct coro *co =
		(struct coro *)(uintptr_t)(((uint64_t)hi << 32) | (uint64_t)lo);

#ifdef CORO_ASAN
	/* A fresh fiber has no fake stack to restore yet. */
	__sanitizer_finish_switch_fiber(NULL, &co->asan_host_bottom,
					&co->asan_host_size);
#endif
	co->fn(co->arg);
	co->finished = true;
	coro_switch_out(co);
	/* A finished coroutine is never resumed. */
	abort();
}

/*
 * Point ctx at the trampoline on co's stack.  Apart so that getcontext
 * (which "returns twice" as far as the compiler knows) cannot clobber the
 * locals of coro_create; the context it saves is never resumed.
 */
static bool coro_make_context(ucontext_t *ctx, struct coro *co)
{
	uint64_t self = (uint64_t)(uintptr_t)co;

	if (getcontext(ctx) < 0)
		return false;
	ctx->uc_stack.ss_sp = co->stack;
	ctx->uc_stack.ss_size = co->stack_size;
	ctx->uc_link = NULL; /* the trampoline never returns */
	makecontext(ctx, (void (*)(void))coro_trampoline, 2,
		    (unsigned int)(self >> 32), (unsigned int)self);
	/* getcontext saved this function's frame pointer, and makecontext
	 * leaves it: the trampoline would chain to a stale frame of the
	 * host's stack.  A null frame pointer ends the chain at the
	 * coroutine's entry, where frame-pointer walks must stop. */
#if defined(__x86_64__)
	ctx->uc_mcontext.gregs[REG_RBP] = 0;
#elif defined(__aarch64__)
	ctx->uc_mcontext.regs[29] = 0;
#endif
	return true;
}

struct coro *coro_create(coro_fn *fn, void *arg, size_t stack_size)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	struct coro *co;
	int err;

	stack_size = (stack_size + page - 1) / page * page;
	co = calloc(1, sizeof(*co));
	if (!co)
		return NULL;
	co->map_size = stack_size + page;
	co->map = mmap(NULL, co->map_size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK | MAP_NORESERVE,
		       -1, 0);
	if (co->map == MAP_FAILED) {
		err = errno;
		free(co);
		errno = err;
		return NULL;
	}
	/* Guard page: an overflow faults instead of corrupting a neighbour. */
	if (mprotect(co->map, page, PROT_NONE) < 0) {
		err = errno;
		munmap(co->map, co->map_size);
		free(co);
		errno = err;
		return NULL;
	}
	co->stack = (char *)co->map + page;
	co->stack_size = stack_size;
	co->fn = fn;
	co->arg = arg;
	if (!coro_make_context(&co->ctx, co)) {
		err = errno;
		munmap(co->map, co->map_size);
		free(co);
		errno = err;
		return NULL;
	}
#ifdef CORO_TSAN
	co->tsan_fiber = __tsan_create_fiber(0);
#endif
	return co;
}

void coro_destroy(struct coro *co)
{
	if (!co)
		return;
#ifdef CORO_TSAN
	__tsan_destroy_fiber(co->tsan_fiber);
#endif
#ifdef CORO_ASAN
	/* Frames abandoned on the stack leave poisoned redzones; clear them
	 * so a later mapping at this address starts clean. */
	__asan_unpoison_memory_region(co->stack, co->stack_size);
#endif
	munmap(co->map, co->map_size);
	free(co);
}

void coro_host_init(struct coro_host *h)
{
	h->asan_fake_stack = NULL;
#ifdef CORO_TSAN
	h->tsan_fiber = __tsan_get_current_fiber();
#else
	h->tsan_fiber = NULL;
#endif
}

void coro_switch_in(struct coro *co, struct coro_host *h)
{
	co->host = h;
#ifdef CORO_ASAN
	__sanitizer_start_switch_fiber(&h->asan_fake_stack, co->stack,
				       co->stack_size);
#endif
#ifdef CORO_TSAN
	__tsan_switch_to_fiber(co->tsan_fiber, 0);
#endif
	if (swapcontext(&h->ctx, &co->ctx) < 0)
		abort();
#ifdef CORO_ASAN
	__sanitizer_finish_switch_fiber(h->asan_fake_stack, NULL, NULL);
#endif
}

void coro_switch_out(struct coro *co)
{
	struct coro_host *h = co->host;

#ifdef CORO_ASAN
	/* NULL save slot on the last switch: ASan frees our fake stack. */
	__sanitizer_start_switch_fiber(
		co->finished ? NULL : &co->asan_fake_stack,
		co->asan_host_bottom, co->asan_host_size);
#endif
#ifdef CORO_TSAN
	__tsan_switch_to_fiber(h->tsan_fiber, 0);
#endif
	if (swapcontext(&co->ctx, &h->ctx) < 0)
		abort();
		/* Resumed, possibly by another host: learn its stack for next
		 * time. */
#ifdef CORO_ASAN
	__sanitizer_finish_switch_fiber(co->asan_fake_stack,
					&co->asan_host_bottom,
					&co->asan_host_size);
#endif
}
