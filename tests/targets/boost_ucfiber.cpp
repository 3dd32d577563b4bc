/*
 * boost-ucfiber: boost::context::fiber on Boost.Context's own ucontext
 * backend (BOOST_USE_UCONTEXT, fiber_ucontext.hpp), which makes each
 * fiber with makecontext(&uctx, entry, 1, record) -- a pointer argument.
 *
 *   boost-ucfiber
 *
 * Resumes a fiber 10 times; the fiber counts its runs through a pointer it
 * captured.  Prints "resumed 10 times, the fiber counted 10"; exit 0.
 *
 * Debian's libboost_context is built for fcontext, so the one function
 * the ucontext backend keeps in the library, the thread's current
 * activation record, is defined here: a record of the thread's own
 * context, made the first time it is asked for.
 */
#define BOOST_USE_UCONTEXT
#include <boost/context/fiber.hpp>

#include <cstdio>
#include <utility>

namespace boost {
namespace context {
namespace detail {

fiber_activation_record *&fiber_activation_record::current() noexcept
{
	thread_local fiber_activation_record *rec = nullptr;

	if (!rec)
		rec = new fiber_activation_record();
	return rec;
}

} // namespace detail
} // namespace context
} // namespace boost

int main()
{
	namespace ctx = boost::context;
	int n = 0;
	ctx::fiber f{[&n](ctx::fiber &&m) {
		for (;;) {
			++n;
			m = std::move(m).resume();
		}
		return std::move(m);
	}};

	for (int i = 0; i < 10; i++)
		f = std::move(f).resume();
	std::printf("resumed 10 times, the fiber counted %d\n", n);
	return n == 10 ? 0 : 1;
}
