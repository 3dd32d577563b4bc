/*
 * coro-hpp: corotop/coro.hpp's long-wait marks (issue 16), untraced (the
 * probe keeps each transition in the coroutine's struct either way):
 * co_await corotop::long_wait(x) marks that suspension only -- an awaitable
 * used directly and one behind operator co_await --, a plain co_await
 * after it is not marked, and the promise's long_waits(true) marks every
 * suspension from then on.  Plain asserts: no cmocka in C++.
 */
#include <corotop/coro.hpp>

#include <cstdio>
#include <exception>

namespace
{

struct task {
	struct promise_type : corotop::traced_promise<promise_type> {
		task get_return_object()
		{
			return task{std::coroutine_handle<
				promise_type>::from_promise(*this)};
		}
		void return_void() noexcept
		{
		}
		void unhandled_exception() noexcept
		{
			std::terminate();
		}
	};
	std::coroutine_handle<promise_type> h;
};

/* Suspends through operator co_await. */
struct via_operator {
	std::suspend_always operator co_await() const
	{
		return {};
	}
};

task body(int *step)
{
	*step = 1;
	co_await corotop::long_wait(std::suspend_always{});
	*step = 2;
	co_await std::suspend_always{};
	*step = 3;
	via_operator a;
	co_await corotop::long_wait(a);
	*step = 4;
	co_await std::suspend_always{};
	*step = 5;
}

int failures;

void expect(bool ok, const char *what)
{
	if (!ok) {
		std::fprintf(stderr, "FAIL: %s\n", what);
		failures++;
	}
}

} // namespace

int main()
{
	int step = 0;
	task t = body(&step);
	corotop_coro *p = t.h.promise().probe();

	t.h.resume();
	expect(step == 1 && p->last_active == 0, "parked at the first await");
	expect(p->last_long == 1, "long_wait(awaitable) marks its suspend");
	t.h.resume();
	expect(step == 2 && p->last_long == 0, "a plain co_await after it");
	t.h.resume();
	expect(step == 3 && p->last_long == 1,
	       "long_wait(x) with operator co_await");
	t.h.promise().long_waits(true);
	t.h.resume();
	expect(step == 4 && p->last_long == 1, "long_waits(true): every one");
	t.h.resume();
	expect(step == 5 && p->last_long == 1, "... also the final suspend");
	t.h.destroy();
	if (!failures)
		std::printf("coro-hpp: ok\n");
	return failures ? 1 : 0;
}
