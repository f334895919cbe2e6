/* virtio-vsock, host side: the listener and its clients' CONNECT lines,
 * the connections' Unix sockets, timeouts, and the nested epoll set that
 * the VM's I/O loop watches as one fd.  A nested set keeps hundreds of
 * sockets off the shared loop and lets the device free a connection while
 * events for it are still in the batch it is handling (objects die at the
 * end of the callback, in vsock_reap()). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "virtio/iov.h"
#include "virtio/vsock_host.h"

#define EVENT_BATCH  64
#define ACCEPT_BATCH 16

static int epoll_op(struct vsock *v, int op, int fd, uint32_t mask, struct vsock_watch *w)
{
	struct epoll_event ev = { .events = mask, .data.ptr = w };
	return epoll_ctl(v->epfd, op, fd, &ev) < 0 ? -errno : 0;
}

int vsock_host_init(struct vsock *v)
{
	v->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (v->epfd < 0)
		return -errno;
	int err = epoll_op(v, EPOLL_CTL_ADD, v->listen_fd, EPOLLIN, &v->listen_w);
	if (!err)
		err = epoll_op(v, EPOLL_CTL_ADD, v->timer_fd, EPOLLIN, &v->timer_w);
	return err;
}

int vsock_host_set_mask(struct vsock *v, struct vsock_conn *c, uint32_t mask)
{
	if (mask == c->ev_mask)
		return 0;
	int op = !mask ? EPOLL_CTL_DEL : !c->ev_mask ? EPOLL_CTL_ADD : EPOLL_CTL_MOD;
	int err = epoll_op(v, op, c->fd, mask, &c->w);
	if (err)
		return err;
	c->ev_mask = mask;
	return 0;
}

void vsock_host_close(struct vsock *v, struct vsock_conn *c)
{
	if (c->fd < 0)
		return;
	if (c->ev_mask)
		(void)epoll_op(v, EPOLL_CTL_DEL, c->fd, 0, &c->w);
	c->ev_mask = 0;
	close(c->fd);
	c->fd = -1;
	v->fds_closed++;
}

/* ---- timeouts ------------------------------------------------------------ */

/* Both timed lists are in deadline order (one timeout each), so the next
 * deadline is one of their heads. */
static void timer_arm(struct vsock *v)
{
	uint64_t next = UINT64_MAX;
	if (vsock_link_linked(&v->clients))
		next = vsock_link_entry(v->clients.next, struct vsock_client, link)->deadline_ms;
	if (vsock_link_linked(&v->connecting)) {
		uint64_t d = vsock_link_entry(v->connecting.next, struct vsock_conn, timed_link)
		                 ->deadline_ms;
		if (d < next)
			next = d;
	}
	struct itimerspec its = { 0 };
	if (next != UINT64_MAX) {
		uint64_t now = (uint64_t)mono_ms();
		uint64_t delta = next > now ? next - now : 1;
		its.it_value.tv_sec = (time_t)(delta / 1000);
		its.it_value.tv_nsec = (long)(delta % 1000) * 1000000;
	}
	v->timer_armed = timerfd_settime(v->timer_fd, 0, &its, NULL) == 0 && next != UINT64_MAX;
}

static void client_close(struct vsock *v, struct vsock_client *cl)
{
	if (cl->dead)
		return;
	if (cl->fd >= 0) {
		(void)epoll_op(v, EPOLL_CTL_DEL, cl->fd, 0, &cl->w);
		close(cl->fd);
		v->fds_closed++;
	}
	cl->fd = -1;
	vsock_link_del(&cl->link);
	v->nclients--;
	cl->dead = true;
	vsock_link_add_tail(&v->dead_clients, &cl->link);
}

static void host_connect(struct vsock *v, struct vsock_client *cl, uint32_t port);

static void timer_expired(struct vsock *v)
{
	uint64_t ticks;
	(void)!read(v->timer_fd, &ticks, sizeof(ticks));
	uint64_t now = (uint64_t)mono_ms();
	while (vsock_link_linked(&v->clients)) {
		struct vsock_client *cl =
		    vsock_link_entry(v->clients.next, struct vsock_client, link);
		if (cl->deadline_ms > now)
			break;
		if (cl->held) { /* the guest never said: go ahead */
			v->reset_unseen = false;
			cl->held = false;
			host_connect(v, cl, cl->port);
			continue;
		}
		client_close(v, cl);
	}
	while (vsock_link_linked(&v->connecting)) {
		struct vsock_conn *c =
		    vsock_link_entry(v->connecting.next, struct vsock_conn, timed_link);
		if (c->deadline_ms > now)
			break;
		vsock_link_del(&c->timed_link);
		v->proto->reset(v, c);
		v->proto->refresh(v, c);
	}
	timer_arm(v);
}

/* ---- host-initiated connections ------------------------------------------ */

static void pause_listener(struct vsock *v)
{
	if (v->listen_paused)
		return;
	(void)epoll_op(v, EPOLL_CTL_DEL, v->listen_fd, 0, &v->listen_w);
	v->listen_paused = true;
	v->fds_closed_at_pause = v->fds_closed;
}

/* Resumes accepting once an fd has been closed since we ran out. */
static void maybe_resume_listener(struct vsock *v)
{
	if (!v->listen_paused || v->fds_closed == v->fds_closed_at_pause)
		return;
	if (epoll_op(v, EPOLL_CTL_ADD, v->listen_fd, EPOLLIN, &v->listen_w) == 0)
		v->listen_paused = false;
}

static void accept_clients(struct vsock *v)
{
	for (int i = 0; i < ACCEPT_BATCH; i++) {
		int fd = accept4(v->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			/* Level-triggered: without fds we would spin on the
			 * listener, so stop watching it for a while. */
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
			    errno == ENOMEM)
				pause_listener(v);
			return;
		}
		struct vsock_client *cl = NULL;
		if (v->nclients < VSOCK_MAX_PENDING)
			cl = calloc(1, sizeof(*cl));
		if (!cl) {
			close(fd);
			continue;
		}
		cl->w.kind = VSOCK_WATCH_CLIENT;
		cl->fd = fd;
		cl->deadline_ms = (uint64_t)mono_ms() + v->line_timeout_ms;
		vsock_link_init(&cl->link);
		if (epoll_op(v, EPOLL_CTL_ADD, fd, EPOLLIN, &cl->w) < 0) {
			close(fd);
			free(cl);
			continue;
		}
		vsock_link_add_tail(&v->clients, &cl->link);
		v->nclients++;
		if (!v->timer_armed)
			timer_arm(v); /* else it fires no later than this deadline */
	}
}

/* The client asked for guest port `port`: hand its socket to a new
 * connection and queue the REQUEST. */
static void host_connect(struct vsock *v, struct vsock_client *cl, uint32_t port)
{
	uint32_t local;
	struct vsock_conn *c = NULL;
	if (v->conns.count < VSOCK_MAX_CONNS &&
	    vsock_table_alloc_port(&v->conns, VSOCK_EPHEMERAL_PORT_MIN, &local) == 0)
		c = vsock_conn_new(local, port, VSOCK_CONN_BUF_ALLOC);
	if (!c || vsock_table_insert(&v->conns, c) < 0) {
		vsock_conn_free(c);
		client_close(v, cl);
		return;
	}
	(void)epoll_op(v, EPOLL_CTL_DEL, cl->fd, 0, &cl->w);
	c->fd = cl->fd;
	cl->fd = -1;
	client_close(v, cl);
	c->state = VSOCK_CONN_HOST_CONNECTING;
	c->pending = VSOCK_PEND_REQUEST;
	c->deadline_ms = (uint64_t)mono_ms() + v->response_timeout_ms;
	vsock_link_add_tail(&v->connecting, &c->timed_link);
	timer_arm(v); /* the response timeout may be the shorter one */
	v->proto->refresh(v, c);
}

static void client_ready(struct vsock *v, struct vsock_client *cl)
{
	uint32_t port;
	int r = vsock_unix_read_line(cl->fd, &cl->line, &port);
	if (r < 0) {
		client_close(v, cl); /* malformed, overlong, or gone */
	} else if (r > 0 && (v->event_pending || v->reset_unseen) &&
	           (uint64_t)mono_ms() < v->reset_deadline_ms) {
		/* Held until the guest has reset the connections it had. */
		(void)epoll_op(v, EPOLL_CTL_DEL, cl->fd, 0, &cl->w);
		cl->port = port;
		cl->held = true; /* at the latest until its line deadline */
	} else if (r > 0) {
		host_connect(v, cl, port);
	}
}

void vsock_host_release_clients(struct vsock *v)
{
	bool again = true;
	while (again) {
		again = false;
		for (struct vsock_link *l = v->clients.next; l != &v->clients; l = l->next) {
			struct vsock_client *cl = vsock_link_entry(l, struct vsock_client, link);
			if (cl->held) {
				cl->held = false;
				host_connect(v, cl, cl->port); /* takes cl off the list */
				again = true;
				break;
			}
		}
	}
}

void vsock_host_connected(struct vsock *v, struct vsock_conn *c)
{
	char line[24];
	int n = vsock_unix_ok_line(c->local_port, line, sizeof(line));
	vsock_link_del(&c->timed_link);
	/* A fresh socket has room for a few bytes; a short write means the
	 * client is gone. */
	if (n < 0 || send(c->fd, line, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT) != n) {
		c->state = VSOCK_CONN_ESTABLISHED;
		v->proto->reset(v, c);
		return;
	}
	c->state = VSOCK_CONN_ESTABLISHED;
}

void vsock_host_drop_clients(struct vsock *v)
{
	while (vsock_link_linked(&v->clients))
		client_close(v, vsock_link_entry(v->clients.next, struct vsock_client, link));
}

/* ---- guest-initiated connections ----------------------------------------- */

int vsock_host_guest_connect(struct vsock *v, const struct virtio_vsock_hdr *h)
{
	int fd;
	int r = vsock_unix_connect_port(v->uds_path, h->dst_port, &fd);
	if (r && r != -EINPROGRESS)
		return r;
	struct vsock_conn *c = vsock_conn_new(h->dst_port, h->src_port, VSOCK_CONN_BUF_ALLOC);
	if (!c || vsock_table_insert(&v->conns, c) < 0) {
		vsock_conn_free(c);
		close(fd);
		return -ENOMEM;
	}
	c->fd = fd;
	c->peer_buf_alloc = h->buf_alloc;
	c->peer_fwd_cnt = h->fwd_cnt;
	if (r == 0) {
		c->state = VSOCK_CONN_ESTABLISHED;
		c->pending = VSOCK_PEND_RESPONSE;
	} else {
		c->state = VSOCK_CONN_GUEST_CONNECTING;
	}
	v->proto->refresh(v, c);
	return 0;
}

/* ---- data ---------------------------------------------------------------- */

void vsock_host_no_data(struct vsock *v, struct vsock_conn *c, ssize_t n)
{
	if (n == 0) {
		c->host_eof = true;
		c->data_ready = false;
		c->pending |= VSOCK_PEND_SHUTDOWN;
	} else if (errno == EAGAIN || errno == EINTR) {
		c->data_ready = false;
	} else {
		v->proto->reset(v, c);
	}
}

int vsock_host_peek(struct vsock *v, struct vsock_conn *c)
{
	char b;
	ssize_t n = recv(c->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
	if (n > 0)
		return 1;
	vsock_host_no_data(v, c, n);
	return 0;
}

static void note_forwarded(struct vsock_conn *c, size_t n)
{
	c->fwd_cnt += (uint32_t)n;
	if (vsock_conn_credit_low(c, VSOCK_CONN_BUF_ALLOC))
		c->pending |= VSOCK_PEND_CREDIT;
}

void vsock_host_send(struct vsock *v, struct vsock_conn *c, struct iovec *iov, uint32_t n,
                     uint32_t len)
{
	if (len == 0)
		return;
	/* All the guest sent that the socket has not taken is in the ring,
	 * so a guest within its credit always fits. */
	if (len > c->out.cap - c->out.len) {
		v->proto->reset(v, c);
		return;
	}
	c->rx_cnt += len;
	size_t sent = 0;
	if (c->out.len == 0) {
		struct msghdr mh = { .msg_iov = iov, .msg_iovlen = n };
		ssize_t w = sendmsg(c->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w < 0 && errno != EAGAIN && errno != EINTR) {
			v->proto->reset(v, c);
			return;
		}
		sent = w > 0 ? (size_t)w : 0;
	}
	if (sent < len) {
		(void)iov_drop_front(&iov, &n, sent);
		if (vsock_ring_put(&c->out, iov, n, len - sent) < 0) {
			v->proto->reset(v, c);
			return;
		}
	}
	note_forwarded(c, sent);
}

/* EPOLLOUT: the socket takes more of what the guest sent. */
static void conn_flush(struct vsock *v, struct vsock_conn *c)
{
	size_t total = 0;
	while (c->out.len) {
		struct iovec iov[2];
		struct msghdr mh = { .msg_iov = iov };
		mh.msg_iovlen = (size_t)vsock_ring_peek(&c->out, iov);
		ssize_t w = sendmsg(c->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w < 0) {
			if (errno == EAGAIN || errno == EINTR)
				break;
			v->proto->reset(v, c);
			return;
		}
		vsock_ring_consume(&c->out, (uint32_t)w);
		total += (size_t)w;
	}
	if (!c->out.len)
		vsock_ring_free(&c->out); /* idle connections hold no buffer */
	note_forwarded(c, total);
}

static void conn_event(struct vsock *v, struct vsock_conn *c, uint32_t events)
{
	if (c->dead || c->fd < 0)
		return;
	if (c->state == VSOCK_CONN_GUEST_CONNECTING) {
		if (vsock_unix_connect_result(c->fd) == 0) {
			c->state = VSOCK_CONN_ESTABLISHED;
			c->pending |= VSOCK_PEND_RESPONSE;
		} else {
			v->proto->reset(v, c);
		}
		v->proto->refresh(v, c);
		return;
	}
	/* An error or hangup is acted on by whatever we were waiting for:
	 * the read or write then fails or sees EOF. */
	if (events & (EPOLLERR | EPOLLHUP))
		events |= c->ev_mask;
	if ((events & EPOLLIN) && (c->ev_mask & EPOLLIN))
		c->data_ready = true;
	if ((events & EPOLLOUT) && c->out.len)
		conn_flush(v, c);
	v->proto->refresh(v, c);
}

/* ---- the loop callback ----------------------------------------------------- */

void vsock_host_ready(void *opaque, uint32_t events)
{
	struct vsock *v = opaque;
	struct epoll_event evs[EVENT_BATCH];
	(void)events;

	pthread_mutex_lock(&v->t.lock);
	int n = epoll_wait(v->epfd, evs, EVENT_BATCH, 0);
	for (int i = 0; i < n; i++) {
		struct vsock_watch *w = evs[i].data.ptr;
		switch (w->kind) {
		case VSOCK_WATCH_LISTENER:
			accept_clients(v);
			break;
		case VSOCK_WATCH_TIMER:
			timer_expired(v);
			break;
		case VSOCK_WATCH_CLIENT: {
			struct vsock_client *cl = (struct vsock_client *)(void *)w;
			if (!cl->dead)
				client_ready(v, cl);
			break;
		}
		case VSOCK_WATCH_CONN:
			conn_event(v, (struct vsock_conn *)(void *)w, evs[i].events);
			break;
		}
	}
	v->proto->run(v);
	v->proto->reap(v);
	maybe_resume_listener(v);
	pthread_mutex_unlock(&v->t.lock);
}
