/* Talking to cove-agent: connection set-up, requests, file transfer. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "io.h"
#include "libcove.h"
#include "proto.h"

#define FILE_CHUNK (256 * 1024)

int cove_agent_connect(struct cove_sandbox *sb, char *err, size_t errlen)
{
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
	int r;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		r = errf(err, errlen, -errno, "cannot reach the sandbox's vsock %s: %s", sb->vsock,
		         strerror(errno));
		goto fail;
	}
	if ((r = write_all(fd, line, (size_t)n)) < 0) {
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
		r = errf(err, errlen, -EPROTO, "bad vsock reply '%s'", line);
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
	int r = proto_send(fd, type, 0, text, (uint32_t)strlen(text));
	free(text);
	if (r < 0)
		return errf(err, errlen, r, "sending to the agent: %s", strerror(-r));
	return 0;
}

/* ERROR {"errno","message"} -> message in err, the guest's errno. */
static int error_frame(const uint8_t *payload, char *err, size_t errlen)
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
	json_decref(o);
	return -e;
}

int cove_expect(int fd, uint16_t want, uint8_t **payload, uint32_t *len, char *err, size_t errlen)
{
	struct proto_hdr h;
	uint8_t *p = NULL;
	int r = proto_recv(fd, &h, &p);
	if (r < 0)
		return errf(err, errlen, r, "the agent connection failed: %s",
		            r == -ECONNRESET ? "closed" : strerror(-r));
	if (h.type == PROTO_ERROR) {
		r = error_frame(p, err, errlen);
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
		r = proto_send(fd, PROTO_DATA, 0, buf, (uint32_t)n);
		if (r < 0)
			errf(err, errlen, r, "sending '%s': %s", local, strerror(-r));
		if (n == 0)
			break;
	}
	if (r == 0)
		r = cove_expect(fd, PROTO_OK, NULL, NULL, err, errlen);
	free(buf);
	close(fd);
	close(in);
	return r;
}

int cove_get_file(struct cove_sandbox *sb, const char *guest, const char *local, char *err,
                  size_t errlen)
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
	if (o && json_is_integer(json_object_get(o, "mode")))
		mode = (mode_t)json_integer_value(json_object_get(o, "mode")) & 0777;
	json_decref(o);
	if (snprintf(tmp, sizeof(tmp), "%s.cove-XXXXXX", local) >= (int)sizeof(tmp)) {
		r = errf(err, errlen, -ENAMETOOLONG, "path '%s' is too long", local);
		goto done;
	}
	out = mkostemp(tmp, O_CLOEXEC);
	if (out < 0) {
		r = errf(err, errlen, -errno, "cannot write '%s': %s", local, strerror(errno));
		goto done;
	}
	for (;;) {
		uint8_t *data = NULL;
		uint32_t len = 0;
		r = cove_expect(fd, PROTO_DATA, &data, &len, err, errlen);
		if (r < 0)
			break;
		r = len ? write_all(out, data, len) : 0;
		free(data);
		if (r < 0) {
			errf(err, errlen, r, "writing '%s': %s", local, strerror(-r));
			break;
		}
		if (len == 0)
			break;
	}
	if (r == 0 && fchmod(out, mode) < 0)
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
