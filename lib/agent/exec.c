/* cove_exec: one execution over its own agent connection. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clock.h"
#include "errf.h"
#include "lib/agent/agent_client.h"
#include "lib/agent/conn.h"
#include "lib/agent/exec.h"
#include "lib/agent/notice.h"
#include "lib/base/cove_types.h"
#include "lib/base/handle.h"
#include "lib/base/text.h"
#include "proto.h"

#define STDIN_CHUNK (64 * 1024)
/* How long past --timeout the host waits for the agent's EXIT. */
#define EXEC_GRACE_MS 3000
/* After a signal to forward: how long the host waits for the command's
 * end before it returns -EINTR (a frozen guest never answers). */
#define EXEC_SIGNAL_GRACE_MS 500
#define EXEC_SLICE_MS        250

static json_t *exec_request(const struct cove_exec_opts *o)
{
	json_t *req = json_object();
	json_t *argv = json_array();
	for (const char *const *a = o->argv; *a; a++)
		json_array_append_new(argv, json_string(*a));
	json_object_set_new(req, "argv", argv);
	if (o->env) {
		json_t *env = json_object();
		for (const char *const *e = o->env; *e; e++) {
			const char *eq = strchr(*e, '=');
			if (!eq || eq == *e)
				continue;
			char *key = strndup(*e, (size_t)(eq - *e));
			if (key)
				json_object_set_new(env, key, json_string(eq + 1));
			free(key);
		}
		json_object_set_new(req, "env", env);
	}
	if (o->cwd)
		json_object_set_new(req, "cwd", json_string(o->cwd));
	if (o->user)
		json_object_set_new(req, "user", json_string(o->user));
	json_object_set_new(req, "timeout_ms", json_integer(o->timeout_ms));
	json_object_set_new(req, "stdin", json_boolean(o->stdin_fd >= 0));
	if (o->pty)
		json_object_set_new(req, "pty",
		                    json_pack("{s:i, s:i}", "rows", o->rows ? o->rows : 24, "cols",
		                              o->cols ? o->cols : 80));
	return req;
}

static int parse_exit(const uint8_t *payload, struct cove_exec_result *res)
{
	json_t *o = payload ? json_loads((const char *)payload, 0, NULL) : NULL;
	if (!o)
		return -EPROTO;
	json_t *code = json_object_get(o, "code"), *sig = json_object_get(o, "signal");
	res->exit_code = json_is_integer(code) ? (int)json_integer_value(code) : 0;
	res->signal = json_is_integer(sig) ? (int)json_integer_value(sig) : 0;
	res->timed_out = json_is_true(json_object_get(o, "timed_out"));
	json_decref(o);
	return 0;
}

/* Frames waiting to go to the agent.  The connection is non-blocking and
 * the loop keeps reading while it writes, so a guest that floods output
 * while we feed it input cannot deadlock the two of us. */
struct outq {
	uint8_t *buf;
	size_t len, off, cap;
};

static int outq_frame(struct outq *q, uint16_t type, const void *payload, uint32_t len)
{
	size_t need = q->len + PROTO_HDR_SIZE + len;
	if (need > q->cap) {
		size_t cap = need * 2;
		uint8_t *b = realloc(q->buf, cap);
		if (!b)
			return -ENOMEM;
		q->buf = b;
		q->cap = cap;
	}
	struct proto_hdr h = { .len = len, .type = type };
	proto_hdr_encode(q->buf + q->len, &h);
	if (len)
		memcpy(q->buf + q->len + PROTO_HDR_SIZE, payload, len);
	q->len = need;
	return 0;
}

static int outq_json(struct outq *q, uint16_t type, json_t *obj)
{
	char *text = obj ? json_dumps(obj, JSON_COMPACT) : NULL;
	json_decref(obj);
	if (!text)
		return -ENOMEM;
	int r = outq_frame(q, type, text, (uint32_t)strlen(text));
	free(text);
	return r;
}

static int outq_flush(struct outq *q, int fd)
{
	while (q->off < q->len) {
		ssize_t n = send(fd, q->buf + q->off, q->len - q->off, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno == EAGAIN ? 0 : -errno;
		q->off += (size_t)n;
	}
	q->off = q->len = 0;
	return 0;
}

/* One frame from the agent.  Returns 1 when the execution is over. */
static int exec_frame(const struct cove_exec_opts *o, struct cove_exec_result *res,
                      const struct proto_hdr *h, const uint8_t *payload, char *err, size_t errlen)
{
	switch (h->type) {
	case PROTO_STARTED:
		return 0;
	case PROTO_STDOUT:
		if (o->on_stdout && h->len)
			o->on_stdout(o->opaque, payload, h->len);
		return 0;
	case PROTO_STDERR:
		if (o->on_stderr && h->len)
			o->on_stderr(o->opaque, payload, h->len);
		return 0;
	case PROTO_EXIT:
		if (parse_exit(payload, res) < 0)
			return errf(err, errlen, -EPROTO, "malformed EXIT from the agent");
		return 1;
	case PROTO_ERROR: {
		json_t *e = payload ? json_loads((const char *)payload, 0, NULL) : NULL;
		json_t *m = e ? json_object_get(e, "message") : NULL;
		json_t *n = e ? json_object_get(e, "errno") : NULL;
		int r =
		    json_is_integer(n) && json_integer_value(n) > 0 && json_integer_value(n) < 4096
		        ? -(int)json_integer_value(n)
		        : -EIO;
		errf(err, errlen, r, "%s",
		     json_is_string(m) ? json_string_value(m) : "exec failed");
		if (err && errlen)
			text_clean(err); /* the guest's words, printed on a terminal */
		json_decref(e);
		return r;
	}
	default:
		return errf(err, errlen, -EPROTO, "unexpected frame type %u from the agent",
		            h->type);
	}
}

/* A wait of the execution, bounded by deadline (PROTO_NO_DEADLINE: none)
 * and cut into slices when a signal may arrive to be forwarded (a signal
 * landing just before poll would otherwise wait for the next wake-up). */
static int poll_until(struct pollfd *p, nfds_t n, int64_t deadline, bool sliced)
{
	int64_t ms = -1;
	if (deadline != PROTO_NO_DEADLINE) {
		ms = deadline - mono_ms();
		if (ms < 0)
			ms = 0;
	}
	if (sliced && (ms < 0 || ms > EXEC_SLICE_MS))
		ms = EXEC_SLICE_MS;
	return poll(p, n, ms > INT32_MAX ? INT32_MAX : (int)ms);
}

/* An execution's connection and what its loop has seen. */
struct exec_conn {
	struct cove_sandbox *sb;
	const struct cove_exec_opts *o;
	struct cove_exec_result *res;
	int fd;
	struct outq q;
	struct proto_reader rd;
	bool notice;  /* a restore notice's answer comes first */
	bool started; /* the agent said STARTED */
	bool lost;    /* reset before the notice's answer */
	int signalled;
};

/* Reads the frames that have come.  false: poll again (unless *r < 0);
 * true: the execution is over, *r its result. */
static bool exec_frames(struct exec_conn *x, int *r, char *err, size_t errlen)
{
	for (;;) {
		int k = proto_reader_read(&x->rd, x->fd);
		if (k == -EAGAIN)
			return false;
		if (k < 0) {
			*r = errf(err, errlen, k, "the agent connection failed: %s",
			          k == -ECONNRESET ? "closed" : strerror(-k));
			/* Reset before the notice's answer: the agent ran
			 * nothing of this connection (it answers the notice
			 * first, in order).  The notice again on its own,
			 * then the command afresh. */
			x->lost = x->notice && (k == -ECONNRESET || k == -EPIPE);
			return false;
		}
		struct proto_hdr h;
		uint8_t *payload = NULL;
		proto_reader_take(&x->rd, &h, &payload);
		if (x->notice) {
			x->notice = false;
			*r = notice_answer(x->sb, &h, payload, err, errlen);
			free(payload);
			if (*r < 0)
				return true;
			continue;
		}
		if (h.type == PROTO_STARTED && !x->started) {
			x->started = true;
			/* A signal that came before the process existed. */
			if (x->signalled)
				*r = outq_json(&x->q, PROTO_SIGNAL,
				               json_pack("{s:i}", "signal", x->signalled));
		}
		int done = exec_frame(x->o, x->res, &h, payload, err, errlen);
		free(payload);
		if (done == 0 && *r < 0)
			done = *r;
		if (done != 0) {
			*r = done < 0 ? done : 0;
			return true;
		}
	}
}

/* What cove_exec refuses before it connects. */
static int exec_check(const struct cove_exec_opts *o, char *err, size_t errlen)
{
	if (!o->argv || !o->argv[0])
		return errf(err, errlen, -EINVAL, "no command given");
	if (o->user && !cove_user_valid(o->user))
		return errf(err, errlen, -EINVAL, "user '%.64s' is not a user[:group]", o->user);
	if (o->timeout_ms > COVE_TIMEOUT_MAX_MS)
		return errf(err, errlen, -EINVAL, "timeout of %llu ms is over the limit of %llu",
		            (unsigned long long)o->timeout_ms,
		            (unsigned long long)COVE_TIMEOUT_MAX_MS);
	return 0;
}

int cove_exec(struct cove_sandbox *sb, const struct cove_exec_opts *o, struct cove_exec_result *res,
              char *err, size_t errlen)
{
	memset(res, 0, sizeof(*res));
	int r = exec_check(o, err, errlen);
	if (r < 0)
		return r;
	/* The agent kills the command at its timeout and answers; the host
	 * gives up EXEC_GRACE_MS later if no answer came (a frozen guest).
	 * Until the agent says STARTED, a command with a timeout has that
	 * whole budget for the connection and the start (a guest among many
	 * on a busy host may take longer than one agent step to start it:
	 * 64 first execs at once on one emulated CPU all answered, one at a
	 * time, after their 10 s steps had failed); one without a timeout has
	 * AGENT_STEP_MS for each. */
	int64_t t0 = mono_ms();
	int64_t end =
	    o->timeout_ms ? t0 + (int64_t)o->timeout_ms + EXEC_GRACE_MS : PROTO_NO_DEADLINE;
	int64_t step = o->timeout_ms ? end : t0 + AGENT_STEP_MS;
	/* Right behind a restore notice still in flight, on its connection:
	 * the agent answers the notice first and runs nothing after a failed
	 * one (docs/protocol.md). */
	struct exec_conn x = { .sb = sb, .o = o, .res = res, .fd = notice_take(sb) };
	x.notice = x.fd >= 0;
	if (!x.notice)
		x.fd = agent_connect_cancel(sb, step, o->pending_signal, err, errlen);
	if (x.fd < 0)
		return x.fd;
	proto_reader_init(&x.rd);
	char *buf = malloc(STDIN_CHUNK);
	bool stdin_open = o->stdin_fd >= 0, stdin_read = false;
	r = buf ? outq_json(&x.q, PROTO_EXEC, exec_request(o)) : -ENOMEM;
	if (r == 0 && fcntl(x.fd, F_SETFL, fcntl(x.fd, F_GETFL) | O_NONBLOCK) < 0)
		r = -errno;
	if (r < 0)
		errf(err, errlen, r, "starting the execution: %s", strerror(-r));
	if (!o->timeout_ms)
		step = mono_ms() + AGENT_STEP_MS;
	while (r == 0) {
		if (o->pending_signal && *o->pending_signal) {
			int sig = *o->pending_signal;
			*o->pending_signal = 0;
			/* Forwarded without blocking; the caller is told soon after
			 * even when nobody answers. */
			if (!x.signalled)
				step = mono_ms() + EXEC_SIGNAL_GRACE_MS;
			x.signalled = sig;
			if (x.started)
				r = outq_json(&x.q, PROTO_SIGNAL,
				              json_pack("{s:i}", "signal", sig));
		}
		uint16_t rows, cols;
		if (r == 0 && o->pty && o->resize && o->resize(o->opaque, &rows, &cols))
			r = outq_json(&x.q, PROTO_RESIZE,
			              json_pack("{s:i, s:i}", "rows", rows, "cols", cols));
		if (r == 0)
			r = outq_flush(&x.q, x.fd);
		if (r < 0) {
			errf(err, errlen, r, "sending to the agent: %s", strerror(-r));
			x.lost = x.notice && (r == -EPIPE || r == -ECONNRESET); /* as below */
			break;
		}
		int64_t deadline = x.signalled || !x.started ? step : end;
		if (deadline != PROTO_NO_DEADLINE && mono_ms() >= deadline) {
			if (x.signalled)
				r = errf(err, errlen, -EINTR, "interrupted by signal %d",
				         x.signalled);
			else
				r = agent_timeout(t0, err, errlen);
			break;
		}
		/* Input is read only when the previous chunk has gone out. */
		bool want_in = stdin_open && x.q.len == 0;
		struct pollfd p[2] = {
			{ .fd = x.fd, .events = POLLIN | (x.q.len ? POLLOUT : 0) },
			{ .fd = want_in ? o->stdin_fd : -1, .events = POLLIN },
		};
		if (poll_until(p, 2, deadline, o->pending_signal != NULL) < 0) {
			if (errno == EINTR)
				continue; /* a signal to forward, or a resize */
			r = errf(err, errlen, -errno, "poll: %s", strerror(errno));
			break;
		}
		if (p[1].revents) {
			ssize_t n = read(o->stdin_fd, buf, STDIN_CHUNK);
			if (n < 0 && (errno == EINTR || errno == EAGAIN))
				continue;
			stdin_read = true;
			if (n <= 0)
				stdin_open = false; /* EOF (or an error): close the guest's stdin */
			r = outq_frame(&x.q, PROTO_STDIN, buf, n > 0 ? (uint32_t)n : 0);
			if (r < 0)
				break;
		}
		if (!(p[0].revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		if (exec_frames(&x, &r, err, errlen))
			goto out;
	}
out:
	proto_reader_reset(&x.rd);
	free(x.q.buf);
	free(buf);
	close(x.fd);
	/* No answer to the notice on this connection (it failed or timed out
	 * first): the notice again, synchronously, on its own. */
	if (x.notice)
		notice_lost(sb);
	if (x.lost && !stdin_read && !x.signalled && sb->notice_r == 0)
		return cove_exec(sb, o, res, err, errlen);
	/* The first exec of the first restore of a snapshot has its answer:
	 * the guest's working set so far is what later restores prefetch.  A
	 * failure costs only the prefetch. */
	if (r == 0 && sb->ws_record && sb->ws_take) {
		char werr[256];
		(void)sb->ws_take(sb, werr, sizeof(werr));
	}
	return r;
}

/* "K=V" strings into the object DEFAULTS and EXEC take. */
static int env_object(const char *const *env, json_t **out, char *err, size_t errlen)
{
	*out = json_object();
	size_t n = 0;
	for (const char *const *e = env; *out && e && *e; e++, n++) {
		const char *eq = strchr(*e, '=');
		if (!eq || eq == *e || n >= COVE_DEFAULTS_ENV_MAX ||
		    strlen(eq + 1) > COVE_DEFAULTS_VALUE_MAX) {
			json_decref(*out);
			*out = NULL;
			return errf(err, errlen, -EINVAL,
			            "env entry %zu is not K=V, or over the limits (%d entries, "
			            "values of %d bytes)",
			            n + 1, COVE_DEFAULTS_ENV_MAX, COVE_DEFAULTS_VALUE_MAX);
		}
		char *key = strndup(*e, (size_t)(eq - *e));
		json_t *v = json_string(eq + 1);
		if (!key || !v || json_object_set_new(*out, key, v) < 0) {
			json_decref(*out);
			*out = NULL;
		}
		free(key);
	}
	return *out ? 0 : errf(err, errlen, -ENOMEM, "out of memory");
}

int cove_set_exec_defaults(struct cove_sandbox *sb, const struct cove_exec_defaults *d, char *err,
                           size_t errlen)
{
	if (d->cwd && d->cwd[0] != '/')
		return errf(err, errlen, -EINVAL, "cwd '%.200s' is not an absolute path", d->cwd);
	if (d->user && !cove_user_valid(d->user))
		return errf(err, errlen, -EINVAL, "user '%.64s' is not a user[:group]", d->user);
	json_t *env;
	int r = env_object(d->env, &env, err, errlen);
	if (r < 0)
		return r;
	json_t *req = json_pack("{s:o}", "env", env);
	if (req && d->cwd)
		json_object_set_new(req, "cwd", json_string(d->cwd));
	if (req && d->user)
		json_object_set_new(req, "user", json_string(d->user));
	if (!req)
		return errf(err, errlen, -ENOMEM, "out of memory");
	return agent_request(sb, PROTO_DEFAULTS, req, NULL, err, errlen);
}
