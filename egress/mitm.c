#include "mitm.h"

#include <errno.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "conn.h"
#include "elog.h"
#include "httpreq.h"

#define GUEST_CIPHER_MAX 65536 /* guest TLS bytes buffered before SSL reads them */
#define STEP_ROUNDS      32

struct mitm {
	SSL *gs, *us; /* NULL for plain HTTP */
	BIO *grbio;   /* the guest's TLS bytes, fed by us (its wbio is the socket) */
	bool g_hs, u_hs;
	bool g_ww, u_ww;   /* the last TLS call on that side wants the socket writable */
	bool g_raw_eof;    /* the guest's socket ended */
	bool g_eof, u_eof; /* the plaintext each way ended */
	bool head_done;
	bool refuse_pending, replying; /* a refusal to send, then close */
	int refuse_status;
	char refuse_msg[200];
	size_t carry_off, carry_end; /* body bytes read with the head, in req.buf */
	struct httpreq req;
};

static struct conn *conn_of_a(struct ev *ev)
{
	return (struct conn *)((char *)ev - offsetof(struct conn, a));
}

static struct conn *conn_of_b(struct ev *ev)
{
	return (struct conn *)((char *)ev - offsetof(struct conn, b));
}

void mitm_free(struct mitm *m)
{
	if (!m)
		return;
	SSL_free(m->gs); /* frees its BIOs; the sockets are the conn's */
	SSL_free(m->us);
	explicit_bzero(&m->req, sizeof(m->req));
	free(m);
}

struct mitm *mitm_new(struct conn *c)
{
	struct egress *e = c->e;
	struct mitm *m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	httpreq_init(&m->req);
	c->m_start = mitm_start;
	c->m_free = mitm_free;
	if (!c->tls)
		return m;
	X509 *leaf = e->tls_ok ? tlsca_leaf(&e->ca, c->name) : NULL;
	m->gs = leaf ? SSL_new(e->ca.srv) : NULL;
	m->grbio = BIO_new(BIO_s_mem());
	BIO *w = BIO_new_socket(c->a.fd, BIO_NOCLOSE);
	if (!m->gs || !m->grbio || !w || SSL_use_certificate(m->gs, leaf) != 1 ||
	    SSL_use_PrivateKey(m->gs, e->ca.leaf_key) != 1) {
		BIO_free(m->grbio);
		BIO_free(w);
		SSL_free(m->gs);
		free(m);
		ERR_clear_error();
		return NULL;
	}
	BIO_set_mem_eof_return(m->grbio, -1);
	SSL_set_bio(m->gs, m->grbio, w);
	SSL_set_accept_state(m->gs);
	/* The ClientHello the proxy read for the SNI. */
	if (BIO_write(m->grbio, c->head, (int)c->headlen) != (int)c->headlen) {
		mitm_free(m);
		return NULL;
	}
	c->headlen = 0;
	return m;
}

static void log_req(struct conn *c, const char *rule, bool injected, bool allow, const char *note)
{
	struct elog_rec r = { .proto = c->tls ? "https" : "http",
		              .dst = c->have_dst ? &c->dst : NULL,
		              .port = c->port,
		              .name = c->name,
		              .rule = c->rule[0] ? c->rule : NULL,
		              .allow = allow,
		              .via = "proxy",
		              .bytes_out = -1,
		              .bytes_in = -1,
		              .inject = rule,
		              .injected = injected,
		              .note = note };
	elog_write(c->e->cfg.log_fd, &r);
}

static void refuse(struct mitm *m, int status, const char *msg)
{
	if (m->refuse_pending || m->replying)
		return;
	m->refuse_pending = true;
	m->refuse_status = status;
	snprintf(m->refuse_msg, sizeof(m->refuse_msg), "%s", msg);
}

/* Put the refusal into the guest's direction (empty by then: nothing of
 * the server's has been passed on before a head is decided). */
static void queue_refusal(struct conn *c)
{
	struct mitm *m = c->m;
	const char *reason = m->refuse_status == 400   ? "Bad Request"
	                     : m->refuse_status == 403 ? "Forbidden"
	                     : m->refuse_status == 431 ? "Request Header Fields Too Large"
	                                               : "Bad Gateway";
	c->down.off = 0;
	int n = snprintf((char *)c->down.buf, CONN_BUF,
	                 "HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\nContent-Length: %zu\r\n"
	                 "Connection: close\r\n\r\ncove-egress: %s\n",
	                 m->refuse_status, reason, strlen(m->refuse_msg) + 13, m->refuse_msg);
	c->down.len = n > 0 && n < CONN_BUF ? (size_t)n : 0;
	m->refuse_pending = false;
	m->replying = true;
}

/* The head is complete: judge where it goes, normalise its path, match a
 * rule, expand its headers, rebuild with Cove's own Host. */
static void head_decided(struct conn *c)
{
	struct egress *e = c->e;
	struct mitm *m = c->m;
	struct httpreq *q = &m->req;
	static struct proxy_hdr hdrs[HTTPREQ_HDRS_MAX];
	static char tgt[HTTPREQ_TARGET_MAX];
	size_t tlen = 0;
	const char *why = NULL;
	int st = httpreq_intercepted(q, c->name, c->port, tgt, sizeof(tgt), &tlen, &why);
	if (st) {
		log_req(c, NULL, false, false, why);
		c->logged = true;
		refuse(m, st, why);
		return;
	}
	/* The name the rule matched, never the guest's spelling of it. */
	char host[NETRULE_NAME_MAX + 8];
	if (c->port != (c->tls ? 443 : 80))
		snprintf(host, sizeof(host), "%s:%u", c->name, c->port);
	else
		snprintf(host, sizeof(host), "%s", c->name);
	size_t nh = httpreq_headers(q, hdrs, HTTPREQ_HDRS_MAX);
	const char *method = httpreq_method(q);
	const struct proxy_rule *u =
	    proxy_rules_match(&e->rules, c->name, c->tls, method, tgt, tlen, hdrs, nh);
	struct proxy_hdr add[PROXY_LIST_MAX];
	static char vals[PROXY_LIST_MAX][PROXY_VALUE_MAX * 2 + 1];
	size_t nadd = 0;
	for (size_t i = 0; u && i < u->nheaders; i++) {
		char missing[80];
		long n = proxy_expand(u->headers[i].value, e->secrets, e->nsecrets, vals[i],
		                      sizeof(vals[i]), missing, sizeof(missing));
		if (n < 0) {
			char note[160];
			snprintf(note, sizeof(note), "header %s: %s '%s'", u->headers[i].name,
			         n == -ENOENT ? "unknown secret" : "value too long", missing);
			log_req(c, u->name, false, false, note);
			c->logged = true;
			char msg[200];
			snprintf(msg, sizeof(msg), "rule %s: %s", u->name, note);
			refuse(m, 502, msg);
			goto wipe;
		}
		add[nadd++] = (struct proxy_hdr){ .name = u->headers[i].name,
			                          .nlen = strlen(u->headers[i].name),
			                          .value = vals[i],
			                          .vlen = (size_t)n };
	}
	long w = httpreq_rewrite(q, tgt, tlen, host, add, nadd, c->up.buf, CONN_BUF);
	if (w < 0) {
		refuse(m, 431, "the request head is too large with its injected headers");
		goto wipe;
	}
	c->up.off = 0;
	c->up.len = (size_t)w;
	c->up.bytes += (uint64_t)w;
	m->head_done = true;
	m->carry_off = q->head_end;
	m->carry_end = q->len;
	if (u)
		log_req(c, u->name, nadd > 0, true, NULL);
wipe:
	for (size_t i = 0; i < nadd; i++)
		explicit_bzero(vals[i], add[i].vlen);
}

static void feed_head(struct conn *c, const uint8_t *buf, size_t n)
{
	struct mitm *m = c->m;
	size_t used = 0;
	enum httpreq_result r = httpreq_feed(&m->req, buf, n, &used);
	if (r == HTTPREQ_BAD)
		refuse(m, m->req.status,
		       m->req.status == 431 ? "the request head is too large"
		                            : "the request does not parse");
	else if (r == HTTPREQ_DONE)
		head_decided(c);
}

/* >0 bytes, 0 the end, -1 not now, -2 an error. */
static long ssl_io(SSL *s, bool wr, void *buf, size_t n, bool *ww)
{
	int k = wr ? SSL_write(s, buf, (int)n) : SSL_read(s, buf, (int)n);
	if (k > 0)
		return k;
	int e = SSL_get_error(s, k);
	ERR_clear_error();
	if (e == SSL_ERROR_WANT_READ)
		return -1;
	if (e == SSL_ERROR_WANT_WRITE) {
		*ww = true;
		return -1;
	}
	if (e == SSL_ERROR_ZERO_RETURN && !wr)
		return 0;
	return -2;
}

static long sock_io(int fd, bool wr, void *buf, size_t n)
{
	ssize_t k =
	    wr ? send(fd, buf, n, MSG_NOSIGNAL | MSG_DONTWAIT) : recv(fd, buf, n, MSG_DONTWAIT);
	if (k > 0)
		return k;
	if (k == 0 && !wr)
		return 0;
	return k < 0 && (errno == EAGAIN || errno == EINTR) ? -1 : -2;
}

static long g_io(struct conn *c, bool wr, void *buf, size_t n)
{
	return c->m->gs ? ssl_io(c->m->gs, wr, buf, n, &c->m->g_ww) : sock_io(c->a.fd, wr, buf, n);
}

static long u_io(struct conn *c, bool wr, void *buf, size_t n)
{
	return c->m->us ? ssl_io(c->m->us, wr, buf, n, &c->m->u_ww) : sock_io(c->b.fd, wr, buf, n);
}

static int handshake(SSL *s, bool *done, bool *ww)
{
	if (*done)
		return 0;
	int k = SSL_do_handshake(s);
	if (k == 1) {
		*done = true;
		return 1;
	}
	int e = SSL_get_error(s, k);
	if (e == SSL_ERROR_WANT_READ)
		return 0;
	if (e == SSL_ERROR_WANT_WRITE) {
		*ww = true;
		return 0;
	}
	return -1;
}

/* One round of moving what can move; true if anything did, -1 to end the
 * connection with a reset. */
/* Writes what d holds through io (u_io or g_io); -1 on a fatal error. */
static int drain(struct conn *c, struct conn_dir *d,
                 long (*io)(struct conn *, bool, void *, size_t), bool *prog)
{
	if (d->len <= d->off)
		return 0;
	long k = io(c, true, d->buf + d->off, d->len - d->off);
	if (k == -2)
		return -1;
	if (k > 0) {
		d->off += (size_t)k;
		*prog = true;
	}
	if (d->off == d->len)
		d->off = d->len = 0;
	return 0;
}

static int round_(struct conn *c)
{
	struct mitm *m = c->m;
	bool prog = false;
	m->g_ww = m->u_ww = false;
	if (m->gs && !m->g_raw_eof && BIO_ctrl_pending(m->grbio) < GUEST_CIPHER_MAX) {
		uint8_t tmp[16384];
		long k = sock_io(c->a.fd, false, tmp, sizeof(tmp));
		if (k > 0) {
			if (BIO_write(m->grbio, tmp, (int)k) != (int)k)
				return -1;
			prog = true;
		} else if (k == 0) {
			m->g_raw_eof = true;
			BIO_set_mem_eof_return(m->grbio, 0);
			prog = true;
		} else if (k == -2) {
			return -1;
		}
	}
	if (m->gs) {
		int h = handshake(m->gs, &m->g_hs, &m->g_ww);
		if (h < 0) {
			log_req(c, NULL, false, false, "the guest's TLS handshake failed");
			c->logged = true;
			return -1;
		}
		prog |= h > 0;
	}
	if (m->us && !m->refuse_pending && !m->replying) {
		int h = handshake(m->us, &m->u_hs, &m->u_ww);
		if (h < 0) {
			long v = SSL_get_verify_result(m->us);
			char note[200];
			snprintf(note, sizeof(note), "the server's TLS failed: %s",
			         v != X509_V_OK ? X509_verify_cert_error_string(v)
			                        : "handshake error");
			log_req(c, NULL, false, false, note);
			c->logged = true;
			refuse(m, 502, note);
			ERR_clear_error();
		}
		prog |= h > 0;
	}
	bool gready = !m->gs || m->g_hs, uready = (!m->us || m->u_hs) && !m->replying;
	if (gready && m->refuse_pending) {
		queue_refusal(c);
		prog = true;
	}
	/* guest -> server */
	if (gready && !m->replying && !m->g_eof) {
		if (!m->head_done) {
			uint8_t tmp[4096];
			size_t room = sizeof(m->req.buf) - m->req.len;
			long k = room ? g_io(c, false, tmp, room < sizeof(tmp) ? room : sizeof(tmp))
			              : -1;
			if (k > 0) {
				feed_head(c, tmp, (size_t)k);
				prog = true;
			} else if (k == 0) {
				m->g_eof = true;
				prog = true;
			} else if (k == -2) {
				return -1;
			}
		} else if (m->carry_off < m->carry_end) {
			size_t room = CONN_BUF - c->up.len;
			size_t n = m->carry_end - m->carry_off;
			n = n < room ? n : room;
			memcpy(c->up.buf + c->up.len, m->req.buf + m->carry_off, n);
			c->up.len += n;
			c->up.bytes += n;
			m->carry_off += n;
			prog |= n > 0;
		} else if (c->up.len < CONN_BUF) {
			long k = g_io(c, false, c->up.buf + c->up.len, CONN_BUF - c->up.len);
			if (k > 0) {
				c->up.len += (size_t)k;
				c->up.bytes += (uint64_t)k;
				prog = true;
			} else if (k == 0) {
				m->g_eof = true;
				prog = true;
			} else if (k == -2) {
				return -1;
			}
		}
	}
	if (uready && drain(c, &c->up, u_io, &prog) < 0)
		return -1;
	/* server -> guest */
	if (uready && !m->u_eof && c->down.len < CONN_BUF) {
		long k = u_io(c, false, c->down.buf + c->down.len, CONN_BUF - c->down.len);
		if (k > 0) {
			c->down.len += (size_t)k;
			c->down.bytes += (uint64_t)k;
			prog = true;
		} else if (k == 0 || (k == -2 && m->head_done)) {
			/* A server that ends without close_notify has still ended. */
			m->u_eof = true;
			prog = true;
		} else if (k == -2) {
			return -1;
		}
	}
	if (gready && drain(c, &c->down, g_io, &prog) < 0)
		return -1;
	return prog;
}

static void step(struct conn *c)
{
	struct mitm *m = c->m;
	int r = 0;
	int rounds = 0;
	while (rounds++ < STEP_ROUNDS && (r = round_(c)) > 0)
		timer_arm(&c->e->loop, &c->t, EGRESS_IDLE_MS);
	if (r < 0) {
		conn_close(c, true);
		return;
	}
	bool drained = c->down.len == c->down.off;
	if (drained && (m->u_eof || m->replying || (m->g_eof && !m->head_done))) {
		if (m->gs && m->g_hs)
			SSL_shutdown(m->gs);
		conn_close(c, false);
		return;
	}
	uint32_t ea = 0, eb = 0;
	if (!(m->gs ? m->g_raw_eof : m->g_eof))
		ea |= EPOLLIN;
	if (m->g_ww || (!m->gs && !drained) || rounds > STEP_ROUNDS)
		ea |= EPOLLOUT;
	if (!m->u_eof)
		eb |= EPOLLIN;
	if (m->u_ww || (!m->us && c->up.len > c->up.off))
		eb |= EPOLLOUT;
	if (loop_mod(&c->e->loop, &c->a, ea) || loop_mod(&c->e->loop, &c->b, eb))
		conn_close(c, true);
}

static void on_a(struct ev *ev, uint32_t events)
{
	(void)events;
	struct conn *c = conn_of_a(ev);
	if (!c->dying)
		step(c);
}

static void on_b(struct ev *ev, uint32_t events)
{
	(void)events;
	struct conn *c = conn_of_b(ev);
	if (!c->dying)
		step(c);
}

static void on_idle(struct timer *t)
{
	conn_close((struct conn *)((char *)t - offsetof(struct conn, t)), true);
}

void mitm_start(struct conn *c)
{
	struct mitm *m = c->m;
	struct egress *e = c->e;
	c->st = CONN_SPLICE;
	c->a.fn = on_a;
	c->b.fn = on_b;
	c->t.fn = on_idle;
	if (c->tls) {
		static const unsigned char alpn[] = { 8, 'h', 't', 't', 'p', '/', '1', '.', '1' };
		m->us = e->ca.cli ? SSL_new(e->ca.cli) : NULL;
		if (!m->us || !SSL_set_fd(m->us, c->b.fd) ||
		    !SSL_set_tlsext_host_name(m->us, c->name) || !SSL_set1_host(m->us, c->name) ||
		    SSL_set_alpn_protos(m->us, alpn, sizeof(alpn))) {
			ERR_clear_error();
			conn_close(c, true);
			return;
		}
		SSL_set_connect_state(m->us);
	} else {
		/* The request head the proxy read for the Host. */
		size_t n = c->headlen;
		c->headlen = 0;
		feed_head(c, c->head, n);
	}
	timer_arm(&e->loop, &c->t, EGRESS_IDLE_MS);
	step(c);
}
