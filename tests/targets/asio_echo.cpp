/*
 * asio-echo: an echo server on boost::asio::spawn, in the shape of
 * Boost's own spawn echo_server -- one acceptor coroutine, and one
 * coroutine per connection that echoes until the client closes, then ends.
 * Boost 1.74's spawn runs on Boost.Coroutine (v1): a finished coroutine
 * jumps back with a plain jump_fcontext, and its malloc'd stack is freed
 * afterwards.  corotop traces it through the preload, unmodified.
 *
 *   asio-echo
 *       listens on 127.0.0.1, an ephemeral port; prints "listening PORT"
 *       and serves until SIGTERM or SIGINT (then exits 0).
 */
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/spawn.hpp>
#include <boost/asio/write.hpp>
#include <cstdio>

using boost::asio::ip::tcp;

static void echo(tcp::socket &s, boost::asio::yield_context yield)
{
	char data[256];
	boost::system::error_code ec;

	for (;;) {
		std::size_t n =
			s.async_read_some(boost::asio::buffer(data), yield[ec]);
		if (ec)
			return;
		boost::asio::async_write(s, boost::asio::buffer(data, n),
					 yield[ec]);
		if (ec)
			return;
	}
}

int main()
{
	boost::asio::io_context io;
	tcp::acceptor acc(
		io,
		tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), 0));
	boost::asio::signal_set sigs(io, SIGINT, SIGTERM);

	sigs.async_wait([&](const boost::system::error_code &, int) {
		acc.close();
		io.stop();
	});
	std::printf("listening %d\n", (int)acc.local_endpoint().port());
	std::fflush(stdout);
	boost::asio::spawn(io, [&](boost::asio::yield_context yield) {
		for (;;) {
			boost::system::error_code ec;
			tcp::socket s(io);

			acc.async_accept(s, yield[ec]);
			if (ec)
				return;
			boost::asio::spawn(
				io,
				[s = std::move(s)](
					boost::asio::yield_context y) mutable {
					echo(s, y);
				});
		}
	});
	io.run();
	return 0;
}
