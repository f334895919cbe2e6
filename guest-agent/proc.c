/* Detached processes (docs/protocol.md "Detached processes"): started by one
 * connection, owned by the agent, outliving every connection.
 *
 * One table of processes (tab_lock).  Each process has a pump thread that
 * alone reads its output into a bounded ring (proc_ring.h) and reaps it; any
 * number of connections attach and stream the ring from an offset, then live
 * output, then the exit.  A finished process stays in the table for
 * PROC_KEEP_MS, so that a host that lost its connection (or restarted) can
 * still learn how it ended.
 *
 * Locks: tab_lock guards the table and every refs count; p->lock guards the
 * ring and the exit fields (the pump appends under it and broadcasts
 * p->cond); p->in_lock guards the stdin fd and the pty master.  Never take
 * tab_lock while holding a process's lock. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/uio.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "ca.h"
#include "clock.h"
#include "errf.h"
#include "exec.h"
#include "proc.h"
#include "proc_ring.h"
#include "proto_json.h"
#include "spawn.h"

#define PROC_MAX       256              /* processes in the table, ended ones included */
#define PROC_KEEP_MS   (10 * 60 * 1000) /* how long an ended process's exit is kept */
#define PROC_CHUNK     (64 * 1024)      /* output read (and sent) at once */
#define INPUT_WAIT_MS  10000            /* a stdin that takes nothing for this long: EAGAIN */
#define ATTACH_TICK_MS 200              /* an attach looks at its connection this often */
/* All rings together stay near this: past it, a ring that grows keeps only
 * RING_SQUEEZED bytes, so 256 chatty processes cannot fill a small guest. */
#define RING_TOTAL    (16u << 20)
#define RING_SQUEEZED (16u << 10)

struct aproc {
	struct aproc *next; /* tab_lock */
	int refs;           /* tab_lock */
	pid_t pid;
	int pidfd;
	bool pty;
	int out[2]; /* pump only */
	int master; /* in_lock; -1 without a pty or once ended */
	int in;     /* in_lock; stdin's write end (pty: the master); -1 when closed */
	char *tag;
	json_t *info; /* {"argv", "env", "cwd"} as requested */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	pthread_mutex_t in_lock;
	struct proc_ring ring; /* lock */
	bool reaped, exited;   /* lock: reaped = its status is known; exited = output ended too */
	bool timed_out;
	int code, sig;
	int64_t ended_ms; /* mono_ms() when exited */
	int64_t deadline; /* pump only; 0 = none */
};

static pthread_mutex_t tab_lock = PTHREAD_MUTEX_INITIALIZER;
static struct aproc *tab;
static int tab_n;
static size_t ring_total; /* bytes in every ring; __atomic */

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

static void proc_free(struct aproc *p)
{
	__atomic_sub_fetch(&ring_total, p->ring.bytes, __ATOMIC_RELAXED);
	proc_ring_fini(&p->ring);
	close_fd(&p->pidfd);
	for (int i = 0; i < 2; i++) {
		if (p->out[i] != p->master)
			close_fd(&p->out[i]);
	}
	if (p->in != p->master)
		close_fd(&p->in);
	close_fd(&p->master);
	pthread_mutex_destroy(&p->lock);
	pthread_mutex_destroy(&p->in_lock);
	pthread_cond_destroy(&p->cond);
	json_decref(p->info);
	free(p->tag);
	free(p);
}

static void proc_unref(struct aproc *p)
{
	pthread_mutex_lock(&tab_lock);
	bool last = --p->refs == 0;
	pthread_mutex_unlock(&tab_lock);
	if (last)
		proc_free(p);
}

/* Drops ended processes older than PROC_KEEP_MS; with the table full, the
 * oldest ended one too.  Called with tab_lock held. */
static void tab_gc_locked(void)
{
	int64_t now = mono_ms();
	struct aproc *oldest = NULL;
	for (struct aproc **pp = &tab; *pp;) {
		struct aproc *p = *pp;
		pthread_mutex_lock(&p->lock);
		bool ended = p->exited;
		int64_t when = p->ended_ms;
		pthread_mutex_unlock(&p->lock);
		if (ended && now - when >= PROC_KEEP_MS) {
			*pp = p->next;
			tab_n--;
			if (--p->refs == 0)
				proc_free(p);
			continue;
		}
		if (ended && (!oldest || when < oldest->ended_ms))
			oldest = p;
		pp = &p->next;
	}
	if (tab_n >= PROC_MAX && oldest) {
		for (struct aproc **pp = &tab; *pp; pp = &(*pp)->next) {
			if (*pp == oldest) {
				*pp = oldest->next;
				tab_n--;
				if (--oldest->refs == 0)
					proc_free(oldest);
				break;
			}
		}
	}
}

/* A reference to the process pid, or NULL. */
static struct aproc *proc_find(pid_t pid)
{
	pthread_mutex_lock(&tab_lock);
	struct aproc *p = tab;
	while (p && p->pid != pid)
		p = p->next;
	if (p)
		p->refs++;
	pthread_mutex_unlock(&tab_lock);
	return p;
}

/* ---- the pump ----------------------------------------------------------- */

static void pump_close_out(struct aproc *p, int i)
{
	if (p->out[i] == p->master)
		p->out[i] = -1; /* closed at the end, under in_lock */
	else
		close_fd(&p->out[i]);
}

static void pump_reap(struct aproc *p)
{
	int code = 0, sig = 0;
	int r = agent_spawn_wait(p->pid, p->pidfd, true, &code, &sig);
	if (r == 1)
		return;
	if (r < 0) {
		code = 0;
		sig = SIGKILL;
	}
	pthread_mutex_lock(&p->lock);
	p->reaped = true;
	p->code = code;
	p->sig = sig;
	pthread_mutex_unlock(&p->lock);
	close_fd(&p->pidfd);
	pthread_mutex_lock(&p->in_lock);
	if (p->in != p->master)
		close_fd(&p->in);
	else
		p->in = -1;
	pthread_mutex_unlock(&p->in_lock);
}

static void *pump(void *arg)
{
	struct aproc *p = arg;
	uint8_t *buf = malloc(PROC_CHUNK);
	int64_t drain = 0;
	bool reaped = false;
	while (!(reaped && p->out[0] < 0 && p->out[1] < 0)) {
		struct pollfd f[3] = {
			{ .fd = buf ? p->out[0] : -1, .events = POLLIN },
			{ .fd = buf ? p->out[1] : -1, .events = POLLIN },
			{ .fd = reaped ? -1 : p->pidfd, .events = POLLIN },
		};
		int64_t when = reaped ? drain : p->deadline, now = mono_ms();
		int timeout = -1;
		if (when)
			timeout = when <= now
			              ? 0
			              : (when - now > INT32_MAX ? INT32_MAX : (int)(when - now));
		int n = poll(f, 3, timeout);
		if (n < 0 && errno != EINTR)
			break;
		now = mono_ms();
		if (!reaped && p->deadline && now >= p->deadline) {
			p->deadline = 0;
			pthread_mutex_lock(&p->lock);
			p->timed_out = true;
			pthread_mutex_unlock(&p->lock);
			if (kill(-p->pid, SIGKILL) < 0)
				kill(p->pid, SIGKILL);
		}
		if (reaped && now >= drain) {
			/* Something in the background holds the output open. */
			pump_close_out(p, 0);
			pump_close_out(p, 1);
			break;
		}
		if (n <= 0)
			continue;
		if (f[2].revents) {
			pump_reap(p);
			pthread_mutex_lock(&p->lock);
			reaped = p->reaped;
			pthread_mutex_unlock(&p->lock);
			if (reaped)
				drain = now + AGENT_DRAIN_GRACE_MS;
		}
		for (int i = 0; i < 2; i++) {
			if (!f[i].revents || p->out[i] < 0)
				continue;
			ssize_t got = read(p->out[i], buf, PROC_CHUNK);
			if (got < 0 && (errno == EINTR || errno == EAGAIN))
				continue;
			if (got <= 0) { /* EOF; EIO from a pty master with no slave left */
				pump_close_out(p, i);
				continue;
			}
			pthread_mutex_lock(&p->lock);
			size_t before = p->ring.bytes;
			bool full = __atomic_load_n(&ring_total, __ATOMIC_RELAXED) >= RING_TOTAL;
			p->ring.cap = full ? RING_SQUEEZED : PROC_RING_BYTES;
			if (proc_ring_append(&p->ring, i + 1, buf, (size_t)got) == 0)
				pthread_cond_broadcast(&p->cond);
			if (p->ring.bytes >= before)
				__atomic_add_fetch(&ring_total, p->ring.bytes - before,
				                   __ATOMIC_RELAXED);
			else
				__atomic_sub_fetch(&ring_total, before - p->ring.bytes,
				                   __ATOMIC_RELAXED);
			pthread_mutex_unlock(&p->lock);
		}
	}
	if (!reaped) { /* poll failed: the process is ours, end it */
		if (kill(-p->pid, SIGKILL) < 0)
			kill(p->pid, SIGKILL);
		int code, sig;
		agent_spawn_wait(p->pid, p->pidfd, false, &code, &sig);
		pthread_mutex_lock(&p->lock);
		p->reaped = true;
		p->code = 0;
		p->sig = SIGKILL;
		pthread_mutex_unlock(&p->lock);
		close_fd(&p->pidfd);
	}
	free(buf);
	for (int i = 0; i < 2; i++)
		pump_close_out(p, i);
	pthread_mutex_lock(&p->in_lock);
	if (p->in != p->master)
		close_fd(&p->in);
	p->in = -1;
	close_fd(&p->master);
	pthread_mutex_unlock(&p->in_lock);
	pthread_mutex_lock(&p->lock);
	p->exited = true;
	p->ended_ms = mono_ms();
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
	proc_unref(p);
	return NULL;
}

/* ---- PROC_START --------------------------------------------------------- */

static json_t *proc_info(const struct agent_req *req)
{
	json_t *argv = json_object_get(req->json, "argv");
	json_t *env = json_object_get(req->json, "env");
	const char *cwd = req->u.exec.cwd ? req->u.exec.cwd : "";
	return json_pack("{s:O, s:o, s:s}", "argv", argv, "env",
	                 json_is_object(env) ? json_deep_copy(env) : json_object(), "cwd", cwd);
}

/* Spawns the process with its stdio; 0 or -errno with a message in err. */
static int proc_spawn(struct aproc *p, const struct agent_exec_req *x, char *err, size_t errlen)
{
	return agent_exec_spawn(x, true, &p->master, &p->in, p->out, &p->pid, &p->pidfd, err,
	                        errlen);
}

static int proc_start(struct agent_conn *c, const struct agent_req *req)
{
	const struct agent_exec_req *x = &req->u.exec;
	pthread_mutex_lock(&tab_lock);
	tab_gc_locked();
	bool full = tab_n >= PROC_MAX;
	pthread_mutex_unlock(&tab_lock);
	if (full)
		return agent_conn_fail(c, req->id, EAGAIN, "%d processes are running", PROC_MAX);
	struct aproc *p = calloc(1, sizeof(*p));
	if (!p)
		return agent_conn_fail(c, req->id, ENOMEM, "out of memory");
	p->pidfd = p->master = p->in = -1;
	p->out[0] = p->out[1] = -1;
	p->pty = x->pty;
	pthread_mutex_init(&p->lock, NULL);
	pthread_mutex_init(&p->in_lock, NULL);
	pthread_cond_init(&p->cond, NULL);
	proc_ring_init(&p->ring, 0);
	p->info = proc_info(req);
	p->tag = req->tag ? strdup(req->tag) : NULL;
	if (!p->info || (req->tag && !p->tag)) {
		proc_free(p);
		return agent_conn_fail(c, req->id, ENOMEM, "out of memory");
	}
	char err[PATH_MAX + 128];
	int r = proc_spawn(p, x, err, sizeof(err));
	if (r < 0) {
		proc_free(p);
		return agent_conn_fail(c, req->id, r, "%s", err);
	}
	if (x->timeout_ms)
		p->deadline = mono_ms() + (int64_t)x->timeout_ms;
	p->refs = 2; /* the table's and the pump's */
	pthread_attr_t attr;
	pthread_t th;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	r = pthread_create(&th, &attr, pump, p);
	pthread_attr_destroy(&attr);
	if (r != 0) {
		kill(-p->pid, SIGKILL);
		int code, sig;
		agent_spawn_wait(p->pid, p->pidfd, false, &code, &sig);
		proc_free(p);
		return agent_conn_fail(c, req->id, r, "cannot start the output thread");
	}
	pid_t pid = p->pid;
	pthread_mutex_lock(&tab_lock);
	p->next = tab;
	tab = p;
	tab_n++;
	pthread_mutex_unlock(&tab_lock);
	return agent_conn_ok(c, req->id, json_pack("{s:i}", "pid", (int)pid));
}

/* ---- PROC_ATTACH -------------------------------------------------------- */

static int proc_attach(struct agent_conn *c, const struct agent_req *req, struct aproc *p)
{
	uint8_t *frame = malloc(PROTO_HDR_SIZE + PROC_CHUNK);
	if (!frame)
		return agent_conn_fail(c, req->id, ENOMEM, "out of memory");
	uint64_t offset = req->u.proc.offset;
	pthread_mutex_lock(&p->lock);
	uint64_t first = offset < p->ring.head_off ? p->ring.head_off : offset;
	pthread_mutex_unlock(&p->lock);
	int r = agent_conn_ok(
	    c, req->id, json_pack("{s:i, s:I}", "pid", (int)p->pid, "offset", (json_int_t)first));
	pthread_mutex_lock(&p->lock);
	while (r == 0) {
		int stream = 0;
		uint64_t at = 0;
		size_t n = proc_ring_get(&p->ring, offset, &stream, frame + PROTO_HDR_SIZE,
		                         PROC_CHUNK, &at);
		if (n) {
			offset = at + n;
			pthread_mutex_unlock(&p->lock);
			struct proto_hdr h = { .len = (uint32_t)n,
				               .type = stream == 1 ? PROTO_STDOUT : PROTO_STDERR,
				               .id = req->id };
			proto_hdr_encode(frame, &h);
			struct iovec iov = { .iov_base = frame, .iov_len = PROTO_HDR_SIZE + n };
			r = proto_sendv(c->fd, &iov, 1);
			pthread_mutex_lock(&p->lock);
			continue;
		}
		if (p->exited)
			break;
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += ATTACH_TICK_MS * 1000000L;
		ts.tv_sec += ts.tv_nsec / 1000000000L;
		ts.tv_nsec %= 1000000000L;
		pthread_cond_timedwait(&p->cond, &p->lock, &ts);
		pthread_mutex_unlock(&p->lock);
		r = agent_conn_check(c, "an attach");
		if (r == 1)
			r = 0;
		pthread_mutex_lock(&p->lock);
	}
	char buf[96];
	int n = 0;
	if (r == 0) {
		if (p->sig)
			n = snprintf(buf, sizeof(buf), "{\"signal\":%d,\"timed_out\":%s}", p->sig,
			             p->timed_out ? "true" : "false");
		else
			n = snprintf(buf, sizeof(buf), "{\"code\":%d,\"timed_out\":%s}", p->code,
			             p->timed_out ? "true" : "false");
	}
	pthread_mutex_unlock(&p->lock);
	free(frame);
	if (r < 0)
		return r;
	return proto_send(c->fd, PROTO_EXIT, req->id, buf, (uint32_t)n);
}

/* ---- input, signals, list ----------------------------------------------- */

static int write_all_until(int fd, const uint8_t *data, size_t len, int64_t deadline)
{
	while (len) {
		ssize_t n = write(fd, data, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN) {
			int64_t left = deadline - mono_ms();
			if (left <= 0)
				return -EAGAIN;
			struct pollfd f = { .fd = fd, .events = POLLOUT };
			if (poll(&f, 1, left > INT32_MAX ? INT32_MAX : (int)left) < 0 &&
			    errno != EINTR)
				return -errno;
			continue;
		}
		if (n < 0)
			return -errno;
		data += n;
		len -= (size_t)n;
	}
	return 0;
}

static int proc_input(struct agent_conn *c, const struct agent_req *req, struct aproc *p)
{
	pthread_mutex_lock(&p->in_lock);
	int r = p->in < 0 ? -EPIPE : 0;
	if (r == 0)
		r = write_all_until(p->in, req->u.proc.data, req->u.proc.len,
		                    mono_ms() + INPUT_WAIT_MS);
	pthread_mutex_unlock(&p->in_lock);
	if (r == -EPIPE)
		return agent_conn_fail(c, req->id, EPIPE, "the process's stdin is closed");
	if (r == -EAGAIN)
		return agent_conn_fail(c, req->id, EAGAIN, "the process took no input for %d s",
		                       INPUT_WAIT_MS / 1000);
	if (r < 0)
		return agent_conn_fail(c, req->id, r, "stdin: %s", strerror(-r));
	return agent_conn_ok(c, req->id, NULL);
}

static int proc_close_stdin(struct agent_conn *c, const struct agent_req *req, struct aproc *p)
{
	pthread_mutex_lock(&p->in_lock);
	if (p->in >= 0 && p->in == p->master) {
		static const uint8_t eof = 4; /* a pty has no end of input: VEOF, ^D */
		(void)write_all_until(p->in, &eof, 1, mono_ms() + INPUT_WAIT_MS);
	} else {
		close_fd(&p->in);
	}
	pthread_mutex_unlock(&p->in_lock);
	return agent_conn_ok(c, req->id, NULL);
}

static int proc_signal(struct agent_conn *c, const struct agent_req *req, struct aproc *p)
{
	/* Under p->lock the pid cannot have been reaped (and reused). */
	pthread_mutex_lock(&p->lock);
	bool reaped = p->reaped;
	if (!reaped && kill(-p->pid, req->u.proc.sig) < 0)
		kill(p->pid, req->u.proc.sig);
	pthread_mutex_unlock(&p->lock);
	if (reaped)
		return agent_conn_fail(c, req->id, ESRCH, "process %d has ended", (int)p->pid);
	return agent_conn_ok(c, req->id, NULL);
}

static int proc_resize(struct agent_conn *c, const struct agent_req *req, struct aproc *p)
{
	pthread_mutex_lock(&p->in_lock);
	int r = 0;
	if (p->master < 0) {
		r = -ENOTTY;
	} else {
		struct winsize ws = { .ws_row = req->u.proc.rows, .ws_col = req->u.proc.cols };
		if (ioctl(p->master, TIOCSWINSZ, &ws) < 0)
			r = -errno;
	}
	pthread_mutex_unlock(&p->in_lock);
	if (r < 0)
		return agent_conn_fail(c, req->id, r, "resize: %s", strerror(-r));
	return agent_conn_ok(c, req->id, NULL);
}

static json_t *proc_entry(struct aproc *p)
{
	json_t *o = json_pack(
	    "{s:i, s:O, s:O, s:O}", "pid", (int)p->pid, "argv", json_object_get(p->info, "argv"),
	    "env", json_object_get(p->info, "env"), "cwd", json_object_get(p->info, "cwd"));
	if (!o)
		return NULL;
	if (p->tag)
		json_object_set_new(o, "tag", json_string(p->tag));
	json_object_set_new(o, "pty", json_boolean(p->pty));
	pthread_mutex_lock(&p->lock);
	json_object_set_new(o, "running", json_boolean(!p->exited));
	if (p->exited)
		json_object_set_new(o, p->sig ? "signal" : "code",
		                    json_integer(p->sig ? p->sig : p->code));
	pthread_mutex_unlock(&p->lock);
	return o;
}

static int proc_list(struct agent_conn *c, const struct agent_req *req)
{
	json_t *arr = json_array();
	if (!arr)
		return agent_conn_fail(c, req->id, ENOMEM, "out of memory");
	pthread_mutex_lock(&tab_lock);
	tab_gc_locked();
	for (struct aproc *p = tab; p; p = p->next) {
		json_t *e = proc_entry(p);
		if (e)
			json_array_append_new(arr, e);
	}
	pthread_mutex_unlock(&tab_lock);
	return agent_conn_ok(c, req->id, json_pack("{s:o}", "procs", arr));
}

static int do_move(struct agent_conn *c, const struct agent_req *req)
{
	if (rename(req->u.move.from, req->u.move.to) < 0) {
		int e = errno;
		return agent_conn_fail(c, req->id, e, "rename %s to %s: %s", req->u.move.from,
		                       req->u.move.to, strerror(e));
	}
	return agent_conn_ok(c, req->id, NULL);
}

int agent_proc_request(struct agent_conn *c, const struct agent_req *req)
{
	switch (req->type) {
	case PROTO_PROC_START:
		return proc_start(c, req);
	case PROTO_PROC_LIST:
		return proc_list(c, req);
	case PROTO_MOVE:
		return do_move(c, req);
	default:
		break;
	}
	struct aproc *p = proc_find(req->u.proc.pid);
	if (!p)
		return agent_conn_fail(c, req->id, ESRCH, "no process %d", (int)req->u.proc.pid);
	int r;
	switch (req->type) {
	case PROTO_PROC_ATTACH:
		r = proc_attach(c, req, p);
		break;
	case PROTO_PROC_INPUT:
		r = proc_input(c, req, p);
		break;
	case PROTO_PROC_CLOSE_STDIN:
		r = proc_close_stdin(c, req, p);
		break;
	case PROTO_PROC_SIGNAL:
		r = proc_signal(c, req, p);
		break;
	case PROTO_PROC_RESIZE:
		r = proc_resize(c, req, p);
		break;
	default:
		r = agent_conn_reject(c, req->id, EPROTO, "frame type %u is not a request",
		                      req->type);
		break;
	}
	proc_unref(p);
	return r;
}
