/* Unit tests: coved's ports room (daemon/ports/ports.c) behind a real
 * libmicrohttpd daemon, with stand-ins for the sandbox table and for
 * cove_port_open (here a plain connection to a "guest" server on this
 * machine's loopback).  What a client sees: answers relayed with their
 * headers and bodies (lengths, chunks, streams), uploads, upgrades with
 * bytes both ways, 502 for a port with nothing listening, the access
 * rules, and the busy count back to zero. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clock.h"
#include "daemon/http/reply.h"
#include "daemon/ports/ports.h"
#include "daemon/sandboxes/sandbox.h"
#include "daemon/sandboxes/state.h"
#include "daemon/sandboxes/table.h"
#include "errf.h"
#include "unit.h"

/* ---- stand-ins for the sandbox table and libcove ------------------------ */

struct coved_sb {
	int unused;
};
static struct coved_sb the_sb;
static struct coved_tenant tenant_a = { .name = "a" }, tenant_b = { .name = "b" };
static bool restricted;
static atomic_int busy_count, refs;

struct coved_sb *coved_sb_find(struct coved *d, const char *id)
{
	(void)d;
	if (strcmp(id, "sbx1") != 0)
		return NULL;
	atomic_fetch_add(&refs, 1);
	return &the_sb;
}
struct coved_sb *coved_sb_ref(struct coved_sb *sb)
{
	atomic_fetch_add(&refs, 1);
	return sb;
}
void coved_sb_unref(struct coved_sb *sb)
{
	(void)sb;
	atomic_fetch_sub(&refs, 1);
}
const char *coved_sb_id(const struct coved_sb *sb)
{
	(void)sb;
	return "sbx1";
}
bool coved_sb_owned(const struct coved_sb *sb, const struct coved_tenant *t)
{
	(void)sb;
	return t == &tenant_a;
}
bool coved_sb_token_ok(const struct coved_sb *sb, const char *token)
{
	(void)sb;
	return token && strcmp(token, "access-token") == 0;
}
bool coved_sb_restricted(const struct coved_sb *sb)
{
	(void)sb;
	return restricted;
}
bool coved_sb_traffic_ok(const struct coved_sb *sb, const char *token)
{
	(void)sb;
	return restricted && token && strcmp(token, "traffic-token") == 0;
}
int coved_sb_wake(struct coved_sb *sb, char *msg, size_t len)
{
	(void)sb;
	(void)msg;
	(void)len;
	return 0;
}
struct cove_sandbox *coved_sb_cove(struct coved_sb *sb)
{
	return (struct cove_sandbox *)sb;
}
void coved_sb_busy(struct coved_sb *sb)
{
	(void)sb;
	atomic_fetch_add(&busy_count, 1);
}
void coved_sb_unbusy(struct coved_sb *sb)
{
	(void)sb;
	atomic_fetch_sub(&busy_count, 1);
}
void coved_metric_bump(struct coved *d, uint64_t *counter)
{
	(void)d;
	__atomic_add_fetch(counter, 1, __ATOMIC_SEQ_CST);
}
int cove_port_open(struct cove_sandbox *sb, unsigned int port, unsigned int connect_ms, char *err,
                   size_t errlen)
{
	(void)sb;
	(void)connect_ms;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET,
		                  .sin_port = htons((uint16_t)port),
		                  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int e = errno;
		close(fd);
		return errf(err, errlen, -e,
		            e == ECONNREFUSED ? "nothing listens on port %u"
		                              : "cannot connect to %u",
		            port);
	}
	return fd;
}

/* ---- coved's side: a daemon whose every request goes to the room ------- */

static struct coved d;
static struct MHD_Daemon *mhd;
static uint16_t mhd_port;
static __thread char raw[RELAY_TARGET_MAX + 1];

struct treq {
	struct ports_route rt;
	void *cls;
};

static void *on_uri(void *cls, const char *uri, struct MHD_Connection *c)
{
	(void)cls;
	(void)c;
	snprintf(raw, sizeof(raw), "%s", uri);
	return NULL;
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *c, const char *url,
                               const char *method, const char *version, const char *upload,
                               size_t *size, void **req_cls)
{
	(void)cls;
	(void)url;
	(void)version;
	struct treq *r = *req_cls;
	if (r)
		return ports_handle(&d, &r->rt, NULL, NULL, false, c, method, upload, size,
		                    &r->cls);
	r = calloc(1, sizeof(*r));
	*req_cls = r;
	char msg[300];
	int st = ports_route(&d, c, &r->rt, msg, sizeof(msg));
	if (st)
		return coved_json_error(c, (unsigned)st, msg);
	if (r->rt.kind != PORTS_FORWARD)
		return coved_json_error(c, 418, "not a port's");
	const char *key = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-API-Key");
	struct coved_tenant *t = !key                    ? NULL
	                         : !strcmp(key, "key-a") ? &tenant_a
	                         : !strcmp(key, "key-b") ? &tenant_b
	                                                 : NULL;
	return ports_handle(&d, &r->rt, raw, t, key != NULL, c, method, upload, size, &r->cls);
}

static void on_done(void *cls, struct MHD_Connection *c, void **req_cls,
                    enum MHD_RequestTerminationCode toe)
{
	(void)cls;
	(void)c;
	(void)toe;
	struct treq *r = *req_cls;
	if (!r)
		return;
	ports_request_done(&r->cls);
	free(r);
	*req_cls = NULL;
}

static void setup(void)
{
	signal(SIGPIPE, SIG_IGN);
	memset(&d, 0, sizeof(d));
	d.cfg.max_requests = 64;
	d.cfg.port_idle_s = 10;
	d.cfg.ports_public = true;
	d.cfg.domain = "cove.test";
	restricted = false;
	ck_assert_int_eq(ports_init(&d), 0);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET,
		                  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(listen(fd, 64), 0);
	socklen_t l = sizeof(sa);
	getsockname(fd, (struct sockaddr *)&sa, &l);
	mhd_port = ntohs(sa.sin_port);
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION |
	                 MHD_ALLOW_UPGRADE | MHD_USE_ERROR_LOG;
	mhd = MHD_start_daemon(flags, 0, NULL, NULL, handler, NULL, MHD_OPTION_LISTEN_SOCKET, fd,
	                       MHD_OPTION_NOTIFY_COMPLETED, on_done, NULL,
	                       MHD_OPTION_URI_LOG_CALLBACK, on_uri, NULL, MHD_OPTION_END);
	ck_assert_ptr_nonnull(mhd);
}

static void teardown(void)
{
	ports_stop();
	MHD_stop_daemon(mhd);
}

/* ---- the "guest": one server thread per test --------------------------- */

struct guest {
	int lfd;
	uint16_t port;
	void (*serve)(struct guest *g, int fd);
	char head[8192]; /* the request head it got */
	pthread_t t;
};

/* read_head() - until the blank line; the head (NUL-ended) into buf. */
static size_t read_head(int fd, char *buf, size_t max)
{
	size_t n = 0;
	while (n + 1 < max) {
		ssize_t k = read(fd, buf + n, 1);
		if (k <= 0)
			break;
		n++;
		if (n >= 4 && !memcmp(buf + n - 4, "\r\n\r\n", 4))
			break;
	}
	buf[n] = 0;
	return n;
}

static void write_str(int fd, const char *s)
{
	size_t n = strlen(s), off = 0;
	while (off < n) {
		ssize_t k = write(fd, s + off, n - off);
		if (k <= 0)
			return;
		off += (size_t)k;
	}
}

static void *guest_main(void *arg)
{
	struct guest *g = arg;
	int fd = accept(g->lfd, NULL, NULL);
	if (fd >= 0) {
		read_head(fd, g->head, sizeof(g->head));
		g->serve(g, fd);
		close(fd);
	}
	return NULL;
}

static void guest_start(struct guest *g, void (*serve)(struct guest *, int))
{
	memset(g, 0, sizeof(*g));
	g->serve = serve;
	g->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET,
		                  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	ck_assert_int_eq(bind(g->lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(listen(g->lfd, 4), 0);
	socklen_t l = sizeof(sa);
	getsockname(g->lfd, (struct sockaddr *)&sa, &l);
	g->port = ntohs(sa.sin_port);
	ck_assert_int_eq(pthread_create(&g->t, NULL, guest_main, g), 0);
}

static void guest_stop(struct guest *g)
{
	shutdown(g->lfd, SHUT_RDWR);
	pthread_join(g->t, NULL);
	close(g->lfd);
}

/* ---- the client --------------------------------------------------------- */

static int dial(void)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET,
		                  .sin_port = htons(mhd_port),
		                  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	return fd;
}

/* request() - one request (Connection: close), the whole answer back. */
static char *request(const char *text, size_t *len)
{
	int fd = dial();
	write_str(fd, text);
	size_t cap = 1 << 20, n = 0;
	char *buf = malloc(cap + 1);
	for (;;) {
		struct pollfd f = { .fd = fd, .events = POLLIN };
		ck_assert_int_eq(poll(&f, 1, 10000), 1);
		ssize_t k = read(fd, buf + n, cap - n);
		if (k <= 0)
			break;
		n += (size_t)k;
	}
	close(fd);
	buf[n] = 0;
	if (len)
		*len = n;
	return buf;
}

static int status_of(const char *answer)
{
	return strncmp(answer, "HTTP/1.1 ", 9) == 0 ? atoi(answer + 9) : -1;
}

static char *req_text(const char *first, const char *headers)
{
	char *t = malloc(4096);
	snprintf(t, 4096, "%s\r\n%s%sConnection: close\r\n\r\n", first,
	         strstr(headers, "Host:") ? "" : "Host: localhost\r\n", headers);
	return t;
}

/* ---- tests -------------------------------------------------------------- */

static void serve_hello(struct guest *g, int fd)
{
	(void)g;
	write_str(fd, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-Backend: yes\r\n"
	              "Connection: close\r\n\r\nhello");
}

START_TEST(get_through)
{
	struct guest g;
	guest_start(&g, serve_hello);
	char h[512];
	snprintf(h, sizeof(h),
	         "E2b-Sandbox-Id: sbx1\r\nE2b-Sandbox-Port: %u\r\nX-Access-Token: access-token\r\n"
	         "X-API-Key: key-a\r\nAuthorization: Bearer app\r\nCookie: c=1\r\n",
	         g.port);
	char *t = req_text("GET /p%20q/../r?x=%2F&y HTTP/1.1", h);
	char *a = request(t, NULL);
	guest_stop(&g);
	ck_assert_int_eq(status_of(a), 200);
	ck_assert_ptr_nonnull(strstr(a, "X-Backend: yes\r\n"));
	ck_assert_ptr_nonnull(strstr(a, "\r\n\r\nhello"));
	/* The server got the target as sent, the app's headers and none of
	 * coved's. */
	const char *line = "GET /p%20q/../r?x=%2F&y HTTP/1.1\r\n";
	ck_assert_msg(!strncmp(g.head, line, strlen(line)), "%s", g.head);
	ck_assert_ptr_nonnull(strstr(g.head, "Authorization: Bearer app\r\n"));
	ck_assert_ptr_nonnull(strstr(g.head, "Cookie: c=1\r\n"));
	ck_assert_ptr_nonnull(strstr(g.head, "Connection: close\r\n"));
	ck_assert_ptr_null(strcasestr(g.head, "access-token"));
	ck_assert_ptr_null(strcasestr(g.head, "key-a"));
	ck_assert_ptr_null(strcasestr(g.head, "E2b-Sandbox"));
	free(t);
	free(a);
	/* By host name. */
	guest_start(&g, serve_hello);
	snprintf(h, sizeof(h),
	         "GET / HTTP/1.1\r\nHost: %u-sbx1.cove.test:8080\r\n"
	         "Connection: close\r\n\r\n",
	         g.port);
	a = request(h, NULL);
	guest_stop(&g);
	ck_assert_int_eq(status_of(a), 200);
	ck_assert_ptr_nonnull(strstr(g.head, "Host: "));
	ck_assert_ptr_nonnull(strstr(g.head, "-sbx1.cove.test:8080\r\n"));
	free(a);
	ck_assert_int_eq(atomic_load(&busy_count), 0);
}
END_TEST

static void serve_echo(struct guest *g, int fd)
{
	/* The body comes chunked: read chunks until the last one. */
	ck_assert_ptr_nonnull(strstr(g->head, "Transfer-Encoding: chunked\r\n"));
	static char body[1 << 20];
	size_t n = 0;
	for (;;) {
		char line[32];
		size_t l = 0;
		while (l < sizeof(line) - 1 && read(fd, line + l, 1) == 1 && line[l] != '\n')
			l++;
		line[l] = 0;
		size_t sz = strtoul(line, NULL, 16);
		if (sz == 0)
			break;
		size_t got = 0;
		while (got < sz) {
			ssize_t k = read(fd, body + n + got, sz - got);
			ck_assert_int_gt(k, 0);
			got += (size_t)k;
		}
		n += sz;
		char crlf[2];
		ck_assert_int_eq(read(fd, crlf, 2), 2);
	}
	char crlf[2];
	ck_assert_int_eq(read(fd, crlf, 2), 2);
	char head[128];
	snprintf(head, sizeof(head), "HTTP/1.1 201 Created\r\nContent-Length: %zu\r\n\r\n", n);
	write_str(fd, head);
	size_t off = 0;
	while (off < n) {
		ssize_t k = write(fd, body + off, n - off);
		ck_assert_int_gt(k, 0);
		off += (size_t)k;
	}
}

START_TEST(upload_chunked)
{
	struct guest g;
	guest_start(&g, serve_echo);
	size_t n = 200 * 1024;
	char *text = malloc(n + 4096), *body = malloc(n);
	for (size_t i = 0; i < n; i++)
		body[i] = (char)('A' + i % 23);
	/* Sent in two chunks; coved makes chunks of its own for the server. */
	int hl = snprintf(text, 4096,
	                  "POST /echo HTTP/1.1\r\nHost: x\r\nE2b-Sandbox-Id: sbx1\r\n"
	                  "E2b-Sandbox-Port: %u\r\nTransfer-Encoding: chunked\r\n"
	                  "Connection: close\r\n\r\n%zx\r\n",
	                  g.port, n / 2);
	memcpy(text + hl, body, n / 2);
	hl += (int)(n / 2);
	hl += sprintf(text + hl, "\r\n%zx\r\n", n - n / 2);
	memcpy(text + hl, body + n / 2, n - n / 2);
	hl += (int)(n - n / 2);
	strcpy(text + hl, "\r\n0\r\n\r\n");
	size_t alen;
	char *a = request(text, &alen);
	guest_stop(&g);
	ck_assert_int_eq(status_of(a), 201);
	char *b = strstr(a, "\r\n\r\n");
	ck_assert_ptr_nonnull(b);
	ck_assert_uint_eq(alen - (size_t)(b + 4 - a), n);
	ck_assert_mem_eq(b + 4, body, n);
	free(a);
	free(text);
	free(body);
}
END_TEST

static void serve_stream(struct guest *g, int fd)
{
	(void)g;
	write_str(fd, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
	              "Transfer-Encoding: chunked\r\n\r\n9\r\ndata: 1\n\n\r\n");
	usleep(600 * 1000);
	write_str(fd, "9\r\ndata: 2\n\n\r\n0\r\n\r\n");
}

START_TEST(stream_as_it_comes)
{
	struct guest g;
	guest_start(&g, serve_stream);
	char h[256];
	snprintf(h, sizeof(h), "E2b-Sandbox-Id: sbx1\r\nE2b-Sandbox-Port: %u\r\n", g.port);
	char *t = req_text("GET /events HTTP/1.1", h);
	int fd = dial();
	write_str(fd, t);
	char buf[4096];
	size_t n = 0;
	int64_t t0 = mono_ms(), first = -1;
	for (;;) {
		struct pollfd f = { .fd = fd, .events = POLLIN };
		ck_assert_int_eq(poll(&f, 1, 10000), 1);
		ssize_t k = read(fd, buf + n, sizeof(buf) - 1 - n);
		if (k <= 0)
			break;
		n += (size_t)k;
		buf[n] = 0;
		if (first < 0 && strstr(buf, "data: 1"))
			first = mono_ms() - t0;
	}
	close(fd);
	guest_stop(&g);
	ck_assert_int_ge(first, 0);
	ck_assert_int_lt(first, 500); /* before the server's second event */
	ck_assert_ptr_nonnull(strstr(buf, "data: 2"));
	ck_assert_ptr_nonnull(strstr(buf, "text/event-stream"));
	free(t);
}
END_TEST

static void serve_head(struct guest *g, int fd)
{
	if (!strncmp(g->head, "HEAD ", 5))
		write_str(fd, "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\nX-H: 1\r\n\r\n");
	else
		write_str(fd, "HTTP/1.1 204 No Content\r\nX-E: 1\r\n\r\n");
}

START_TEST(head_and_empty)
{
	const char *first[] = { "HEAD /x HTTP/1.1", "DELETE /x HTTP/1.1" };
	for (int i = 0; i < 2; i++) {
		struct guest g;
		guest_start(&g, serve_head);
		char h[256];
		snprintf(h, sizeof(h), "E2b-Sandbox-Id: sbx1\r\nE2b-Sandbox-Port: %u\r\n", g.port);
		char *t = req_text(first[i], h);
		size_t n;
		char *a = request(t, &n);
		guest_stop(&g);
		char *end = strstr(a, "\r\n\r\n");
		ck_assert_ptr_nonnull(end);
		ck_assert_uint_eq(n, (size_t)(end + 4 - a)); /* no body */
		if (i == 0) {
			ck_assert_int_eq(status_of(a), 200);
			ck_assert_ptr_nonnull(strstr(a, "Content-Length: 1000\r\n"));
			ck_assert_ptr_nonnull(strstr(a, "X-H: 1\r\n"));
		} else {
			ck_assert_int_eq(status_of(a), 204);
			ck_assert_ptr_nonnull(strstr(a, "X-E: 1\r\n"));
		}
		free(t);
		free(a);
	}
}
END_TEST

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

static int status_for(const char *headers)
{
	char *t = req_text("GET / HTTP/1.1", headers);
	char *a = request(t, NULL);
	int st = status_of(a);
	free(t);
	free(a);
	return st;
}

START_TEST(errors_and_access)
{
	char h[512];
	int64_t t0 = mono_ms();
	snprintf(h, sizeof(h), "E2b-Sandbox-Id: sbx1\r\nE2b-Sandbox-Port: %u\r\n", free_port());
	char *t = req_text("GET / HTTP/1.1", h);
	char *a = request(t, NULL);
	ck_assert_int_eq(status_of(a), 502);
	ck_assert_ptr_nonnull(strstr(a, "nothing listens on port"));
	ck_assert_int_lt(mono_ms() - t0, 1000);
	free(t);
	free(a);
	ck_assert_int_eq(status_for("E2b-Sandbox-Id: nope\r\nE2b-Sandbox-Port: 80\r\n"), 404);
	ck_assert_int_eq(status_for("E2b-Sandbox-Port: 80\r\n"), 400);
	ck_assert_int_eq(status_for("E2b-Sandbox-Id: sbx1\r\nE2b-Sandbox-Port: 0x50\r\n"), 400);
	ck_assert_int_eq(status_for("Host: 99999-sbx1.cove.test\r\n"), 400);
	ck_assert_int_eq(status_for("Host: 80-sbx1.cove.test\r\nE2b-Sandbox-Id: sbx2\r\n"), 400);
	/* Another's credentials: as missing. */
	struct guest g;
	guest_start(&g, serve_hello);
	snprintf(h, sizeof(h),
	         "E2b-Sandbox-Id: sbx1\r\nE2b-Sandbox-Port: %u\r\nX-API-Key: key-b\r\n", g.port);
	ck_assert_int_eq(status_for(h), 404);
	snprintf(h, sizeof(h),
	         "E2b-Sandbox-Id: sbx1\r\nE2b-Sandbox-Port: %u\r\nX-Access-Token: other\r\n",
	         g.port);
	ck_assert_int_eq(status_for(h), 404);
	snprintf(h, sizeof(h),
	         "E2b-Sandbox-Id: sbx1\r\nE2b-Sandbox-Port: %u\r\nX-API-Key: nokey\r\n", g.port);
	ck_assert_int_eq(status_for(h), 404);
	/* Restricted: the traffic token, or the owner. */
	restricted = true;
	snprintf(h, sizeof(h), "E2b-Sandbox-Id: sbx1\r\nE2b-Sandbox-Port: %u\r\n", g.port);
	ck_assert_int_eq(status_for(h), 403);
	snprintf(h, sizeof(h),
	         "E2b-Sandbox-Id: sbx1\r\nE2b-Sandbox-Port: %u\r\nE2B-Traffic-Access-Token: x\r\n",
	         g.port);
	ck_assert_int_eq(status_for(h), 403);
	snprintf(h, sizeof(h),
	         "E2b-Sandbox-Id: sbx1\r\nE2b-Sandbox-Port: %u\r\n"
	         "E2B-Traffic-Access-Token: traffic-token\r\n",
	         g.port);
	ck_assert_int_eq(status_for(h), 200);
	guest_stop(&g);
	guest_start(&g, serve_hello);
	snprintf(h, sizeof(h),
	         "E2b-Sandbox-Id: sbx1\r\nE2b-Sandbox-Port: %u\r\nX-API-Key: key-a\r\n", g.port);
	ck_assert_int_eq(status_for(h), 200);
	guest_stop(&g);
	/* ports_public false: nobody without a credential. */
	restricted = false;
	d.cfg.ports_public = false;
	snprintf(h, sizeof(h), "E2b-Sandbox-Id: sbx1\r\nE2b-Sandbox-Port: %u\r\n", free_port());
	ck_assert_int_eq(status_for(h), 401);
	ck_assert_int_eq(atomic_load(&busy_count), 0);
	ck_assert_int_eq(atomic_load(&refs), 0);
}
END_TEST

static void serve_upgrade(struct guest *g, int fd)
{
	if (!strstr(g->head, "Upgrade: websocket\r\n") || !strstr(g->head, "Connection: Upgrade"))
		return;
	write_str(fd, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
	              "Connection: Upgrade\r\nSec-WebSocket-Accept: xyz\r\n\r\nFIRST");
	/* Echo, upper-cased, until the client's end of stream. */
	char b[4096];
	ssize_t k;
	while ((k = read(fd, b, sizeof(b))) > 0) {
		for (ssize_t i = 0; i < k; i++)
			if (b[i] >= 'a' && b[i] <= 'z')
				b[i] = (char)(b[i] - 32);
		(void)!write(fd, b, (size_t)k);
	}
	write_str(fd, "BYE");
}

START_TEST(upgrade_both_ways)
{
	struct guest g;
	guest_start(&g, serve_upgrade);
	char t[512];
	/* Bytes of the new protocol right behind the head. */
	snprintf(t, sizeof(t),
	         "GET /ws HTTP/1.1\r\nHost: x\r\nE2b-Sandbox-Id: sbx1\r\nE2b-Sandbox-Port: %u\r\n"
	         "Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Key: k\r\n\r\nearly",
	         g.port);
	int fd = dial();
	write_str(fd, t);
	char buf[4096];
	size_t n = 0;
	while (!strstr(buf, "EARLY")) {
		struct pollfd f = { .fd = fd, .events = POLLIN };
		ck_assert_int_eq(poll(&f, 1, 10000), 1);
		ssize_t k = read(fd, buf + n, sizeof(buf) - 1 - n);
		ck_assert_int_gt(k, 0);
		n += (size_t)k;
		buf[n] = 0;
	}
	ck_assert_int_eq(status_of(buf), 101);
	ck_assert_ptr_nonnull(strcasestr(buf, "Upgrade: websocket\r\n"));
	ck_assert_ptr_nonnull(strstr(buf, "Sec-WebSocket-Accept: xyz\r\n"));
	ck_assert_ptr_nonnull(strstr(buf, "\r\n\r\nFIRST"));
	ck_assert_int_eq(atomic_load(&busy_count), 1);
	ck_assert_uint_eq(ports_upgrades(), 1);
	write_str(fd, "round trip");
	n = 0;
	buf[0] = 0;
	while (!strstr(buf, "ROUND TRIP")) {
		struct pollfd f = { .fd = fd, .events = POLLIN };
		ck_assert_int_eq(poll(&f, 1, 10000), 1);
		ssize_t k = read(fd, buf + n, sizeof(buf) - 1 - n);
		ck_assert_int_gt(k, 0);
		n += (size_t)k;
		buf[n] = 0;
	}
	/* Our end of stream reaches the server, its last words come back. */
	shutdown(fd, SHUT_WR);
	n = 0;
	for (;;) {
		struct pollfd f = { .fd = fd, .events = POLLIN };
		ck_assert_int_eq(poll(&f, 1, 10000), 1);
		ssize_t k = read(fd, buf + n, sizeof(buf) - 1 - n);
		if (k <= 0)
			break;
		n += (size_t)k;
	}
	buf[n] = 0;
	ck_assert_str_eq(buf, "BYE");
	close(fd);
	guest_stop(&g);
	for (int i = 0; i < 200 && ports_upgrades(); i++)
		usleep(10000);
	ck_assert_uint_eq(ports_upgrades(), 0);
	ck_assert_int_eq(atomic_load(&busy_count), 0);
}
END_TEST

static void serve_hold(struct guest *g, int fd)
{
	serve_upgrade(g, fd);
}

START_TEST(stop_ends_upgrades)
{
	struct guest g;
	guest_start(&g, serve_hold);
	char t[512];
	snprintf(t, sizeof(t),
	         "GET /ws HTTP/1.1\r\nHost: x\r\nE2b-Sandbox-Id: sbx1\r\nE2b-Sandbox-Port: %u\r\n"
	         "Connection: Upgrade\r\nUpgrade: websocket\r\n\r\n",
	         g.port);
	int fd = dial();
	write_str(fd, t);
	char buf[1024];
	ck_assert_int_gt(read(fd, buf, sizeof(buf)), 0);
	for (int i = 0; i < 200 && !ports_upgrades(); i++)
		usleep(10000);
	ck_assert_uint_eq(ports_upgrades(), 1);
	int64_t t0 = mono_ms();
	ports_stop();
	ck_assert_uint_eq(ports_upgrades(), 0);
	ck_assert_int_lt(mono_ms() - t0, 3000);
	close(fd);
	guest_stop(&g);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("ports");
	TCase *t = tcase_create("ports");
	tcase_add_checked_fixture(t, setup, teardown);
	tcase_set_timeout(t, 60);
	tcase_add_test(t, get_through);
	tcase_add_test(t, upload_chunked);
	tcase_add_test(t, stream_as_it_comes);
	tcase_add_test(t, head_and_empty);
	tcase_add_test(t, errors_and_access);
	tcase_add_test(t, upgrade_both_ways);
	tcase_add_test(t, stop_ends_upgrades);
	suite_add_tcase(s, t);
	return s;
}

UNIT_MAIN()
