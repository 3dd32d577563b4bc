/*
 * fiberwalk: Boost.Fiber's own lists read from memory
 * (src/engine/scan/fiberwalk.c), checked against the Boost.Fiber this
 * test is built with.
 *
 *   1. The layout table: the entry for the libboost_fiber of this build
 *      (Debian's 1.74 on x86-64) holds exactly the offsets the installed
 *      headers give (offsetof, the members made public for the test);
 *      another Boost or machine skips (exit 77) -- a table entry must be
 *      checked before the walk trusts it.
 *   2. The walk, on this very process: fibers parked in known ways --
 *      one waiting on a condition variable with no deadline, one in a
 *      timed wait, one ready (yielded) -- found from their own saved
 *      contexts as a scan finds them (the fcontext_t, the address of the
 *      context's c_ that keeps it), through the scheduler, as waiting,
 *      sleeping and ready; the main context (joined on the checker: in a
 *      wait queue) and the dispatcher listed too, and nothing else.  A
 *      found context that is no Boost.Fiber context is rejected, and a
 *      scheduler whose main context does not point back at it is not
 *      walked.
 * Exit status: 0 every check holds, 1 one fails (printed), 77 skipped.
 */
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#define private public
#define protected public
#include <boost/fiber/all.hpp>
#undef private
#undef protected
#include <boost/version.hpp>

extern "C" {
#include "engine/scan/fiberwalk.h"
}

using boost::fibers::context;
using boost::fibers::scheduler;

static int failures;

#define CHECK(cond)                                                            \
	do {                                                                   \
		if (!(cond)) {                                                 \
			std::printf("FAIL %s:%d: %s\n", __FILE__, __LINE__,    \
				    #cond);                                    \
			failures++;                                            \
		}                                                              \
	} while (0)

static bool self_read(void *, uint64_t addr, void *buf, size_t n)
{
	std::memcpy(buf, reinterpret_cast<const void *>(addr), n);
	return true;
}

static ctxscan_found found_of(context *c)
{
	ctxscan_found f{};

	f.at = reinterpret_cast<uint64_t>(c->c_.fctx_);
	f.stored_at = reinterpret_cast<uint64_t>(&c->c_);
	f.stored = 1;
	return f;
}

static const fiberwalk_fiber *listed(const std::vector<fiberwalk_fiber> &v,
				     size_t n, context *c)
{
	for (size_t k = 0; k < n; k++)
		if (v[k].ctx == reinterpret_cast<uint64_t>(c))
			return &v[k];
	return nullptr;
}

int main()
{
#if BOOST_VERSION != 107400 || !defined(__x86_64__)
	std::printf("SKIP: the table holds Debian's Boost 1.74 on x86-64 "
		    "only (this is %d)\n",
		    BOOST_VERSION);
	return 77;
#else
	const fiberwalk_layout *l =
		fiberwalk_layout_named("libboost_fiber.so.1.74.0");

	CHECK(l != nullptr);
	if (!l)
		return 1;
	/* 1. The table against the headers. */
	CHECK(l->ctx_size == sizeof(context));
	CHECK(l->remote_ready_hook == offsetof(context, remote_ready_hook_));
	CHECK(l->terminated == offsetof(context, terminated_));
	CHECK(l->wait_hook == offsetof(context, wait_hook_));
	CHECK(l->scheduler == offsetof(context, scheduler_));
	CHECK(l->sleep_hook == offsetof(context, sleep_hook_));
	CHECK(l->ready_hook == offsetof(context, ready_hook_));
	CHECK(l->worker_hook == offsetof(context, worker_hook_));
	CHECK(l->c == offsetof(context, c_));
	CHECK(l->type == offsetof(context, type_));
	CHECK(l->sched_size == sizeof(scheduler));
	CHECK(l->worker_queue == offsetof(scheduler, worker_queue_));
	CHECK(l->dispatcher_ctx == offsetof(scheduler, dispatcher_ctx_));
	CHECK(l->main_ctx == offsetof(scheduler, main_ctx_));
	CHECK(sizeof(context::c_) == 8);
	CHECK((unsigned)boost::fibers::type::main_context == FIBERWALK_MAIN);
	CHECK((unsigned)boost::fibers::type::dispatcher_context ==
	      FIBERWALK_DISPATCHER);
	CHECK((unsigned)boost::fibers::type::worker_context ==
	      FIBERWALK_WORKER);

	/* 2. The walk, here. */
	boost::fibers::mutex mu;
	boost::fibers::condition_variable cv;
	bool go = false;
	std::atomic<bool> stop{false};
	context *waiter = nullptr, *timed = nullptr, *yielder = nullptr;

	boost::fibers::fiber a([&] {
		waiter = context::active();
		std::unique_lock<boost::fibers::mutex> lk(mu);
		cv.wait(lk, [&] { return go; });
	});
	boost::fibers::fiber b([&] {
		timed = context::active();
		std::unique_lock<boost::fibers::mutex> lk(mu);
		cv.wait_for(lk, std::chrono::hours(1), [&] { return go; });
	});
	boost::fibers::fiber y([&] {
		yielder = context::active();
		while (!stop.load())
			boost::this_fiber::yield();
	});
	boost::fibers::fiber check([&] {
		/* Let the others park first. */
		for (int i = 0; i < 4; i++)
			boost::this_fiber::yield();
		CHECK(waiter && timed && yielder);
		context *self = context::active();
		ctxscan_found found[] = {found_of(waiter), found_of(timed),
					 found_of(yielder)};
		ctxscan_reader rd{self_read, nullptr, nullptr};
		std::vector<fiberwalk_fiber> out(64);
		fiberwalk_stats st;
		size_t n = fiberwalk_run(l, &rd, found, 3, out.data(),
					 out.size(), &st);
		scheduler *s = self->get_scheduler();

		CHECK(st.schedulers == 1);
		CHECK(!st.cut);
		/* main, dispatcher, and the four workers. */
		CHECK(n == 6);
		CHECK(listed(out, n, waiter) &&
		      listed(out, n, waiter)->state == FIBERWALK_WAITING);
		CHECK(listed(out, n, timed) &&
		      listed(out, n, timed)->state == FIBERWALK_SLEEPING);
		CHECK(listed(out, n, yielder) &&
		      listed(out, n, yielder)->state == FIBERWALK_READY);
		CHECK(listed(out, n, self) &&
		      listed(out, n, self)->state == FIBERWALK_RUNNING);
		CHECK(listed(out, n, s->main_ctx_) &&
		      listed(out, n, s->main_ctx_)->state ==
			      FIBERWALK_WAITING &&
		      listed(out, n, s->main_ctx_)->type == FIBERWALK_MAIN);
		CHECK(listed(out, n, s->dispatcher_ctx_.get()) &&
		      listed(out, n, s->dispatcher_ctx_.get())->type ==
			      FIBERWALK_DISPATCHER);
		for (size_t k = 0; k < n; k++)
			CHECK(out[k].sched == reinterpret_cast<uint64_t>(s));
		/* Sorted by fctx: each found one is found by it. */
		CHECK(fiberwalk_find(out.data(), n, found[0].at) &&
		      fiberwalk_find(out.data(), n, found[0].at)->ctx ==
			      reinterpret_cast<uint64_t>(waiter));

		/* A found context that is no context (bytes of junk, as
		 * large as a context): rejected, no walk. */
		alignas(16) unsigned char junk[512];
		std::memset(junk, 0x41, sizeof(junk));
		std::memcpy(junk + l->c, &found[0].at, 8);
		ctxscan_found bad = found[0];
		bad.stored_at = reinterpret_cast<uint64_t>(junk) + l->c;
		n = fiberwalk_run(l, &rd, &bad, 1, out.data(), out.size(), &st);
		CHECK(n == 0 && st.rejected == 1 && st.schedulers == 0);

		/* A scheduler whose main context points elsewhere: not
		 * walked (a copy of it, changed). */
		{
			alignas(scheduler) unsigned char
				copy[sizeof(scheduler)];
			alignas(context) unsigned char wcopy[sizeof(context)];
			context *fake_main = reinterpret_cast<context *>(wcopy);

			std::memcpy(copy, s, sizeof(copy));
			std::memcpy(wcopy, waiter, sizeof(wcopy));
			/* The worker copy says it is the copy's; the copy's
			 * main is a worker. */
			const void *copy_at = copy;

			std::memcpy(wcopy + l->scheduler, &copy_at, 8);
			std::memcpy(copy + l->main_ctx, &fake_main, 8);
			ctxscan_found f2 = found[0];
			f2.stored_at = reinterpret_cast<uint64_t>(wcopy) + l->c;
			n = fiberwalk_run(l, &rd, &f2, 1, out.data(),
					  out.size(), &st);
			CHECK(n == 0 && st.schedulers == 0);
		}

		{
			std::unique_lock<boost::fibers::mutex> lk(mu);
			go = true;
		}
		cv.notify_all();
		stop = true;
	});
	check.join();
	a.join();
	b.join();
	y.join();
	if (!failures)
		std::printf("ok   fiberwalk: the 1.74 table matches the "
			    "headers; waiting, sleeping, ready, running, main "
			    "and dispatcher told apart\n");
	return failures ? 1 : 0;
#endif
}
