#include "conn.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "elog.h"
#include "upstream.h"

static void conn_free(struct loop_dead *d)
{
	free((char *)d - offsetof(struct conn, dead));
}

static void reset_close(int fd)
{
	struct linger l = { .l_onoff = 1, .l_linger = 0 };
	setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
	close(fd);
}

struct conn *conn_new(struct egress *e, int fd, const char *via)
{
	struct conn *c = e->nconns < EGRESS_CONNS_MAX ? calloc(1, sizeof(*c)) : NULL;
	if (!c) {
		reset_close(fd);
		return NULL;
	}
	c->e = e;
	c->dead.free = conn_free;
	c->via = via;
	c->a.fd = fd;
	c->b.fd = -1;
	e->nconns++;
	return c;
}

static void close_ev(struct loop *l, struct ev *ev, bool reset)
{
	if (ev->fd < 0)
		return;
	loop_del(l, ev);
	if (reset)
		reset_close(ev->fd);
	else
		close(ev->fd);
	ev->fd = -1;
}

void conn_close(struct conn *c, bool reset)
{
	if (c->dying)
		return;
	c->dying = true;
	struct egress *e = c->e;
	if (!c->logged && c->st >= CONN_CONNECT) {
		struct elog_rec r = { .proto = "tcp",
			              .dst = c->have_dst ? &c->dst : NULL,
			              .port = c->port,
			              .name = c->name[0] ? c->name : NULL,
			              .rule = c->rule[0] ? c->rule : NULL,
			              .allow = true,
			              .via = c->via,
			              .bytes_out = (int64_t)c->up.bytes,
			              .bytes_in = (int64_t)c->down.bytes };
		elog_write(e->cfg.log_fd, &r);
	}
	upq_cancel(c->uq);
	c->uq = NULL;
	if (c->m) {
		c->m_free(c->m);
		/* An intercepted request's head held injected secrets. */
		explicit_bzero(c->up.buf, sizeof(c->up.buf));
	}
	c->m = NULL;
	timer_cancel(&e->loop, &c->t);
	close_ev(&e->loop, &c->a, reset);
	close_ev(&e->loop, &c->b, false);
	e->nconns--;
	loop_defer_free(&e->loop, &c->dead);
}

/* Move what can move in one direction.  -1 on a socket error. */
static int pump(struct ev *src, struct ev *dst, struct conn_dir *d, bool *moved)
{
	for (;;) {
		bool progress = false;
		if (d->len > d->off) {
			ssize_t n = send(dst->fd, d->buf + d->off, d->len - d->off,
			                 MSG_NOSIGNAL | MSG_DONTWAIT);
			if (n < 0 && errno != EAGAIN && errno != EINTR)
				return -1;
			if (n > 0) {
				d->off += (size_t)n;
				progress = true;
			}
		}
		if (d->off == d->len)
			d->off = d->len = 0;
		if (!d->eof && d->len < CONN_BUF) {
			ssize_t n = recv(src->fd, d->buf + d->len, CONN_BUF - d->len, MSG_DONTWAIT);
			if (n == 0) {
				d->eof = true;
				progress = true;
			} else if (n < 0 && errno != EAGAIN && errno != EINTR) {
				return -1;
			} else if (n > 0) {
				d->len += (size_t)n;
				d->bytes += (uint64_t)n;
				progress = true;
			}
		}
		if (d->eof && d->len == d->off && !d->shut) {
			shutdown(dst->fd, SHUT_WR);
			d->shut = true;
		}
		if (!progress)
			return 0;
		*moved = true;
	}
}

static void splice_step(struct conn *c)
{
	bool moved = false;
	if (pump(&c->a, &c->b, &c->up, &moved) || pump(&c->b, &c->a, &c->down, &moved)) {
		conn_close(c, true);
		return;
	}
	if (c->up.shut && c->down.shut) {
		conn_close(c, false);
		return;
	}
	if (moved)
		timer_arm(&c->e->loop, &c->t, EGRESS_IDLE_MS);
	uint32_t ea = 0, eb = 0;
	if (!c->up.eof && c->up.len < CONN_BUF)
		ea |= EPOLLIN;
	if (c->down.len > c->down.off)
		ea |= EPOLLOUT;
	if (!c->down.eof && c->down.len < CONN_BUF)
		eb |= EPOLLIN;
	if (c->up.len > c->up.off)
		eb |= EPOLLOUT;
	if (loop_mod(&c->e->loop, &c->a, ea) || loop_mod(&c->e->loop, &c->b, eb))
		conn_close(c, true);
}

static void on_splice_a(struct ev *ev, uint32_t events)
{
	(void)events;
	struct conn *c = (struct conn *)((char *)ev - offsetof(struct conn, a));
	if (!c->dying)
		splice_step(c);
}

static void on_splice_b(struct ev *ev, uint32_t events)
{
	(void)events;
	struct conn *c = (struct conn *)((char *)ev - offsetof(struct conn, b));
	if (!c->dying)
		splice_step(c);
}

static void on_timer(struct timer *t)
{
	struct conn *c = (struct conn *)((char *)t - offsetof(struct conn, t));
	conn_close(c, true);
}

static void start_splice(struct conn *c)
{
	c->st = CONN_SPLICE;
	c->a.fn = on_splice_a;
	c->b.fn = on_splice_b;
	c->t.fn = on_timer;
	/* The bytes read before deciding go first. */
	if (c->headlen) {
		memcpy(c->up.buf, c->head, c->headlen);
		c->up.len = c->headlen;
		c->up.bytes += c->headlen;
		c->headlen = 0;
	}
	timer_arm(&c->e->loop, &c->t, EGRESS_IDLE_MS);
	splice_step(c);
}

static void dial_next(struct conn *c);

static void dial_failed(struct conn *c)
{
	if (c->icand < c->ncand) {
		dial_next(c);
		return;
	}
	if (!c->tls && !strcmp(c->via, "proxy")) {
		static const char bad[] = "HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain\r\n"
		                          "Content-Length: 32\r\nConnection: close\r\n\r\n"
		                          "cove-egress: the server failed\n";
		ssize_t w = send(c->a.fd, bad, sizeof(bad) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
		(void)w;
		conn_close(c, false);
		return;
	}
	conn_close(c, true);
}

static void on_connect(struct ev *ev, uint32_t events)
{
	(void)events;
	struct conn *c = (struct conn *)((char *)ev - offsetof(struct conn, b));
	if (c->dying)
		return;
	int err = 0;
	socklen_t l = sizeof(err);
	if (getsockopt(ev->fd, SOL_SOCKET, SO_ERROR, &err, &l) || err) {
		close_ev(&c->e->loop, &c->b, false);
		dial_failed(c);
		return;
	}
	if (c->m)
		c->m_start(c);
	else
		start_splice(c);
}

static void on_connect_timeout(struct timer *t)
{
	struct conn *c = (struct conn *)((char *)t - offsetof(struct conn, t));
	close_ev(&c->e->loop, &c->b, false);
	dial_failed(c);
}

static void dial_next(struct conn *c)
{
	c->dst = c->cand[c->icand++];
	c->have_dst = true;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		dial_failed(c);
		return;
	}
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(c->port) };
	memcpy(&sa.sin_addr, c->dst.a, 4);
	c->b.fd = fd;
	c->b.fn = on_connect;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) && errno != EINPROGRESS) {
		close(fd);
		c->b.fd = -1;
		dial_failed(c);
		return;
	}
	if (loop_add(&c->e->loop, &c->b, EPOLLOUT)) {
		close(fd);
		c->b.fd = -1;
		dial_failed(c);
		return;
	}
	/* Nothing from the guest until the server is there. */
	if (loop_mod(&c->e->loop, &c->a, 0)) {
		conn_close(c, true);
		return;
	}
	c->t.fn = on_connect_timeout;
	timer_arm(&c->e->loop, &c->t, EGRESS_CONNECT_MS);
}

void conn_dial(struct conn *c)
{
	c->st = CONN_CONNECT;
	c->icand = 0;
	if (!c->ncand) {
		conn_close(c, true);
		return;
	}
	dial_next(c);
}
