/*
 * symfix_coro: the symbolizer test's C++ target (tests/unit/test-symbolizer.c,
 * test_cxx_names): a C++20 coroutine, a function template and a lambda, so
 * that the test symbolizes real mangled names as the compiler made them.
 *
 * It prints "<key> <hex address>" for:
 *   ramp     symfix::coro_task(int) itself (the function a caller calls)
 *   resume   the coroutine's resume function, the first word of its frame
 *            (GCC: "..._ZN6symfix9coro_taskEi.Frame.actor", Clang:
 *            "_ZN6symfix9coro_taskEi.resume") -- what corotop/coro.hpp
 *            records as a coroutine's address when it starts
 *   await    the return address of a call made by a co_await's operand,
 *            which lies in the coroutine's body (the resume function)
 *   tmpl     symfix::twice<long>(long)
 *   lambda   the function a captureless lambda converts to
 * then "ready", and waits for EOF on stdin before it lets the coroutine
 * finish and exits.
 */
#include <coroutine>
#include <cstdint>
#include <cstdio>
#include <cstring>

namespace symfix
{

static std::uintptr_t await_site;

struct task {
	struct promise_type {
		task get_return_object()
		{
			return task{std::coroutine_handle<
				promise_type>::from_promise(*this)};
		}
		std::suspend_always initial_suspend() noexcept
		{
			return {};
		}
		std::suspend_always final_suspend() noexcept
		{
			return {};
		}
		void return_void() noexcept
		{
		}
		void unhandled_exception() noexcept
		{
		}
	};
	std::coroutine_handle<promise_type> h;
};

/* co_await pause{}: suspends. */
struct pause {
	bool await_ready() const noexcept
	{
		return false;
	}
	void await_suspend(std::coroutine_handle<>) const noexcept
	{
	}
	void await_resume() const noexcept
	{
	}
};

/* co_await at_site(): a pause that notes where in the body it was made.
 * Called in the middle of the body, never as a tail call (as
 * corotop/coro.hpp's await_transform). */
__attribute__((noinline)) static pause at_site()
{
	await_site =
		reinterpret_cast<std::uintptr_t>(__builtin_return_address(0));
	return {};
}

task coro_task(int rounds)
{
	for (int i = 0; i < rounds; i++)
		co_await at_site();
}

/* Resumes through the frame's resume pointer: not inlined into main, so
 * the body runs in the coroutine's own resume function. */
__attribute__((noinline)) static void step(std::coroutine_handle<> h)
{
	h.resume();
}

template <class T> __attribute__((noinline)) T twice(T x)
{
	return x + x;
}

} // namespace symfix

int main()
{
	symfix::task t = symfix::coro_task(2);
	std::uintptr_t resume = 0;
	int (*lambda)(int) = [](int x) { return x * 3 + 1; };

	std::memcpy(&resume, t.h.address(), sizeof(resume));
	symfix::step(t.h); /* up to the first co_await: sets await_site */
	std::printf("ramp %jx\n",
		    (std::uintmax_t) reinterpret_cast<std::uintptr_t>(
			    &symfix::coro_task));
	std::printf("resume %jx\n", (std::uintmax_t)resume);
	std::printf("await %jx\n", (std::uintmax_t)symfix::await_site);
	std::printf("tmpl %jx\n",
		    (std::uintmax_t) reinterpret_cast<std::uintptr_t>(
			    &symfix::twice<long>));
	std::printf("lambda %jx\n",
		    (std::uintmax_t) reinterpret_cast<std::uintptr_t>(lambda));
	std::printf("ready\n");
	std::fflush(stdout);
	while (std::getchar() != EOF)
		;
	while (!t.h.done())
		symfix::step(t.h);
	t.h.destroy();
	return (lambda(2) + symfix::twice(3L)) == 12345;
}
