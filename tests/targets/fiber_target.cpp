/*
 * fiber-target: a Boost.Fiber program that knows nothing of corotop -- two
 * threads sharing their fibers (algo::shared_work), producers and
 * consumers talking over a buffered channel, and optionally one fiber
 * blocked forever on a condition variable nobody notifies.
 *
 * usage: fiber-target PAIRS ITEMS [--stuck] [--hold] [--pace] [--burn]
 *
 * PAIRS producers each push ITEMS values into one channel; PAIRS consumers
 * pop them all.  With --stuck one more fiber waits in stuck_wait_for_signal
 * on a condition variable; with --hold the main thread then stays (in
 * pause) until a signal ends the program, else the stuck fiber is notified
 * at the end so that every fiber finishes.  With --pace each producer
 * sleeps 2 ms (boost::this_fiber::sleep_for) after each value, so that a
 * run of a few seconds shows its fibers parked and moving between threads.
 * With --burn one more fiber sorts (glibc's qsort, built without frame
 * pointers) with a comparator that burns CPU, in burn_sort_rounds, about
 * a second of CPU in all, yielding between rounds: a sampled stack shows
 * burn_sort_rounds only when it was walked with CFI.
 * On stdout:
 *   fibers=F items=I sum=S tids=A,B
 * F counts the fibers the program made; S the values consumed.
 */
#include <boost/fiber/all.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <unistd.h>
#include <sys/syscall.h>
#include <vector>

namespace bf = boost::fibers;

static bf::mutex stuck_mutex;
static bf::condition_variable stuck_cv;
static bool stuck_released;
static bf::mutex done_mutex;
static bf::condition_variable done_cv;

static __attribute__((noinline)) void stuck_wait_for_signal()
{
	std::unique_lock<bf::mutex> lk(stuck_mutex);

	stuck_cv.wait(lk, [] { return stuck_released; });
}

static int burn_compare(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	volatile unsigned spin = 0;

	for (int k = 0; k < 40; k++)
		spin = spin + (unsigned)k;
	return (x > y) - (x < y);
}

static __attribute__((noinline)) long burn_sort_rounds(int rounds)
{
	static int v[20000];
	long check = 0;

	for (int r = 0; r < rounds; r++) {
		for (int i = 0; i < 20000; i++)
			v[i] = (int)((unsigned)(i + r) * 2654435761u % 100003u);
		std::qsort(v, 20000, sizeof(v[0]), burn_compare);
		check += v[r % 20000];
		boost::this_fiber::yield();
	}
	return check;
}

/* A function, not a lambda: main's lambdas keep their numbers (the
 * tests look for main::{lambda()#2} and #3). */
static void burn_fiber()
{
	(void)burn_sort_rounds(60);
}

int main(int argc, char **argv)
{
	int pairs = argc > 1 ? std::atoi(argv[1]) : 4;
	int items = argc > 2 ? std::atoi(argv[2]) : 100;
	bool stuck = false, hold = false, pace = false, burn = false;
	std::atomic<long> sum{0};
	std::atomic<bool> done{false};
	std::atomic<long> tid_b{0};
	int fibers = 0;

	for (int i = 3; i < argc; i++) {
		stuck |= !std::strcmp(argv[i], "--stuck");
		hold |= !std::strcmp(argv[i], "--hold");
		pace |= !std::strcmp(argv[i], "--pace");
		burn |= !std::strcmp(argv[i], "--burn");
	}
	if (pairs < 1 || items < 1) {
		std::fprintf(stderr, "usage: fiber-target PAIRS ITEMS "
				     "[--stuck] [--hold] [--pace] [--burn]\n");
		return 2;
	}
	/* Boost's default shared_work: a thread with nothing to run spins in
	 * its dispatcher (suspend = false), which keeps both threads taking
	 * fibers from the shared queue -- the migration the tests look for.
	 * A held program (--hold) therefore keeps a core busy until killed. */
	bf::use_scheduling_algorithm<bf::algo::shared_work>();
	/* The second thread takes fibers from the shared queue until the
	 * work is done. */
	std::thread helper([&] {
		tid_b = syscall(SYS_gettid);
		bf::use_scheduling_algorithm<bf::algo::shared_work>();
		/* Blocked as a fiber: the thread runs shared fibers
		 * meanwhile (its dispatcher spins when there are none). */
		std::unique_lock<bf::mutex> lk(done_mutex);
		done_cv.wait(lk, [&] { return done.load(); });
	});
	{
		bf::buffered_channel<long> ch(64);
		std::vector<bf::fiber> fs;

		if (stuck) {
			fs.emplace_back(stuck_wait_for_signal);
			fibers++;
		}
		if (burn) {
			fs.emplace_back(burn_fiber);
			fibers++;
		}
		for (int p = 0; p < pairs; p++) {
			fs.emplace_back([&ch, items, p, pace] {
				for (int i = 1; i <= items; i++) {
					ch.push((long)p * items + i);
					if (pace)
						boost::this_fiber::sleep_for(
							std::chrono::
								milliseconds(
									2));
				}
			});
			fibers++;
		}
		for (int c = 0; c < pairs; c++) {
			fs.emplace_back([&ch, &sum, items, pairs] {
				for (int i = 0; i < items; i++) {
					long v = 0;

					ch.pop(v);
					sum += v;
				}
				(void)pairs;
			});
			fibers++;
		}
		for (size_t i = stuck ? 1 : 0; i < fs.size(); i++)
			fs[i].join();
		while (!tid_b.load())
			boost::this_fiber::yield();
		std::printf("fibers=%d items=%d sum=%ld tids=%ld,%ld\n", fibers,
			    pairs * items, sum.load(),
			    (long)syscall(SYS_gettid), tid_b.load());
		std::fflush(stdout);
		while (hold)
			pause(); /* until a signal ends it */
		if (stuck) {
			{
				std::unique_lock<bf::mutex> lk(stuck_mutex);
				stuck_released = true;
			}
			stuck_cv.notify_all();
			fs[0].join();
		}
	}
	{
		std::unique_lock<bf::mutex> lk(done_mutex);
		done = true;
	}
	done_cv.notify_all();
	helper.join();
	return 0;
}
