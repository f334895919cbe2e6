/* Two stream sockets joined: one poll loop, a bounded buffer each way. */
#include "bytepipe.h"

#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/socket.h>

#include "clock.h"

/* One direction: src's bytes on their way to dst. */
struct way {
	int src, dst;
	uint8_t *buf;
	size_t off, len;    /* buf[off, len) waits for dst */
	const uint8_t *pre; /* bytes read before the pipe began, sent first */
	size_t pre_len;
	bool eof;  /* src ended its stream */
	bool done; /* ... and dst was told */
	uint64_t moved;
};

static bool way_pending(const struct way *w)
{
	return w->pre_len || w->off < w->len;
}

/* way_step() - settles what w wants next: 1 for POLLOUT on dst, 2 for
 * POLLIN on src, 0 when it is over (telling dst once). */
static int way_step(struct way *w)
{
	if (w->done)
		return 0;
	if (way_pending(w))
		return 1;
	if (!w->eof)
		return 2;
	(void)shutdown(w->dst, SHUT_WR); /* a socket already gone says nothing new */
	w->done = true;
	return 0;
}

static int way_read(struct way *w)
{
	ssize_t k = recv(w->src, w->buf, BYTEPIPE_BUF, MSG_DONTWAIT);
	if (k > 0) {
		w->off = 0;
		w->len = (size_t)k;
		return 1;
	}
	if (k == 0) {
		w->eof = true;
		return 1;
	}
	if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
		return 0;
	return -errno;
}

static int way_write(struct way *w)
{
	const uint8_t *p = w->pre_len ? w->pre : w->buf + w->off;
	size_t want = w->pre_len ? w->pre_len : w->len - w->off;
	ssize_t k = send(w->dst, p, want, MSG_DONTWAIT | MSG_NOSIGNAL);
	if (k < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? 0 : -errno;
	w->moved += (uint64_t)k;
	if (w->pre_len) {
		w->pre += k;
		w->pre_len -= (size_t)k;
	} else {
		w->off += (size_t)k;
	}
	return 1;
}

/* sock_error() - the pending error of a socket poll flagged, or -EIO. */
static int sock_error(int fd)
{
	int e = 0;
	socklen_t l = sizeof(e);
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &l) < 0 || !e)
		return -EIO;
	return -e;
}

/* run() - the loop over the two ways ab (a to b) and ba. */
static int run(struct way *ab, struct way *ba, int idle_ms, int stop_fd)
{
	int fds[2] = { ab->src, ab->dst };
	bool hup[2] = { false, false };
	int64_t last = mono_ms();
	for (;;) {
		int wa = way_step(ab), wb = way_step(ba);
		if (ab->done && ba->done)
			return 0;
		short ev[2] = { 0, 0 };
		if (wa == 2)
			ev[0] |= POLLIN;
		if (wa == 1)
			ev[1] |= POLLOUT;
		if (wb == 2)
			ev[1] |= POLLIN;
		if (wb == 1)
			ev[0] |= POLLOUT;
		struct pollfd p[3];
		for (int i = 0; i < 2; i++) {
			/* A side that hung up whole is watched only while a way
			 * still wants it: poll would report it again and again. */
			p[i].fd = ev[i] || !hup[i] ? fds[i] : -1;
			p[i].events = ev[i];
			p[i].revents = 0;
		}
		p[2].fd = stop_fd;
		p[2].events = POLLIN;
		p[2].revents = 0;
		int wait = -1;
		if (idle_ms > 0) {
			int64_t left = last + idle_ms - mono_ms();
			if (left <= 0)
				return -ETIMEDOUT;
			wait = left > 60000 ? 60000 : (int)left;
		}
		int r = poll(p, stop_fd >= 0 ? 3 : 2, wait);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (r == 0)
			continue; /* the idle check above decides */
		if (stop_fd >= 0 && p[2].revents)
			return -ECANCELED;
		for (int i = 0; i < 2; i++) {
			if ((p[i].revents & POLLERR) && !(p[i].revents & POLLIN))
				return sock_error(fds[i]);
			if (p[i].revents & POLLHUP)
				hup[i] = true;
		}
		short ra = p[0].revents, rb = p[1].revents;
		const short any = POLLIN | POLLOUT | POLLHUP | POLLERR;
		int e = 0, moved = 0;
		if (wa == 2 && (ra & any))
			e = way_read(ab);
		else if (wa == 1 && (rb & any))
			e = way_write(ab);
		if (e < 0)
			return e;
		moved |= e;
		e = 0;
		if (wb == 2 && (rb & any))
			e = way_read(ba);
		else if (wb == 1 && (ra & any))
			e = way_write(ba);
		if (e < 0)
			return e;
		moved |= e;
		if (moved)
			last = mono_ms();
	}
}

int bytepipe_run(int a, int b, const struct bytepipe_opts *o, struct bytepipe_count *n)
{
	struct way ab = { .src = a, .dst = b }, ba = { .src = b, .dst = a };
	if (o) {
		ab.pre = o->to_b;
		ab.pre_len = o->to_b ? o->to_b_len : 0;
		ba.pre = o->to_a;
		ba.pre_len = o->to_a ? o->to_a_len : 0;
	}
	ab.buf = malloc(BYTEPIPE_BUF);
	ba.buf = malloc(BYTEPIPE_BUF);
	int r = -ENOMEM;
	if (ab.buf && ba.buf)
		r = run(&ab, &ba, o ? o->idle_ms : 0, o ? o->stop_fd : -1);
	free(ab.buf);
	free(ba.buf);
	if (n) {
		n->a_to_b = ab.moved;
		n->b_to_a = ba.moved;
	}
	return r;
}
