/*
 * coro_example: corotop-coro-example, the smallest program that traces C++20
 * coroutines through corotop/coro.hpp.
 *
 * A minimal task type whose promise derives from corotop::traced_promise, a
 * single-threaded round-robin scheduler (a deque of handles), and a few
 * coroutines that co_await a yield awaitable some number of times.  Two of
 * the co_awaits exercise the paths that must not unbalance the trace: an
 * awaitable that is ready at once (no suspend recorded) and one whose
 * bool await_suspend declines to suspend (a suspend/resume pair).
 *
 * Usage: corotop-coro-example [ROUNDS]   (default 1000 yields each)
 * Prints one summary line to stderr and exits 0.
 */
#include <corotop/coro.hpp>

#include <coroutine>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <exception>
#include <utility>
#include <vector>

namespace
{

class scheduler
{
      public:
	void post(std::coroutine_handle<> h)
	{
		ready_.push_back(h);
	}

	void run()
	{
		while (!ready_.empty()) {
			std::coroutine_handle<> h = ready_.front();

			ready_.pop_front();
			h.resume();
			switches_++;
		}
	}

	unsigned long switches() const
	{
		return switches_;
	}

      private:
	std::deque<std::coroutine_handle<>> ready_;
	unsigned long switches_ = 0;
};

/* co_await yield_to{s}: back of the run queue. */
struct yield_to {
	scheduler *s;

	bool await_ready() const noexcept
	{
		return false;
	}
	void await_suspend(std::coroutine_handle<> h) const
	{
		s->post(h);
	}
	void await_resume() const noexcept
	{
	}
};

/* Ready at once: the wrapper must record nothing. */
struct already_ready {
	int value;

	bool await_ready() const noexcept
	{
		return true;
	}
	void await_suspend(std::coroutine_handle<>) const noexcept
	{
	}
	int await_resume() const noexcept
	{
		return value;
	}
};

/* Declines to suspend in await_suspend, through operator co_await. */
struct declined {
	struct awaiter {
		bool await_ready() const noexcept
		{
			return false;
		}
		bool await_suspend(std::coroutine_handle<>) const noexcept
		{
			return false;
		}
		int await_resume() const noexcept
		{
			return 1;
		}
	};
	awaiter operator co_await() const noexcept
	{
		return {};
	}
};

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

	task(task &&o) noexcept : h_(std::exchange(o.h_, {}))
	{
	}
	task &operator=(task &&) = delete;
	~task()
	{
		if (h_)
			h_.destroy();
	}

	void start(scheduler &s)
	{
		s.post(h_);
	}
	bool done() const
	{
		return h_.done();
	}

      private:
	explicit task(handle h) : h_(h)
	{
	}

	handle h_;
};

task worker(scheduler &s, int id, int rounds, unsigned long *sum)
{
	unsigned long acc = static_cast<unsigned long>(id);

	acc += static_cast<unsigned long>(co_await already_ready{id});
	acc += static_cast<unsigned long>(co_await declined{});
	for (int i = 0; i < rounds; i++) {
		acc = acc * 6364136223846793005ul + 1442695040888963407ul;
		co_await yield_to{&s};
	}
	*sum += acc;
}

} // namespace

int main(int argc, char **argv)
{
	const int ncoros = 4;
	int rounds = 1000;
	unsigned long sum = 0;
	std::vector<task> tasks;
	scheduler s;

	if (argc > 2 || (argc == 2 && (rounds = std::atoi(argv[1])) <= 0)) {
		std::fprintf(stderr, "usage: corotop-coro-example [ROUNDS]\n");
		return 2;
	}
	tasks.reserve(ncoros);
	for (int i = 0; i < ncoros; i++) {
		tasks.push_back(worker(s, i, rounds, &sum));
		tasks.back().start(s);
	}
	s.run();
	for (const task &t : tasks) {
		if (!t.done()) {
			std::fprintf(stderr,
				     "corotop-coro-example: a coroutine "
				     "did not finish\n");
			return 1;
		}
	}
	std::fprintf(stderr,
		     "corotop-coro-example: coroutines=%d switches=%lu "
		     "checksum=%lx\n",
		     ncoros, s.switches(), sum);
	return 0;
}
