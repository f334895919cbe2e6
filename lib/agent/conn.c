/* One connection to cove-agent: the hybrid-vsock handshake, requests and
 * replies, each step within its deadline. */
#include <errno.h>
#include <jansson.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "clock.h"
#include "errf.h"
#include "lib/agent/conn.h"
#include "lib/base/handle.h"
#include "lib/base/text.h"
#include "proto.h"

/* With a cancel flag, waits are cut into slices this long. */
#define CONNECT_SLICE_MS 250

int agent_timeout(int64_t started, char *err, size_t errlen)
{
	int64_t s = (mono_ms() - started + 500) / 1000;
	return errf(err, errlen, -ETIMEDOUT, "the sandbox did not answer within %lld s",
	            (long long)(s > 0 ? s : 1));
}

/* The next wait of a connection step that began at t0: 0 with *left the
 * milliseconds to wait (a slice when cancel is watched, so a signal is
 * seen), or the deadline's or the signal's error. */
static int wait_slice(int64_t t0, int64_t deadline, volatile int *cancel, int64_t *left, char *err,
                      size_t errlen)
{
	*left = deadline - mono_ms();
	if (*left <= 0)
		return agent_timeout(t0, err, errlen);
	if (cancel && *cancel)
		return errf(err, errlen, -EINTR, "interrupted by signal %d", *cancel);
	if (cancel && *left > CONNECT_SLICE_MS)
		*left = CONNECT_SLICE_MS;
	return 0;
}

int agent_connect_unsettled(struct cove_sandbox *sb, int64_t deadline, volatile int *cancel,
                            char *err, size_t errlen)
{
	int r;
	int64_t t0 = mono_ms();
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return errf(err, errlen, -errno, "socket: %s", strerror(errno));
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	size_t plen = strlen(sb->vsock);
	if (plen >= sizeof(sa.sun_path)) {
		close(fd);
		return errf(err, errlen, -ENAMETOOLONG, "socket path '%s' is too long", sb->vsock);
	}
	memcpy(sa.sun_path, sb->vsock, plen + 1);
	char line[32];
	int n = snprintf(line, sizeof(line), "CONNECT %u\n", PROTO_AGENT_PORT);
	/* A Unix connect waits for room in the listener's backlog for at most
	 * SO_SNDTIMEO: a VMM that stopped accepting costs us the deadline. */
	for (;;) {
		int64_t left;
		if ((r = wait_slice(t0, deadline, cancel, &left, err, errlen)) < 0)
			goto fail;
		struct timeval tv = { .tv_sec = left / 1000, .tv_usec = (left % 1000) * 1000 };
		(void)setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
			break;
		if (errno == EINTR || errno == EAGAIN)
			continue; /* the deadline and cancel are looked at above */
		r = errf(err, errlen, -errno, "cannot reach the sandbox's vsock %s: %s", sb->vsock,
		         strerror(errno));
		goto fail;
	}
	struct timeval none = { 0 };
	(void)setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &none, sizeof(none));
	/* The handshake is read without blocking (MSG_DONTWAIT), polled up to
	 * the deadline. */
	struct pollfd p = { .fd = fd, .events = POLLIN };
	ssize_t w = send(fd, line, (size_t)n, MSG_NOSIGNAL);
	if (w != n) {
		r = w < 0 ? -errno : -EIO;
		errf(err, errlen, r, "vsock CONNECT: %s", strerror(-r));
		goto fail;
	}
	/* "OK <port>\n": peeked at until its newline is in, then exactly that
	 * much is read, so no stream data behind it is consumed (two reads,
	 * not one per byte). */
	for (;;) {
		ssize_t k = recv(fd, line, sizeof(line) - 1, MSG_PEEK | MSG_DONTWAIT);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0 && errno == EAGAIN) {
			int64_t left;
			if ((r = wait_slice(t0, deadline, cancel, &left, err, errlen)) < 0)
				goto fail;
			(void)poll(&p, 1, left > INT32_MAX ? INT32_MAX : (int)left);
			continue;
		}
		if (k <= 0) {
			r = errf(err, errlen, -ECONNREFUSED,
			         "the guest agent is not listening (vsock port %u)",
			         PROTO_AGENT_PORT);
			goto fail;
		}
		char *nl = memchr(line, '\n', (size_t)k);
		if (!nl) {
			if (k == (ssize_t)sizeof(line) - 1) {
				r = errf(err, errlen, -EPROTO, "bad vsock reply");
				goto fail;
			}
			/* Part of the line (the VMM writes it whole; rare): poll
			 * would not wait with bytes there, so a short sleep. */
			int64_t left;
			if ((r = wait_slice(t0, deadline, cancel, &left, err, errlen)) < 0)
				goto fail;
			usleep(1000);
			continue;
		}
		size_t len = (size_t)(nl - line) + 1;
		if (recv(fd, line, len, MSG_DONTWAIT) != (ssize_t)len) {
			r = errf(err, errlen, -EPROTO, "bad vsock reply");
			goto fail;
		}
		line[len - 1] = 0;
		break;
	}
	if (strncmp(line, "OK ", 3) != 0) {
		r = errf(err, errlen, -EPROTO, "bad vsock reply");
		goto fail;
	}
	return fd;
fail:
	close(fd);
	return r;
}

int cove_send_json(int fd, uint16_t type, json_t *obj, char *err, size_t errlen)
{
	char *text = obj ? json_dumps(obj, JSON_COMPACT) : NULL;
	json_decref(obj);
	if (!text)
		return errf(err, errlen, -ENOMEM, "cannot encode a request");
	int64_t t0 = mono_ms();
	int r = proto_send_until(fd, type, 0, text, (uint32_t)strlen(text), t0 + AGENT_STEP_MS);
	free(text);
	if (r == -ETIMEDOUT)
		return agent_timeout(t0, err, errlen);
	if (r < 0)
		return errf(err, errlen, r, "sending to the agent: %s", strerror(-r));
	return 0;
}

/* ERROR {"errno","message"} -> message in err, the guest's errno. */
int agent_frame_next(int fd, int wait_ms, struct proto_hdr *h, uint8_t **payload, char *err,
                     size_t errlen)
{
	*payload = NULL;
	struct pollfd p = { .fd = fd, .events = POLLIN };
	int n = poll(&p, 1, wait_ms < 0 ? 0 : wait_ms);
	if (n < 0 && errno != EINTR)
		return errf(err, errlen, -errno, "poll: %s", strerror(errno));
	if (n <= 0)
		return 0;
	int64_t t0 = mono_ms();
	int r = proto_recv_until(fd, h, payload, t0 + AGENT_STEP_MS);
	if (r == -ETIMEDOUT)
		return agent_timeout(t0, err, errlen);
	if (r < 0)
		return errf(err, errlen, r, "the agent connection failed: %s",
		            r == -ECONNRESET ? "closed" : strerror(-r));
	return 1;
}

int cove_error_frame(const uint8_t *payload, char *err, size_t errlen)
{
	json_t *o = payload ? json_loads((const char *)payload, 0, NULL) : NULL;
	int e = EIO;
	const char *msg = "the agent reported an error";
	if (o) {
		json_t *v = json_object_get(o, "errno");
		if (json_is_integer(v) && json_integer_value(v) > 0 && json_integer_value(v) < 4096)
			e = (int)json_integer_value(v);
		v = json_object_get(o, "message");
		if (json_is_string(v))
			msg = json_string_value(v);
	}
	errf(err, errlen, -e, "%s", msg);
	if (err && errlen)
		text_clean(err); /* the guest's words, printed on a terminal */
	json_decref(o);
	return -e;
}

int cove_expect_until(int fd, uint16_t want, uint8_t **payload, uint32_t *len, int64_t deadline,
                      char *err, size_t errlen)
{
	struct proto_hdr h;
	uint8_t *p = NULL;
	int64_t t0 = mono_ms();
	int r = proto_recv_until(fd, &h, &p, deadline);
	if (r == -ETIMEDOUT)
		return agent_timeout(t0, err, errlen);
	if (r < 0)
		return errf(err, errlen, r, "the agent connection failed: %s",
		            r == -ECONNRESET ? "closed" : strerror(-r));
	if (h.type == PROTO_ERROR) {
		r = cove_error_frame(p, err, errlen);
		free(p);
		return r;
	}
	if (h.type != want) {
		free(p);
		return errf(err, errlen, -EPROTO, "unexpected frame type %u from the agent",
		            h.type);
	}
	if (payload)
		*payload = p;
	else
		free(p);
	if (len)
		*len = h.len;
	return 0;
}

int cove_expect(int fd, uint16_t want, uint8_t **payload, uint32_t *len, char *err, size_t errlen)
{
	return cove_expect_until(fd, want, payload, len, mono_ms() + AGENT_STEP_MS, err, errlen);
}
