/*
 * fiber-examples: a short Boost.Fiber program in the shapes of Boost's own
 * examples (libs/fiber/examples: ping_pong, join, a function object as a
 * fiber, simple.cpp's fiber of a plain function with arguments; and
 * Boost.Context's jump_void.cpp, a context fiber of a plain function), which
 * knows nothing of corotop and lives a few milliseconds -- what corotop's final
 * snapshot must still name (issue 28).
 *
 * usage: fiber-examples [ROUNDS]
 *
 * A pinger and a ponger lambda bounce ROUNDS (default 100) messages over
 * two unbuffered channels; three fibers of a function object (struct
 * counter), two of a lambda and two of a plain function (count_by, as
 * `fiber f(fn, args...)`) count and yield, and main joins them all; then
 * a Boost.Context fiber of a plain function (step) is resumed until it
 * returns.
 * On stdout: "pings=P counted=C"; exit 0.
 */
#include <boost/context/fiber.hpp>
#include <boost/fiber/all.hpp>

#include <cstdio>
#include <cstdlib>
#include <vector>

namespace bf = boost::fibers;

/* A fiber's function object, like the examples' worker classes. */
struct counter {
	int *total;
	int n;

	void operator()() const
	{
		for (int i = 0; i < n; i++) {
			++*total;
			boost::this_fiber::yield();
		}
	}
};

/* A fiber's plain function with arguments, like simple.cpp's fn: the
 * entry template names only its type, void (&)(int*, int). */
void count_by(int *total, int n)
{
	for (int i = 0; i < n; i++) {
		++*total;
		boost::this_fiber::yield();
	}
}

/* A Boost.Context fiber's plain function, like jump_void.cpp's f1: the
 * entry template names only its type, fiber (*)(fiber&&). */
boost::context::fiber step(boost::context::fiber &&back)
{
	for (int i = 0; i < 3; i++)
		back = std::move(back).resume();
	return std::move(back);
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? std::atoi(argv[1]) : 100;
	int pings = 0, counted = 0;
	bf::unbuffered_channel<int> ping, pong;

	if (rounds < 1) {
		std::fprintf(stderr, "usage: fiber-examples [ROUNDS]\n");
		return 2;
	}
	bf::fiber pinger([&] {
		for (int i = 0; i < rounds; i++) {
			int v = 0;

			ping.push(i);
			pong.pop(v);
			pings += v == i;
		}
		ping.close();
	});
	bf::fiber ponger([&] {
		int v;

		while (ping.pop(v) == bf::channel_op_status::success)
			pong.push(v);
	});
	std::vector<bf::fiber> workers;

	for (int k = 0; k < 3; k++)
		workers.emplace_back(counter{&counted, 10});
	for (int k = 0; k < 2; k++)
		workers.emplace_back([&counted] {
			for (int i = 0; i < 10; i++) {
				++counted;
				boost::this_fiber::yield();
			}
		});
	for (int k = 0; k < 2; k++)
		workers.emplace_back(count_by, &counted, 10);
	for (auto &w : workers)
		w.join();
	pinger.join();
	ponger.join();
	{
		boost::context::fiber f{step};

		for (int i = 0; i < 4 && f; i++)
			f = std::move(f).resume();
	}
	std::printf("pings=%d counted=%d\n", pings, counted);
	return 0;
}
