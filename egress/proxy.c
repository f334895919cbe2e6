#include "proxy.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "conn.h"
#include "dns.h"
#include "elog.h"
#include "listen.h"
#include "mitm.h"
#include "nftgen.h"
#include "proxyset.h"
#include "resolver.h"
#include "sniff.h"
#include "upstream.h"

static void refuse(struct conn *c, const char *why_rule)
{
	struct elog_rec r = { .proto = "tcp",
		              .dst = c->have_dst ? &c->dst : NULL,
		              .port = c->port,
		              .name = c->name[0] ? c->name : NULL,
		              .rule = why_rule,
		              .allow = false,
		              .via = "proxy",
		              .bytes_out = -1,
		              .bytes_in = -1 };
	elog_write(c->e->cfg.log_fd, &r);
	c->logged = true;
	if (c->tls) {
		conn_close(c, true);
		return;
	}
	static const char forbidden[] = "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\n"
	                                "Content-Length: 42\r\nConnection: close\r\n\r\n"
	                                "cove-egress: blocked by the egress policy\n";
	ssize_t w = send(c->a.fd, forbidden, sizeof(forbidden) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
	(void)w;
	shutdown(c->a.fd, SHUT_WR);
	conn_close(c, false);
}

static void on_resolved(void *ctx, const uint8_t *resp, size_t len, uint16_t id, int err)
{
	struct conn *c = ctx;
	c->uq = NULL;
	if (err) {
		refuse(c, NULL);
		return;
	}
	struct dns_question q = { .id = 0, .name_ok = true, .qtype = 1, .qclass = 1 };
	memcpy(q.name, c->name, sizeof(q.name));
	struct dns_filter f = { .hosts = c->e->cfg.hosts,
		                .nhosts = c->e->cfg.nhosts,
		                .policy = &c->e->policy,
		                .max = DNS_MSG_MAX };
	static uint8_t out[DNS_MSG_MAX];
	if (dns_filter_answer(resp, len, id, &q, &f, out, sizeof(out)) < 0) {
		refuse(c, NULL);
		return;
	}
	/* The deny list with this port, after resolution, before connect. */
	c->ncand = 0;
	for (size_t i = 0; i < f.npins && c->ncand < CONN_CANDIDATES; i++) {
		const struct netaddr *a = &f.pins[i].addr;
		if (net_always_denied(a, c->e->cfg.hosts, c->e->cfg.nhosts) ||
		    netpolicy_denied_addr(&c->e->policy, a, c->port))
			continue;
		c->cand[c->ncand++] = *a;
	}
	if (!c->ncand) {
		if (f.npins || f.stripped)
			c->dst = f.npins ? f.pins[0].addr : c->dst;
		c->have_dst = f.npins > 0;
		refuse(c, f.npins || f.stripped ? "denied address" : NULL);
		return;
	}
	conn_dial(c);
}

/* The name is known: judge it, then resolve it. */
static void decide(struct conn *c, bool ech)
{
	struct egress *e = c->e;
	const struct netrule *r = NULL;
	if (e->policy.mode == NETPOLICY_RULES)
		r = netpolicy_match_name(&e->policy, c->name, c->port);
	/* A credential rule's hosts are allowed destinations whatever the
	 * policy, and are intercepted (egress/mitm.c). */
	const struct proxy_rule *pr = egress_proxy_host(e, c->name);
	bool ok = e->policy.mode == NETPOLICY_OPEN || r || pr;
	if (r)
		elog_rule_text(r, c->rule, sizeof(c->rule));
	else if (pr)
		snprintf(c->rule, sizeof(c->rule), "proxy-rule:%s", pr->name);
	if (!ok) {
		refuse(c, NULL);
		return;
	}
	/* ECH hides the name the rule matched; in open mode no name matters. */
	if (ech && e->policy.mode != NETPOLICY_OPEN) {
		refuse(c, "ech");
		return;
	}
	if (pr && !(c->m = mitm_new(c))) {
		refuse(c, "interception failed");
		return;
	}
	struct dns_question q = { .name_ok = true, .qtype = 1, .qclass = 1 };
	memcpy(q.name, c->name, sizeof(q.name));
	c->st = CONN_RESOLVE;
	if (loop_mod(&e->loop, &c->a, 0)) {
		conn_close(c, true);
		return;
	}
	c->uq = upq_start(e, &q, on_resolved, c);
	if (!c->uq)
		refuse(c, NULL);
}

static void on_head(struct ev *ev, uint32_t events)
{
	(void)events;
	struct conn *c = (struct conn *)((char *)ev - offsetof(struct conn, a));
	if (c->dying || c->st != CONN_HEAD)
		return;
	size_t cap = c->tls ? SNIFF_TLS_MAX : SNIFF_HTTP_MAX;
	ssize_t n = recv(ev->fd, c->head + c->headlen, cap - c->headlen, MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		conn_close(c, true);
		return;
	}
	c->headlen += (size_t)n;
	if (c->tls) {
		struct sniff_tls t;
		enum sniff_result r = sniff_clienthello(c->head, c->headlen, &t);
		if (r == SNIFF_MORE)
			return;
		if (r != SNIFF_DONE) {
			refuse(c, NULL);
			return;
		}
		memcpy(c->name, t.name, sizeof(c->name));
		decide(c, t.ech);
		return;
	}
	struct sniff_http h;
	enum sniff_result r = sniff_http_host(c->head, c->headlen, &h);
	if (r == SNIFF_MORE)
		return;
	if (r != SNIFF_DONE) {
		refuse(c, NULL);
		return;
	}
	memcpy(c->name, h.name, sizeof(c->name));
	/* An intercepted request is parsed and rebuilt by egress/mitm.c. */
	if (egress_proxy_host(c->e, c->name)) {
		decide(c, false);
		return;
	}
	/* Upstream sees this one request, closed after it (sniff.h). */
	static uint8_t rw[SNIFF_HTTP_MAX * 2]; /* rebuilt lines may grow */
	long w = sniff_http_rewrite(&h, rw, sizeof(rw));
	size_t rest = c->headlen - h.head_len;
	if (w < 0 || (size_t)w + rest > sizeof(c->head)) {
		refuse(c, NULL);
		return;
	}
	memmove(c->head + w, c->head + h.head_len, rest);
	memcpy(c->head, rw, (size_t)w);
	c->headlen = (size_t)w + rest;
	decide(c, false);
}

static void on_head_timeout(struct timer *t)
{
	struct conn *c = (struct conn *)((char *)t - offsetof(struct conn, t));
	if (c->st == CONN_HEAD)
		refuse(c, NULL);
	else
		conn_close(c, true);
}

static void accept_on(struct egress *e, struct ev *ev, bool tls)
{
	for (;;) {
		int fd = egress_accept_guest(e, ev->fd); /* resolver.h */
		if (fd < 0)
			return;
		struct conn *c = conn_new(e, fd, "proxy");
		if (!c)
			continue;
		c->tls = tls;
		c->port = tls ? 443 : 80;
		c->a.fn = on_head;
		c->t.fn = on_head_timeout;
		if (loop_add(&e->loop, &c->a, EPOLLIN)) {
			conn_close(c, true);
			continue;
		}
		timer_arm(&e->loop, &c->t, EGRESS_HEAD_MS);
	}
}

static void on_http(struct ev *ev, uint32_t events)
{
	(void)events;
	accept_on((struct egress *)((char *)ev - offsetof(struct egress, http)), ev, false);
}

static void on_tls(struct ev *ev, uint32_t events)
{
	(void)events;
	accept_on((struct egress *)((char *)ev - offsetof(struct egress, tls)), ev, true);
}

int proxy_open(struct egress *e)
{
	int r = egress_listen_gw(e, SOCK_STREAM, NFT_PROXY_HTTP, &e->http, on_http);
	if (!r)
		r = egress_listen_gw(e, SOCK_STREAM, NFT_PROXY_TLS, &e->tls, on_tls);
	return r;
}

/* ---- publish: host clients to a server in the guest ---------------------- */

static void on_publish(struct ev *ev, uint32_t events)
{
	(void)events;
	struct egress_pub *p = (struct egress_pub *)((char *)ev - offsetof(struct egress_pub, ev));
	struct egress *e = p->e;
	for (;;) {
		int fd = accept4(ev->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0)
			return;
		struct conn *c = conn_new(e, fd, "publish");
		if (!c)
			continue;
		c->port = p->guest_port;
		c->cand[0] = e->cfg.guest;
		c->ncand = 1;
		if (loop_add(&e->loop, &c->a, 0)) {
			conn_close(c, true);
			continue;
		}
		conn_dial(c);
	}
}

int publish_open(struct egress *e)
{
	for (size_t i = 0; i < e->cfg.npublish; i++) {
		int fd = e->cfg.publish[i].fd;
		int fl = fcntl(fd, F_GETFL);
		if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) || fcntl(fd, F_SETFD, FD_CLOEXEC))
			return -errno;
		e->publish[i].ev.fd = fd;
		e->publish[i].ev.fn = on_publish;
		e->publish[i].e = e;
		e->publish[i].guest_port = e->cfg.publish[i].guest_port;
		int r = loop_add(&e->loop, &e->publish[i].ev, EPOLLIN);
		if (r)
			return r;
	}
	return 0;
}
