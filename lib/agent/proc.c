/* libcove's side of detached processes (PROTO_PROC_*), MOVE and the other
 * one-shot file requests, and streaming file transfer in pieces: what coved's
 * envd surface needs.  Replies come from the guest: every member is
 * type-checked before use and every wait has a deadline. */
#include <errno.h>
#include <jansson.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "errf.h"
#include "lib/agent/agent_client.h"
#include "lib/agent/conn.h"
#include "lib/agent/proc.h"
#include "lib/base/cove_types.h"
#include "lib/base/handle.h"
#include "proto.h"

#define PUT_SYNC_MS    120000        /* the OK of an upload comes after the guest wrote it */
#define INPUT_FRAME    (256 * 1024)  /* stdin bytes per PROC_INPUT frame */
#define PUT_FRAME      (1024 * 1024) /* bytes per DATA frame */
#define INPUT_REPLY_MS (AGENT_STEP_MS + 12000) /* the agent waits up to 10 s for the stdin */

static json_t *json_strv(const char *const *v)
{
	json_t *a = json_array();
	for (; a && v && *v; v++) {
		if (json_array_append_new(a, json_string(*v)) < 0) {
			json_decref(a);
			return NULL;
		}
	}
	return a;
}

/* "K=V" strings -> {"K": "V"}; a string without '=' is skipped. */
static json_t *json_envv(const char *const *v)
{
	json_t *o = json_object();
	for (; o && v && *v; v++) {
		const char *eq = strchr(*v, '=');
		if (!eq || eq == *v)
			continue;
		char *k = strndup(*v, (size_t)(eq - *v));
		if (!k || json_object_set_new(o, k, json_string(eq + 1)) < 0) {
			free(k);
			json_decref(o);
			return NULL;
		}
		free(k);
	}
	return o;
}

/* Sends req (consumed) and takes the OK, its object in *reply. */
static int call_on(int fd, uint16_t type, json_t *req, json_t **reply, int64_t reply_ms, char *err,
                   size_t errlen)
{
	if (reply)
		*reply = NULL;
	if (!req)
		return errf(err, errlen, -ENOMEM, "out of memory");
	int r = cove_send_json(fd, type, req, err, errlen);
	uint8_t *payload = NULL;
	uint32_t len = 0;
	if (r == 0)
		r = cove_expect_until(fd, PROTO_OK, &payload, &len, mono_ms() + reply_ms, err,
		                      errlen);
	if (r == 0 && reply) {
		*reply = payload && len ? json_loadb((const char *)payload, len, 0, NULL)
		                        : json_object();
		if (!json_is_object(*reply)) {
			json_decref(*reply);
			*reply = NULL;
			r = errf(err, errlen, -EPROTO, "the agent's reply is not a JSON object");
		}
	}
	free(payload);
	return r;
}

int cove_agent_call_ms(struct cove_sandbox *sb, uint16_t type, json_t *req, json_t **reply,
                       int64_t reply_ms, char *err, size_t errlen)
{
	int fd = cove_agent_connect(sb, err, errlen);
	if (fd < 0) {
		json_decref(req);
		return fd;
	}
	int r = call_on(fd, type, req, reply, reply_ms, err, errlen);
	close(fd);
	return r;
}

int cove_agent_call(struct cove_sandbox *sb, uint16_t type, json_t *req, json_t **reply, char *err,
                    size_t errlen)
{
	return cove_agent_call_ms(sb, type, req, reply, AGENT_STEP_MS, err, errlen);
}

int cove_proc_start(struct cove_sandbox *sb, const struct cove_proc_spec *spec, int *pid, char *err,
                    size_t errlen)
{
	if (!spec->argv || !spec->argv[0])
		return errf(err, errlen, -EINVAL, "no command");
	if (spec->timeout_ms > COVE_TIMEOUT_MAX_MS)
		return errf(err, errlen, -EINVAL, "timeout over the limit");
	if (spec->user && !cove_user_valid(spec->user))
		return errf(err, errlen, -EINVAL, "user '%.64s' is not a user[:group]", spec->user);
	json_t *req = json_pack("{s:o, s:o, s:b}", "argv", json_strv(spec->argv), "env",
	                        json_envv(spec->env), "stdin", (int)spec->stdin_open);
	if (req && spec->cwd)
		json_object_set_new(req, "cwd", json_string(spec->cwd));
	if (req && spec->user)
		json_object_set_new(req, "user", json_string(spec->user));
	if (req && spec->tag)
		json_object_set_new(req, "tag", json_string(spec->tag));
	if (req && spec->timeout_ms)
		json_object_set_new(req, "timeout_ms", json_integer((json_int_t)spec->timeout_ms));
	if (req && spec->pty)
		json_object_set_new(req, "pty",
		                    json_pack("{s:i, s:i}", "rows", spec->rows ? spec->rows : 24,
		                              "cols", spec->cols ? spec->cols : 80));
	json_t *reply = NULL;
	int r = cove_agent_call(sb, PROTO_PROC_START, req, &reply, err, errlen);
	if (r < 0)
		return r;
	json_t *p = json_object_get(reply, "pid");
	if (!json_is_integer(p) || json_integer_value(p) < 1 || json_integer_value(p) > INT32_MAX)
		r = errf(err, errlen, -EPROTO, "the agent's reply has no valid pid");
	else
		*pid = (int)json_integer_value(p);
	json_decref(reply);
	return r;
}

int cove_proc_attach(struct cove_sandbox *sb, int pid, uint64_t offset, uint64_t *first, char *err,
                     size_t errlen)
{
	if (offset > INT64_MAX)
		return errf(err, errlen, -EINVAL, "offset out of range");
	int fd = cove_agent_connect(sb, err, errlen);
	if (fd < 0)
		return fd;
	json_t *reply = NULL;
	int r = call_on(fd, PROTO_PROC_ATTACH,
	                json_pack("{s:i, s:I}", "pid", pid, "offset", (json_int_t)offset), &reply,
	                AGENT_STEP_MS, err, errlen);
	if (r == 0) {
		json_t *f = json_object_get(reply, "offset");
		if (!json_is_integer(f) || json_integer_value(f) < 0)
			r = errf(err, errlen, -EPROTO, "the agent's attach reply has no offset");
		else if (first)
			*first = (uint64_t)json_integer_value(f);
	}
	json_decref(reply);
	if (r < 0) {
		close(fd);
		return r;
	}
	return fd;
}

static int parse_exit(const uint8_t *payload, uint32_t len, struct cove_proc_event *ev, char *err,
                      size_t errlen)
{
	json_t *o = payload && len ? json_loadb((const char *)payload, len, 0, NULL) : NULL;
	json_t *code = json_object_get(o, "code"), *sig = json_object_get(o, "signal");
	int r = 0;
	if (json_is_integer(code) && json_integer_value(code) >= 0 &&
	    json_integer_value(code) <= 255)
		ev->exit_code = (int)json_integer_value(code);
	else if (json_is_integer(sig) && json_integer_value(sig) >= 1 &&
	         json_integer_value(sig) <= 64)
		ev->signal = (int)json_integer_value(sig);
	else
		r = errf(err, errlen, -EPROTO, "the agent's EXIT is malformed");
	ev->timed_out = json_is_true(json_object_get(o, "timed_out"));
	json_decref(o);
	return r;
}

int cove_proc_next(int fd, int wait_ms, struct cove_proc_event *ev, char *err, size_t errlen)
{
	memset(ev, 0, sizeof(*ev));
	struct proto_hdr h;
	uint8_t *payload;
	int r = agent_frame_next(fd, wait_ms, &h, &payload, err, errlen);
	if (r <= 0)
		return r; /* 0: COVE_PROC_IDLE */
	r = 0;
	switch (h.type) {
	case PROTO_STDOUT:
	case PROTO_STDERR:
		ev->kind = h.type == PROTO_STDOUT ? COVE_PROC_STDOUT : COVE_PROC_STDERR;
		ev->data = payload;
		ev->len = h.len;
		return 0;
	case PROTO_EXIT:
		ev->kind = COVE_PROC_EXIT;
		r = parse_exit(payload, h.len, ev, err, errlen);
		break;
	case PROTO_PONG:
		break; /* COVE_PROC_IDLE */
	case PROTO_ERROR:
		r = cove_error_frame(payload, err, errlen);
		break;
	default:
		r = errf(err, errlen, -EPROTO, "unexpected frame type %u during an attach", h.type);
		break;
	}
	free(payload);
	return r;
}

int cove_proc_input(struct cove_sandbox *sb, int pid, const void *data, size_t len, char *err,
                    size_t errlen)
{
	if (pid < 1)
		return errf(err, errlen, -EINVAL, "bad pid");
	int fd = cove_agent_connect(sb, err, errlen);
	if (fd < 0)
		return fd;
	uint8_t *frame = malloc(4 + INPUT_FRAME);
	int r = frame ? 0 : errf(err, errlen, -ENOMEM, "out of memory");
	const uint8_t *d = data;
	do {
		if (r < 0)
			break;
		size_t n = len > INPUT_FRAME ? INPUT_FRAME : len;
		uint32_t u = (uint32_t)pid;
		frame[0] = (uint8_t)u;
		frame[1] = (uint8_t)(u >> 8);
		frame[2] = (uint8_t)(u >> 16);
		frame[3] = (uint8_t)(u >> 24);
		if (n)
			memcpy(frame + 4, d, n);
		int64_t t0 = mono_ms();
		r = proto_send_until(fd, PROTO_PROC_INPUT, 0, frame, (uint32_t)(4 + n),
		                     t0 + AGENT_STEP_MS);
		if (r == -ETIMEDOUT)
			r = agent_timeout(t0, err, errlen);
		else if (r < 0)
			r = errf(err, errlen, r, "sending to the agent: %s", strerror(-r));
		if (r == 0)
			r = cove_expect_until(fd, PROTO_OK, NULL, NULL, mono_ms() + INPUT_REPLY_MS,
			                      err, errlen);
		d += n;
		len -= n;
	} while (len);
	free(frame);
	close(fd);
	return r;
}

int cove_proc_close_stdin(struct cove_sandbox *sb, int pid, char *err, size_t errlen)
{
	return cove_agent_call(sb, PROTO_PROC_CLOSE_STDIN, json_pack("{s:i}", "pid", pid), NULL,
	                       err, errlen);
}

int cove_proc_signal(struct cove_sandbox *sb, int pid, int sig, char *err, size_t errlen)
{
	if (sig < 1 || sig > 64)
		return errf(err, errlen, -EINVAL, "bad signal %d", sig);
	return cove_agent_call(sb, PROTO_PROC_SIGNAL,
	                       json_pack("{s:i, s:i}", "pid", pid, "signal", sig), NULL, err,
	                       errlen);
}

int cove_proc_resize(struct cove_sandbox *sb, int pid, uint16_t rows, uint16_t cols, char *err,
                     size_t errlen)
{
	if (!rows || !cols)
		return errf(err, errlen, -EINVAL, "bad window size");
	return cove_agent_call(sb, PROTO_PROC_RESIZE,
	                       json_pack("{s:i, s:i, s:i}", "pid", pid, "rows", rows, "cols", cols),
	                       NULL, err, errlen);
}

int cove_proc_list(struct cove_sandbox *sb, json_t **procs, char *err, size_t errlen)
{
	json_t *reply = NULL;
	int r = cove_agent_call(sb, PROTO_PROC_LIST, json_object(), &reply, err, errlen);
	if (r < 0)
		return r;
	json_t *a = json_object_get(reply, "procs");
	if (!json_is_array(a)) {
		json_decref(reply);
		return errf(err, errlen, -EPROTO, "the agent's list has no \"procs\"");
	}
	*procs = json_incref(a);
	json_decref(reply);
	return 0;
}

/* ---- streaming file transfer -------------------------------------------- */

int cove_put_begin(struct cove_sandbox *sb, const char *guest, uint32_t mode, char *err,
                   size_t errlen)
{
	return cove_put_begin_as(sb, guest, mode, NULL, err, errlen);
}

int cove_put_begin_as(struct cove_sandbox *sb, const char *guest, uint32_t mode, const char *user,
                      char *err, size_t errlen)
{
	if (user && !cove_user_valid(user))
		return errf(err, errlen, -EINVAL, "user '%.64s' is not a user[:group]", user);
	int fd = cove_agent_connect(sb, err, errlen);
	if (fd < 0)
		return fd;
	json_t *req = json_pack("{s:s, s:i}", "path", guest, "mode", (int)(mode & 07777));
	if (req && user)
		json_object_set_new(req, "user", json_string(user));
	int r = cove_send_json(fd, PROTO_FILE_PUT, req, err, errlen);
	if (r < 0) {
		close(fd);
		return r;
	}
	return fd;
}

int cove_put_data(int fd, const void *data, size_t len, char *err, size_t errlen)
{
	const uint8_t *d = data;
	while (len) {
		size_t n = len > PUT_FRAME ? PUT_FRAME : len;
		int64_t t0 = mono_ms();
		int r = proto_send_until(fd, PROTO_DATA, 0, d, (uint32_t)n, t0 + AGENT_STEP_MS);
		if (r == -ETIMEDOUT)
			return agent_timeout(t0, err, errlen);
		if (r < 0)
			return errf(err, errlen, r, "sending to the agent: %s", strerror(-r));
		d += n;
		len -= n;
	}
	return 0;
}

int cove_put_end(int fd, uint64_t *size, char *err, size_t errlen)
{
	int64_t t0 = mono_ms();
	int r = proto_send_until(fd, PROTO_DATA, 0, NULL, 0, t0 + AGENT_STEP_MS);
	if (r == -ETIMEDOUT)
		r = agent_timeout(t0, err, errlen);
	else if (r < 0)
		r = errf(err, errlen, r, "sending to the agent: %s", strerror(-r));
	uint8_t *payload = NULL;
	uint32_t len = 0;
	if (r == 0)
		r = cove_expect_until(fd, PROTO_OK, &payload, &len, mono_ms() + PUT_SYNC_MS, err,
		                      errlen);
	if (r == 0 && size) {
		json_t *o = payload && len ? json_loadb((const char *)payload, len, 0, NULL) : NULL;
		json_t *s = json_object_get(o, "size");
		*size = json_is_integer(s) && json_integer_value(s) >= 0
		            ? (uint64_t)json_integer_value(s)
		            : 0;
		json_decref(o);
	}
	free(payload);
	close(fd);
	return r;
}

int cove_get_begin(struct cove_sandbox *sb, const char *guest, uint64_t *size, char *err,
                   size_t errlen)
{
	int fd = cove_agent_connect(sb, err, errlen);
	if (fd < 0)
		return fd;
	json_t *reply = NULL;
	int r = call_on(fd, PROTO_FILE_GET, json_pack("{s:s}", "path", guest), &reply,
	                AGENT_STEP_MS, err, errlen);
	if (r == 0 && size) {
		json_t *s = json_object_get(reply, "size");
		*size = json_is_integer(s) && json_integer_value(s) >= 0
		            ? (uint64_t)json_integer_value(s)
		            : 0;
	}
	json_decref(reply);
	if (r < 0) {
		close(fd);
		return r;
	}
	return fd;
}

int cove_get_next(int fd, uint8_t **data, uint32_t *len, char *err, size_t errlen)
{
	*data = NULL;
	*len = 0;
	return cove_expect(fd, PROTO_DATA, data, len, err, errlen);
}
