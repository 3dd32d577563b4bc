/*
 * fiber_pingpong: Boost.Fiber throughput with and without corotop's
 * preload -- two fibers on one thread passing a counter through two
 * unbuffered channels, each hand-off a switch through Boost.Fiber's
 * scheduler (bench/preload_cost.sh runs it bare, interposed and traced).
 *
 * usage: fiber_pingpong [MESSAGES] [BATCHES]
 * Prints the median over BATCHES of the time per message.
 */
#include <boost/fiber/all.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace bf = boost::fibers;

int main(int argc, char **argv)
{
	long n = argc > 1 ? std::atol(argv[1]) : 200000;
	int batches = argc > 2 ? std::atoi(argv[2]) : 11;
	const char *pre = std::getenv("LD_PRELOAD");
	const char *mode = !pre || !std::strstr(pre, "corotop-preload") ? "bare"
			   : std::getenv("CTP_SHM_PATH") ? "traced"
							 : "interposed";
	std::vector<double> ns;

	for (int b = 0; b < batches; b++) {
		bf::unbuffered_channel<long> ping, pong;
		auto t0 = std::chrono::steady_clock::now();
		bf::fiber echo([&] {
			long v;

			while (ping.pop(v) == bf::channel_op_status::success)
				pong.push(v + 1);
		});
		long v = 0;

		for (long i = 0; i < n; i++) {
			ping.push(v);
			pong.pop(v);
		}
		ping.close();
		echo.join();
		ns.push_back(std::chrono::duration<double, std::nano>(
				     std::chrono::steady_clock::now() - t0)
				     .count() /
			     (double)n);
	}
	std::sort(ns.begin(), ns.end());
	std::printf("fiber_pingpong mode=%s messages=%ld batches=%d "
		    "ns_per_message_median=%.1f min=%.1f max=%.1f\n",
		    mode, n, batches, ns[ns.size() / 2], ns.front(), ns.back());
	return 0;
}
