/* process.Process: every command the SDK runs is a detached process of the
 * guest agent (lib/proc.c), so a client that goes away mid-command leaves
 * it running and Connect re-attaches to it (its output replayed from the
 * agent's ring).  Start and Connect are server streams: an MHD callback
 * reader turns the attach's events into Connect frames, waiting at most
 * until the next keepalive (and the call's Connect-Timeout-Ms). */
#include "daemon/envd/proc.h"

#include <ctype.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "cove.h"
#include "daemon/envd/messages.h"
#include "daemon/envd/rpc.h"
#include "daemon/http/connect.h"
#include "daemon/http/reply.h"
#include "daemon/sandboxes/journal.h"
#include "daemon/sandboxes/metrics.h"
#include "daemon/sandboxes/sandbox.h"
#include "daemon/sandboxes/table.h"
#include "daemon/trace/tracer.h"

struct pstream {
	struct coved *d;
	struct coved_sb *sb; /* a reference of its own */
	int fd;              /* the attach */
	int pid;
	struct envd_out o;
	int64_t deadline, next_keepalive; /* mono_ms(); deadline 0 = none */
	int keepalive_ms;
	bool pty; /* a pty's output is data.pty, not stdout */
	/* The journal line, written once (at the end, or when the client left). */
	json_t *jinfo; /* NULL for Connect, which journals nothing */
	int64_t t0;
	uint64_t out_bytes, err_bytes;
	char head[2][ENVD_HEAD_MAX];
	size_t head_len[2];
};

static uint8_t *event_frame(json_t *event, size_t *len)
{
	return connect_frame(json_pack("{s:o}", "event", event), 0, len);
}

/* Output as a JSON string: as is when it is UTF-8, else with the bytes
 * outside ASCII as '?'. */
static json_t *head_string(const char *b, size_t n)
{
	json_t *v = json_stringn(b, n);
	if (v)
		return v;
	char *t = malloc(n + 1);
	if (!t)
		return json_null();
	for (size_t i = 0; i < n; i++)
		t[i] = (unsigned char)b[i] < 0x80 && b[i] ? b[i] : '?';
	v = json_stringn(t, n);
	free(t);
	return v ? v : json_null();
}

static void stream_journal(struct pstream *s, bool exited, const struct cove_proc_event *ev)
{
	if (!s->jinfo)
		return;
	json_t *j = s->jinfo;
	s->jinfo = NULL;
	double secs = (double)(mono_ms() - s->t0) / 1000.0;
	json_object_set_new(j, "duration_ms", json_integer(mono_ms() - s->t0));
	if (exited && !ev->signal)
		json_object_set_new(j, "exit_code", json_integer(ev->exit_code));
	else
		json_object_set_new(j, "exit_code", json_null());
	if (exited && ev->signal)
		json_object_set_new(j, "signal", json_integer(ev->signal));
	if (!exited)
		json_object_set_new(j, "detached", json_true()); /* the client left first */
	json_object_set_new(j, "stdout_bytes", json_integer((json_int_t)s->out_bytes));
	json_object_set_new(j, "stderr_bytes", json_integer((json_int_t)s->err_bytes));
	json_object_set_new(j, "stdout_head", head_string(s->head[0], s->head_len[0]));
	json_object_set_new(j, "stderr_head", head_string(s->head[1], s->head_len[1]));
	coved_journal(s->sb, j);
	coved_metric_exec(s->d, secs, s->out_bytes + s->err_bytes, 0);
}

static void keep_head(struct pstream *s, int i, const uint8_t *data, size_t len)
{
	size_t room = ENVD_HEAD_MAX - s->head_len[i];
	size_t n = len < room ? len : room;
	memcpy(s->head[i] + s->head_len[i], data, n);
	s->head_len[i] += n;
}

/* The end of a process, as envd reports it (Go's ProcessState). */
static json_t *end_event(const struct cove_proc_event *ev)
{
	char status[64];
	if (ev->signal) {
		const char *name = strsignal(ev->signal);
		snprintf(status, sizeof(status), "signal: %s", name ? name : "unknown");
		for (char *p = status; *p; p++)
			*p = (char)tolower((unsigned char)*p);
	} else {
		snprintf(status, sizeof(status), "exit status %d", ev->exit_code);
	}
	json_t *end = json_pack("{s:i, s:b, s:s}", "exitCode", ev->signal ? -1 : ev->exit_code,
	                        "exited", !ev->signal, "status", status);
	if (end && (ev->signal || ev->exit_code))
		json_object_set_new(end, "error", json_string(status));
	return json_pack("{s:o}", "end", end);
}

/* Two frames in one buffer: a last event, then the end of the stream. */
static void finish_with(struct pstream *s, uint8_t *last, size_t last_len, const char *code,
                        const char *msg)
{
	size_t elen = 0;
	uint8_t *eos = connect_end_frame(code, msg, &elen);
	s->o.finished = true;
	s->o.off = 0;
	s->o.len = 0;
	s->o.buf = NULL;
	if (!eos) {
		free(last);
		return;
	}
	uint8_t *both = malloc(last_len + elen);
	if (!both) {
		free(last);
		free(eos);
		return;
	}
	if (last_len)
		memcpy(both, last, last_len);
	memcpy(both + last_len, eos, elen);
	free(last);
	free(eos);
	s->o.buf = both;
	s->o.len = last_len + elen;
}

/* Produces the next frame(s) into s->o.buf, waiting for the attach (not at
 * all when nowait). */
static void next_frame(struct pstream *s, bool nowait)
{
	int64_t now = mono_ms();
	if (s->deadline && now >= s->deadline) {
		finish_with(s, NULL, 0, "deadline_exceeded", "the call's timeout has passed");
		return;
	}
	int64_t until = s->next_keepalive;
	if (s->deadline && s->deadline < until)
		until = s->deadline;
	int wait = until > now && !nowait ? (int)(until - now) : 0;
	struct cove_proc_event ev;
	char err[256];
	if (cove_proc_next(s->fd, wait, &ev, err, sizeof(err)) < 0) {
		finish_with(s, NULL, 0, "unavailable", err);
		return;
	}
	size_t len = 0;
	uint8_t *f = NULL;
	switch (ev.kind) {
	case COVE_PROC_IDLE:
		if (mono_ms() >= s->next_keepalive) {
			s->next_keepalive = mono_ms() + s->keepalive_ms;
			f = event_frame(json_pack("{s:{}}", "keepalive"), &len);
		}
		break;
	case COVE_PROC_STDOUT:
	case COVE_PROC_STDERR: {
		int i = ev.kind == COVE_PROC_STDOUT ? 0 : 1;
		if (i == 0)
			s->out_bytes += ev.len;
		else
			s->err_bytes += ev.len;
		keep_head(s, i, ev.data, ev.len);
		char *b64 = envd_b64_encode(ev.data, ev.len);
		free(ev.data);
		if (!b64) {
			finish_with(s, NULL, 0, "resource_exhausted", "out of memory");
			return;
		}
		f = event_frame(json_pack("{s:{s:s}}", "data",
		                          s->pty   ? "pty"
		                          : i == 0 ? "stdout"
		                                   : "stderr",
		                          b64),
		                &len);
		free(b64);
		break;
	}
	case COVE_PROC_EXIT:
		stream_journal(s, true, &ev);
		f = event_frame(end_event(&ev), &len);
		finish_with(s, f, f ? len : 0, NULL, NULL);
		return;
	}
	if (f) {
		s->o.buf = f;
		s->o.len = len;
		s->o.off = 0;
	}
}

static void next_cb(void *cls, bool nowait)
{
	next_frame(cls, nowait);
}

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	(void)pos;
	struct pstream *s = cls;
	return envd_out_read(&s->o, next_cb, s, buf, max);
}

static void stream_free(void *cls)
{
	struct pstream *s = cls;
	if (s->jinfo) {
		struct cove_proc_event none = { 0 };
		stream_journal(s, false, &none);
	}
	if (s->fd >= 0)
		close(s->fd);
	free(s->o.buf);
	coved_sb_unref(s->sb);
	free(s);
}

/* Queues the stream, its first frame the start event. */
static enum MHD_Result stream_queue(struct envd_req *r, struct MHD_Connection *c, int fd, int pid,
                                    bool pty, json_t *jinfo, int64_t deadline_ms)
{
	struct pstream *s = calloc(1, sizeof(*s));
	if (!s) {
		close(fd);
		json_decref(jinfo);
		return MHD_NO;
	}
	s->d = r->d;
	s->sb = coved_sb_find(r->d, coved_sb_id(r->sb)); /* the stream outlives the request */
	s->fd = fd;
	s->pid = pid;
	s->pty = pty;
	s->jinfo = jinfo;
	s->t0 = mono_ms();
	s->keepalive_ms = envd_keepalive_ms(c);
	s->next_keepalive = s->t0 + s->keepalive_ms;
	s->deadline = deadline_ms ? s->t0 + deadline_ms : 0;
	s->o.buf = event_frame(json_pack("{s:{s:i}}", "start", "pid", pid), &s->o.len);
	if (!s->sb || !s->o.buf) {
		close(fd);
		json_decref(jinfo);
		free(s->o.buf);
		if (s->sb)
			coved_sb_unref(s->sb);
		free(s);
		return envd_stream_error(c, "unavailable", "the sandbox went away");
	}
	struct MHD_Response *resp = MHD_create_response_from_callback(
	    MHD_SIZE_UNKNOWN, ENVD_STREAM_BLOCK, stream_read, s, stream_free);
	if (!resp) {
		stream_free(s);
		return MHD_NO;
	}
	MHD_add_response_header(resp, "Content-Type", "application/connect+json");
	coved_reply_private(resp);
	enum MHD_Result ret = MHD_queue_response(c, MHD_HTTP_OK, resp);
	MHD_destroy_response(resp);
	return ret;
}

/* The sandbox's envVars with the request's on top (one entry per name). */
static const char **merge_env(const char *const *base, char *const *over)
{
	size_t n = 0, m = 0;
	for (const char *const *e = base; e && *e; e++)
		n++;
	for (char *const *e = over; e && *e; e++)
		m++;
	const char **out = calloc(n + m + 1, sizeof(*out));
	if (!out)
		return NULL;
	size_t k = 0;
	for (const char *const *e = base; e && *e; e++) {
		size_t kl = strcspn(*e, "=");
		bool shadowed = false;
		for (char *const *o = over; o && *o && !shadowed; o++)
			shadowed = strncmp(*o, *e, kl) == 0 && (*o)[kl] == '=';
		if (!shadowed)
			out[k++] = *e;
	}
	for (char *const *o = over; o && *o; o++)
		out[k++] = *o;
	return out;
}

static json_t *journal_info(const struct envd_start *st, const char *cwd, int pid)
{
	json_t *args = json_array(), *names = json_array();
	for (const char **a = st->argv + 1; args && *a; a++)
		json_array_append_new(args, json_string(*a));
	for (char **e = st->env; names && e && *e; e++) {
		size_t kl = strcspn(*e, "=");
		json_array_append_new(names, json_stringn(*e, kl)); /* names only, never values */
	}
	char start[40];
	clock_rfc3339(wall_ms(), start, sizeof(start));
	json_t *j = json_pack("{s:s, s:s, s:o, s:s, s:o, s:s, s:i}", "type", "exec", "cmd",
	                      st->argv[0], "args", args, "cwd", cwd ? cwd : ENVD_HOME, "env_names",
	                      names, "start", start, "pid", pid);
	if (j && st->tag)
		json_object_set_new(j, "tag", json_string(st->tag));
	return j;
}

enum MHD_Result envd_proc_start(struct envd_req *r, struct MHD_Connection *c, json_t *body)
{
	char msg[512] = "";
	const char *code = NULL;
	struct envd_start st;
	if (envd_parse_start(body, &st, msg, sizeof(msg)) < 0) {
		envd_start_free(&st);
		return envd_stream_error(c, "invalid_argument", msg);
	}
	struct cove_sandbox *sb = envd_cove(r, &code, msg, sizeof(msg));
	if (!sb) {
		envd_start_free(&st);
		return envd_stream_error(c, code, msg);
	}
	char cwd[ENVD_PATH_MAX + 1];
	if (st.cwd && envd_resolve_path(st.cwd, cwd, sizeof(cwd)) < 0) {
		envd_start_free(&st);
		return envd_stream_error(c, "invalid_argument",
		                         "\"process.cwd\" is not a usable path");
	}
	const char **env = merge_env(coved_sb_envs(r->sb), st.env);
	int64_t timeout = envd_header_ms(c, "Connect-Timeout-Ms");
	struct cove_proc_spec spec = {
		.argv = st.argv,
		.env = env,
		.cwd = st.cwd ? cwd : NULL,
		.user = envd_req_user(r),
		.tag = st.tag,
		.stdin_open = st.stdin_open,
		.pty = st.pty,
		.rows = st.rows,
		.cols = st.cols,
		.timeout_ms = (uint64_t)timeout,
	};
	int pid = 0;
	int rc = env ? cove_proc_start(sb, &spec, &pid, msg, sizeof(msg)) : -ENOMEM;
	if (rc == -ENOENT && !strcmp(st.argv[0], "/bin/bash")) {
		/* The SDK runs every command as /bin/bash -l -c; images without
		 * bash (the minimal, busybox one) run it with /bin/sh. */
		st.argv[0] = "/bin/sh";
		rc = cove_proc_start(sb, &spec, &pid, msg, sizeof(msg));
	}
	free(env);
	if (rc < 0) {
		envd_start_free(&st);
		return envd_stream_error(c, connect_code_from_errno(rc), msg);
	}
	json_t *jinfo = journal_info(&st, st.cwd ? cwd : NULL, pid);
	if (jinfo) /* the guest user the SDK named; null: the sandbox's default */
		json_object_set_new(jinfo, "user",
		                    envd_req_user(r) ? json_string(envd_req_user(r)) : json_null());
	trace_req_mark(jinfo, NULL); /* the line is written when the process ends */
	envd_start_free(&st);
	uint64_t first;
	int fd = cove_proc_attach(sb, pid, 0, &first, msg, sizeof(msg));
	if (fd < 0) {
		json_decref(jinfo);
		return envd_stream_error(c, connect_code_from_errno(fd), msg);
	}
	/* The agent kills it at the timeout; the stream ends a little later
	 * if the agent has not said so by then. */
	return stream_queue(r, c, fd, pid, spec.pty, jinfo, timeout ? timeout + 3000 : 0);
}

/* The pid a selector names: its pid, or the running process with its tag. */
static int select_pid(struct cove_sandbox *sb, const json_t *body, int *pid, const char **code,
                      char *msg, size_t msglen)
{
	const char *tag;
	if (envd_parse_selector(body, pid, &tag, msg, msglen) < 0) {
		*code = "invalid_argument";
		return -EINVAL;
	}
	if (*pid)
		return 0;
	json_t *procs = NULL;
	int r = cove_proc_list(sb, &procs, msg, msglen);
	if (r < 0) {
		*code = connect_code_from_errno(r);
		return r;
	}
	size_t i;
	json_t *p;
	json_array_foreach(procs, i, p)
	{
		const char *t = json_string_value(json_object_get(p, "tag"));
		json_t *v = json_object_get(p, "pid");
		if (t && !strcmp(t, tag) && json_is_true(json_object_get(p, "running")) &&
		    json_is_integer(v) && json_integer_value(v) > 0 &&
		    json_integer_value(v) <= INT32_MAX) {
			*pid = (int)json_integer_value(v);
			break;
		}
	}
	json_decref(procs);
	if (!*pid) {
		*code = "not_found";
		snprintf(msg, msglen, "no running process with tag '%.200s'", tag);
		return -ESRCH;
	}
	return 0;
}

/* Whether process pid runs under a pty (its output is data.pty). */
static bool proc_is_pty(struct cove_sandbox *sb, int pid)
{
	json_t *procs = NULL;
	char err[256];
	if (cove_proc_list(sb, &procs, err, sizeof(err)) < 0)
		return false;
	bool pty = false;
	size_t i;
	json_t *p;
	json_array_foreach(procs, i, p)
	{
		if (json_integer_value(json_object_get(p, "pid")) == pid)
			pty = json_is_true(json_object_get(p, "pty"));
	}
	json_decref(procs);
	return pty;
}

enum MHD_Result envd_proc_connect(struct envd_req *r, struct MHD_Connection *c, json_t *body)
{
	char msg[512] = "";
	const char *code = NULL;
	struct cove_sandbox *sb = envd_cove(r, &code, msg, sizeof(msg));
	int pid = 0;
	if (!sb || select_pid(sb, body, &pid, &code, msg, sizeof(msg)) < 0)
		return envd_stream_error(c, code, msg);
	uint64_t first;
	int fd = cove_proc_attach(sb, pid, 0, &first, msg, sizeof(msg));
	if (fd < 0)
		return envd_stream_error(c, connect_code_from_errno(fd), msg);
	return stream_queue(r, c, fd, pid, proc_is_pty(sb, pid), NULL,
	                    envd_header_ms(c, "Connect-Timeout-Ms"));
}

/* The unary calls: sb, the selected pid, or a Connect error. */
#define UNARY_PROLOGUE()                                              \
	struct cove_sandbox *sb = envd_cove(r, code, msg, msglen);    \
	int pid = 0;                                                  \
	(void)c;                                                      \
	if (!sb || select_pid(sb, body, &pid, code, msg, msglen) < 0) \
	return -1

static int done(int rc, json_t **reply, const char **code)
{
	if (rc < 0) {
		*code = connect_code_from_errno(rc);
		return -1;
	}
	*reply = json_object();
	return 0;
}

int envd_proc_input(struct envd_req *r, struct MHD_Connection *c, json_t *body, json_t **reply,
                    const char **code, char *msg, size_t msglen)
{
	UNARY_PROLOGUE();
	uint8_t *data = NULL;
	size_t len = 0;
	if (envd_parse_input(body, &data, &len, msg, msglen) < 0) {
		*code = "invalid_argument";
		return -1;
	}
	int rc = len ? cove_proc_input(sb, pid, data, len, msg, msglen) : 0;
	free(data);
	return done(rc, reply, code);
}

int envd_proc_signal(struct envd_req *r, struct MHD_Connection *c, json_t *body, json_t **reply,
                     const char **code, char *msg, size_t msglen)
{
	UNARY_PROLOGUE();
	int sig;
	if (envd_parse_signal(body, &sig, msg, msglen) < 0) {
		*code = "invalid_argument";
		return -1;
	}
	return done(cove_proc_signal(sb, pid, sig, msg, msglen), reply, code);
}

int envd_proc_close_stdin(struct envd_req *r, struct MHD_Connection *c, json_t *body,
                          json_t **reply, const char **code, char *msg, size_t msglen)
{
	UNARY_PROLOGUE();
	return done(cove_proc_close_stdin(sb, pid, msg, msglen), reply, code);
}

int envd_proc_update(struct envd_req *r, struct MHD_Connection *c, json_t *body, json_t **reply,
                     const char **code, char *msg, size_t msglen)
{
	UNARY_PROLOGUE();
	uint16_t rows, cols;
	int rc = envd_parse_size(body, &rows, &cols, msg, msglen);
	if (rc < 0) {
		*code = "invalid_argument";
		return -1;
	}
	return done(rc == 0 ? cove_proc_resize(sb, pid, rows, cols, msg, msglen) : 0, reply, code);
}

/* One agent list entry as a ProcessInfo; NULL for a malformed one. */
static json_t *process_info(const json_t *p)
{
	const json_t *argv = json_object_get(p, "argv"), *env = json_object_get(p, "env");
	const json_t *pid = json_object_get(p, "pid");
	if (!json_is_array(argv) || !json_array_size(argv) || !json_is_integer(pid) ||
	    !json_is_string(json_array_get(argv, 0)))
		return NULL;
	json_t *args = json_array(), *envs = json_object();
	for (size_t i = 1; args && i < json_array_size(argv); i++) {
		json_t *a = json_array_get(argv, i);
		if (json_is_string(a))
			json_array_append(args, a);
	}
	const char *k;
	json_t *v;
	if (json_is_object(env)) {
		json_object_foreach((json_t *)env, k, v)
		{
			if (json_is_string(v))
				json_object_set(envs, k, v);
		}
	}
	json_t *config = json_pack("{s:O, s:o, s:o}", "cmd", json_array_get(argv, 0), "args", args,
	                           "envs", envs);
	const char *cwd = json_string_value(json_object_get(p, "cwd"));
	if (config && cwd && cwd[0])
		json_object_set_new(config, "cwd", json_string(cwd));
	json_t *info = json_pack("{s:o, s:I}", "config", config, "pid", json_integer_value(pid));
	const char *tag = json_string_value(json_object_get(p, "tag"));
	if (info && tag)
		json_object_set_new(info, "tag", json_string(tag));
	return info;
}

int envd_proc_list(struct envd_req *r, struct MHD_Connection *c, json_t *body, json_t **reply,
                   const char **code, char *msg, size_t msglen)
{
	(void)c;
	(void)body;
	struct cove_sandbox *sb = envd_cove(r, code, msg, msglen);
	if (!sb)
		return -1;
	json_t *procs = NULL;
	int rc = cove_proc_list(sb, &procs, msg, msglen);
	if (rc < 0) {
		*code = connect_code_from_errno(rc);
		return -1;
	}
	json_t *out = json_array();
	size_t i;
	json_t *p;
	json_array_foreach(procs, i, p)
	{
		if (!json_is_true(json_object_get(p, "running")))
			continue; /* ended ones are kept only for a late attach */
		json_t *info = process_info(p);
		if (info)
			json_array_append_new(out, info);
	}
	json_decref(procs);
	*reply = json_pack("{s:o}", "processes", out);
	return 0;
}
