/*
 * fiber_parked: a Boost.Fiber program that knows nothing of corotop, for
 * bench/ctxscan_heap's --fibers mode (issue 30's pause per refresh and
 * throughput while attached, measured on Boost.Fiber's own layout: each
 * fiber's holder, its context's c_, lies on its own stack's page).
 *
 * usage: fiber_parked FIBERS
 *
 * Two threads, each with its own scheduler (round_robin), park FIBERS / 2
 * fibers each on a condition variable (16 KiB stacks) and run two worker
 * fibers that take turns (this_fiber::yield) doing units of about 20 us
 * of arithmetic.  With file descriptor 3 open (a shared memory object of
 * ctxscan_heap's struct ch_meter), the workers count their units there,
 * and the longest gap between the ends of two units of one worker.
 * Prints "fibers=N" once every fiber is parked; on end of input, wakes
 * them all, joins them and exits 0.
 */
#include <boost/fiber/all.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <sys/mman.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace bf = boost::fibers;

/* bench/ctxscan_heap.c's struct ch_meter: the same three words. */
struct meter {
	std::atomic<uint64_t> units;
	std::atomic<uint64_t> max_gap_ns;
	std::atomic<int> reset;
};

static meter *the_meter;
static std::atomic<bool> done{false};
static std::atomic<int> ready{0};

static uint64_t now_ns()
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* Units of work until done, yielding to the other worker after each. */
static void worker()
{
	uint64_t x = 0x9e3779b97f4a7c15ull, last = now_ns();

	while (!done.load(std::memory_order_relaxed)) {
		for (int i = 0; i < 20000; i++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
		}
		uint64_t now = now_ns(), gap = now - last;

		last = now;
		if (the_meter) {
			if (the_meter->reset.exchange(
				    0, std::memory_order_relaxed))
				the_meter->max_gap_ns.store(
					0, std::memory_order_relaxed);
			else if (gap > the_meter->max_gap_ns.load(
					       std::memory_order_relaxed))
				the_meter->max_gap_ns.store(
					gap, std::memory_order_relaxed);
			the_meter->units.fetch_add(1 + (x == 0),
						   std::memory_order_relaxed);
		}
		boost::this_fiber::yield();
	}
}

/* One thread's fibers: `parked` waiting, two workers; then waits (as a
 * fiber of its own scheduler) for the end. */
static void thread_main(long parked)
{
	bf::mutex m;
	bf::condition_variable cv;
	bool released = false;
	std::vector<bf::fiber> fibers;

	fibers.reserve((size_t)parked + 2);
	for (long i = 0; i < parked; i++)
		fibers.emplace_back(std::allocator_arg,
				    bf::fixedsize_stack(16 * 1024), [&] {
					    std::unique_lock<bf::mutex> lk(m);
					    cv.wait(lk,
						    [&] { return released; });
				    });
	for (int i = 0; i < 2; i++)
		fibers.emplace_back(std::allocator_arg,
				    bf::fixedsize_stack(16 * 1024), worker);
	/* Let every fiber park once. */
	for (int i = 0; i < 4; i++)
		boost::this_fiber::yield();
	ready.fetch_add(1, std::memory_order_release);
	while (!done.load(std::memory_order_acquire))
		boost::this_fiber::sleep_for(std::chrono::milliseconds(10));
	{
		std::unique_lock<bf::mutex> lk(m);

		released = true;
	}
	cv.notify_all();
	for (auto &f : fibers)
		f.join();
}

int main(int argc, char **argv)
{
	long fibers = argc > 1 ? std::atol(argv[1]) : 10000;
	char c;

	if (fibers < 2 || fibers > 1000000) {
		std::fprintf(stderr, "usage: fiber_parked FIBERS\n");
		return 2;
	}
	void *m = mmap(nullptr, sizeof(meter), PROT_READ | PROT_WRITE,
		       MAP_SHARED, 3, 0);
	if (m != MAP_FAILED)
		the_meter = static_cast<meter *>(m);
	std::thread a(thread_main, fibers / 2),
		b(thread_main, fibers - fibers / 2);

	while (ready.load(std::memory_order_acquire) < 2)
		std::this_thread::sleep_for(std::chrono::milliseconds(10));
	std::printf("fibers=%ld\n", fibers);
	std::fflush(stdout);
	while (read(0, &c, 1) > 0) {
	}
	done.store(true, std::memory_order_release);
	a.join();
	b.join();
	return 0;
}
