/* The client of cove-egress's control socket: one request line, one
 * answer line ({"ok": true, ...} or {"ok": false, "error": ...}). */
#include <errno.h>
#include <jansson.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "clock.h"
#include "errf.h"
#include "lib/base/text.h"
#include "lib/net/egress_ctl.h"

#define CTL_MS 5000

int net_ctl_send(const char *sock, json_t *req, int *out, char *err, size_t errlen)
{
	*out = -1;
	char *text = json_dumps(req, JSON_COMPACT);
	if (!text)
		return errf(err, errlen, -ENOMEM, "out of memory");
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock);
	int r = fd < 0 ? -errno : 0;
	if (!r && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 && errno != EINPROGRESS)
		r = -errno;
	int64_t deadline = mono_ms() + CTL_MS;
	size_t len = strlen(text), off = 0;
	text[len++] = '\n'; /* json_dumps' terminator becomes the newline */
	while (!r && off < len) {
		struct pollfd p = { .fd = fd, .events = POLLOUT };
		int64_t left = deadline - mono_ms();
		if (left <= 0 || poll(&p, 1, (int)left) <= 0) {
			r = -ETIMEDOUT;
			break;
		}
		ssize_t w = send(fd, text + off, len - off, MSG_NOSIGNAL);
		if (w < 0 && errno != EAGAIN && errno != EINTR)
			r = -errno;
		else if (w > 0)
			off += (size_t)w;
	}
	explicit_bzero(text, len); /* a proxy request carries secrets */
	free(text);
	if (r < 0) {
		if (fd >= 0)
			close(fd);
		return errf(err, errlen, r, "cove-egress's control socket %s: %s", sock,
		            strerror(-r));
	}
	*out = fd;
	return 0;
}

int net_ctl_call(const char *sock, json_t *req, json_t **reply, char *err, size_t errlen)
{
	int fd, r = net_ctl_send(sock, req, &fd, err, errlen);
	return r < 0 ? r : net_ctl_reply(fd, sock, reply, err, errlen);
}

int net_ctl_reply(int fd, const char *sock, json_t **reply, char *err, size_t errlen)
{
	int r = 0;
	int64_t deadline = mono_ms() + CTL_MS;
	char line[4096];
	size_t got = 0;
	while (!r) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int64_t left = deadline - mono_ms();
		if (left <= 0 || poll(&p, 1, (int)left) <= 0) {
			r = -ETIMEDOUT;
			break;
		}
		ssize_t k = read(fd, line + got, sizeof(line) - 1 - got);
		if (k < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (k <= 0) {
			r = k < 0 ? -errno : -ECONNRESET;
			break;
		}
		got += (size_t)k;
		line[got] = 0;
		if (strchr(line, '\n') || got == sizeof(line) - 1)
			break;
	}
	close(fd);
	if (r < 0)
		return errf(err, errlen, r, "cove-egress's control socket %s: %s", sock,
		            strerror(-r));
	json_error_t je;
	*reply = json_loads(line, JSON_DISABLE_EOF_CHECK, &je);
	if (!json_is_object(*reply)) {
		json_decref(*reply);
		*reply = NULL;
		return errf(err, errlen, -EPROTO,
		            "cove-egress answered something that is not JSON");
	}
	json_t *ok = json_object_get(*reply, "ok");
	if (!json_is_true(ok)) {
		const char *e = json_string_value(json_object_get(*reply, "error"));
		char msg[400];
		snprintf(msg, sizeof(msg), "%s", e ? e : "refused");
		text_clean(msg);
		json_decref(*reply);
		*reply = NULL;
		return errf(err, errlen, -EIO, "cove-egress: %s", msg);
	}
	return 0;
}
