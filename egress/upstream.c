#include "upstream.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

struct upq {
	struct egress *e;
	struct ev ev;
	struct timer t;
	struct loop_dead dead;
	struct dns_question q;
	uint16_t id;
	unsigned tries;
	upq_cb cb;
	void *ctx;
	bool done;
};

static void upq_close_fd(struct upq *u)
{
	if (u->ev.fd >= 0) {
		loop_del(&u->e->loop, &u->ev);
		close(u->ev.fd);
		u->ev.fd = -1;
	}
}

static void upq_free(struct loop_dead *d)
{
	struct upq *u = (struct upq *)((char *)d - offsetof(struct upq, dead));
	free(u);
}

static void upq_finish(struct upq *u)
{
	u->done = true;
	upq_close_fd(u);
	timer_cancel(&u->e->loop, &u->t);
	u->e->nupq--;
	loop_defer_free(&u->e->loop, &u->dead);
}

static void upq_fail(struct upq *u, int err)
{
	upq_cb cb = u->cb;
	void *ctx = u->ctx;
	upq_finish(u);
	cb(ctx, NULL, 0, 0, err);
}

static void on_read(struct ev *ev, uint32_t events)
{
	struct upq *u = (struct upq *)((char *)ev - offsetof(struct upq, ev));
	(void)events;
	if (u->done)
		return;
	uint8_t buf[4096];
	for (;;) {
		ssize_t n = recv(ev->fd, buf, sizeof(buf), 0);
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				return;
			/* ECONNREFUSED (ICMP): the next upstream, at once. */
			timer_arm(&u->e->loop, &u->t, 0);
			return;
		}
		/* Connected socket: only the upstream's address reaches us.
		 * Another id is a stray or a forgery: keep waiting. */
		if (n < 12 || (uint16_t)(buf[0] << 8 | buf[1]) != u->id)
			continue;
		upq_cb cb = u->cb;
		void *ctx = u->ctx;
		uint16_t id = u->id;
		upq_finish(u);
		cb(ctx, buf, (size_t)n, id, 0);
		return;
	}
}

/* One try: a new socket to the next upstream. */
static int upq_try(struct upq *u)
{
	struct egress_config *c = &u->e->cfg;
	upq_close_fd(u);
	size_t i = u->tries % c->nupstream;
	u->tries++;
	if (getrandom(&u->id, sizeof(u->id), 0) != sizeof(u->id))
		return -EIO;
	uint8_t msg[NETRULE_NAME_MAX + 64];
	long n = dns_build_query(&u->q, u->id, msg, sizeof(msg));
	if (n < 0)
		return -EINVAL;
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(c->upstream_port[i]) };
	memcpy(&sa.sin_addr, c->upstream[i].a, 4);
	u->ev.fd = fd;
	u->ev.fn = on_read;
	int e = 0;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) || send(fd, msg, (size_t)n, 0) != n)
		e = -errno;
	if (!e)
		e = loop_add(&u->e->loop, &u->ev, EPOLLIN);
	if (e) {
		close(fd);
		u->ev.fd = -1;
		return e;
	}
	timer_arm(&u->e->loop, &u->t, EGRESS_UPSTREAM_MS);
	return 0;
}

static void on_timeout(struct timer *t)
{
	struct upq *u = (struct upq *)((char *)t - offsetof(struct upq, t));
	if (u->done)
		return;
	unsigned max = 2 * (unsigned)u->e->cfg.nupstream;
	while (u->tries < (max < 2 ? 2 : max))
		if (upq_try(u) == 0)
			return;
	upq_fail(u, -ETIMEDOUT);
}

struct upq *upq_start(struct egress *e, const struct dns_question *q, upq_cb cb, void *ctx)
{
	if (e->nupq >= EGRESS_UPQ_MAX) {
		errno = EBUSY;
		return NULL;
	}
	struct upq *u = calloc(1, sizeof(*u));
	if (!u)
		return NULL;
	u->e = e;
	u->dead.free = upq_free;
	u->ev.fd = -1;
	u->t.fn = on_timeout;
	u->q = *q;
	u->cb = cb;
	u->ctx = ctx;
	e->nupq++;
	int err = upq_try(u);
	if (err) {
		/* Give the other upstreams their turn through the timer. */
		timer_arm(&e->loop, &u->t, 0);
	}
	return u;
}

void upq_cancel(struct upq *u)
{
	if (u && !u->done)
		upq_finish(u);
}
