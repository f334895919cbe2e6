/* The pre-spawned VMM's wait for its start request (pool.h). */
#include "pool.h"

#include <errno.h>
#include <jansson.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clock.h"
#include "errf.h"
#include "io.h"

static void send_str(int fd, const char *s)
{
	size_t len = strlen(s), off = 0;
	while (off < len) {
		ssize_t n = send(fd, s + off, len - off, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		off += (size_t)n;
	}
}

int vmm_pool_parse(const char *line, struct vmm_pool_req *req, char *err, size_t errlen)
{
	json_error_t je;
	json_t *doc = json_loads(line, JSON_REJECT_DUPLICATES, &je);
	if (!doc)
		return errf(err, errlen, -EINVAL, "the start request is not JSON: %s", je.text);
	json_t *op = json_object_get(doc, "op"), *av = json_object_get(doc, "argv");
	const char *key;
	json_t *v;
	int r = 0;
	json_object_foreach(doc, key, v)
	{
		if (strcmp(key, "op") && strcmp(key, "argv")) {
			r = errf(err, errlen, -EINVAL, "the start request has an unknown key '%s'",
			         key);
			break;
		}
	}
	if (r == 0 && (!json_is_string(op) || strcmp(json_string_value(op), "start")))
		r = errf(err, errlen, -EINVAL,
		         "a pooled cove-vmm takes only {\"op\":\"start\",\"argv\":[...]}");
	if (r == 0 && (!json_is_array(av) || json_array_size(av) > VMM_POOL_ARGS_MAX))
		r = errf(err, errlen, -EINVAL,
		         "the start request's argv must be an array of at "
		         "most %d strings",
		         VMM_POOL_ARGS_MAX);
	if (r < 0) {
		json_decref(doc);
		return r;
	}
	req->argc = 0;
	req->argv[req->argc++] = (char *)"cove-vmm";
	size_t i;
	json_array_foreach(av, i, v)
	{
		if (!json_is_string(v) || strlen(json_string_value(v)) != json_string_length(v)) {
			json_decref(doc);
			return errf(err, errlen, -EINVAL,
			            "the start request's argv[%zu] is not a string without NULs",
			            i);
		}
		req->argv[req->argc++] = (char *)json_string_value(v);
	}
	req->argv[req->argc] = NULL;
	req->doc = doc;
	return 0;
}

/* Reads one line (and at most one fd) from the owner; no deadline: a
 * member waits as long as its owner keeps the connection open. */
static int read_line(struct vmm_pool_req *req, char *buf, size_t cap, char *err, size_t errlen)
{
	size_t len = 0;
	for (;;) {
		char ctl[CMSG_SPACE(sizeof(int))];
		struct iovec iov = { .iov_base = buf + len, .iov_len = cap - 1 - len };
		struct msghdr mh = { .msg_iov = &iov,
			             .msg_iovlen = 1,
			             .msg_control = ctl,
			             .msg_controllen = sizeof(ctl) };
		ssize_t n = recvmsg(req->conn, &mh, MSG_CMSG_CLOEXEC);
		if (n < 0 && errno == EINTR)
			continue;
		for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); n > 0 && cm;
		     cm = CMSG_NXTHDR(&mh, cm)) {
			if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
				continue;
			size_t nfd = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
			for (size_t i = 0; i < nfd; i++) {
				int fd;
				memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
				if (req->passed < 0)
					req->passed = fd;
				else
					close(fd);
			}
		}
		if (n == 0)
			return 1; /* the owner went away */
		if (n < 0)
			return errf(err, errlen, -errno, "reading the start request: %s",
			            strerror(errno));
		len += (size_t)n;
		char *nl = memchr(buf, '\n', len);
		if (nl) {
			*nl = 0;
			return 0;
		}
		if (len == cap - 1)
			return errf(err, errlen, -E2BIG,
			            "the start request is longer than %zu bytes", cap - 1);
	}
}

int vmm_pool_wait(int lfd, unsigned int cpus, struct vmm_pool_req *req, char *err, size_t errlen)
{
	memset(req, 0, sizeof(*req));
	req->conn = req->passed = -1;
	int64_t deadline = mono_ms() + VMM_POOL_ACCEPT_MS;
	while (req->conn < 0) {
		int64_t left = deadline - mono_ms();
		if (left <= 0)
			return errf(err, errlen, -ETIMEDOUT,
			            "pool: no owner connected within %d ms", VMM_POOL_ACCEPT_MS);
		struct pollfd p = { .fd = lfd, .events = POLLIN };
		int k = poll(&p, 1, (int)left);
		if (k < 0 && errno != EINTR)
			return errf(err, errlen, -errno, "pool: poll: %s", strerror(errno));
		if (k > 0)
			req->conn = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	}
	char ready[64];
	snprintf(ready, sizeof(ready), "{\"ok\":true,\"pool\":\"ready\",\"cpus\":%u}\n", cpus);
	send_str(req->conn, ready);
	char *buf = malloc(VMM_POOL_LINE_MAX);
	if (!buf)
		return errf(err, errlen, -ENOMEM, "out of memory");
	int r = read_line(req, buf, VMM_POOL_LINE_MAX, err, errlen);
	if (r == 0)
		r = vmm_pool_parse(buf, req, err, errlen);
	free(buf);
	if (r < 0)
		vmm_pool_reply(req, err);
	return r;
}

void vmm_pool_reply(struct vmm_pool_req *req, const char *error)
{
	if (req->conn < 0)
		return;
	if (!error) {
		send_str(req->conn, "{\"ok\":true}\n");
		return;
	}
	json_t *o = json_pack("{s:b, s:s}", "ok", 0, "error", error);
	char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
	if (s) {
		send_str(req->conn, s);
		send_str(req->conn, "\n");
	}
	free(s);
	json_decref(o);
}

void vmm_pool_req_free(struct vmm_pool_req *req)
{
	if (req->conn >= 0)
		close(req->conn);
	if (req->passed >= 0)
		close(req->passed);
	if (req->doc)
		json_decref(req->doc);
	req->conn = req->passed = -1;
	req->doc = NULL;
}
