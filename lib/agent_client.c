/* Talking to cove-agent: connection set-up, requests, file transfer. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "clock.h"
#include "io.h"
#include "libcove.h"
#include "proto.h"
#include "text.h"

#define FILE_CHUNK (256 * 1024)
/* The last OK of an upload comes after the guest synced the file. */
#define FILE_SYNC_MS 120000
/* With a cancel flag, waits are cut into slices this long. */
#define CONNECT_SLICE_MS 250

int agent_timeout(int64_t started, char *err, size_t errlen)
{
	int64_t s = (mono_ms() - started + 500) / 1000;
	return errf(err, errlen, -ETIMEDOUT, "the sandbox did not answer within %lld s",
	            (long long)(s > 0 ? s : 1));
}

static int connect_raw(struct cove_sandbox *sb, int64_t deadline, volatile int *cancel, char *err,
                       size_t errlen)
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
		int64_t left = deadline - mono_ms();
		if (left <= 0) {
			r = agent_timeout(t0, err, errlen);
			goto fail;
		}
		if (cancel && *cancel) {
			r = errf(err, errlen, -EINTR, "interrupted by signal %d", *cancel);
			goto fail;
		}
		if (cancel && left > CONNECT_SLICE_MS)
			left = CONNECT_SLICE_MS;
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
	/* The handshake is read without blocking, polled up to the deadline. */
	struct pollfd p = { .fd = fd, .events = POLLIN };
	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) < 0) {
		r = errf(err, errlen, -errno, "fcntl: %s", strerror(errno));
		goto fail;
	}
	ssize_t w = send(fd, line, (size_t)n, MSG_NOSIGNAL);
	if (w != n) {
		r = w < 0 ? -errno : -EIO;
		errf(err, errlen, r, "vsock CONNECT: %s", strerror(-r));
		goto fail;
	}
	/* "OK <port>\n", read byte by byte so no stream data is consumed. */
	size_t got = 0;
	for (;;) {
		char c;
		ssize_t k = read(fd, &c, 1);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0 && errno == EAGAIN) {
			int64_t left = deadline - mono_ms();
			if (left <= 0) {
				r = agent_timeout(t0, err, errlen);
				goto fail;
			}
			if (cancel && *cancel) {
				r = errf(err, errlen, -EINTR, "interrupted by signal %d", *cancel);
				goto fail;
			}
			if (cancel && left > CONNECT_SLICE_MS)
				left = CONNECT_SLICE_MS;
			(void)poll(&p, 1, left > INT32_MAX ? INT32_MAX : (int)left);
			continue;
		}
		if (k <= 0) {
			r = errf(err, errlen, -ECONNREFUSED,
			         "the guest agent is not listening (vsock port %u)",
			         PROTO_AGENT_PORT);
			goto fail;
		}
		if (c == '\n')
			break;
		if (got == sizeof(line) - 1) {
			r = errf(err, errlen, -EPROTO, "bad vsock reply");
			goto fail;
		}
		line[got++] = c;
	}
	line[got] = 0;
	if (strncmp(line, "OK ", 3) != 0) {
		r = errf(err, errlen, -EPROTO, "bad vsock reply");
		goto fail;
	}
	/* Back to blocking: callers bound their waits with deadlines. */
	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) < 0) {
		r = errf(err, errlen, -errno, "fcntl: %s", strerror(errno));
		goto fail;
	}
	return fd;
fail:
	close(fd);
	return r;
}

int agent_connect_cancel(struct cove_sandbox *sb, int64_t deadline, volatile int *cancel, char *err,
                         size_t errlen)
{
	/* A restore notice still in flight is answered before anything else
	 * talks to the agent (notice.c). */
	int r = notice_settle(sb, err, errlen);
	return r < 0 ? r : connect_raw(sb, deadline, cancel, err, errlen);
}

int agent_connect_unsettled(struct cove_sandbox *sb, int64_t deadline, char *err, size_t errlen)
{
	return connect_raw(sb, deadline, NULL, err, errlen);
}

int agent_connect_until(struct cove_sandbox *sb, int64_t deadline, char *err, size_t errlen)
{
	return agent_connect_cancel(sb, deadline, NULL, err, errlen);
}

int cove_agent_connect(struct cove_sandbox *sb, char *err, size_t errlen)
{
	return agent_connect_until(sb, mono_ms() + AGENT_STEP_MS, err, errlen);
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

int cove_ping(struct cove_sandbox *sb, char *err, size_t errlen)
{
	int fd = cove_agent_connect(sb, err, errlen);
	if (fd < 0)
		return fd;
	int r = cove_send_json(fd, PROTO_PING, json_object(), err, errlen);
	if (!r)
		r = cove_expect(fd, PROTO_PONG, NULL, NULL, err, errlen);
	close(fd);
	return r;
}

int cove_put_file(struct cove_sandbox *sb, const char *local, const char *guest, uint32_t mode,
                  char *err, size_t errlen)
{
	int in = open(local, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return errf(err, errlen, -errno, "cannot open '%s': %s", local, strerror(errno));
	struct stat st;
	if (fstat(in, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(in);
		return errf(err, errlen, -EINVAL, "'%s' is not a regular file", local);
	}
	if (mode == 0)
		mode = st.st_mode & 07777;
	int fd = cove_agent_connect(sb, err, errlen);
	if (fd < 0) {
		close(in);
		return fd;
	}
	char *buf = malloc(FILE_CHUNK);
	int r = buf ? cove_send_json(fd, PROTO_FILE_PUT,
	                             json_pack("{s:s, s:i}", "path", guest, "mode", (int)mode), err,
	                             errlen)
	            : -ENOMEM;
	while (r == 0) {
		ssize_t n = read(in, buf, FILE_CHUNK);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = errf(err, errlen, -errno, "reading '%s': %s", local, strerror(errno));
			break;
		}
		/* Each chunk within AGENT_STEP_MS: an inactivity deadline. */
		int64_t t0 = mono_ms();
		r = proto_send_until(fd, PROTO_DATA, 0, buf, (uint32_t)n, t0 + AGENT_STEP_MS);
		if (r == -ETIMEDOUT)
			agent_timeout(t0, err, errlen);
		else if (r < 0)
			errf(err, errlen, r, "sending '%s': %s", local, strerror(-r));
		if (n == 0)
			break;
	}
	/* The guest writes and syncs the file before it answers. */
	if (r == 0)
		r = cove_expect_until(fd, PROTO_OK, NULL, NULL, mono_ms() + FILE_SYNC_MS, err,
		                      errlen);
	free(buf);
	close(fd);
	close(in);
	return r;
}

int cove_get_file(struct cove_sandbox *sb, const char *guest, const char *local, char *err,
                  size_t errlen)
{
	return cove_get_file_max(sb, guest, local, COVE_GET_MAX_DEFAULT, err, errlen);
}

/* A file from the guest gets its mode bits & 0755 & ~umask: no set-id,
 * sticky or group/other write bits that the guest chose. */
static mode_t local_mode(mode_t guest)
{
	mode_t um = umask(0);
	umask(um);
	return guest & 0755 & ~um;
}

int cove_get_file_max(struct cove_sandbox *sb, const char *guest, const char *local,
                      uint64_t max_bytes, char *err, size_t errlen)
{
	int fd = cove_agent_connect(sb, err, errlen);
	if (fd < 0)
		return fd;
	char tmp[PATH_MAX];
	int out = -1;
	uint8_t *payload = NULL;
	int r = cove_send_json(fd, PROTO_FILE_GET, json_pack("{s:s}", "path", guest), err, errlen);
	if (r == 0)
		r = cove_expect(fd, PROTO_OK, &payload, NULL, err, errlen);
	if (r < 0)
		goto done;
	mode_t mode = 0644;
	json_t *o = json_loads((const char *)payload, 0, NULL);
	json_t *size = o ? json_object_get(o, "size") : NULL;
	if (o && json_is_integer(json_object_get(o, "mode")))
		mode = (mode_t)json_integer_value(json_object_get(o, "mode")) & 0777;
	bool too_big = json_is_integer(size) && json_integer_value(size) >= 0 &&
	               (uint64_t)json_integer_value(size) > max_bytes;
	json_decref(o);
	if (too_big) {
		r = errf(err, errlen, -EFBIG, "the file is larger than the limit of %llu bytes",
		         (unsigned long long)max_bytes);
		goto done;
	}
	/* Beside the destination, so the rename stays in its file system. */
	if (snprintf(tmp, sizeof(tmp), "%s.cove-XXXXXX", local) >= (int)sizeof(tmp)) {
		r = errf(err, errlen, -ENAMETOOLONG, "path '%s' is too long", local);
		goto done;
	}
	out = mkostemp(tmp, O_CLOEXEC); /* O_EXCL, 0600 */
	if (out < 0) {
		r = errf(err, errlen, -errno, "cannot write '%s': %s", local, strerror(errno));
		goto done;
	}
	uint64_t total = 0;
	for (;;) {
		uint8_t *data = NULL;
		uint32_t len = 0;
		/* Each DATA frame within AGENT_STEP_MS: an inactivity deadline. */
		r = cove_expect(fd, PROTO_DATA, &data, &len, err, errlen);
		if (r < 0)
			break;
		total += len;
		if (total > max_bytes) {
			free(data);
			r = errf(err, errlen, -EFBIG,
			         "the file is larger than the limit of %llu bytes",
			         (unsigned long long)max_bytes);
			break;
		}
		r = len ? write_all(out, data, len) : 0;
		free(data);
		if (r < 0) {
			errf(err, errlen, r, "writing '%s': %s", local, strerror(-r));
			break;
		}
		if (len == 0)
			break;
	}
	if (r == 0 && fchmod(out, local_mode(mode)) < 0)
		r = errf(err, errlen, -errno, "chmod '%s': %s", local, strerror(errno));
	if (r == 0 && rename(tmp, local) < 0)
		r = errf(err, errlen, -errno, "cannot write '%s': %s", local, strerror(errno));
	if (r < 0)
		unlink(tmp);
done:
	if (out >= 0)
		close(out);
	free(payload);
	close(fd);
	return r;
}
