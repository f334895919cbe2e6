/* The frame codec of the host <-> agent protocol (docs/protocol.md):
 * header encoding, an incremental frame reader usable on blocking and
 * non-blocking fds (and on plain byte buffers, for the fuzzer), and
 * blocking send/receive helpers. */
#include "proto.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

bool proto_type_known(uint16_t type)
{
	switch (type) {
	case PROTO_HELLO:
	case PROTO_PING:
	case PROTO_PONG:
	case PROTO_EXEC:
	case PROTO_STARTED:
	case PROTO_STDIN:
	case PROTO_STDOUT:
	case PROTO_STDERR:
	case PROTO_EXIT:
	case PROTO_SIGNAL:
	case PROTO_RESIZE:
	case PROTO_FILE_PUT:
	case PROTO_FILE_GET:
	case PROTO_DATA:
	case PROTO_STAT:
	case PROTO_LIST:
	case PROTO_MKDIR:
	case PROTO_REMOVE:
	case PROTO_SYNC:
	case PROTO_SHUTDOWN:
	case PROTO_RESTORED:
	case PROTO_CA:
	case PROTO_WATCH:
	case PROTO_WATCH_EVENT:
	case PROTO_OK:
	case PROTO_ERROR:
	case PROTO_PROC_START:
	case PROTO_PROC_ATTACH:
	case PROTO_PROC_INPUT:
	case PROTO_PROC_CLOSE_STDIN:
	case PROTO_PROC_SIGNAL:
	case PROTO_PROC_LIST:
	case PROTO_PROC_RESIZE:
	case PROTO_MOVE:
	case PROTO_SYMLINK:
	case PROTO_DEFAULTS:
	case PROTO_USER:
	case PROTO_FREEZE:
	case PROTO_THAW:
	case PROTO_PORT:
		return true;
	default:
		return false;
	}
}

bool proto_type_is_json(uint16_t type)
{
	switch (type) {
	case PROTO_STDIN:
	case PROTO_STDOUT:
	case PROTO_STDERR:
	case PROTO_DATA:
	case PROTO_PROC_INPUT:
		return false;
	default:
		return proto_type_known(type);
	}
}

static void put_le32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

static void put_le16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static uint32_t get_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint16_t get_le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

void proto_hdr_encode(uint8_t out[PROTO_HDR_SIZE], const struct proto_hdr *h)
{
	put_le32(out, h->len);
	put_le16(out + 4, h->type);
	put_le16(out + 6, h->flags);
	put_le32(out + 8, h->id);
}

int proto_hdr_decode(const uint8_t in[PROTO_HDR_SIZE], struct proto_hdr *h)
{
	h->len = get_le32(in);
	h->type = get_le16(in + 4);
	h->flags = get_le16(in + 6);
	h->id = get_le32(in + 8);
	if (!proto_type_known(h->type))
		return -EPROTO;
	if (h->len > PROTO_MAX_PAYLOAD)
		return -EMSGSIZE;
	return 0;
}

/* ---- incremental reader ------------------------------------------------- */

void proto_reader_init(struct proto_reader *r)
{
	memset(r, 0, sizeof(*r));
}

void proto_reader_reset(struct proto_reader *r)
{
	free(r->payload);
	proto_reader_init(r);
}

bool proto_reader_idle(const struct proto_reader *r)
{
	return r->have == 0 && !r->ready;
}

/* Where the next bytes of the current frame go, and how many are wanted. */
static uint8_t *reader_want(struct proto_reader *r, size_t *want)
{
	if (r->have < PROTO_HDR_SIZE) {
		*want = PROTO_HDR_SIZE - r->have;
		return r->hdr + r->have;
	}
	*want = (size_t)r->hdr_dec.len - (r->have - PROTO_HDR_SIZE);
	return r->payload + (r->have - PROTO_HDR_SIZE);
}

/* Accounts n new bytes; validates the header once it is whole.  Returns 1
 * when the frame is complete, 0 when more is needed, or -EPROTO/-EMSGSIZE/
 * -ENOMEM. */
static int reader_advance(struct proto_reader *r, size_t n)
{
	r->have += (uint32_t)n;
	if (r->have == PROTO_HDR_SIZE && !r->hdr_done) {
		int e = proto_hdr_decode(r->hdr, &r->hdr_dec);
		if (e < 0)
			return e;
		r->hdr_done = true;
		if (r->hdr_dec.len) {
			r->payload = malloc((size_t)r->hdr_dec.len + 1);
			if (!r->payload)
				return -ENOMEM;
			r->payload[r->hdr_dec.len] = 0;
		}
	}
	if (r->hdr_done && r->have == PROTO_HDR_SIZE + r->hdr_dec.len) {
		r->ready = true;
		return 1;
	}
	return 0;
}

int proto_reader_feed(struct proto_reader *r, const uint8_t *buf, size_t len, size_t *used)
{
	*used = 0;
	if (r->ready)
		return 1;
	while (*used < len) {
		size_t want;
		uint8_t *dst = reader_want(r, &want);
		size_t n = len - *used < want ? len - *used : want;
		memcpy(dst, buf + *used, n);
		*used += n;
		int e = reader_advance(r, n);
		if (e != 0)
			return e;
	}
	/* A frame with an empty payload is complete with its header. */
	return 0;
}

int proto_reader_read(struct proto_reader *r, int fd)
{
	if (r->ready)
		return 1;
	for (;;) {
		size_t want;
		uint8_t *dst = reader_want(r, &want);
		ssize_t n = read(fd, dst, want);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return r->have == 0 ? -ECONNRESET : -ECONNABORTED;
		int e = reader_advance(r, (size_t)n);
		if (e != 0)
			return e;
	}
}

/* One read() at most: 1 when the frame is complete, 0 when more is
 * needed, or as proto_reader_read.  What a deadline-bound caller uses on a
 * blocking fd after poll said it is readable. */
static int proto_reader_read_some(struct proto_reader *r, int fd)
{
	if (r->ready)
		return 1;
	for (;;) {
		size_t want;
		uint8_t *dst = reader_want(r, &want);
		ssize_t n = read(fd, dst, want);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return r->have == 0 ? -ECONNRESET : -ECONNABORTED;
		return reader_advance(r, (size_t)n);
	}
}

void proto_reader_take(struct proto_reader *r, struct proto_hdr *h, uint8_t **payload)
{
	*h = r->hdr_dec;
	*payload = r->payload;
	r->payload = NULL;
	proto_reader_init(r);
}

/* ---- blocking helpers --------------------------------------------------- */

/* Waits until fd is ready for events, or the deadline (CLOCK_MONOTONIC ms,
 * PROTO_NO_DEADLINE: none) passes: -ETIMEDOUT. */
static int wait_fd(int fd, short events, int64_t deadline)
{
	struct pollfd p = { .fd = fd, .events = events };
	for (;;) {
		int ms = -1;
		if (deadline != PROTO_NO_DEADLINE) {
			struct timespec ts;
			clock_gettime(CLOCK_MONOTONIC, &ts);
			int64_t left =
			    deadline - ((int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
			if (left <= 0)
				return -ETIMEDOUT;
			ms = left > INT32_MAX ? INT32_MAX : (int)left;
		}
		int n = poll(&p, 1, ms);
		if (n > 0)
			return 0;
		if (n < 0 && errno != EINTR)
			return -errno;
	}
}

int proto_sendv_until(int fd, const struct iovec *iov_in, int iovcnt, int64_t deadline)
{
	struct iovec iov[4];
	if (iovcnt < 1 || iovcnt > 4)
		return -EINVAL;
	memcpy(iov, iov_in, sizeof(iov[0]) * (size_t)iovcnt);
	struct iovec *v = iov;
	bool is_socket = true;
	/* With a deadline a blocking socket is written without blocking, so
	 * a peer that stopped reading cannot hold us past it. */
	int flags = MSG_NOSIGNAL | (deadline != PROTO_NO_DEADLINE ? MSG_DONTWAIT : 0);
	while (iovcnt > 0) {
		ssize_t n;
		if (is_socket) {
			/* MSG_NOSIGNAL: a peer that went away is an error, not SIGPIPE. */
			struct msghdr m = { .msg_iov = v, .msg_iovlen = (size_t)iovcnt };
			n = sendmsg(fd, &m, flags);
			if (n < 0 && errno == ENOTSOCK) {
				is_socket = false;
				continue;
			}
		} else {
			n = writev(fd, v, iovcnt);
		}
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				int e = wait_fd(fd, POLLOUT, deadline);
				if (e < 0)
					return e;
				continue;
			}
			return -errno;
		}
		size_t done = (size_t)n;
		while (iovcnt > 0 && done >= v->iov_len) {
			done -= v->iov_len;
			v++;
			iovcnt--;
		}
		if (iovcnt > 0) {
			v->iov_base = (uint8_t *)v->iov_base + done;
			v->iov_len -= done;
		}
	}
	return 0;
}

int proto_sendv(int fd, const struct iovec *iov, int iovcnt)
{
	return proto_sendv_until(fd, iov, iovcnt, PROTO_NO_DEADLINE);
}

int proto_send_until(int fd, uint16_t type, uint32_t id, const void *payload, uint32_t len,
                     int64_t deadline)
{
	if (len > PROTO_MAX_PAYLOAD)
		return -EMSGSIZE;
	if (len && !payload)
		return -EINVAL;
	uint8_t hdr[PROTO_HDR_SIZE];
	struct proto_hdr h = { .len = len, .type = type, .flags = 0, .id = id };
	proto_hdr_encode(hdr, &h);
	struct iovec iov[2] = { { .iov_base = hdr, .iov_len = sizeof(hdr) },
		                { .iov_base = (void *)payload, .iov_len = len } };
	return proto_sendv_until(fd, iov, len ? 2 : 1, deadline);
}

int proto_send(int fd, uint16_t type, uint32_t id, const void *payload, uint32_t len)
{
	return proto_send_until(fd, type, id, payload, len, PROTO_NO_DEADLINE);
}

int proto_recv_until(int fd, struct proto_hdr *h, uint8_t **payload, int64_t deadline)
{
	struct proto_reader r;
	proto_reader_init(&r);
	*payload = NULL;
	for (;;) {
		/* With a deadline, a blocking fd is read only once poll says it
		 * has bytes (read then returns what there is). */
		int e = deadline != PROTO_NO_DEADLINE ? wait_fd(fd, POLLIN, deadline) : 0;
		if (e == 0)
			e = proto_reader_read_some(&r, fd);
		if (e == 1)
			break;
		if (e == 0)
			continue;
		if (e == -EAGAIN || e == -EWOULDBLOCK) {
			e = wait_fd(fd, POLLIN, deadline);
			if (e == 0)
				continue;
		}
		if (e == -EPROTO || e == -EMSGSIZE)
			*h = r.hdr_dec; /* so the caller can answer with its id */
		proto_reader_reset(&r);
		return e;
	}
	proto_reader_take(&r, h, payload);
	return 0;
}

int proto_recv(int fd, struct proto_hdr *h, uint8_t **payload)
{
	return proto_recv_until(fd, h, payload, PROTO_NO_DEADLINE);
}
