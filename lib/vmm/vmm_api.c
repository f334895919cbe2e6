/* cove-vmm's control socket (--api PATH): the client writes one JSON object
 * a line, the VMM answers one JSON object a line ({"ok": true, ...} or
 * {"ok": false, "error": "..."}).  Its users: cove_snapshot (snapshot.c),
 * cove_list's paused state (lookup.c) and cove_vmm_stats (here). */
#include <errno.h>
#include <jansson.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "clock.h"
#include "errf.h"
#include "lib/base/handle.h"
#include "lib/vmm/vmm_api.h"

#define API_REPLY_MAX (64 * 1024)
#define API_STATUS_MS 500

static int api_connect(const char *sock, char *err, size_t errlen)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	size_t plen = strlen(sock);
	if (plen >= sizeof(sa.sun_path))
		return errf(err, errlen, -ENAMETOOLONG, "socket path '%s' is too long", sock);
	memcpy(sa.sun_path, sock, plen + 1);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return errf(err, errlen, -errno, "socket: %s", strerror(errno));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int e = errno;
		close(fd);
		return errf(err, errlen, -e, "cannot reach cove-vmm's control socket %s: %s", sock,
		            strerror(e));
	}
	return fd;
}

/* The first byte of a request, with pass (an fd) beside it. */
static ssize_t send_fd(int fd, const char *text, int pass)
{
	char ctl[CMSG_SPACE(sizeof(int))];
	memset(ctl, 0, sizeof(ctl));
	struct iovec iov = { .iov_base = (void *)text, .iov_len = 1 };
	struct msghdr mh = {
		.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl, .msg_controllen = sizeof(ctl)
	};
	struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &pass, sizeof(int));
	return sendmsg(fd, &mh, MSG_NOSIGNAL);
}

/* Sends text (one line), with pass (an fd, or -1) on its first byte, and
 * reads one line back into a malloc'ed string. */
static int api_exchange(int fd, const char *text, int pass, int timeout_ms, char **line, char *err,
                        size_t errlen)
{
	size_t len = strlen(text);
	for (size_t off = 0; off < len;) {
		ssize_t n = off == 0 && pass >= 0 ? send_fd(fd, text, pass)
		                                  : send(fd, text + off, len - off, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errf(err, errlen, -errno, "writing to cove-vmm: %s",
			            strerror(errno));
		off += (size_t)n;
	}
	char *buf = malloc(API_REPLY_MAX);
	if (!buf)
		return errf(err, errlen, -ENOMEM, "out of memory");
	size_t got = 0;
	int64_t deadline = mono_ms() + timeout_ms;
	for (;;) {
		int64_t left = deadline - mono_ms();
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int k = left > 0 ? poll(&p, 1, (int)left) : 0;
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			free(buf);
			return k < 0 ? errf(err, errlen, -errno, "poll: %s", strerror(errno))
			             : errf(err, errlen, -ETIMEDOUT,
			                    "cove-vmm did not answer within %d ms", timeout_ms);
		}
		ssize_t n = read(fd, buf + got, API_REPLY_MAX - 1 - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			int e = n < 0 ? errno : ECONNRESET;
			free(buf);
			return errf(err, errlen, -e, "cove-vmm closed its control connection%s%s",
			            n < 0 ? ": " : "", n < 0 ? strerror(e) : "");
		}
		char *nl = memchr(buf + got, '\n', (size_t)n);
		got += (size_t)n;
		if (nl) {
			*nl = 0;
			*line = buf;
			return 0;
		}
		if (got == API_REPLY_MAX - 1) {
			free(buf);
			return errf(err, errlen, -EMSGSIZE, "cove-vmm's answer is too long");
		}
	}
}

int vmm_api_call(const char *sock, json_t *req, json_t **reply, int timeout_ms, char *err,
                 size_t errlen)
{
	return vmm_api_call_fd(sock, req, -1, reply, timeout_ms, err, errlen);
}

int vmm_api_call_fd(const char *sock, json_t *req, int pass, json_t **reply, int timeout_ms,
                    char *err, size_t errlen)
{
	if (reply)
		*reply = NULL;
	char *text = req ? json_dumps(req, JSON_COMPACT) : NULL;
	char *line = NULL;
	json_decref(req);
	if (!text)
		return errf(err, errlen, -ENOMEM, "cannot encode a request");
	char *framed = NULL;
	int r = asprintf(&framed, "%s\n", text) < 0 ? -ENOMEM : 0;
	free(text);
	if (r < 0)
		return errf(err, errlen, r, "out of memory");
	int fd = api_connect(sock, err, errlen);
	if (fd < 0) {
		free(framed);
		return fd;
	}
	r = api_exchange(fd, framed, pass, timeout_ms, &line, err, errlen);
	close(fd);
	free(framed);
	if (r < 0)
		return r;
	json_t *o = json_loads(line, JSON_REJECT_DUPLICATES, NULL);
	free(line);
	json_t *ok = o ? json_object_get(o, "ok") : NULL;
	if (!json_is_object(o) || !json_is_boolean(ok)) {
		json_decref(o);
		return errf(err, errlen, -EPROTO, "malformed answer from cove-vmm");
	}
	if (!json_is_true(ok)) {
		json_t *e = json_object_get(o, "error");
		r = errf(err, errlen, -EIO, "cove-vmm: %s",
		         json_is_string(e) ? json_string_value(e) : "request failed");
		json_decref(o);
		return r;
	}
	if (reply)
		*reply = o;
	else
		json_decref(o);
	return 0;
}

int vmm_api_paused(const char *sock, bool *paused)
{
	json_t *reply;
	*paused = false;
	int r =
	    vmm_api_call(sock, json_pack("{s:s}", "op", "status"), &reply, API_STATUS_MS, NULL, 0);
	if (r < 0)
		return r;
	json_t *state = json_object_get(reply, "state");
	*paused = json_is_string(state) && !strcmp(json_string_value(state), "paused");
	json_decref(reply);
	return 0;
}

int cove_vmm_stats(struct cove_sandbox *sb, char **json, char *err, size_t errlen)
{
	*json = NULL;
	json_t *reply = NULL;
	int r =
	    vmm_api_call(sb->api, json_pack("{s:s}", "op", "stats"), &reply, 10000, err, errlen);
	if (r < 0)
		return r;
	*json = json_dumps(reply, JSON_COMPACT);
	json_decref(reply);
	return *json ? 0 : errf(err, errlen, -ENOMEM, "out of memory");
}
