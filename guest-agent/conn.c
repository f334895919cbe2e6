/* One host connection as the handlers use it: frames in, replies out. */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "conn.h"
#include "proto_json.h"

int agent_conn_recv(struct agent_conn *c, struct proto_hdr *h, uint8_t **payload)
{
	*payload = NULL;
	for (;;) {
		int r = proto_reader_read(&c->rd, c->fd);
		if (r == 1) {
			proto_reader_take(&c->rd, h, payload);
			return 0;
		}
		if (r == -EAGAIN || r == -EWOULDBLOCK) {
			struct pollfd p = { .fd = c->fd, .events = POLLIN };
			if (poll(&p, 1, -1) < 0 && errno != EINTR)
				return -errno;
			continue;
		}
		if (r == -EPROTO || r == -EMSGSIZE)
			*h = c->rd.hdr_dec;
		proto_reader_reset(&c->rd);
		return r;
	}
}

int agent_conn_ok(struct agent_conn *c, uint32_t id, json_t *obj)
{
	if (!obj)
		return proto_send(c->fd, PROTO_OK, id, "{}", 2);
	int r = proto_send_json(c->fd, PROTO_OK, id, obj);
	json_decref(obj);
	if (r == -EMSGSIZE || r == -ENOMEM)
		return agent_conn_fail(c, id, r, "the reply does not fit in a frame");
	return r;
}

static int send_error_v(struct agent_conn *c, uint32_t id, int err, const char *fmt, va_list ap)
{
	char msg[512];
	vsnprintf(msg, sizeof(msg), fmt, ap);
	return proto_send_error(c->fd, id, err, msg);
}

int agent_conn_fail(struct agent_conn *c, uint32_t id, int err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int r = send_error_v(c, id, err, fmt, ap);
	va_end(ap);
	return r;
}

int agent_conn_reject(struct agent_conn *c, uint32_t id, int err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int r = send_error_v(c, id, err, fmt, ap);
	va_end(ap);
	(void)r; /* the connection ends either way */
	return -err;
}

int agent_conn_check(struct agent_conn *c, const char *during)
{
	struct pollfd f = { .fd = c->fd, .events = POLLIN | POLLRDHUP };
	if (poll(&f, 1, 0) <= 0)
		return 0;
	if (f.revents & (POLLRDHUP | POLLHUP | POLLERR))
		return -ECONNRESET;
	struct proto_hdr h;
	uint8_t *payload = NULL;
	int r = agent_conn_recv(c, &h, &payload);
	free(payload);
	if (r == -EPROTO || r == -EMSGSIZE)
		return agent_conn_reject(c, h.id, -r, "malformed frame during %s", during);
	if (r < 0)
		return r;
	if (h.type == PROTO_PING) {
		char pong[32];
		int n = snprintf(pong, sizeof(pong), "{\"version\":%d}", PROTO_VERSION);
		r = proto_send(c->fd, PROTO_PONG, h.id, pong, (uint32_t)n);
		return r < 0 ? r : 1;
	}
	return agent_conn_reject(c, h.id, EPROTO, "frame type %u during %s", h.type, during);
}
