#include "resolver.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "elog.h"
#include "listen.h"
#include "policy.h"
#include "proxyset.h"
#include "upstream.h"

#define TCP_QUERY_MAX 4096 /* a query over TCP is a question: no more */

struct dtcp;

/* One allowed query waiting for upstream. */
struct pending {
	struct egress *e;
	struct dns_question q;
	char rule_text[NETRULE_TEXT_MAX + 8];
	bool has_rule;
	struct sockaddr_in client; /* UDP */
	struct dtcp *tcp;          /* or TCP */
};

struct dtcp {
	struct egress *e;
	struct ev ev;
	struct timer t;
	struct loop_dead dead;
	bool dying;
	uint8_t in[2 + TCP_QUERY_MAX];
	size_t inlen;
	uint8_t *out;
	size_t outlen, outoff;
	struct pending *wait; /* one question at a time */
	struct upq *uq;
};

static void dtcp_close(struct dtcp *c);
static void dtcp_take(struct dtcp *c);

static void log_dns(struct egress *e, const struct dns_question *q, const char *rule, bool allow,
                    const struct netaddr *dst)
{
	struct elog_rec r = { .proto = "dns",
		              .dst = dst,
		              .port = 53,
		              .name = q->name_ok ? q->name : NULL,
		              .rule = rule,
		              .allow = allow,
		              .via = "dns",
		              .bytes_out = -1,
		              .bytes_in = -1 };
	elog_write(e->cfg.log_fd, &r);
}

static void dtcp_arm_out(struct dtcp *c)
{
	if (loop_mod(&c->e->loop, &c->ev, c->out ? EPOLLOUT : EPOLLIN))
		dtcp_close(c);
}

/* Send @msg to whoever asked. */
static void reply(struct egress *e, struct pending *p, const uint8_t *msg, long n)
{
	if (n <= 0)
		return;
	if (!p->tcp) {
		sendto(e->dns_udp.fd, msg, (size_t)n, MSG_DONTWAIT, (struct sockaddr *)&p->client,
		       sizeof(p->client));
		return;
	}
	struct dtcp *c = p->tcp;
	c->out = malloc((size_t)n + 2);
	if (!c->out) {
		dtcp_close(c);
		return;
	}
	c->out[0] = (uint8_t)(n >> 8);
	c->out[1] = (uint8_t)n;
	memcpy(c->out + 2, msg, (size_t)n);
	c->outlen = (size_t)n + 2;
	c->outoff = 0;
	dtcp_arm_out(c);
}

static void reply_rcode(struct egress *e, struct pending *p, uint8_t rcode)
{
	uint8_t msg[NETRULE_NAME_MAX + 64];
	reply(e, p, msg, dns_error_reply(&p->q, rcode, msg, sizeof(msg)));
}

static void on_answer(void *ctx, const uint8_t *resp, size_t len, uint16_t id, int err)
{
	struct pending *p = ctx;
	struct egress *e = p->e;
	const char *rule = p->has_rule ? p->rule_text : NULL;
	if (p->tcp)
		p->tcp->uq = NULL;
	if (err) {
		reply_rcode(e, p, DNS_RCODE_SERVFAIL);
		log_dns(e, &p->q, rule, false, NULL);
		goto done;
	}
	struct dns_filter f = { .hosts = e->cfg.hosts,
		                .nhosts = e->cfg.nhosts,
		                .policy = &e->policy,
		                .max = p->tcp ? DNS_MSG_MAX : p->q.udp_max };
	uint8_t *out = malloc(DNS_MSG_MAX);
	long n = out ? dns_filter_answer(resp, len, id, &p->q, &f, out, DNS_MSG_MAX) : -1;
	if (n < 0) {
		reply_rcode(e, p, DNS_RCODE_SERVFAIL);
		log_dns(e, &p->q, rule, false, NULL);
	} else if (egress_pin(e, p->q.name, f.pins, f.npins)) {
		/* An answer the guest could not use: fail closed. */
		reply_rcode(e, p, DNS_RCODE_SERVFAIL);
		log_dns(e, &p->q, rule, false, NULL);
	} else {
		reply(e, p, out, n);
		log_dns(e, &p->q, rule, true, f.npins ? &f.pins[0].addr : NULL);
	}
	free(out);
done:
	if (p->tcp && !p->tcp->dying) {
		p->tcp->wait = NULL;
		if (!p->tcp->out) {
			dtcp_arm_out(p->tcp);
			dtcp_take(p->tcp);
		}
	}
	free(p);
}

/* A query from the guest: judge it, answer or ask upstream. */
static void handle_query(struct egress *e, const uint8_t *msg, size_t len,
                         const struct sockaddr_in *client, struct dtcp *tcp)
{
	struct pending *p = calloc(1, sizeof(*p));
	if (!p)
		return;
	p->e = e;
	p->tcp = tcp;
	if (client)
		p->client = *client;
	if (dns_parse_query(msg, len, &p->q)) {
		if (len >= 12) {
			p->q.name_ok = false;
			reply_rcode(e, p, DNS_RCODE_FORMERR);
		}
		free(p);
		return;
	}
	if (!tcp)
		p->q.udp_max = p->q.udp_max < 512 ? 512 : p->q.udp_max;
	const struct netrule *rule;
	bool ok = dns_allowed(&e->policy, &p->q, &rule);
	/* A credential rule's hosts resolve whatever the policy. */
	const struct proxy_rule *pr = NULL;
	if (!ok && p->q.name_ok && (pr = egress_proxy_host(e, p->q.name))) {
		struct netpolicy open;
		netpolicy_init(&open, NETPOLICY_OPEN);
		ok = dns_allowed(&open, &p->q, &rule);
		rule = NULL;
		if (ok) {
			snprintf(p->rule_text, sizeof(p->rule_text), "proxy-rule:%s", pr->name);
			p->has_rule = true;
		}
	}
	if (!ok) {
		reply_rcode(e, p, DNS_RCODE_REFUSED);
		log_dns(e, &p->q, NULL, false, NULL);
		free(p);
		return;
	}
	if (rule) {
		p->has_rule = elog_rule_text(rule, p->rule_text, sizeof(p->rule_text)) != NULL;
	}
	struct upq *u = upq_start(e, &p->q, on_answer, p);
	if (!u) {
		reply_rcode(e, p, DNS_RCODE_SERVFAIL);
		log_dns(e, &p->q, p->has_rule ? p->rule_text : NULL, false, NULL);
		free(p);
		return;
	}
	if (tcp) {
		tcp->wait = p;
		tcp->uq = u;
	}
}

bool egress_is_guest(const struct egress *e, const struct sockaddr_in *sa, socklen_t len)
{
	return len == sizeof(*sa) && sa->sin_family == AF_INET &&
	       memcmp(&sa->sin_addr, e->cfg.guest.a, 4) == 0;
}

int egress_accept_guest(const struct egress *e, int lfd)
{
	for (;;) {
		struct sockaddr_in sa;
		socklen_t sl = sizeof(sa);
		int fd = accept4(lfd, (struct sockaddr *)&sa, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0 || egress_is_guest(e, &sa, sl))
			return fd;
		close(fd); /* silently: a forged source learns nothing */
	}
}

static void on_udp(struct ev *ev, uint32_t events)
{
	struct egress *e = (struct egress *)((char *)ev - offsetof(struct egress, dns_udp));
	(void)events;
	uint8_t buf[4096];
	for (int i = 0; i < 64; i++) {
		struct sockaddr_in sa;
		socklen_t sl = sizeof(sa);
		ssize_t n =
		    recvfrom(ev->fd, buf, sizeof(buf), MSG_DONTWAIT, (struct sockaddr *)&sa, &sl);
		if (n < 0)
			return;
		if (!egress_is_guest(e, &sa, sl))
			continue; /* no answer to a source that is not the guest */
		handle_query(e, buf, (size_t)n, &sa, NULL);
	}
}

static void dtcp_free(struct loop_dead *d)
{
	free((char *)d - offsetof(struct dtcp, dead));
}

static void dtcp_close(struct dtcp *c)
{
	if (c->dying)
		return;
	c->dying = true;
	if (c->uq) {
		upq_cancel(c->uq);
		free(c->wait);
	}
	loop_del(&c->e->loop, &c->ev);
	close(c->ev.fd);
	timer_cancel(&c->e->loop, &c->t);
	free(c->out);
	c->e->ndns_tcp--;
	loop_defer_free(&c->e->loop, &c->dead);
}

static void dtcp_timeout(struct timer *t)
{
	dtcp_close((struct dtcp *)((char *)t - offsetof(struct dtcp, t)));
}

/* A whole query in the buffer (read now or pipelined behind the last):
 * take it.  One question at a time: reading stops until it is answered. */
static void dtcp_take(struct dtcp *c)
{
	if (c->dying || c->wait || c->out || c->inlen < 2)
		return;
	size_t want = (size_t)c->in[0] << 8 | c->in[1];
	if (want == 0 || want > TCP_QUERY_MAX) {
		dtcp_close(c);
		return;
	}
	if (c->inlen < 2 + want)
		return;
	if (loop_mod(&c->e->loop, &c->ev, 0)) {
		dtcp_close(c);
		return;
	}
	size_t extra = c->inlen - 2 - want;
	uint8_t q[TCP_QUERY_MAX];
	memcpy(q, c->in + 2, want);
	memmove(c->in, c->in + 2 + want, extra);
	c->inlen = extra;
	handle_query(c->e, q, want, NULL, c);
	if (!c->dying && !c->wait && !c->out)
		dtcp_arm_out(c);
}

static void on_dtcp(struct ev *ev, uint32_t events)
{
	struct dtcp *c = (struct dtcp *)((char *)ev - offsetof(struct dtcp, ev));
	if (c->dying)
		return;
	if (events & (EPOLLERR | EPOLLHUP)) {
		dtcp_close(c);
		return;
	}
	if (c->out) {
		ssize_t n = send(ev->fd, c->out + c->outoff, c->outlen - c->outoff,
		                 MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n < 0) {
			if (errno != EAGAIN)
				dtcp_close(c);
			return;
		}
		c->outoff += (size_t)n;
		if (c->outoff == c->outlen) {
			free(c->out);
			c->out = NULL;
			timer_arm(&c->e->loop, &c->t, EGRESS_DNS_TCP_MS);
			dtcp_arm_out(c);
			dtcp_take(c);
		}
		return;
	}
	if (c->wait)
		return;
	ssize_t n = recv(ev->fd, c->in + c->inlen, sizeof(c->in) - c->inlen, MSG_DONTWAIT);
	if (n <= 0) {
		if (n == 0 || errno != EAGAIN)
			dtcp_close(c);
		return;
	}
	c->inlen += (size_t)n;
	dtcp_take(c);
}

static void on_tcp_accept(struct ev *ev, uint32_t events)
{
	struct egress *e = (struct egress *)((char *)ev - offsetof(struct egress, dns_tcp));
	(void)events;
	for (;;) {
		int fd = egress_accept_guest(e, ev->fd);
		if (fd < 0)
			return;
		struct dtcp *c = e->ndns_tcp < EGRESS_DNS_TCP_MAX ? calloc(1, sizeof(*c)) : NULL;
		if (!c) {
			close(fd);
			continue;
		}
		c->e = e;
		c->dead.free = dtcp_free;
		c->ev.fd = fd;
		c->ev.fn = on_dtcp;
		c->t.fn = dtcp_timeout;
		if (loop_add(&e->loop, &c->ev, EPOLLIN)) {
			close(fd);
			free(c);
			continue;
		}
		e->ndns_tcp++;
		timer_arm(&e->loop, &c->t, EGRESS_DNS_TCP_MS);
	}
}

int resolver_open(struct egress *e)
{
	int r = egress_listen_gw(e, SOCK_DGRAM, 53, &e->dns_udp, on_udp);
	if (!r)
		r = egress_listen_gw(e, SOCK_STREAM, 53, &e->dns_tcp, on_tcp_accept);
	return r;
}
