/* The ports room: which sandbox and port a request is for, who may reach
 * it, and the relay of one request over an agent connection (the answer
 * through a libmicrohttpd callback reader; an upgrade through a byte
 * pipe on a thread of its own). */
#include "daemon/ports/ports.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bytepipe.h"
#include "clock.h"
#include "cove.h"
#include "daemon/http/reply.h"
#include "daemon/sandboxes/idle.h"
#include "daemon/sandboxes/lifecycle.h"
#include "daemon/sandboxes/metrics.h"
#include "daemon/sandboxes/sandbox.h"
#include "daemon/sandboxes/state.h"
#include "daemon/sandboxes/table.h"
#include "errf.h"

#define PORT_BUF      (64 * 1024) /* bytes read from the guest at once */
#define PORT_BLOCK    (32 * 1024) /* what libmicrohttpd asks of the reader */
#define PORT_HDRS_MAX 256         /* request header lines relayed */
#define STOP_WAIT_MS  5000

/* One request relayed: the request's reference and, once an answer
 * streams, its reader's. */
struct port_req {
	atomic_int refs;
	struct coved *d;
	struct coved_sb *sb;
	bool busy;
	int fd;        /* the guest port's stream; -1 once an upgrade took it */
	int client_fd; /* to notice a client that went away; -1: unknown */
	uint16_t port;
	int idle_ms;
	bool upgrade;    /* the client asked to switch protocols */
	bool chunked_up; /* the body goes up as chunks */
	bool up_failed;  /* the server stopped taking the body: the rest is dropped */
	bool failed;     /* answered with an error before the body was in */
	uint8_t *tmp;    /* PORT_BUF: one read from the guest */
	uint8_t *buf;    /* PORT_BUF: body bytes decoded, [off, len) not yet given */
	size_t off, len;
	uint8_t *raw; /* after a 101 head: the new protocol's first bytes */
	size_t raw_len;
	char msg[400];
	struct relay_resp resp;
};

/* An upgraded connection: client and guest joined until either ends. */
struct upgrade {
	struct coved_sb *sb;
	int fd;
	MHD_socket sock;
	struct MHD_UpgradeResponseHandle *urh;
	uint8_t *to_guest, *to_client;
	size_t to_guest_len, to_client_len;
	int idle_ms;
};

static int stop_fd = -1;
static bool can_upgrade;
static pthread_mutex_t up_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t up_cv;
static unsigned up_open;

static const char *header(struct MHD_Connection *c, const char *name)
{
	return MHD_lookup_connection_value(c, MHD_HEADER_KIND, name);
}

int ports_route(const struct coved *d, struct MHD_Connection *c, struct ports_route *rt, char *msg,
                size_t len)
{
	memset(rt, 0, sizeof(*rt));
	const char *hid = header(c, "E2b-Sandbox-Id"), *hport = header(c, "E2b-Sandbox-Port");
	if (d->cfg.domain) {
		const char *host = header(c, "Host");
		int r = relay_host_route(host, d->cfg.domain, &rt->port, rt->id);
		if (r < 0)
			return errf(msg, len, 400,
			            "host name '%.100s' is not <port>-<sandbox id>.%s", host,
			            d->cfg.domain);
		if (r == 1) {
			if (hid && strcmp(hid, rt->id) != 0)
				return errf(
				    msg, len, 400,
				    "E2b-Sandbox-Id names another sandbox than the host name");
			if (hport && relay_port_value(hport) != rt->port)
				return errf(
				    msg, len, 400,
				    "E2b-Sandbox-Port names another port than the host name");
			rt->by_host = true;
			rt->kind = rt->port == RELAY_ENVD_PORT ? PORTS_ENVD : PORTS_FORWARD;
			return 0;
		}
	}
	if (!hport)
		return 0;
	int p = relay_port_value(hport);
	if (p < 0)
		return errf(msg, len, 400, "E2b-Sandbox-Port '%.16s' is not a port (1-65535)",
		            hport);
	if (p == RELAY_ENVD_PORT)
		return 0; /* envd, as without the header */
	if (!hid || !hid[0])
		return errf(msg, len, 400, "E2b-Sandbox-Port needs E2b-Sandbox-Id");
	if (strlen(hid) > RELAY_ID_MAX)
		return errf(msg, len, 400, "E2b-Sandbox-Id is over %d bytes", RELAY_ID_MAX);
	snprintf(rt->id, sizeof(rt->id), "%s", hid);
	rt->port = (uint16_t)p;
	rt->kind = PORTS_FORWARD;
	return 0;
}

/* authorize() - who may reach sb's ports (docs/api.md "Ports"): a
 * credential that is given must be sb's (its access token, its tenant's
 * API key), else sb answers as missing; a sandbox created with public
 * traffic restricted needs its traffic token unless the caller is its
 * owner; with ports_public false every caller must be.
 * Return: 0, or an HTTP status with msg. */
static int authorize(struct coved *d, struct coved_sb *sb, struct MHD_Connection *c,
                     struct coved_tenant *t, bool key_sent, char *msg, size_t len)
{
	const char *access = header(c, "X-Access-Token");
	bool owner = false;
	if (key_sent) {
		if (!t || !coved_sb_owned(sb, t))
			return errf(msg, len, 404, "sandbox %s not found", coved_sb_id(sb));
		owner = true;
	}
	if (access) {
		if (!coved_sb_token_ok(sb, access))
			return errf(msg, len, 404, "sandbox %s not found", coved_sb_id(sb));
		owner = true;
	}
	if (owner)
		return 0;
	if (coved_sb_restricted(sb)) {
		const char *tt = header(c, "E2B-Traffic-Access-Token");
		if (!tt)
			return errf(msg, len, 403,
			            "sandbox %s's ports need its traffic token "
			            "(E2B-Traffic-Access-Token)",
			            coved_sb_id(sb));
		if (!coved_sb_traffic_ok(sb, tt))
			return errf(msg, len, 403,
			            "the E2B-Traffic-Access-Token is not sandbox %s's",
			            coved_sb_id(sb));
		return 0;
	}
	if (!d->cfg.ports_public)
		return errf(msg, len, 401,
		            "sandbox ports need X-Access-Token or an X-API-Key here "
		            "(ports_public is false)");
	return 0;
}

static void port_unref(struct port_req *p)
{
	if (!p || atomic_fetch_sub(&p->refs, 1) != 1)
		return;
	if (p->fd >= 0)
		close(p->fd);
	if (p->busy)
		coved_sb_unbusy(p->sb);
	if (p->sb)
		coved_sb_unref(p->sb);
	free(p->tmp);
	free(p->buf);
	free(p->raw);
	free(p);
}

/* send_all() - n bytes to the guest, each wait bounded by the idle limit. */
static int send_all(struct port_req *p, const void *data, size_t n)
{
	const uint8_t *b = data;
	int64_t deadline = mono_ms() + p->idle_ms;
	while (n) {
		ssize_t k = send(p->fd, b, n, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (k > 0) {
			b += k;
			n -= (size_t)k;
			deadline = mono_ms() + p->idle_ms;
			continue;
		}
		if (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
			return -errno;
		int64_t left = deadline - mono_ms();
		if (left <= 0)
			return -ETIMEDOUT;
		struct pollfd f = { .fd = p->fd, .events = POLLOUT };
		if (poll(&f, 1, left > 60000 ? 60000 : (int)left) < 0 && errno != EINTR)
			return -errno;
	}
	return 0;
}

/* up() - a piece of the request body to the guest (as a chunk when the
 * client sent chunks).  A server that stopped taking it may still answer:
 * the rest is dropped. */
static void up(struct port_req *p, const char *data, size_t n)
{
	if (p->up_failed || !n)
		return;
	int r = 0;
	if (p->chunked_up) {
		char ch[24];
		size_t cl = relay_chunk_head(n, ch);
		r = send_all(p, ch, cl);
		if (r == 0)
			r = send_all(p, data, n);
		if (r == 0)
			r = send_all(p, "\r\n", 2);
	} else {
		r = send_all(p, data, n);
	}
	if (r < 0)
		p->up_failed = true;
}

/* wait_guest() - until the guest's stream has something (0), the idle
 * limit passed (-ETIMEDOUT) or the client went away (-EPIPE). */
static int wait_guest(struct port_req *p)
{
	int64_t deadline = mono_ms() + p->idle_ms;
	for (;;) {
		int64_t left = deadline - mono_ms();
		if (left <= 0)
			return -ETIMEDOUT;
		struct pollfd f[2] = { { .fd = p->fd, .events = POLLIN },
			               { .fd = p->client_fd, .events = POLLRDHUP } };
		int n = poll(f, p->client_fd >= 0 ? 2 : 1, left > 60000 ? 60000 : (int)left);
		if (n < 0 && errno != EINTR)
			return -errno;
		if (n <= 0)
			continue;
		if (f[0].revents)
			return 0;
		if (f[1].revents & (POLLRDHUP | POLLHUP | POLLERR))
			return -EPIPE;
	}
}

/* fill() - one read from the guest through the parser: body bytes into
 * buf (what was there is taken).  Return: 0, or -errno with p->msg. */
static int fill(struct port_req *p)
{
	p->off = p->len = 0;
	int r = wait_guest(p);
	if (r == -ETIMEDOUT)
		return errf(p->msg, sizeof(p->msg), r,
		            "the server on port %u did not answer within %d s", p->port,
		            p->idle_ms / 1000);
	if (r < 0)
		return errf(p->msg, sizeof(p->msg), r, "the client went away");
	ssize_t n;
	do
		n = recv(p->fd, p->tmp, PORT_BUF, 0);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return errf(p->msg, sizeof(p->msg), -errno, "port %u: %s", p->port,
		            strerror(errno));
	if (n == 0) {
		if (relay_resp_eof(&p->resp) < 0)
			return errf(p->msg, sizeof(p->msg), -EPROTO, "port %u: %s", p->port,
			            p->resp.err);
		return 0;
	}
	long k = relay_resp_feed(&p->resp, p->tmp, (size_t)n, p->buf, &p->len);
	if (k < 0)
		return errf(p->msg, sizeof(p->msg), -EPROTO, "port %u: %s", p->port, p->resp.err);
	if (p->resp.head_done && p->resp.upgraded && (size_t)k < (size_t)n && !p->raw) {
		p->raw_len = (size_t)n - (size_t)k;
		p->raw = malloc(p->raw_len);
		if (!p->raw)
			return errf(p->msg, sizeof(p->msg), -ENOMEM, "out of memory");
		memcpy(p->raw, p->tmp + k, p->raw_len);
	}
	return 0;
}

/* The answer's body, read by the connection's thread. */
static ssize_t on_body(void *cls, uint64_t pos, char *out, size_t max)
{
	(void)pos;
	struct port_req *p = cls;
	for (;;) {
		if (p->off < p->len) {
			size_t n = p->len - p->off < max ? p->len - p->off : max;
			memcpy(out, p->buf + p->off, n);
			p->off += n;
			return (ssize_t)n;
		}
		if (p->resp.done)
			return MHD_CONTENT_READER_END_OF_STREAM;
		if (fill(p) < 0) {
			fprintf(stderr, "coved: sandbox %s: %s\n", coved_sb_id(p->sb), p->msg);
			return MHD_CONTENT_READER_END_WITH_ERROR;
		}
	}
}

static void on_body_free(void *cls)
{
	port_unref(cls);
}

static void upgrade_end(struct upgrade *u)
{
	if (u->urh)
		MHD_upgrade_action(u->urh, MHD_UPGRADE_ACTION_CLOSE);
	if (u->fd >= 0)
		close(u->fd);
	coved_sb_unbusy(u->sb);
	coved_sb_unref(u->sb);
	free(u->to_guest);
	free(u->to_client);
	free(u);
	pthread_mutex_lock(&up_mu);
	up_open--;
	pthread_cond_broadcast(&up_cv);
	pthread_mutex_unlock(&up_mu);
}

static void *upgrade_main(void *arg)
{
	struct upgrade *u = arg;
	struct bytepipe_opts o = { .idle_ms = u->idle_ms,
		                   .stop_fd = stop_fd,
		                   .to_b = u->to_guest,
		                   .to_b_len = u->to_guest_len,
		                   .to_a = u->to_client,
		                   .to_a_len = u->to_client_len };
	int r = bytepipe_run(u->sock, u->fd, &o, NULL);
	if (r < 0 && r != -ECANCELED && r != -ECONNRESET && r != -EPIPE)
		fprintf(stderr, "coved: sandbox %s: an upgraded stream ended: %s\n",
		        coved_sb_id(u->sb), strerror(-r));
	upgrade_end(u);
	return NULL;
}

/* on_upgrade() - the 101 went out: client and guest are joined on a
 * thread of their own (with TLS, this connection's thread is libmicrohttpd's
 * from here on, so nothing may wait here). */
static void on_upgrade(void *cls, struct MHD_Connection *c, void *con_cls, const char *extra_in,
                       size_t extra_in_size, MHD_socket sock, struct MHD_UpgradeResponseHandle *urh)
{
	(void)c;
	(void)con_cls;
	struct port_req *p = cls;
	struct upgrade *u = calloc(1, sizeof(*u));
	if (!u) {
		MHD_upgrade_action(urh, MHD_UPGRADE_ACTION_CLOSE);
		return;
	}
	u->sb = coved_sb_ref(p->sb);
	coved_sb_busy(u->sb);
	u->fd = p->fd;
	p->fd = -1;
	u->sock = sock;
	u->urh = urh;
	u->idle_ms = p->idle_ms;
	u->to_client = p->raw;
	u->to_client_len = p->raw_len;
	p->raw = NULL;
	if (extra_in_size && (u->to_guest = malloc(extra_in_size))) {
		memcpy(u->to_guest, extra_in, extra_in_size);
		u->to_guest_len = extra_in_size;
	}
	pthread_mutex_lock(&up_mu);
	up_open++;
	pthread_mutex_unlock(&up_mu);
	pthread_attr_t a;
	pthread_t t;
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	if ((extra_in_size && !u->to_guest) || pthread_create(&t, &a, upgrade_main, u) != 0)
		upgrade_end(u);
	pthread_attr_destroy(&a);
}

/* add_headers() - the server's headers that go back; for a 101 its
 * Upgrade too (libmicrohttpd adds "Connection: Upgrade"). */
static void add_headers(struct port_req *p, struct MHD_Response *r)
{
	const char *conn = NULL, *n, *v;
	for (unsigned i = 0; i < p->resp.nhdrs; i++) {
		relay_resp_header(&p->resp, i, &n, &v);
		if (strcasecmp(n, "Connection") == 0)
			conn = v;
	}
	for (unsigned i = 0; i < p->resp.nhdrs; i++) {
		relay_resp_header(&p->resp, i, &n, &v);
		bool up_hdr = p->resp.upgraded && strcasecmp(n, "Upgrade") == 0;
		/* One that libmicrohttpd refuses is left out. */
		if (up_hdr || relay_pass_back(n, conn))
			(void)MHD_add_response_header(r, n, v);
	}
}

/* fail() - an error answer, counted. */
static enum MHD_Result fail(struct coved *d, struct MHD_Connection *c, int status, const char *msg)
{
	coved_metric_bump(d, &d->m.port_errors);
	return coved_json_error(c, (unsigned)status, msg);
}

/* answer() - the request is in: the server's head, then its answer. */
static enum MHD_Result answer(struct port_req *p, struct MHD_Connection *c)
{
	if (p->chunked_up && !p->up_failed && send_all(p, "0\r\n\r\n", 5) < 0)
		p->up_failed = true;
	while (!p->resp.head_done) {
		int r = fill(p);
		if (r < 0)
			return fail(p->d, c, r == -ETIMEDOUT ? 504 : 502, p->msg);
	}
	struct MHD_Response *resp;
	int status = p->resp.status;
	if (p->resp.upgraded) {
		if (!p->upgrade)
			return fail(p->d, c, 502,
			            "the server switched protocols (101) unasked for a request "
			            "without Upgrade");
		resp = MHD_create_response_for_upgrade(on_upgrade, p);
	} else if (p->resp.length == 0 || (p->resp.done && !p->resp.head_request &&
	                                   p->off == p->len && p->resp.length < 0)) {
		resp = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
	} else {
		uint64_t size = p->resp.length >= 0 ? (uint64_t)p->resp.length : MHD_SIZE_UNKNOWN;
		resp =
		    MHD_create_response_from_callback(size, PORT_BLOCK, on_body, p, on_body_free);
		if (resp)
			atomic_fetch_add(&p->refs, 1);
	}
	if (!resp)
		return MHD_NO;
	add_headers(p, resp);
	enum MHD_Result ret = MHD_queue_response(c, (unsigned)status, resp);
	MHD_destroy_response(resp);
	return ret;
}

struct hdr_list {
	struct relay_hdr h[PORT_HDRS_MAX];
	size_t n;
	bool over;
};

static enum MHD_Result collect(void *cls, enum MHD_ValueKind kind, const char *key,
                               const char *value)
{
	(void)kind;
	struct hdr_list *l = cls;
	if (l->n == PORT_HDRS_MAX) {
		l->over = true;
		return MHD_NO;
	}
	l->h[l->n++] = (struct relay_hdr){ key, value ? value : "" };
	return MHD_YES;
}

/* body_mode() - how the request's body comes: its Content-Length, chunks
 * (libmicrohttpd undoes them; the relay makes its own), or none.
 * Return: 0, or -EINVAL for a Content-Length that is not a number. */
static int body_mode(struct MHD_Connection *c, enum relay_body *m, uint64_t *length)
{
	const char *cl = header(c, "Content-Length"), *te = header(c, "Transfer-Encoding");
	*m = RELAY_BODY_NONE;
	*length = 0;
	if (te) {
		*m = RELAY_BODY_CHUNKED;
		return 0;
	}
	if (!cl)
		return 0;
	if (!cl[0] || strlen(cl) > 18 || strspn(cl, "0123456789") != strlen(cl))
		return -EINVAL;
	*length = strtoull(cl, NULL, 10);
	*m = RELAY_BODY_LENGTH;
	return 0;
}

/* start() - the head to the guest's server on a new port connection. */
static int start(struct port_req *p, struct MHD_Connection *c, const char *method,
                 const char *target, int *status)
{
	char err[300];
	struct cove_sandbox *cs = coved_sb_cove(p->sb);
	if (!cs) {
		*status = 502;
		return errf(p->msg, sizeof(p->msg), -EAGAIN, "sandbox %s is not running",
		            coved_sb_id(p->sb));
	}
	enum relay_body bm;
	uint64_t blen;
	if (body_mode(c, &bm, &blen) < 0) {
		*status = 400;
		return errf(p->msg, sizeof(p->msg), -EINVAL, "Content-Length is not a number");
	}
	struct hdr_list *hl = malloc(sizeof(*hl));
	if (!hl) {
		*status = 500;
		return errf(p->msg, sizeof(p->msg), -ENOMEM, "out of memory");
	}
	hl->n = 0;
	hl->over = false;
	MHD_get_connection_values(c, MHD_HEADER_KIND, collect, hl);
	const char *upg = p->upgrade ? header(c, "Upgrade") : NULL;
	struct relay_req q = { .method = method,
		               .target = target,
		               .hdrs = hl->h,
		               .nhdrs = hl->n,
		               .body = bm,
		               .length = blen,
		               .upgrade = upg,
		               .port = p->port };
	char *head = NULL;
	size_t head_len = 0;
	int r = hl->over ? errf(err, sizeof(err), -E2BIG, "over %d header lines", PORT_HDRS_MAX)
	                 : relay_req_head(&q, &head, &head_len, err, sizeof(err));
	free(hl);
	if (r < 0) {
		*status = r == -E2BIG ? 431 : r == -ENOMEM ? 500 : 400;
		return errf(p->msg, sizeof(p->msg), r, "%s", err);
	}
	p->chunked_up = bm == RELAY_BODY_CHUNKED;
	p->fd = cove_port_open(cs, p->port, PORTS_CONNECT_MS, err, sizeof(err));
	if (p->fd < 0) {
		r = p->fd;
		free(head);
		*status = r == -ETIMEDOUT ? 504 : 502;
		return errf(p->msg, sizeof(p->msg), r, "port %u of sandbox %s: %s", p->port,
		            coved_sb_id(p->sb), err);
	}
	r = send_all(p, head, head_len);
	free(head);
	if (r < 0) {
		*status = 502;
		return errf(p->msg, sizeof(p->msg), r,
		            "port %u of sandbox %s: the server did not take the request: %s",
		            p->port, coved_sb_id(p->sb), strerror(-r));
	}
	relay_resp_init(&p->resp, strcmp(method, "HEAD") == 0);
	return 0;
}

/* first() - a port request's head is in: find, authorize, connect. */
static enum MHD_Result first(struct coved *d, const struct ports_route *rt, const char *target,
                             struct coved_tenant *t, bool key_sent, struct MHD_Connection *c,
                             const char *method, void **cls)
{
	char msg[600];
	coved_metric_bump(d, &d->m.port_requests);
	struct coved_sb *sb = coved_sb_find(d, rt->id);
	if (!sb) {
		snprintf(msg, sizeof(msg), "sandbox %s not found", rt->id);
		return fail(d, c, 404, msg);
	}
	int st = authorize(d, sb, c, t, key_sent, msg, sizeof(msg));
	bool upgrade = relay_is_upgrade(header(c, "Connection"), header(c, "Upgrade"));
	if (!st && upgrade && !can_upgrade)
		st = errf(msg, sizeof(msg), 501,
		          "this coved's libmicrohttpd cannot upgrade "
		          "connections (websockets)");
	if (!st && upgrade && ports_upgrades() >= d->cfg.max_requests)
		st = errf(msg, sizeof(msg), 503,
		          "coved holds its maximum of upgraded connections (max_requests)");
	/* autoResume: a request to it paused resumes it first. */
	if (!st)
		st = coved_sb_wake(sb, msg, sizeof(msg));
	if (st) {
		coved_sb_unref(sb);
		return fail(d, c, st, msg);
	}
	struct port_req *p = calloc(1, sizeof(*p));
	if (!p) {
		coved_sb_unref(sb);
		return MHD_NO;
	}
	atomic_init(&p->refs, 1);
	p->d = d;
	p->sb = sb;
	p->fd = -1;
	p->port = rt->port;
	p->upgrade = upgrade;
	p->idle_ms = (int)(d->cfg.port_idle_s * 1000);
	p->tmp = malloc(PORT_BUF);
	p->buf = malloc(PORT_BUF);
	const union MHD_ConnectionInfo *ci =
	    MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	p->client_fd = ci ? ci->connect_fd : -1;
	coved_sb_busy(sb); /* the idle timeout waits for its end */
	p->busy = true;
	*cls = p;
	if (!p->tmp || !p->buf) {
		p->failed = true;
		return fail(d, c, 500, "out of memory");
	}
	int status = 502;
	if (start(p, c, method, target, &status) < 0) {
		p->failed = true;
		return fail(d, c, status, p->msg);
	}
	return MHD_YES;
}

enum MHD_Result ports_handle(struct coved *d, const struct ports_route *rt, const char *target,
                             struct coved_tenant *t, bool key_sent, struct MHD_Connection *c,
                             const char *method, const char *upload_data, size_t *upload_data_size,
                             void **cls)
{
	if (!*cls)
		return first(d, rt, target, t, key_sent, c, method, cls);
	struct port_req *p = *cls;
	if (*upload_data_size) {
		if (!p->failed)
			up(p, upload_data, *upload_data_size);
		*upload_data_size = 0;
		return MHD_YES;
	}
	return p->failed ? MHD_YES : answer(p, c);
}

void ports_request_done(void **cls)
{
	port_unref(*cls);
	*cls = NULL;
}

unsigned ports_upgrades(void)
{
	pthread_mutex_lock(&up_mu);
	unsigned n = up_open;
	pthread_mutex_unlock(&up_mu);
	return n;
}

int ports_init(struct coved *d)
{
	(void)d;
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&up_cv, &ca);
	pthread_condattr_destroy(&ca);
	can_upgrade = MHD_is_feature_supported(MHD_FEATURE_UPGRADE) == MHD_YES;
	stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	return stop_fd < 0 ? -errno : 0;
}

void ports_stop(void)
{
	if (stop_fd < 0)
		return;
	uint64_t one = 1;
	(void)!write(stop_fd, &one, sizeof(one));
	struct timespec until = clock_after_ms(CLOCK_MONOTONIC, STOP_WAIT_MS);
	pthread_mutex_lock(&up_mu);
	while (up_open && pthread_cond_timedwait(&up_cv, &up_mu, &until) == 0)
		;
	if (up_open)
		fprintf(stderr, "coved: %u upgraded streams did not end within %d ms\n", up_open,
		        STOP_WAIT_MS);
	pthread_mutex_unlock(&up_mu);
}
