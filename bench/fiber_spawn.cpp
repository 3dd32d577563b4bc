/*
 * fiber_spawn: what making a Boost.Fiber fiber costs with and without
 * corotop's preload -- a fiber of a plain function with arguments (the
 * shape whose function the preload reads from the worker_context at
 * make_fcontext, src/preload/fiberfn.c) made, run to its end and joined,
 * one after another (bench/preload_cost.sh runs it bare, interposed and
 * traced).
 *
 * usage: fiber_spawn [FIBERS] [BATCHES]
 * Prints the median over BATCHES of the time per fiber.
 */
#include <boost/fiber/all.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace bf = boost::fibers;

static long total;

void add_to(long *sum, long v)
{
	*sum += v;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? std::atol(argv[1]) : 20000;
	int batches = argc > 2 ? std::atoi(argv[2]) : 11;
	const char *pre = std::getenv("LD_PRELOAD");
	const char *mode = !pre || !std::strstr(pre, "corotop-preload") ? "bare"
			   : std::getenv("CTP_SHM_PATH") ? "traced"
							 : "interposed";
	std::vector<double> ns;

	if (n < 1 || batches < 1) {
		std::fprintf(stderr, "usage: fiber_spawn [FIBERS] [BATCHES]\n");
		return 2;
	}
	for (int b = 0; b < batches; b++) {
		auto t0 = std::chrono::steady_clock::now();

		for (long i = 0; i < n; i++) {
			bf::fiber f(add_to, &total, i);

			f.join();
		}
		ns.push_back(std::chrono::duration<double, std::nano>(
				     std::chrono::steady_clock::now() - t0)
				     .count() /
			     (double)n);
	}
	std::sort(ns.begin(), ns.end());
	std::printf("fiber_spawn mode=%s fibers=%ld batches=%d "
		    "ns_per_fiber_median=%.1f min=%.1f max=%.1f sum=%ld\n",
		    mode, n, batches, ns[ns.size() / 2], ns.front(), ns.back(),
		    total);
	return 0;
}
