/*
 * coro2-parked: Boost.Coroutine2 generators left parked, in a program that
 * knows nothing of corotop -- the truth for the memory scan's test
 * (e2e-scan-attach).
 *
 * usage: coro2-parked N
 *
 * N generators (boost::coroutines2::coroutine<int>::pull_type, Boost.Context
 * underneath) each yield twice from gen_values; the program pulls once from
 * each, so every one stays parked inside gen_values, its pull_type kept in
 * a vector.  One more, gen_stuck, parks three frames deeper and is never
 * pulled.  On stdout, once all are parked:
 *   parked=N+1
 * then the program waits until its stdin closes and exits 0 at once,
 * without destroying the generators: that would unwind their stacks by an
 * exception thrown on each, which ASan (blind to Boost.Context's stack
 * switches) reports as a stack-buffer-overflow in its own sigaltstack
 * call -- a false report in the target, not the scan's concern.
 */
#include <boost/coroutine2/all.hpp>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <unistd.h>
#include <vector>

using gen_t = boost::coroutines2::coroutine<int>;

static volatile int sink_v;

static void __attribute__((noinline)) gen_values(gen_t::push_type &out)
{
	for (int i = 0;; i++) {
		sink_v = i;
		out(i);
	}
}

static void __attribute__((noinline))
stuck_deeper(gen_t::push_type &out, int depth)
{
	if (depth > 0) {
		stuck_deeper(out, depth - 1);
		sink_v = depth;
		return;
	}
	out(-1);
	out(-2);
}

static void __attribute__((noinline)) gen_stuck(gen_t::push_type &out)
{
	stuck_deeper(out, 3);
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? std::atoi(argv[1]) : 8;
	std::vector<std::unique_ptr<gen_t::pull_type>> gens;
	char c;

	if (n < 1 || n > 100000) {
		std::fprintf(stderr, "usage: coro2-parked N\n");
		return 2;
	}
	for (int i = 0; i < n; i++) {
		/* The pull_type runs its body to the first yield. */
		gens.emplace_back(new gen_t::pull_type(gen_values));
		(*gens.back())(); /* ... and once more: parked at the next */
	}
	gens.emplace_back(new gen_t::pull_type(gen_stuck));
	std::printf("parked=%d\n", n + 1);
	std::fflush(stdout);
	while (read(0, &c, 1) > 0)
		;
	_exit(0);
}
