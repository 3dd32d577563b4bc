/*
 * corotop/coro.hpp: trace C++20 coroutines with the corotop probe.
 *
 * A header-only mixin for a coroutine's promise type.  Derive the promise
 * from corotop::traced_promise<promise_type> (CRTP) and every coroutine of
 * that type shows up in corotop, with no change to the coroutine bodies:
 *
 *     struct task {
 *         struct promise_type
 *             : corotop::traced_promise<promise_type> {
 *             task get_return_object();
 *             void return_void() noexcept {}
 *             void unhandled_exception() noexcept { std::terminate(); }
 *         };
 *         ...
 *     };
 *
 * What the mixin records (see corotop/probe.h for the probe itself):
 *   constructor     corotop_coro_open, probe_id = the coroutine frame address
 *   initial_suspend  a resume when the coroutine first runs, addr = its
 *                   resume function, an exact address (the _pc form:
 *                   symbolizes to the coroutine's name)
 *   every co_await  await_transform wraps the awaitable: a suspend just
 *                   before the inner await_suspend hands the coroutine away,
 *                   a resume first thing in await_resume; addr = the call
 *                   site of the co_await (await_transform is noinline, so its
 *                   return address lies in the coroutine body)
 *   final_suspend   a suspend, addr = the resume function (as saved at the
 *                   start: compilers clear it in the frame when done; the
 *                   _pc form again)
 *   destructor      corotop_coro_close
 *
 * A co_await that does not suspend (await_ready() true, or await_suspend
 * returning false or this very coroutine) records nothing or a matched
 * suspend/resume pair.  The suspend is recorded before the inner
 * await_suspend runs because, once that publishes the handle, another thread
 * may resume the coroutine at any moment; the wrapper touches nothing of its
 * own after the inner call returns.
 *
 * Overriding: a promise that defines its own initial_suspend, final_suspend
 * or await_transform hides the mixin's.  Such promises call trace_start(),
 * trace_final() or trace(awaitable) themselves; co_yield goes through
 * yield_value, not await_transform, so wrap its awaiter with trace() too.
 *
 * Long waits: corotop's lost-wakeup lint (WAKE?) flags a coroutine parked
 * longer than its threshold.  A co_await the program expects to last (an
 * idle connection's read) says so, and is not flagged:
 *     co_await corotop::long_wait(sock.read());   // this suspension
 *     promise.long_waits(true);                   // every one from now on
 * (corotop_coro_suspend_long and corotop_coro_set_long_waits in probe.h).
 *
 * Threads: a coroutine may be resumed on any thread; its records then come
 * from that thread, one at a time, which is all the probe asks.
 *
 * The probe is inert until corotop is there: when corotop started the
 * program (CTP_* environment), or when `corotop -p PID` attaches to it
 * later (its ppt rendezvous); until then every record above costs one
 * predictable branch.
 */
#ifndef COROTOP_CORO_HPP
#define COROTOP_CORO_HPP

#if !defined(__cpp_impl_coroutine) || __cpp_impl_coroutine < 201902L
#error "corotop/coro.hpp needs C++20 coroutines (-std=c++20)"
#endif

#include <coroutine>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#include "probe.h"

#if defined(__GNUC__)
#define COROTOP_CORO_NOINLINE __attribute__((noinline))
#define COROTOP_CORO_CALLER()                                                  \
	(static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(          \
		__builtin_return_address(0))))
#else
#define COROTOP_CORO_NOINLINE
#define COROTOP_CORO_CALLER() (std::uint64_t{0})
#endif

namespace corotop
{

namespace detail
{

template <class T>
concept has_member_co_await = requires(T &&t)
{
	static_cast<T &&>(t).operator co_await();
};

template <class T>
concept has_free_co_await = requires(T &&t)
{
	operator co_await(static_cast<T &&>(t));
};

/* The awaiter a co_await on t would use: operator co_await, or t itself. */
template <class T> decltype(auto) get_awaiter(T &&t)
{
	if constexpr (has_member_co_await<T>)
		return static_cast<T &&>(t).operator co_await();
	else if constexpr (has_free_co_await<T>)
		return operator co_await(static_cast<T &&>(t));
	else
		return static_cast<T &&>(t);
}

/*
 * How a traced_awaiter holds the inner awaiter: by reference when it is the
 * co_await operand itself (that lives until the end of the full expression,
 * which spans the suspension), by value when operator co_await made it.
 */
template <class T>
using awaiter_storage_t = std::conditional_t<std::is_reference_v<T>,
					     std::remove_reference_t<T> &, T>;

/* Address of the resume function, the first word of a GCC/Clang frame. */
inline std::uint64_t frame_entry(void *frame) noexcept
{
#if defined(__GNUC__)
	std::uintptr_t fn = 0;

	if (frame)
		std::memcpy(&fn, frame, sizeof(fn));
	return static_cast<std::uint64_t>(fn);
#else
	return static_cast<std::uint64_t>(
		reinterpret_cast<std::uintptr_t>(frame));
#endif
}

} // namespace detail

/*
 * co_await corotop::long_wait(x): x, whose suspension (if it suspends) is
 * expected to be long -- not a lost wakeup.  Holds x by reference: it is
 * the operand of the co_await, alive until the end of its full expression.
 */
template <class A> struct long_wait_t {
	A &&awaitable;
};

template <class A> long_wait_t<A> long_wait(A &&a) noexcept
{
	return long_wait_t<A>{static_cast<A &&>(a)};
}

namespace detail
{

template <class T> struct is_long_wait : std::false_type {
};
template <class A> struct is_long_wait<long_wait_t<A>> : std::true_type {
};

} // namespace detail

/* Wraps one awaiter: records the suspend and the resume around it. */
template <class Awaiter> class traced_awaiter
{
      public:
	/* A held reference binds to aw as an lvalue; a held value is
	 * initialized from aw forwarded (moved from operator co_await). */
	template <class A>
	traced_awaiter(A &&aw, corotop_coro *probe, std::uint64_t addr,
		       bool long_wait = false)
	    : aw_(static_cast<std::conditional_t<std::is_reference_v<Awaiter>,
						 Awaiter, A &&>>(aw)),
	      probe_(probe), addr_(addr), long_wait_(long_wait)
	{
	}

	bool await_ready()
	{
		return static_cast<bool>(aw_.await_ready());
	}

	template <class Promise>
	decltype(auto) await_suspend(std::coroutine_handle<Promise> h)
	{
		suspended_ = true;
		if (long_wait_)
			corotop_coro_suspend_long(probe_, addr_);
		else
			corotop_coro_suspend(probe_, addr_);
#if defined(__cpp_exceptions)
		try {
			return aw_.await_suspend(h);
		} catch (...) {
			/* The coroutine resumes to see the exception. */
			suspended_ = false;
			corotop_coro_resume(probe_, addr_);
			throw;
		}
#else
		return aw_.await_suspend(h);
#endif
	}

	decltype(auto) await_resume()
	{
		if (suspended_) {
			suspended_ = false;
			corotop_coro_resume(probe_, addr_);
		}
		return aw_.await_resume();
	}

      private:
	Awaiter aw_;
	corotop_coro *probe_;
	std::uint64_t addr_;
	bool long_wait_;
	bool suspended_ = false;
};

/*
 * The promise mixin.  Derived is the promise type itself (CRTP), so that
 * the mixin can find its coroutine frame with from_promise.
 */
template <class Derived> class traced_promise
{
      public:
	traced_promise() noexcept
	{
		/* from_promise only computes an address inside the frame, which
		 * is already allocated while Derived is being constructed. */
		corotop_coro_open(&probe_, frame_id());
	}

	~traced_promise()
	{
		corotop_coro_close(&probe_);
	}

	traced_promise(const traced_promise &) = delete;
	traced_promise &operator=(const traced_promise &) = delete;

	/* Suspended at birth; records the resume when first run. */
	auto initial_suspend() noexcept
	{
		struct awaiter {
			traced_promise *p;

			bool await_ready() const noexcept
			{
				return false;
			}
			void
			await_suspend(std::coroutine_handle<>) const noexcept
			{
			}
			void await_resume() const noexcept
			{
				p->trace_start();
			}
		};
		return awaiter{this};
	}

	/* Suspended at the end (the owner destroys the frame). */
	auto final_suspend() noexcept
	{
		struct awaiter {
			traced_promise *p;

			bool await_ready() const noexcept
			{
				return false;
			}
			void
			await_suspend(std::coroutine_handle<>) const noexcept
			{
				p->trace_final();
			}
			void await_resume() const noexcept
			{
			}
		};
		return awaiter{this};
	}

	/* Every co_await in the body comes through here (and
	 * co_await corotop::long_wait(x) marks x's suspension long). */
	template <class A> COROTOP_CORO_NOINLINE auto await_transform(A &&a)
	{
		return trace_at(std::forward<A>(a), COROTOP_CORO_CALLER());
	}

	/* Wrap an awaitable by hand (co_yield, custom await_transform). */
	template <class A> COROTOP_CORO_NOINLINE auto trace(A &&a)
	{
		return trace_at(std::forward<A>(a), COROTOP_CORO_CALLER());
	}

	/* Every suspension of this coroutine from now on is a long wait (or,
	 * false, none but those marked one by one). */
	void long_waits(bool on) noexcept
	{
		corotop_coro_set_long_waits(&probe_, on);
	}

	/* The records, for promises that override the hooks above. */
	void trace_start() noexcept
	{
		entry_ = detail::frame_entry(frame());
		/* An entry, not a return address: named at itself. */
		corotop_coro_resume_pc(&probe_, entry_);
	}
	void trace_final() noexcept
	{
		/* The frame's resume pointer is cleared by now. */
		corotop_coro_suspend_pc(&probe_, entry_);
	}
	void trace_resume(std::uint64_t addr) noexcept
	{
		corotop_coro_resume(&probe_, addr);
	}
	void trace_suspend(std::uint64_t addr) noexcept
	{
		corotop_coro_suspend(&probe_, addr);
	}

	/* The coroutine frame's address: the probe_id of this coroutine. */
	std::uint64_t frame_id() noexcept
	{
		return static_cast<std::uint64_t>(
			reinterpret_cast<std::uintptr_t>(frame()));
	}

	corotop_coro *probe() noexcept
	{
		return &probe_;
	}

      private:
	void *frame() noexcept
	{
		return std::coroutine_handle<Derived>::from_promise(
			       static_cast<Derived &>(*this))
			.address();
	}

	template <class A> auto trace_at(A &&a, std::uint64_t addr)
	{
		if constexpr (detail::is_long_wait<std::remove_cv_t<
				      std::remove_reference_t<A>>>::value) {
			auto &&inner_a = a.awaitable;
			using B = decltype(a.awaitable);
			using inner = decltype(detail::get_awaiter(
				static_cast<B &&>(inner_a)));
			using held = detail::awaiter_storage_t<inner>;

			return traced_awaiter<held>(
				detail::get_awaiter(static_cast<B &&>(inner_a)),
				&probe_, addr, true);
		} else {
			using inner = decltype(detail::get_awaiter(
				std::forward<A>(a)));
			using held = detail::awaiter_storage_t<inner>;

			return traced_awaiter<held>(
				detail::get_awaiter(std::forward<A>(a)),
				&probe_, addr);
		}
	}

	corotop_coro probe_;
	std::uint64_t entry_ = 0; /* resume function, saved by trace_start */
};

} // namespace corotop

#endif
