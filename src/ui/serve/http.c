/*
 * http: libmicrohttpd under corotop serve.
 *
 * Why libmicrohttpd: Debian ships it (libmicrohttpd-dev), it is GNU's
 * maintained embedded HTTP server, it parses requests itself under limits
 * we set, and its threads never need ours.
 *
 * The limits, so that slow, many or malformed clients cannot hurt:
 *   - a thread per connection, so a client that sends nothing, or reads a
 *     large /snapshot slowly, holds only its own thread (never a lock the
 *     engine takes: sources copy what they serve);
 *   - at most `connections` at once and `per_ip` from one address, and a
 *     whole request within `deadline_s` of the connection's arrival: the
 *     gate (gate.c) shuts the oldest connections still waiting for their
 *     request to make room, so slow clients cannot lock honest scrapes
 *     out (the library's own limits, which refuse at accept, are set
 *     HTTP_SLACK times as high so that it never refuses first, even while
 *     a burst of shut connections waits for its threads to close them);
 *   - a connection idle for `timeout_s` is closed;
 *   - the request line and headers live in `request_bytes` per
 *     connection: a longer request is answered by the library (431/414)
 *     and closed;
 *   - GET and HEAD only, three paths (route.c); a request body is never
 *     read.
 */
#define _GNU_SOURCE
#include "ui/serve/http.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <microhttpd.h>

#include "ui/serve/auth.h"
#include "ui/serve/gate.h"
#include "ui/serve/route.h"

/* The library's limits and the gate's slots, per connection kept. */
enum { HTTP_SLACK = 4 };

struct http {
	struct MHD_Daemon *d;
	struct gate *gate;
	struct auth *auth; /* NULL: no basic auth */
	bool tls;
	struct http_source src;
	uint16_t port;
	char address[80];
};

void http_config_defaults(struct http_config *c)
{
	*c = (struct http_config){
		.listen = HTTP_LISTEN_DEFAULT,
		.connections = 64,
		.per_ip = 32,
		.timeout_s = 10,
		.deadline_s = 5,
		.request_bytes = 16 * 1024,
	};
}

/* A loopback address: 127.0.0.0/8, ::1, or ::ffff:127.x.y.z. */
static bool http_loopback(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *a = (const struct sockaddr_in *)ss;

		return (ntohl(a->sin_addr.s_addr) >> 24) == 127;
	}
	if (ss->ss_family == AF_INET6) {
		const struct in6_addr *a =
			&((const struct sockaddr_in6 *)ss)->sin6_addr;

		return IN6_IS_ADDR_LOOPBACK(a) ||
		       (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
	}
	return false;
}

/* "ADDR:PORT" or "[ADDR6]:PORT" into *ss; false with why. */
static bool http_parse_listen(const char *s, struct sockaddr_storage *ss,
			      socklen_t *sslen, char *err, size_t errlen)
{
	char host[64], port[8];
	const char *colon = strrchr(s, ':'), *h = s;
	size_t hlen;
	struct addrinfo hints = {0}, *res = NULL;
	int rc;

	if (!colon || !colon[1] || strlen(colon + 1) >= sizeof(port) ||
	    strspn(colon + 1, "0123456789") != strlen(colon + 1)) {
		snprintf(err, errlen,
			 "--listen expects ADDR:PORT (127.0.0.1:9464, "
			 "[::1]:9464), got '%s'",
			 s);
		return false;
	}
	hlen = (size_t)(colon - s);
	if (hlen >= 2 && s[0] == '[' && s[hlen - 1] == ']') {
		h = s + 1;
		hlen -= 2;
	}
	if (!hlen || hlen >= sizeof(host)) {
		snprintf(err, errlen,
			 "--listen '%s': give the address to bind "
			 "(0.0.0.0:PORT for every IPv4 address)",
			 s);
		return false;
	}
	memcpy(host, h, hlen);
	host[hlen] = '\0';
	snprintf(port, sizeof(port), "%s", colon + 1);
	if (atoi(port) > 65535) {
		snprintf(err, errlen, "--listen '%s': no port %s", s, port);
		return false;
	}
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV | AI_NUMERICHOST;
	rc = getaddrinfo(host, port, &hints, &res);
	if (rc || !res) {
		snprintf(err, errlen,
			 "--listen '%s': '%s' is not a numeric IPv4 or IPv6 "
			 "address (%s)",
			 s, host, gai_strerror(rc));
		return false;
	}
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	*sslen = res->ai_addrlen;
	freeaddrinfo(res);
	return true;
}

/* Queue response r (NULL: out of memory) with its headers. */
static enum MHD_Result http_queue(struct MHD_Connection *conn,
				  struct MHD_Response *r, unsigned status,
				  const char *type, bool allow)
{
	enum MHD_Result ret;

	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	if (allow)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	ret = MHD_queue_response(conn, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result http_reply(struct MHD_Connection *conn, unsigned status,
				  const char *type, char *body, size_t len,
				  bool allow)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(
		len, body, MHD_RESPMEM_MUST_FREE);

	if (!r)
		free(body);
	return http_queue(conn, r, status, type, allow);
}

/* A shared body: released when the library is done with the answer. */
static enum MHD_Result http_reply_shared(struct MHD_Connection *conn,
					 const char *type,
					 const struct http_body *b)
{
	struct MHD_Response *r =
		MHD_create_response_from_buffer_with_free_callback_cls(
			b->len, (void *)(uintptr_t)b->data, b->release, b->cls);

	if (!r)
		b->release(b->cls);
	return http_queue(conn, r, 200, type, false);
}

static enum MHD_Result http_text(struct MHD_Connection *conn, unsigned status,
				 const char *text, bool allow)
{
	char *body = strdup(text);

	if (!body)
		return MHD_NO;
	return http_reply(conn, status, "text/plain; charset=utf-8", body,
			  strlen(body), allow);
}

/* A connection starts or closes: the gate's books (gate.h). */
static void http_notify(void *cls, struct MHD_Connection *conn, void **ctx,
			enum MHD_ConnectionNotificationCode toe)
{
	struct http *h = cls;
	const union MHD_ConnectionInfo *fd, *addr;

	if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
		gate_leave(h->gate, (uintptr_t)*ctx);
		return;
	}
	fd = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	addr = MHD_get_connection_info(conn,
				       MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	*ctx = fd ? (void *)gate_enter(h->gate, fd->connect_fd,
				       addr ? addr->client_addr : NULL)
		  : NULL;
}

/* The request's basic-auth credentials are a user's (auth.c). */
static bool http_authorized(struct http *h, struct MHD_Connection *conn)
{
	char *pass = NULL;
	char *user = MHD_basic_auth_get_username_password(conn, &pass);
	bool ok = auth_check(h->auth, user, pass);

	if (pass) {
		memset(pass, 0, strlen(pass));
		MHD_free(pass);
	}
	if (user)
		MHD_free(user);
	return ok;
}

static enum MHD_Result http_unauthorized(struct MHD_Connection *conn)
{
	static const char text[] = "unauthorized\n";
	struct MHD_Response *r = MHD_create_response_from_buffer(
		sizeof(text) - 1, (void *)(uintptr_t)text,
		MHD_RESPMEM_PERSISTENT);
	enum MHD_Result ret;

	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
				"text/plain; charset=utf-8");
	ret = MHD_queue_basic_auth_fail_response(conn, "corotop", r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result http_answer(void *cls, struct MHD_Connection *conn,
				   const char *url, const char *method,
				   const char *version, const char *upload,
				   size_t *upload_size, void **con_cls)
{
	struct http *h = cls;
	const char *accept = MHD_lookup_connection_value(
		conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT);
	struct route r = route_request(method, url, accept);
	const union MHD_ConnectionInfo *sc = MHD_get_connection_info(
		conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	const char *why;
	char *body = NULL;
	size_t len = 0;

	/* The request is whole: no deadline, never evicted from now on. */
	if (sc)
		gate_answered(h->gate, (uintptr_t)sc->socket_context);
	if (h->auth && !http_authorized(h, conn))
		return http_unauthorized(conn);

	(void)version;
	(void)upload;
	(void)upload_size;
	(void)con_cls;
	switch (r.kind) {
	case ROUTE_NOT_FOUND:
		return http_text(conn, 404,
				 "not found: corotop serve has /metrics, "
				 "/snapshot and /healthz\n",
				 false);
	case ROUTE_METHOD_NOT_ALLOWED:
		return http_text(conn, 405, "method not allowed: GET or HEAD\n",
				 true);
	case ROUTE_HEALTHZ:
		why = h->src.unhealthy(h->src.ctx);
		if (!why)
			return http_text(conn, 200, "ok\n", false);
		if (asprintf(&body, "engine error: %s\n", why) < 0)
			return MHD_NO;
		return http_reply(conn, 503, "text/plain; charset=utf-8", body,
				  strlen(body), false);
	case ROUTE_METRICS:
		if (!h->src.metrics(h->src.ctx, r.fmt, &body, &len))
			return http_text(conn, 503, "no metrics yet\n", false);
		return http_reply(conn, 200, metrics_content_type(r.fmt), body,
				  len, false);
	case ROUTE_SNAPSHOT: {
		struct http_body b;

		if (!h->src.snapshot(h->src.ctx, &b))
			return http_text(conn, 503, "no snapshot yet\n", false);
		return http_reply_shared(conn, "application/json", &b);
	}
	}
	return MHD_NO;
}

struct http *http_create(const struct http_config *c,
			 const struct http_source *src, bool *usage, char *err,
			 size_t errlen)
{
	struct sockaddr_storage ss;
	socklen_t sslen = 0;
	struct http *h;
	const union MHD_DaemonInfo *info;
	unsigned flags = MHD_USE_THREAD_PER_CONNECTION |
			 MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL |
			 MHD_USE_ITC;
	char host[64] = "";

	*usage = false;
	if (!http_parse_listen(c->listen, &ss, &sslen, err, errlen)) {
		*usage = true;
		return NULL;
	}
	/* Other machines only on purpose: --web-config, with TLS unless it
	 * says plaintext explicitly. */
	if (!http_loopback(&ss) && !c->web) {
		snprintf(err, errlen,
			 "--listen %s: not a loopback address; whoever could "
			 "reach it would read, with no password, the target's "
			 "code and heap addresses (which defeat ASLR), its "
			 "thread ids, coroutine names and parked stacks.  "
			 "Serve on 127.0.0.1 or [::1], or give --web-config "
			 "FILE (TLS and basic auth, as Prometheus exporters "
			 "read it)",
			 c->listen);
		*usage = true;
		return NULL;
	}
	if (!http_loopback(&ss) && !c->web->cert_pem &&
	    !c->web->allow_plaintext) {
		snprintf(err, errlen,
			 "--listen %s: not a loopback address, and the "
			 "--web-config file has no tls_server_config: "
			 "credentials and data would cross the network in "
			 "plain text (say allow_plaintext: true in it to do "
			 "that all the same)",
			 c->listen);
		*usage = true;
		return NULL;
	}
	h = calloc(1, sizeof(*h));
	if (!h) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	h->src = *src;
	h->tls = c->web && c->web->cert_pem;
	if (c->web && c->web->nusers && !(h->auth = auth_create(c->web))) {
		snprintf(err, errlen, "out of memory");
		free(h);
		return NULL;
	}
	h->gate = gate_create(HTTP_SLACK * c->connections, c->connections,
			      c->per_ip, (uint64_t)c->deadline_s * 1000000000u);
	if (!h->gate) {
		snprintf(err, errlen, "out of memory");
		auth_destroy(h->auth);
		free(h);
		return NULL;
	}
	if (ss.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	if (h->tls && MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) {
		snprintf(err, errlen,
			 "this libmicrohttpd was built without TLS: "
			 "tls_server_config cannot be served");
		gate_destroy(h->gate);
		auth_destroy(h->auth);
		free(h);
		return NULL;
	}
	{
		struct MHD_OptionItem tls[] = {
			{MHD_OPTION_HTTPS_MEM_CERT, 0,
			 h->tls ? c->web->cert_pem : NULL},
			{MHD_OPTION_HTTPS_MEM_KEY, 0,
			 h->tls ? c->web->key_pem : NULL},
			{MHD_OPTION_END, 0, NULL},
		};

		if (h->tls)
			flags |= MHD_USE_TLS;
		else
			tls[0].option = MHD_OPTION_END;
		h->d = MHD_start_daemon(
			flags, 0, NULL, NULL, http_answer, h,
			MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
			MHD_OPTION_CONNECTION_LIMIT,
			HTTP_SLACK * c->connections,
			MHD_OPTION_PER_IP_CONNECTION_LIMIT,
			HTTP_SLACK * c->connections,
			MHD_OPTION_NOTIFY_CONNECTION, http_notify, h,
			MHD_OPTION_CONNECTION_TIMEOUT, c->timeout_s,
			MHD_OPTION_CONNECTION_MEMORY_LIMIT, c->request_bytes,
			MHD_OPTION_THREAD_STACK_SIZE, (size_t)1 << 20,
			MHD_OPTION_ARRAY, tls, MHD_OPTION_END);
	}
	if (!h->d) {
		snprintf(err, errlen,
			 h->tls ? "cannot listen on %s (in use, not an address "
				  "of this machine, or a certificate and key "
				  "that do not load?)"
				: "cannot listen on %s (in use, or not an "
				  "address of this machine?)",
			 c->listen);
		gate_destroy(h->gate);
		auth_destroy(h->auth);
		free(h);
		return NULL;
	}
	info = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);
	h->port = info ? info->port : 0;
	if (ss.ss_family == AF_INET6)
		inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&ss)->sin6_addr,
			  host, sizeof(host));
	else
		inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, host,
			  sizeof(host));
	snprintf(h->address, sizeof(h->address),
		 ss.ss_family == AF_INET6 ? "[%s]:%u" : "%s:%u", host,
		 (unsigned)h->port);
	return h;
}

uint16_t http_port(const struct http *h)
{
	return h->port;
}

const char *http_address(const struct http *h)
{
	return h->address;
}

const char *http_scheme(const struct http *h)
{
	return h->tls ? "https" : "http";
}

void http_sweep(struct http *h)
{
	(void)gate_sweep(h->gate);
}

void http_destroy(struct http *h)
{
	if (!h)
		return;
	MHD_stop_daemon(h->d);
	gate_destroy(h->gate);
	auth_destroy(h->auth);
	free(h);
}
