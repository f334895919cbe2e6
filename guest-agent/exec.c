/* EXEC: start a process, then one poll loop per exec multiplexes its
 * output, the host's input and signals, its end and its deadline.
 *
 * Flow control both ways without unbounded buffers: at most one output frame
 * waits for the host socket (the pipes are not read meanwhile, so a slow host
 * slows the process), and at most one STDIN payload waits for the process
 * (the connection is not read meanwhile).  EXIT goes out once the process
 * has been reaped and its output has reached end of file. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <termios.h>
#include <unistd.h>

#include "ca.h"
#include "clock.h"
#include "defaults.h"
#include "errf.h"
#include "exec.h"
#include "proto_json.h"
#include "spawn.h"
#include "users.h"

#define OUT_CHUNK (64 * 1024) /* one pipe's worth per output frame */
#define PTY_TERM  "TERM=xterm-256color"

extern char **environ;

struct exec {
	struct agent_conn *c;
	uint32_t id;
	pid_t pid;
	int pidfd;
	bool pty;
	int master;     /* the pty master (PTY mode), for RESIZE; else -1 */
	int out[2];     /* stdout, stderr read ends (PTY: master, -1); -1 at EOF */
	int in;         /* stdin write end (PTY: master); -1 once closed */
	bool exited;    /* reaped: code/sig valid */
	int code, sig;  /* exit status or terminating signal */
	bool timed_out; /* the deadline killed it */
	int64_t deadline, drain_deadline; /* mono_ms(), 0 = none */
	uint8_t *obuf;                    /* one output frame: header + up to OUT_CHUNK */
	size_t ooff, olen;
	uint8_t *ibuf; /* a STDIN payload on its way to the process */
	size_t ioff, ilen;
	bool in_eof; /* close stdin once ibuf is written */
};

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* ---- environment -------------------------------------------------------- */

static bool env_same_key(const char *a, const char *b)
{
	for (; *a && *a != '=' && *a == *b; a++, b++) {
	}
	return (*a == '=' || !*a) && (*b == '=' || !*b);
}

/* True when a layer above layer i names e's variable. */
static bool env_overridden(char **const *layers, size_t n, size_t i, const char *e)
{
	for (size_t j = i + 1; j < n; j++)
		for (char **o = layers[j]; o && *o; o++)
			if (env_same_key(e, *o))
				return true;
	return false;
}

char **agent_exec_env(char **const *layers, size_t n, bool pty)
{
	size_t total = 0;
	for (size_t i = 0; i < n; i++)
		for (char **e = layers[i]; e && *e; e++)
			total++;
	char **out = malloc((total + 2) * sizeof(*out));
	if (!out)
		return NULL;
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		for (char **e = layers[i]; e && *e; e++)
			if (strchr(*e, '=') && !env_overridden(layers, n, i, *e))
				out[k++] = *e;
	if (pty) {
		bool has_term = false;
		for (size_t i = 0; i < k && !has_term; i++)
			has_term = env_same_key(out[i], "TERM");
		if (!has_term)
			out[k++] = (char *)PTY_TERM;
	}
	out[k] = NULL;
	return out;
}

const char *agent_env_get(char *const *env, const char *key)
{
	size_t len = strlen(key);
	for (; *env; env++) {
		if (!strncmp(*env, key, len) && (*env)[len] == '=')
			return *env + len + 1;
	}
	return NULL;
}

/* ---- start -------------------------------------------------------------- */

int agent_open_pty(const struct agent_exec_req *x, int *master, int *slave)
{
	*master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC | O_NONBLOCK);
	if (*master < 0)
		return -errno;
	struct winsize ws = { .ws_row = x->rows, .ws_col = x->cols };
	if (unlockpt(*master) < 0 || ioctl(*master, TIOCSWINSZ, &ws) < 0)
		goto fail;
	*slave = ioctl(*master, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (*slave < 0)
		goto fail;
	return 0;
fail:;
	int e = -errno;
	close_fd(master);
	return e;
}

/* Who a process runs as, where, and with what environment: the request's
 * own, else the defaults' (defaults.c). */
struct exec_ctx {
	struct agent_defaults d;
	struct agent_user u;
	char **ca;
	char *home[2]; /* "HOME=" the user's home, when one was resolved */
	char **env;
};

static void ctx_free(struct exec_ctx *t)
{
	agent_defaults_free(&t->d);
	agent_ca_env_free(t->ca);
	free(t->home[0]);
	free(t->env);
	free(t);
}

/* Resolves the user and builds the environment into *t; fills s's ids,
 * groups, cwd, env and search path.  0 or -errno with err. */
static int ctx_build(struct exec_ctx *t, const struct agent_exec_req *x, struct agent_spawn *s,
                     char *err, size_t errlen)
{
	if (agent_defaults_get(&t->d) < 0)
		return errf(err, errlen, -ENOMEM, "out of memory");
	s->cwd = x->cwd ? x->cwd : t->d.cwd;
	/* An older host's "uid"/"gid" stand for a user of its own. */
	const char *user = x->user ? x->user : x->uid < 0 && x->gid < 0 ? t->d.user : NULL;
	if (!user) {
		s->uid = x->uid;
		s->gid = x->gid;
	} else {
		int r = agent_user_resolve(user, AGENT_PASSWD, AGENT_GROUP, &t->u, err, errlen);
		if (r < 0)
			return r;
		/* root as itself keeps the agent's ids and groups. */
		bool as_is = t->u.uid == 0 && !strchr(user, ':');
		s->uid = as_is ? -1 : (int64_t)t->u.uid;
		s->gid = as_is ? -1 : (int64_t)t->u.gid;
		s->groups = as_is ? NULL : t->u.groups;
		s->ngroups = as_is ? 0 : t->u.ngroups;
		s->home = t->u.home;
		if (asprintf(&t->home[0], "HOME=%s", t->u.home) < 0) {
			t->home[0] = NULL;
			return errf(err, errlen, -ENOMEM, "out of memory");
		}
	}
	t->ca = agent_ca_env();
	/* Lowest first: the agent's, the user's HOME, the defaults', the
	 * sandbox CA's (ca.c), the request's. */
	char **const layers[] = { environ, t->home, t->d.env, t->ca, x->env };
	t->env = agent_exec_env(layers, sizeof(layers) / sizeof(layers[0]), x->pty);
	if (!t->env)
		return errf(err, errlen, -ENOMEM, "out of memory");
	s->envp = t->env;
	s->path = agent_env_get(t->env, "PATH");
	return 0;
}

int agent_exec_spawn(const struct agent_exec_req *x, bool out_nonblock, int *master, int *in,
                     int out[2], pid_t *pid, int *pidfd, char *err, size_t errlen)
{
	int child[3] = { -1, -1, -1 };
	int p[2];
	int r = 0;
	struct agent_spawn s = { .argv = x->argv };
	struct exec_ctx *t = calloc(1, sizeof(*t));
	if (!t)
		return errf(err, errlen, -ENOMEM, "out of memory");
	if ((r = ctx_build(t, x, &s, err, errlen)) < 0)
		goto out;
	if (x->pty) {
		int slave = -1;
		if ((r = agent_open_pty(x, master, &slave)) < 0) {
			errf(err, errlen, r, "pty: %s", strerror(-r));
			goto out;
		}
		child[0] = child[1] = child[2] = slave;
		s.ctty = true;
		out[0] = *master;
		*in = *master;
	} else {
		for (int i = 0; i < 2; i++) {
			if (pipe2(p, O_CLOEXEC) < 0)
				goto fail_errno;
			out[i] = p[0];
			child[i + 1] = p[1];
			if (out_nonblock && fcntl(p[0], F_SETFL, O_NONBLOCK) < 0)
				goto fail_errno;
		}
		if (x->stdin_open) {
			if (pipe2(p, O_CLOEXEC) < 0)
				goto fail_errno;
			child[0] = p[0];
			*in = p[1];
			if (fcntl(*in, F_SETFL, O_NONBLOCK) < 0)
				goto fail_errno;
		} else {
			child[0] = open("/dev/null", O_RDONLY | O_CLOEXEC);
			if (child[0] < 0)
				goto fail_errno;
		}
	}
	memcpy(s.fds, child, sizeof(s.fds));
	r = agent_spawn(&s, pid, pidfd, err, errlen);
	goto out;
fail_errno:
	r = errf(err, errlen, -errno, "stdio for the process: %s", strerror(errno));
out:
	if (child[0] >= 0 && child[0] == child[1])
		close(child[0]);
	else
		for (int i = 0; i < 3; i++)
			close_fd(&child[i]);
	ctx_free(t);
	return r;
}

/* Sets up stdio, spawns, answers STARTED or ERROR.  Returns 1 when the
 * process runs, 0 when the request failed (ERROR sent), -errno on a dead
 * connection. */
static int exec_start(struct exec *ex, const struct agent_exec_req *x)
{
	char err[PATH_MAX + 128];
	int r = agent_exec_spawn(x, false, &ex->master, &ex->in, ex->out, &ex->pid, &ex->pidfd, err,
	                         sizeof(err));
	if (r < 0)
		return agent_conn_fail(ex->c, ex->id, r, "%s", err);
	char buf[48];
	int n = snprintf(buf, sizeof(buf), "{\"pid\":%d}", (int)ex->pid);
	r = proto_send(ex->c->fd, PROTO_STARTED, ex->id, buf, (uint32_t)n);
	return r < 0 ? r : 1;
}

/* ---- the loop ----------------------------------------------------------- */

static void exec_kill(struct exec *ex, int sig)
{
	/* The session leader's pid is its process group's id; the group can
	 * outlive it (background jobs), so signal the group either way. */
	if (kill(-ex->pid, sig) < 0 && !ex->exited)
		kill(ex->pid, sig);
}

static void stdin_close(struct exec *ex)
{
	free(ex->ibuf);
	ex->ibuf = NULL;
	ex->ilen = ex->ioff = 0;
	ex->in_eof = false;
	if (ex->pty)
		ex->in = -1; /* the master stays open for output */
	else
		close_fd(&ex->in);
}

/* Writes what it can of the pending input. */
static void stdin_flush(struct exec *ex)
{
	while (ex->ioff < ex->ilen) {
		ssize_t n = write(ex->in, ex->ibuf + ex->ioff, ex->ilen - ex->ioff);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (n < 0) { /* EPIPE: the process closed its stdin */
			stdin_close(ex);
			return;
		}
		ex->ioff += (size_t)n;
	}
	free(ex->ibuf);
	ex->ibuf = NULL;
	ex->ilen = ex->ioff = 0;
	if (ex->in_eof)
		stdin_close(ex);
}

static void on_stdin(struct exec *ex, uint8_t *payload, uint32_t len)
{
	if (ex->in < 0 || ex->exited) {
		free(payload);
		return;
	}
	if (len == 0) {
		free(payload);
		if (!ex->pty) {
			ex->in_eof = true;
			if (!ex->ilen)
				stdin_close(ex);
			return;
		}
		/* A pty has no end of input: send the terminal's EOF character. */
		static const uint8_t eof = 4; /* VEOF, ^D */
		payload = malloc(1);
		if (!payload)
			return;
		payload[0] = eof;
		len = 1;
	}
	ex->ibuf = payload;
	ex->ilen = len;
	ex->ioff = 0;
	stdin_flush(ex);
}

/* Sends what it can of the pending output frame; -errno if the host is gone. */
static int out_flush(struct exec *ex)
{
	while (ex->ooff < ex->olen) {
		ssize_t n = send(ex->c->fd, ex->obuf + ex->ooff, ex->olen - ex->ooff,
		                 MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		if (n < 0)
			return -errno;
		ex->ooff += (size_t)n;
	}
	ex->ooff = ex->olen = 0;
	return 0;
}

/* Reads one chunk of output from stream i into a frame and starts sending. */
static int out_read(struct exec *ex, int i)
{
	ssize_t n = read(ex->out[i], ex->obuf + PROTO_HDR_SIZE, OUT_CHUNK);
	if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK))
		return 0;
	if (n <= 0) { /* end of file; EIO from a pty master whose slaves are closed */
		if (ex->out[i] == ex->master)
			ex->out[i] = -1; /* closed at the end, RESIZE may still need it */
		else
			close_fd(&ex->out[i]);
		return 0;
	}
	struct proto_hdr h = { .len = (uint32_t)n,
		               .type = i == 0 ? PROTO_STDOUT : PROTO_STDERR,
		               .id = ex->id };
	proto_hdr_encode(ex->obuf, &h);
	ex->ooff = 0;
	ex->olen = PROTO_HDR_SIZE + (size_t)n;
	return out_flush(ex);
}

static void on_exited(struct exec *ex)
{
	int r = agent_spawn_wait(ex->pid, ex->pidfd, true, &ex->code, &ex->sig);
	if (r == 1)
		return;
	if (r < 0) { /* cannot happen for our own child; report it as killed */
		ex->code = 0;
		ex->sig = SIGKILL;
	}
	ex->exited = true;
	close_fd(&ex->pidfd);
	if (ex->in >= 0)
		stdin_close(ex);
	if (ex->out[0] >= 0 || ex->out[1] >= 0)
		ex->drain_deadline = mono_ms() + AGENT_DRAIN_GRACE_MS;
}

/* Finishes the output frame in flight, so that another frame may follow. */
static int out_flush_all(struct exec *ex)
{
	while (ex->olen) {
		int r = out_flush(ex);
		if (r < 0 || !ex->olen)
			return r;
		struct pollfd p = { .fd = ex->c->fd, .events = POLLOUT };
		if (poll(&p, 1, -1) < 0 && errno != EINTR)
			return -errno;
	}
	return 0;
}

/* A frame from the host while the process runs.  Returns 0, or -errno to
 * end the connection. */
static int on_frame(struct exec *ex, const struct proto_hdr *h, uint8_t *payload)
{
	struct agent_req req;
	char err[256];
	if (h->type == PROTO_STDIN) {
		if (h->id == ex->id)
			on_stdin(ex, payload, h->len);
		else
			free(payload);
		return 0;
	}
	int r = agent_req_parse(h, payload, &req, err, sizeof(err));
	bool replies =
	    r < 0 || (h->type != PROTO_SIGNAL && h->type != PROTO_RESIZE && h->type != PROTO_ERROR);
	/* A reply follows: first finish the output frame in flight. */
	int f = replies ? out_flush_all(ex) : 0;
	if (f < 0) {
		r = f;
		goto out;
	}
	if (r < 0) {
		r = agent_conn_reject(ex->c, h->id, -r, "%s", r == -EPROTO ? err : "out of memory");
		goto out;
	}
	switch (h->type) {
	case PROTO_SIGNAL:
		if (h->id == ex->id)
			exec_kill(ex, req.u.signal.sig);
		break;
	case PROTO_RESIZE:
		if (h->id == ex->id && ex->master >= 0) {
			struct winsize ws = { .ws_row = req.u.resize.rows,
				              .ws_col = req.u.resize.cols };
			(void)ioctl(ex->master, TIOCSWINSZ, &ws);
		}
		break;
	case PROTO_PING: {
		char buf[32];
		int n = snprintf(buf, sizeof(buf), "{\"version\":%d}", PROTO_VERSION);
		r = proto_send(ex->c->fd, PROTO_PONG, h->id, buf, (uint32_t)n);
		break;
	}
	case PROTO_ERROR:
		break;
	default:
		r = agent_conn_reject(ex->c, h->id, EPROTO, "frame type %u while an exec runs",
		                      h->type);
		break;
	}
out:
	agent_req_free(&req);
	free(payload);
	return r;
}

/* Takes the frames that have arrived, up to one stdin payload. */
static int conn_read(struct exec *ex)
{
	while (!ex->ilen) {
		int r = proto_reader_read(&ex->c->rd, ex->c->fd);
		if (r == -EAGAIN || r == -EWOULDBLOCK)
			return 0;
		if (r == -EPROTO || r == -EMSGSIZE) {
			uint32_t id = ex->c->rd.hdr_dec.id;
			proto_reader_reset(&ex->c->rd);
			r = out_flush_all(ex);
			return r < 0
			           ? r
			           : agent_conn_reject(ex->c, id, EPROTO, "malformed frame header");
		}
		if (r < 0)
			return r;
		struct proto_hdr h;
		uint8_t *payload;
		proto_reader_take(&ex->c->rd, &h, &payload);
		r = on_frame(ex, &h, payload);
		if (r < 0)
			return r;
	}
	return 0;
}

static bool exec_done(const struct exec *ex)
{
	return ex->exited && ex->out[0] < 0 && ex->out[1] < 0 && !ex->olen;
}

static int poll_timeout(struct exec *ex)
{
	int64_t when = ex->exited ? ex->drain_deadline : ex->deadline;
	if (!when)
		return -1;
	int64_t now = mono_ms();
	if (now >= when)
		return 0;
	return when - now > INT32_MAX ? INT32_MAX : (int)(when - now);
}

static void on_deadline(struct exec *ex)
{
	int64_t now = mono_ms();
	if (!ex->exited && ex->deadline && now >= ex->deadline) {
		ex->timed_out = true;
		ex->deadline = 0;
		exec_kill(ex, SIGKILL);
	} else if (ex->exited && ex->drain_deadline && now >= ex->drain_deadline) {
		/* A background process holds the output open: stop here. */
		ex->drain_deadline = 0;
		for (int i = 0; i < 2; i++) {
			if (ex->out[i] == ex->master)
				ex->out[i] = -1;
			else
				close_fd(&ex->out[i]);
		}
	}
}

enum { P_OUT0, P_OUT1, P_CONN_OUT, P_CONN_IN, P_STDIN, P_PIDFD, P_COUNT };

static int exec_loop(struct exec *ex)
{
	while (!exec_done(ex)) {
		struct pollfd p[P_COUNT];
		for (int i = 0; i < P_COUNT; i++)
			p[i] = (struct pollfd){ .fd = -1 };
		if (ex->olen) {
			p[P_CONN_OUT] = (struct pollfd){ .fd = ex->c->fd, .events = POLLOUT };
		} else {
			p[P_OUT0] = (struct pollfd){ .fd = ex->out[0], .events = POLLIN };
			p[P_OUT1] = (struct pollfd){ .fd = ex->out[1], .events = POLLIN };
		}
		/* With input pending for the process, only watch for the host
		 * going away: the next frame has nowhere to go yet. */
		bool input_waits = ex->ilen > 0;
		p[P_CONN_IN] =
		    (struct pollfd){ .fd = ex->c->fd, .events = input_waits ? POLLRDHUP : POLLIN };
		if (input_waits)
			p[P_STDIN] = (struct pollfd){ .fd = ex->in, .events = POLLOUT };
		if (!ex->exited)
			p[P_PIDFD] = (struct pollfd){ .fd = ex->pidfd, .events = POLLIN };
		int n = poll(p, P_COUNT, poll_timeout(ex));
		if (n < 0 && errno != EINTR)
			return -errno;
		if (poll_timeout(ex) == 0)
			on_deadline(ex);
		if (n <= 0)
			continue;
		int r = 0;
		if (p[P_PIDFD].revents)
			on_exited(ex);
		if (p[P_CONN_IN].revents)
			r = input_waits ? -ECONNRESET /* hung up */ : conn_read(ex);
		if (r == 0 && p[P_STDIN].revents && ex->ilen)
			stdin_flush(ex);
		if (r == 0 && p[P_CONN_OUT].revents)
			r = out_flush(ex);
		for (int i = 0; i < 2 && r == 0; i++) {
			if (p[P_OUT0 + i].revents && ex->out[i] >= 0 && !ex->olen)
				r = out_read(ex, i);
		}
		if (r < 0)
			return r;
	}
	return 0;
}

static int send_exit(struct exec *ex)
{
	char buf[96];
	int n;
	if (ex->sig)
		n = snprintf(buf, sizeof(buf), "{\"signal\":%d,\"timed_out\":%s}", ex->sig,
		             ex->timed_out ? "true" : "false");
	else
		n = snprintf(buf, sizeof(buf), "{\"code\":%d,\"timed_out\":%s}", ex->code,
		             ex->timed_out ? "true" : "false");
	return proto_send(ex->c->fd, PROTO_EXIT, ex->id, buf, (uint32_t)n);
}

static void exec_cleanup(struct exec *ex)
{
	if (ex->pidfd >= 0) {
		/* The connection is gone or broke the protocol mid-exec. */
		int code, sig;
		exec_kill(ex, SIGKILL);
		agent_spawn_wait(ex->pid, ex->pidfd, false, &code, &sig);
		close_fd(&ex->pidfd);
	}
	for (int i = 0; i < 2; i++) {
		if (ex->out[i] != ex->master)
			close_fd(&ex->out[i]);
	}
	if (ex->in != ex->master)
		close_fd(&ex->in);
	close_fd(&ex->master);
	free(ex->ibuf);
	free(ex->obuf);
}

int agent_exec(struct agent_conn *c, const struct agent_req *req)
{
	const struct agent_exec_req *x = &req->u.exec;
	struct exec ex = {
		.c = c,
		.id = req->id,
		.pidfd = -1,
		.master = -1,
		.out = { -1, -1 },
		.in = -1,
		.pty = x->pty,
	};
	ex.obuf = malloc(PROTO_HDR_SIZE + OUT_CHUNK);
	if (!ex.obuf)
		return agent_conn_fail(c, req->id, ENOMEM, "out of memory");
	int r = exec_start(&ex, x);
	if (r == 1) {
		if (x->timeout_ms)
			ex.deadline = mono_ms() + x->timeout_ms;
		r = exec_loop(&ex);
		if (r == 0)
			r = send_exit(&ex);
	}
	exec_cleanup(&ex);
	return r;
}
