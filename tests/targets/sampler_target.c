/*
 * sampler_target: the traced program of test-sampler -- burns CPU in known
 * functions, with and without a coroutine running, and parks a coroutine in
 * a known function, then writes what the test needs to find it all:
 *
 *   itest-sampler-target MODE SECONDS REPORT
 *
 *   coro    a ucontext coroutine (own mmap'd stack, declared with
 *           corotop_coro_set_stack, frame chain ending at its entry) burns
 *           SECONDS of CPU in target_burn_coro, then parks in
 *           target_park_here: the suspend is recorded on the coroutine's
 *           stack, so its parked stack holds target_park_here;
 *   thread  a second thread records one resume/suspend (which arms its
 *           timer lazily), then burns SECONDS of CPU in target_burn_thread
 *           with no coroutine running;
 *   idle    nothing: reports the sampler's state (bad-environment cases).
 *
 * The sampler is whatever the environment asked for (COROTOP_SAMPLE_HZ,
 * COROTOP_PARKED_STACKS).  REPORT gets "key value..." lines:
 *
 *   index N            the coroutine's station (coro, thread)
 *   tid N              the burning thread
 *   burn LO HI         [LO, HI) of the burning function (dladdr1 st_size)
 *   outer LO HI        [LO, HI) of the function that called target_deep,
 *                      whose return address is 8 KiB above the burner
 *   park LO HI         [LO, HI) of target_park_here (coro)
 *   sampler SIGNALS STORED DROPPED TIMERS THREADS HZ
 *
 * Exit 0, or 1 with a message when something failed.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "corotop/probe.h"

#define STACK_SIZE (256u * 1024u)

static double burn_seconds;
static struct corotop_coro coro;
static ucontext_t host_ctx, coro_ctx;
static volatile uint64_t sink;
static FILE *report;

static double cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Arithmetic with few clock reads, so samples land in the loop itself. */
static uint64_t burn_chunk(uint64_t x)
{
	for (unsigned i = 0; i < 2000000; i++)
		x = x * 6364136223846793005ull + 1442695040888963407ull +
		    (x >> 29);
	return x;
}

__attribute__((noinline)) void target_burn_coro(void);
__attribute__((noinline)) void target_burn_thread(void);
__attribute__((noinline)) void target_park_here(void);
__attribute__((noinline)) void target_deep(void (*fn)(void));
void target_coro_entry(void);
void *target_thread_main(void *arg);

/*
 * Calls fn with 8 KiB of locals in between: a walk that stayed on the
 * stack pointer's page would never get up to this frame's record, which
 * holds the return address into our caller (target_coro_entry,
 * target_thread_main); finding that caller proves the walk used the
 * stack's real bounds.
 */
__attribute__((noinline)) void target_deep(void (*fn)(void))
{
	volatile char pad[8192];

	pad[0] = 1;
	pad[sizeof(pad) - 1] = 2;
	fn();
	__asm__ volatile("" ::: "memory");
	sink += (uint64_t)pad[0] + (uint64_t)pad[sizeof(pad) - 1];
}

__attribute__((noinline)) void target_burn_coro(void)
{
	double until = cpu_now() + burn_seconds;
	uint64_t x = sink;

	while (cpu_now() < until)
		x = burn_chunk(x);
	sink = x;
	__asm__ volatile("" ::: "memory"); /* no tail call */
}

__attribute__((noinline)) void target_burn_thread(void)
{
	double until = cpu_now() + burn_seconds;
	uint64_t x = sink ^ 1;

	while (cpu_now() < until)
		x = burn_chunk(x);
	sink = x;
	__asm__ volatile("" ::: "memory");
}

/* Park: record the suspend here, on the coroutine's stack, then switch. */
__attribute__((noinline)) void target_park_here(void)
{
	corotop_coro_suspend(&coro, (uint64_t)(uintptr_t)target_park_here);
	swapcontext(&coro_ctx, &host_ctx);
	__asm__ volatile("" ::: "memory");
}

void target_coro_entry(void)
{
	target_deep(target_burn_coro);
	target_park_here();
	abort(); /* never resumed after parking */
}

static int range_of(const char *name, void *fn)
{
	Dl_info info;
	const ElfW(Sym) *sym = NULL;

	if (!dladdr1(fn, &info, (void **)&sym, RTLD_DL_SYMENT) || !sym ||
	    !sym->st_size) {
		fprintf(stderr, "sampler_target: no symbol size for %s\n",
			name);
		return -1;
	}
	fprintf(report, "%s 0x%llx 0x%llx\n",
		strcmp(name, "target_park_here") == 0	? "park"
		: strncmp(name, "target_burn", 11) == 0 ? "burn"
							: "outer",
		(unsigned long long)(uintptr_t)fn,
		(unsigned long long)((uintptr_t)fn + sym->st_size));
	return 0;
}

static int run_coro(void)
{
	char *stack = mmap(NULL, STACK_SIZE, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);

	if (stack == MAP_FAILED || getcontext(&coro_ctx) < 0)
		return -1;
	coro_ctx.uc_stack.ss_sp = stack;
	coro_ctx.uc_stack.ss_size = STACK_SIZE;
	coro_ctx.uc_link = NULL;
	makecontext(&coro_ctx, target_coro_entry, 0);
	/* End the frame chain at the entry: fp = 0. */
#if defined(__x86_64__)
	coro_ctx.uc_mcontext.gregs[REG_RBP] = 0;
#elif defined(__aarch64__)
	coro_ctx.uc_mcontext.regs[29] = 0;
#endif
	corotop_coro_open(&coro, 0x5a5a);
	corotop_coro_set_stack(&coro, stack, stack + STACK_SIZE);
	corotop_coro_resume(&coro, 1);
	if (swapcontext(&host_ctx, &coro_ctx) < 0)
		return -1;
	/* Parked: the suspend was recorded in target_park_here. */
	fprintf(report, "index %u\n", coro.index);
	fprintf(report, "tid %ld\n", (long)syscall(SYS_gettid));
	if (range_of("target_burn_coro", (void *)target_burn_coro) ||
	    range_of("target_park_here", (void *)target_park_here) ||
	    range_of("target_coro_entry", (void *)target_coro_entry))
		return -1;
	corotop_coro_close(&coro);
	return 0;
}

void *target_thread_main(void *arg)
{
	struct corotop_coro c;

	(void)arg;
	corotop_coro_open(&c, 0x7a7a);
	corotop_coro_resume(&c, 1);
	corotop_coro_suspend(&c, 2);
	target_deep(target_burn_thread);
	fprintf(report, "index %u\n", c.index);
	fprintf(report, "tid %ld\n", (long)syscall(SYS_gettid));
	corotop_coro_close(&c);
	return NULL;
}

static int run_thread(void)
{
	pthread_t th;

	if (pthread_create(&th, NULL, target_thread_main, NULL))
		return -1;
	pthread_join(th, NULL);
	if (range_of("target_burn_thread", (void *)target_burn_thread) ||
	    range_of("target_thread_main", (void *)target_thread_main))
		return -1;
	return 0;
}

int main(int argc, char **argv)
{
	struct corotop_sampler_stats run, st;
	int rc = 0;

	if (argc != 4) {
		fprintf(stderr, "usage: itest-sampler-target coro|thread|idle "
				"SECONDS REPORT\n");
		return 2;
	}
	burn_seconds = atof(argv[2]);
	report = fopen(argv[3], "w");
	if (!report) {
		perror(argv[3]);
		return 1;
	}
	if (strcmp(argv[1], "coro") == 0)
		rc = run_coro();
	else if (strcmp(argv[1], "thread") == 0)
		rc = run_thread();
	else if (strcmp(argv[1], "idle") != 0)
		rc = -1;
	/* Timers alive and hz while running; the counters once stopped, so
	 * they cover every sample stored. */
	corotop_sampler_stats(&run);
	corotop_sampler_stop();
	corotop_sampler_stats(&st);
	fprintf(report, "sampler %llu %llu %llu %llu %u %u\n",
		(unsigned long long)st.signals, (unsigned long long)st.stored,
		(unsigned long long)st.dropped, (unsigned long long)st.timers,
		run.threads, run.hz);
	if (st.threads != 0) {
		fprintf(stderr, "sampler_target: %u timers left after stop\n",
			st.threads);
		rc = -1;
	}
	if (fclose(report) != 0 || rc) {
		fprintf(stderr, "sampler_target: %s failed\n", argv[1]);
		return 1;
	}
	return 0;
}
