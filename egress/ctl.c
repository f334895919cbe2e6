#include "ctl.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "nftd.h"
#include "policy.h"
#include "proxyset.h"

struct ctlc {
	struct egress *e;
	struct ev ev;
	struct timer t;
	struct loop_dead dead;
	bool dying;
	char *in;
	size_t inlen;
	char *out;
	size_t outlen, outoff;
};

static char *reply_str(json_t *o)
{
	char *s = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
	json_decref(o);
	if (!s)
		return NULL;
	size_t n = strlen(s);
	char *l = realloc(s, n + 2);
	if (!l) {
		free(s);
		return NULL;
	}
	l[n] = '\n';
	l[n + 1] = '\0';
	return l;
}

static const char UNKNOWN[] = "unknown request: {\"op\":\"policy\",\"policy\":{...}}, "
                              "{\"op\":\"proxy\",...}, {\"op\":\"ca\"} or {\"op\":\"status\"}";

static char *fail(const char *msg)
{
	return reply_str(json_pack("{s:b, s:s}", "ok", 0, "error", msg));
}

/* request_load() - a request line as a JSON object, with its "op" (NULL
 * when absent) and, for {"op":"policy","policy":{...}}, *@policy.  NULL
 * when the line is no JSON object. */
static json_t *request_load(const char *line, size_t len, const char **op, json_t **policy)
{
	json_error_t je;
	json_t *req = json_loadb(line, len, JSON_REJECT_DUPLICATES, &je);
	if (!json_is_object(req)) {
		json_decref(req);
		return NULL;
	}
	*op = json_string_value(json_object_get(req, "op"));
	*policy = *op && !strcmp(*op, "policy") && json_object_size(req) == 2
	              ? json_object_get(req, "policy")
	              : NULL;
	return req;
}

/* The parser's requests: those the keeper forwards.  A "policy" here is
 * one the keeper has applied; only the policy in force changes. */
char *ctl_handle(struct egress *e, const char *line, size_t len)
{
	const char *op;
	json_t *pol;
	json_t *req = request_load(line, len, &op, &pol);
	char err[320];
	if (!req)
		return fail("the request is not a JSON object");
	char *out;
	if (pol) {
		struct netpolicy p;
		int r = netpolicy_from_json(pol, &p, err, sizeof(err));
		if (!r)
			egress_take_policy(e, &p);
		out = r ? fail(err) : reply_str(json_pack("{s:b}", "ok", 1));
	} else if (op && !strcmp(op, "proxy")) {
		int r = egress_set_proxy(e, req, err, sizeof(err));
		out =
		    r ? fail(err) : reply_str(json_pack("{s:b, s:s}", "ok", 1, "ca", e->ca.ca_pem));
	} else if (op && !strcmp(op, "ca") && json_object_size(req) == 1 && e->tls_ok) {
		out = reply_str(json_pack("{s:b, s:s, s:I}", "ok", 1, "ca", e->ca.ca_pem,
		                          "proxy_rules", (json_int_t)e->rules.n));
	} else {
		out = fail(UNKNOWN);
	}
	json_decref(req);
	return out;
}

/* The keeper only routes a "proxy" request: its copies of the secrets go
 * (jansson frees without wiping). */
static void wipe_secrets(json_t *req)
{
	const char *k;
	json_t *v;
	json_object_foreach(json_object_get(req, "secrets"), k, v)
	{
		if (json_is_string(v))
			explicit_bzero((char *)json_string_value(v), json_string_length(v));
	}
}

/* The keeper's decision on a request from the host: "status" and a
 * failed "policy" are answered here (the reply, malloc'd); an applied
 * "policy", "proxy" and "ca" go to the parser with the connection
 * (NULL, *@fwd set). */
static char *route(struct egress *e, const char *line, size_t len, bool *fwd)
{
	const char *op;
	json_t *pol;
	json_t *req = request_load(line, len, &op, &pol);
	char err[320];
	*fwd = false;
	if (!req)
		return fail("the request is not a JSON object");
	char *out = NULL;
	if (op && !strcmp(op, "status") && json_object_size(req) == 1) {
		pins_expire(&e->pins, loop_now_ms());
		json_t *p = netpolicy_to_json(&e->policy);
		out = p ? reply_str(json_pack("{s:b, s:o, s:I}", "ok", 1, "policy", p, "pins",
		                              (json_int_t)e->pins.n))
		        : NULL;
	} else if (pol) {
		struct netpolicy p;
		int r = netpolicy_from_json(pol, &p, err, sizeof(err));
		if (!r) {
			r = egress_apply_policy(e, &p, err, sizeof(err));
			netpolicy_free(&p);
		}
		if (r)
			out = fail(err);
		else
			*fwd = true;
	} else if (op && (!strcmp(op, "proxy") || !strcmp(op, "ca"))) {
		*fwd = true;
	} else {
		out = fail(UNKNOWN);
	}
	wipe_secrets(req);
	json_decref(req);
	return out;
}

static void ctlc_free(struct loop_dead *d)
{
	free((char *)d - offsetof(struct ctlc, dead));
}

static void ctlc_close(struct ctlc *c)
{
	if (c->dying)
		return;
	c->dying = true;
	loop_del(&c->e->loop, &c->ev);
	close(c->ev.fd);
	timer_cancel(&c->e->loop, &c->t);
	/* A proxy request carries secrets. */
	if (c->in)
		explicit_bzero(c->in, c->inlen);
	free(c->in);
	free(c->out);
	c->e->nctl--;
	loop_defer_free(&c->e->loop, &c->dead);
}

static void on_timeout(struct timer *t)
{
	ctlc_close((struct ctlc *)((char *)t - offsetof(struct ctlc, t)));
}

static void on_client(struct ev *ev, uint32_t events)
{
	struct ctlc *c = (struct ctlc *)((char *)ev - offsetof(struct ctlc, ev));
	(void)events;
	if (c->dying)
		return;
	if (c->out) {
		ssize_t n = send(ev->fd, c->out + c->outoff, c->outlen - c->outoff,
		                 MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0 && errno == EAGAIN)
			return;
		if (n <= 0) {
			ctlc_close(c);
			return;
		}
		c->outoff += (size_t)n;
		if (c->outoff == c->outlen)
			ctlc_close(c);
		return;
	}
	ssize_t n = recv(ev->fd, c->in + c->inlen, CTL_LINE_MAX - c->inlen, MSG_DONTWAIT);
	if (n < 0 && errno == EAGAIN)
		return;
	if (n <= 0) {
		ctlc_close(c);
		return;
	}
	c->inlen += (size_t)n;
	char *nl = memchr(c->in, '\n', c->inlen);
	if (!nl && c->inlen < CTL_LINE_MAX)
		return;
	if (!nl) {
		c->out = fail("request line too long");
	} else {
		bool fwd;
		size_t len = (size_t)(nl - c->in);
		c->out = route(c->e, c->in, len, &fwd);
		if (fwd) {
			int r = nftd_forward(c->e, c->in, len, c->ev.fd);
			if (!r) {
				ctlc_close(c); /* the parser answers on its copy */
				return;
			}
			c->out = fail("cove-egress's parser is not answering");
		}
	}
	if (!c->out) {
		ctlc_close(c);
		return;
	}
	c->outlen = strlen(c->out);
	if (loop_mod(&c->e->loop, &c->ev, EPOLLOUT))
		ctlc_close(c);
}

static void on_accept(struct ev *ev, uint32_t events)
{
	struct egress *e = (struct egress *)((char *)ev - offsetof(struct egress, ctl));
	(void)events;
	for (;;) {
		int fd = accept4(ev->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0)
			return;
		struct ctlc *c = e->nctl < CTL_CLIENTS_MAX ? calloc(1, sizeof(*c)) : NULL;
		char *in = c ? malloc(CTL_LINE_MAX) : NULL;
		if (!in) {
			free(c);
			close(fd);
			continue;
		}
		c->e = e;
		c->dead.free = ctlc_free;
		c->in = in;
		c->ev.fd = fd;
		c->ev.fn = on_client;
		c->t.fn = on_timeout;
		if (loop_add(&e->loop, &c->ev, EPOLLIN)) {
			free(in);
			free(c);
			close(fd);
			continue;
		}
		e->nctl++;
		timer_arm(&e->loop, &c->t, EGRESS_CTL_MS);
	}
}

int ctl_open(struct egress *e)
{
	e->ctl.fd = e->cfg.ctl_fd;
	if (e->ctl.fd < 0)
		return 0;
	int fl = fcntl(e->ctl.fd, F_GETFL);
	if (fl < 0 || fcntl(e->ctl.fd, F_SETFL, fl | O_NONBLOCK) ||
	    fcntl(e->ctl.fd, F_SETFD, FD_CLOEXEC))
		return -errno;
	e->ctl.fn = on_accept;
	return loop_add(&e->loop, &e->ctl, EPOLLIN);
}

int ctl_adopt(struct egress *e, int fd, const char *line, size_t len)
{
	struct ctlc *c = e->nctl < CTL_CLIENTS_MAX ? calloc(1, sizeof(*c)) : NULL;
	if (!c) {
		close(fd);
		return -ENOMEM;
	}
	c->e = e;
	c->dead.free = ctlc_free;
	c->ev.fd = fd;
	c->ev.fn = on_client;
	c->t.fn = on_timeout;
	c->out = ctl_handle(e, line, len);
	c->outlen = c->out ? strlen(c->out) : 0;
	if (!c->out || loop_add(&e->loop, &c->ev, EPOLLOUT)) {
		free(c->out);
		free(c);
		close(fd);
		return -ENOMEM;
	}
	e->nctl++;
	timer_arm(&e->loop, &c->t, EGRESS_CTL_MS);
	return 0;
}
