/*
 * cxx-target: a C++20 program traced through corotop/coro.hpp, whose names
 * reach every output of corotop mangled unless corotop demangles them
 * (test-e2e-hot, test_cxx_names).
 *
 *   cxx-target RELEASE_PATH
 *       One coroutine, ct::worker(int), runs.  From its body it calls
 *       ct::leaf(unsigned long*), which puts its own call stack through
 *       the probe's CallTrace -- leaf's entry as the exact pc, then its
 *       return address in the coroutine's body (GCC's
 *       "..._ZN2ct6workerEi.Frame.actor", Clang's "_ZN2ct6workerEi.resume")
 *       -- weight 4, once.  Then the coroutine co_awaits and stays
 *       suspended there until RELEASE_PATH exists (looked for every 10
 *       ms; after 120 s without it the program exits 1), finishes, and
 *       the program exits 0.
 *
 * Exit 77: the probe or the CallTrace region did not attach.
 */
#include <corotop/coro.hpp>

#include <coroutine>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <exception>
#include <unistd.h>

namespace ct
{

class task
{
      public:
	struct promise_type : corotop::traced_promise<promise_type> {
		task get_return_object()
		{
			return task(handle::from_promise(*this));
		}
		void return_void() noexcept
		{
		}
		void unhandled_exception() noexcept
		{
			std::terminate();
		}
	};
	using handle = std::coroutine_handle<promise_type>;

	explicit task(handle h) : h(h)
	{
	}

	handle h;
};

/* The coroutine's stack, put through the probe.  noinline, and never a
 * tail call (the empty asm after it in the caller), so its return
 * address lies in the coroutine's body. */
__attribute__((noinline)) void leaf(unsigned long *f)
{
	std::uint64_t frames[2] = {
		reinterpret_cast<std::uintptr_t>(&leaf),
		reinterpret_cast<std::uintptr_t>(__builtin_return_address(0)),
	};
	std::uint64_t id = corotop_calltrace_put(frames, 2, 4);

	if (id == 0 || id == COROTOP_CALLTRACE_DROPPED) {
		std::fprintf(stderr, "cxx-target: put returned %llu\n",
			     static_cast<unsigned long long>(id));
		std::exit(id ? 1 : 77);
	}
	f[0] = id;
}

task worker(int id)
{
	unsigned long f[1];

	leaf(f);
	__asm__ volatile("" ::: "memory");
	co_await std::suspend_always{};
	f[0] += static_cast<unsigned long>(id);
}

/* Resumes h through its frame's resume pointer (never inlined into
 * main, so the body runs in the coroutine's resume function). */
__attribute__((noinline)) void step(std::coroutine_handle<> h)
{
	h.resume();
}

} // namespace ct

int main(int argc, char **argv)
{
	struct timespec tick = {0, 10 * 1000 * 1000};

	if (argc != 2) {
		std::fprintf(stderr, "usage: cxx-target RELEASE_PATH\n");
		return 2;
	}
	if (!corotop_probe_live_) {
		std::fprintf(stderr, "cxx-target: probe not attached\n");
		return 77;
	}
	ct::task t = ct::worker(7);

	ct::step(t.h); /* up to the co_await */
	for (int i = 0; access(argv[1], F_OK) != 0; i++) {
		if (i == 12000) {
			std::fprintf(stderr, "cxx-target: never released\n");
			return 1;
		}
		nanosleep(&tick, nullptr);
	}
	ct::step(t.h); /* to the end */
	if (!t.h.done()) {
		std::fprintf(stderr, "cxx-target: the coroutine did not end\n");
		return 1;
	}
	t.h.destroy();
	return 0;
}
