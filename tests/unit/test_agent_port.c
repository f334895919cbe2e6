/* Unit tests: PROTO_PORT end to end without a guest: libcove's
 * cove_port_on() on one end of a socket pair, cove-agent's
 * agent_serve_conn() on the other (as over vsock), and real TCP servers on
 * this machine's loopback.  Also the request's parser. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clock.h"
#include "guest-agent/agent.h"
#include "guest-agent/request.h"
#include "lib/agent/port.h"
#include "proto.h"
#include "unit.h"

struct agent {
	int host, guest;
	pthread_t t;
	int result;
};

static const struct agent_config cfg = { 0 };

static void *agent_main(void *arg)
{
	struct agent *a = arg;
	a->result = agent_serve_conn(a->guest, &cfg);
	close(a->guest);
	return NULL;
}

static void agent_open(struct agent *a)
{
	int sv[2];
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	a->host = sv[0];
	a->guest = sv[1];
	ck_assert_int_eq(pthread_create(&a->t, NULL, agent_main, a), 0);
}

static int agent_close(struct agent *a)
{
	close(a->host);
	pthread_join(a->t, NULL);
	return a->result;
}

/* A loopback TCP server taking one connection: it says hello first (when
 * banner), reads to the end of the stream, then answers "got N: <what
 * came>" and closes. */
struct server {
	int lfd;
	uint16_t port;
	bool banner;
	pthread_t t;
};

static void *server_main(void *arg)
{
	struct server *s = arg;
	int fd = accept(s->lfd, NULL, NULL);
	if (fd < 0)
		return NULL;
	if (s->banner)
		(void)!write(fd, "hello\n", 6);
	static char in[1 << 20];
	size_t n = 0;
	ssize_t k;
	while (n < sizeof(in) && (k = read(fd, in + n, sizeof(in) - n)) > 0)
		n += (size_t)k;
	char head[64];
	int hl = snprintf(head, sizeof(head), "got %zu: ", n);
	(void)!write(fd, head, (size_t)hl);
	size_t off = 0;
	while (off < n && (k = write(fd, in + off, n - off)) > 0)
		off += (size_t)k;
	close(fd);
	return NULL;
}

static void server_start(struct server *s, bool banner)
{
	s->banner = banner;
	s->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET,
		                  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	ck_assert_int_eq(bind(s->lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(listen(s->lfd, 4), 0);
	socklen_t l = sizeof(sa);
	getsockname(s->lfd, (struct sockaddr *)&sa, &l);
	s->port = ntohs(sa.sin_port);
	ck_assert_int_eq(pthread_create(&s->t, NULL, server_main, s), 0);
}

static void server_stop(struct server *s)
{
	pthread_join(s->t, NULL);
	close(s->lfd);
}

/* free_port() - a loopback port nothing listens on (bound, then let go). */
static uint16_t free_port(void)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET,
		                  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	socklen_t l = sizeof(sa);
	getsockname(fd, (struct sockaddr *)&sa, &l);
	close(fd);
	return ntohs(sa.sin_port);
}

static size_t read_all(int fd, char *buf, size_t max)
{
	size_t n = 0;
	for (;;) {
		struct pollfd f = { .fd = fd, .events = POLLIN };
		ck_assert_int_eq(poll(&f, 1, 10000), 1);
		ssize_t k = read(fd, buf + n, max - n);
		ck_assert_int_ge(k, 0);
		if (k == 0 || (n += (size_t)k) == max)
			return n;
	}
}

static void setup(void)
{
	signal(SIGPIPE, SIG_IGN);
}

START_TEST(parse)
{
	struct proto_hdr h = { .type = PROTO_PORT, .id = 3 };
	struct agent_req req;
	char err[256];
	const char *good = "{\"port\":8000}";
	h.len = (uint32_t)strlen(good);
	ck_assert_int_eq(agent_req_parse(&h, (const uint8_t *)good, &req, err, sizeof(err)), 0);
	ck_assert_int_eq(req.u.port.port, 8000);
	ck_assert_int_eq(req.u.port.timeout_ms, AGENT_PORT_TIMEOUT_DEFAULT);
	agent_req_free(&req);
	const char *t = "{\"port\":65535,\"timeout_ms\":60000}";
	h.len = (uint32_t)strlen(t);
	ck_assert_int_eq(agent_req_parse(&h, (const uint8_t *)t, &req, err, sizeof(err)), 0);
	ck_assert_int_eq(req.u.port.port, 65535);
	ck_assert_int_eq(req.u.port.timeout_ms, 60000);
	agent_req_free(&req);
	const char *bad[] = { "{}",
		              "{\"port\":null}",
		              "{\"port\":0}",
		              "{\"port\":65536}",
		              "{\"port\":-1}",
		              "{\"port\":\"80\"}",
		              "{\"port\":80.0}",
		              "{\"port\":80,\"timeout_ms\":0}",
		              "{\"port\":80,\"timeout_ms\":60001}",
		              "[80]",
		              NULL };
	for (int i = 0; bad[i]; i++) {
		h.len = (uint32_t)strlen(bad[i]);
		ck_assert_msg(
		    agent_req_parse(&h, (const uint8_t *)bad[i], &req, err, sizeof(err)) == -EPROTO,
		    "%s", bad[i]);
		agent_req_free(&req);
	}
}
END_TEST

START_TEST(nothing_listening)
{
	struct agent a;
	agent_open(&a);
	char err[256];
	int64_t t0 = mono_ms();
	int r = cove_port_on(a.host, free_port(), 0, mono_ms() + 10000, err, sizeof(err));
	ck_assert_int_eq(r, -ECONNREFUSED);
	ck_assert_msg(strstr(err, "nothing listens on port"), "%s", err);
	ck_assert_int_lt(mono_ms() - t0, 1000);
	/* The connection goes on: another request works on it. */
	struct server s;
	server_start(&s, false);
	ck_assert_int_eq(cove_port_on(a.host, s.port, 0, mono_ms() + 10000, err, sizeof(err)), 0);
	shutdown(a.host, SHUT_WR);
	char buf[64];
	size_t n = read_all(a.host, buf, sizeof(buf));
	ck_assert_uint_eq(n, 7);
	ck_assert_mem_eq(buf, "got 0: ", 7);
	server_stop(&s);
	/* After a pipe the agent's end closes: no frame is ever sent on it. */
	ck_assert_int_eq(agent_close(&a), -ECONNRESET);
	ck_assert_int_eq(cove_port_on(-1, 0, 0, 0, err, sizeof(err)), -EINVAL);
	ck_assert_int_eq(cove_port_on(-1, 80, 60001, 0, err, sizeof(err)), -EINVAL);
}
END_TEST

START_TEST(both_ways_half_close)
{
	struct agent a;
	agent_open(&a);
	struct server s;
	server_start(&s, true);
	char err[256];
	ck_assert_int_eq(cove_port_on(a.host, s.port, 500, mono_ms() + 10000, err, sizeof(err)), 0);
	/* The server spoke first: its bytes follow the OK, none lost. */
	char buf[8];
	ck_assert_uint_eq(read_all(a.host, buf, 6), 6);
	ck_assert_mem_eq(buf, "hello\n", 6);
	size_t n = 300 * 1024;
	char *data = malloc(n), *got = malloc(n + 64);
	for (size_t i = 0; i < n; i++)
		data[i] = (char)('a' + i % 26);
	size_t off = 0;
	while (off < n) {
		ssize_t k = write(a.host, data + off, n - off);
		ck_assert_int_gt(k, 0);
		off += (size_t)k;
	}
	/* Our end of stream reaches the server as its end of stream. */
	shutdown(a.host, SHUT_WR);
	size_t g = read_all(a.host, got, n + 64);
	ck_assert_uint_eq(g, n + strlen("got 307200: "));
	ck_assert_mem_eq(got, "got 307200: ", 12);
	ck_assert_mem_eq(got + 12, data, n);
	server_stop(&s);
	ck_assert_int_eq(agent_close(&a), -ECONNRESET);
	free(data);
	free(got);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("agent_port");
	TCase *t = tcase_create("agent_port");
	tcase_add_checked_fixture(t, setup, NULL);
	tcase_set_timeout(t, 60);
	tcase_add_test(t, parse);
	tcase_add_test(t, nothing_listening);
	tcase_add_test(t, both_ways_half_close);
	suite_add_tcase(s, t);
	return s;
}

UNIT_MAIN()
