/* Unit tests: cove-agent's connection handler (agent_serve_conn) driven
 * over socketpair(AF_UNIX) on the host, exactly as the host side drives it
 * over vsock: exec (exit codes, signals, separate stdout/stderr, stdin,
 * large output, timeouts, PTY, resize), file transfer and file requests,
 * protocol errors and concurrency.  Also the request parser and the kernel
 * command line parser, which need no process. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "cove.h"
#include "errf.h"
#include "guest-agent/agent.h"
#include "guest-agent/net.h"
#include "guest-agent/request.h"
#include "guest-agent/restore.h"
#include "guest-agent/sys.h"
#include "lib/base/handle.h"
#include "proto.h"
#include "proto_json.h"
#include "unit.h"

/* ---- harness ------------------------------------------------------------ */

static int shutdown_calls;

static void fake_shutdown(void *opaque)
{
	(void)opaque;
	__atomic_add_fetch(&shutdown_calls, 1, __ATOMIC_SEQ_CST);
}

static const struct agent_config test_cfg = { .shutdown = fake_shutdown };

struct conn {
	int fd; /* the host's end */
	int agent_fd;
	pthread_t thread;
	int result;
	const struct agent_config *cfg;
};

static void *agent_thread(void *arg)
{
	struct conn *c = arg;
	c->result = agent_serve_conn(c->agent_fd, c->cfg);
	close(c->agent_fd);
	return NULL;
}

static void conn_open_cfg(struct conn *c, const struct agent_config *cfg)
{
	int sv[2];
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	c->fd = sv[0];
	c->agent_fd = sv[1];
	c->cfg = cfg;
	ck_assert_int_eq(pthread_create(&c->thread, NULL, agent_thread, c), 0);
}

static void conn_open(struct conn *c)
{
	conn_open_cfg(c, &test_cfg);
}

/* Closes the host end and waits for the handler; returns its result. */
static int conn_close(struct conn *c)
{
	close(c->fd);
	pthread_join(c->thread, NULL);
	return c->result;
}

static void send_json(int fd, uint16_t type, uint32_t id, const char *json)
{
	ck_assert_int_eq(proto_send(fd, type, id, json, (uint32_t)strlen(json)), 0);
}

static json_t *recv_json(int fd, uint16_t want_type, uint32_t want_id)
{
	struct proto_hdr h;
	uint8_t *p;
	ck_assert_int_eq(proto_recv(fd, &h, &p), 0);
	if (h.type != want_type)
		ck_abort_msg("got frame type %u (%s), want %u", h.type, p ? (char *)p : "",
		             want_type);
	ck_assert_uint_eq(h.id, want_id);
	json_t *o;
	char err[128];
	ck_assert_int_eq(proto_json_parse(p, h.len, &o, err, sizeof(err)), 0);
	free(p);
	return o;
}

static int64_t jint(const json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);
	ck_assert_msg(json_is_integer(v), "no integer \"%s\"", key);
	return json_integer_value(v);
}

/* ERROR frame expected: returns its errno. */
static int recv_error(int fd, uint32_t id)
{
	json_t *o = recv_json(fd, PROTO_ERROR, id);
	int e = (int)jint(o, "errno");
	ck_assert(json_is_string(json_object_get(o, "message")));
	json_decref(o);
	return e;
}

static void expect_ok(int fd, uint32_t id)
{
	json_decref(recv_json(fd, PROTO_OK, id));
}

static void ping(int fd, uint32_t id)
{
	send_json(fd, PROTO_PING, id, "{}");
	json_t *o = recv_json(fd, PROTO_PONG, id);
	ck_assert_int_eq(jint(o, "version"), PROTO_VERSION);
	json_decref(o);
}

/* The connection was closed by the agent (after an ERROR). */
static void expect_closed(int fd)
{
	struct proto_hdr h;
	uint8_t *p = NULL;
	int r = proto_recv(fd, &h, &p);
	free(p);
	ck_assert_int_eq(r, -ECONNRESET);
}

static uint64_t fnv(uint64_t h, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ULL;
	return h;
}

#define FNV_INIT 0xcbf29ce484222325ULL

struct result {
	int pid;
	char *out, *err;
	size_t out_len, err_len;
	uint64_t out_hash;
	bool hash_only; /* do not keep stdout, hash it */
	int code, sig;
	bool timed_out;
	int error; /* errno of an ERROR reply instead of STARTED, else 0 */
};

static void append(char **buf, size_t *len, const uint8_t *p, size_t n)
{
	*buf = realloc(*buf, *len + n + 1);
	ck_assert_ptr_nonnull(*buf);
	memcpy(*buf + *len, p, n);
	*len += n;
	(*buf)[*len] = 0;
}

static void result_free(struct result *r)
{
	free(r->out);
	free(r->err);
}

/* Reads frames of exec id until STARTED (or ERROR). */
static void exec_start(int fd, uint32_t id, const char *req, struct result *r)
{
	send_json(fd, PROTO_EXEC, id, req);
	struct proto_hdr h;
	uint8_t *p;
	ck_assert_int_eq(proto_recv(fd, &h, &p), 0);
	ck_assert_uint_eq(h.id, id);
	json_t *o;
	char err[128];
	ck_assert_int_eq(proto_json_parse(p, h.len, &o, err, sizeof(err)), 0);
	if (h.type == PROTO_ERROR) {
		r->error = (int)jint(o, "errno");
	} else {
		ck_assert_uint_eq(h.type, PROTO_STARTED);
		r->pid = (int)jint(o, "pid");
		ck_assert_int_gt(r->pid, 0);
	}
	json_decref(o);
	free(p);
}

/* Reads output until EXIT. */
static void exec_finish(int fd, uint32_t id, struct result *r)
{
	r->out_hash = FNV_INIT;
	for (;;) {
		struct proto_hdr h;
		uint8_t *p;
		ck_assert_int_eq(proto_recv(fd, &h, &p), 0);
		ck_assert_uint_eq(h.id, id);
		if (h.type == PROTO_STDOUT) {
			ck_assert_uint_gt(h.len, 0);
			if (r->hash_only) {
				r->out_hash = fnv(r->out_hash, p, h.len);
				r->out_len += h.len;
			} else {
				append(&r->out, &r->out_len, p, h.len);
			}
		} else if (h.type == PROTO_STDERR) {
			append(&r->err, &r->err_len, p, h.len);
		} else {
			if (h.type != PROTO_EXIT)
				ck_abort_msg("frame type %u in an exec", h.type);
			json_t *o;
			char err[128];
			ck_assert_int_eq(proto_json_parse(p, h.len, &o, err, sizeof(err)), 0);
			json_t *code = json_object_get(o, "code"),
			       *sig = json_object_get(o, "signal");
			ck_assert(json_is_integer(code) != json_is_integer(sig));
			r->code = json_is_integer(code) ? (int)json_integer_value(code) : 0;
			r->sig = json_is_integer(sig) ? (int)json_integer_value(sig) : 0;
			ck_assert(json_is_boolean(json_object_get(o, "timed_out")));
			r->timed_out = json_is_true(json_object_get(o, "timed_out"));
			json_decref(o);
			free(p);
			return;
		}
		free(p);
	}
}

static void exec_run(int fd, uint32_t id, const char *req, struct result *r)
{
	exec_start(fd, id, req, r);
	if (!r->error)
		exec_finish(fd, id, r);
}

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static char tmpdir[64];

static void setup(void)
{
	signal(SIGPIPE, SIG_IGN); /* agent_serve_conn's precondition */
	strcpy(tmpdir, "/tmp/cove-agent-test-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void teardown(void)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot clean %s\n", tmpdir);
}

/* ---- exec --------------------------------------------------------------- */

START_TEST(ping_pong)
{
	struct conn c;
	conn_open(&c);
	ping(c.fd, 1);
	/* An empty payload reads as {}. */
	ck_assert_int_eq(proto_send(c.fd, PROTO_PING, 2, NULL, 0), 0);
	json_decref(recv_json(c.fd, PROTO_PONG, 2));
	ck_assert_int_eq(conn_close(&c), 0);
}
END_TEST

START_TEST(exec_echo)
{
	struct conn c;
	conn_open(&c);
	struct result r = { 0 };
	exec_run(c.fd, 5, "{\"argv\":[\"echo\",\"hello\",\"world\"]}", &r);
	ck_assert_int_eq(r.error, 0);
	ck_assert_str_eq(r.out, "hello world\n");
	ck_assert_ptr_null(r.err);
	ck_assert_int_eq(r.code, 0);
	ck_assert_int_eq(r.sig, 0);
	ck_assert(!r.timed_out);
	result_free(&r);
	ck_assert_int_eq(conn_close(&c), 0);
}
END_TEST

START_TEST(exec_exit_codes)
{
	struct conn c;
	conn_open(&c);
	/* One connection, several requests in a row. */
	static const int codes[] = { 0, 3, 255, 1 };
	for (int i = 0; i < 4; i++) {
		char req[128];
		snprintf(req, sizeof(req), "{\"argv\":[\"sh\",\"-c\",\"exit %d\"]}", codes[i]);
		struct result r = { 0 };
		exec_run(c.fd, (uint32_t)i, req, &r);
		ck_assert_int_eq(r.code, codes[i]);
		ck_assert_int_eq(r.sig, 0);
		result_free(&r);
	}
	ck_assert_int_eq(conn_close(&c), 0);
}
END_TEST

START_TEST(exec_killed_by_signal)
{
	struct conn c;
	conn_open(&c);
	struct result r = { 0 };
	exec_run(c.fd, 1, "{\"argv\":[\"sh\",\"-c\",\"kill -TERM $$\"]}", &r);
	ck_assert_int_eq(r.sig, SIGTERM);
	ck_assert(!r.timed_out);
	result_free(&r);
	conn_close(&c);
}
END_TEST

START_TEST(exec_stdout_stderr_apart)
{
	struct conn c;
	conn_open(&c);
	struct result r = { 0 };
	exec_run(
	    c.fd, 1,
	    "{\"argv\":[\"sh\",\"-c\",\"echo out1; echo err1 >&2; echo out2; echo err2 >&2\"]}",
	    &r);
	ck_assert_str_eq(r.out, "out1\nout2\n");
	ck_assert_str_eq(r.err, "err1\nerr2\n");
	result_free(&r);
	conn_close(&c);
}
END_TEST

START_TEST(exec_env_cwd)
{
	struct conn c;
	conn_open(&c);
	char req[512];
	snprintf(req, sizeof(req),
	         "{\"argv\":[\"sh\",\"-c\",\"echo $FOO; echo ${COVE_UNSET-unset}; pwd\"],"
	         "\"env\":{\"FOO\":\"bar baz\",\"COVE_UNSET\":null},\"cwd\":\"%s\"}",
	         tmpdir);
	setenv("COVE_UNSET", "inherited", 1); /* the default env; the request removes it */
	struct result r = { 0 };
	exec_run(c.fd, 1, req, &r);
	char want[256];
	snprintf(want, sizeof(want), "bar baz\nunset\n%s\n", tmpdir);
	ck_assert_str_eq(r.out, want);
	result_free(&r);
	conn_close(&c);
}
END_TEST

START_TEST(exec_errors_keep_connection)
{
	struct conn c;
	conn_open(&c);
	struct result r = { 0 };
	exec_start(c.fd, 1, "{\"argv\":[\"/nonexistent/cove-test\"]}", &r);
	ck_assert_int_eq(r.error, ENOENT);
	r.error = 0;
	exec_start(c.fd, 2, "{\"argv\":[\"cove-no-such-command\"]}", &r);
	ck_assert_int_eq(r.error, ENOENT);
	r.error = 0;
	exec_start(c.fd, 3, "{\"argv\":[\"true\"],\"cwd\":\"/nonexistent\"}", &r);
	ck_assert_int_eq(r.error, ENOENT);
	r.error = 0;
	exec_start(c.fd, 4, "{\"argv\":[\"/etc/passwd\"]}", &r);
	ck_assert_int_eq(r.error, EACCES);
	ping(c.fd, 5);
	ck_assert_int_eq(conn_close(&c), 0);
}
END_TEST

START_TEST(exec_uid_gid)
{
	if (geteuid() != 0)
		return; /* needs root */
	struct conn c;
	conn_open(&c);
	struct result r = { 0 };
	exec_run(
	    c.fd, 1,
	    "{\"argv\":[\"sh\",\"-c\",\"id -u; id -g; id -G; pwd\"],\"uid\":65534,\"gid\":65533}",
	    &r);
	ck_assert_int_eq(r.code, 0);
	ck_assert_str_eq(r.out, "65534\n65533\n65533\n/\n"); /* /root is not theirs */
	result_free(&r);
	conn_close(&c);
}
END_TEST

struct feeder {
	int fd;
	uint32_t id;
	size_t total;
	uint64_t hash;
};

static void *stdin_feeder(void *arg)
{
	struct feeder *f = arg;
	uint8_t *buf = malloc(PROTO_MAX_PAYLOAD);
	uint32_t seed = 12345;
	size_t sent = 0;
	f->hash = FNV_INIT;
	while (sent < f->total) {
		seed = seed * 1103515245 + 12345;
		size_t n = 1 + seed % PROTO_MAX_PAYLOAD;
		if (n > f->total - sent)
			n = f->total - sent;
		for (size_t i = 0; i < n; i++)
			buf[i] = (uint8_t)((sent + i) * 7 + (sent + i) / 251);
		f->hash = fnv(f->hash, buf, n);
		if (proto_send(f->fd, PROTO_STDIN, f->id, buf, (uint32_t)n) < 0)
			break;
		sent += n;
	}
	if (proto_send(f->fd, PROTO_STDIN, f->id, NULL, 0) < 0)
		f->hash = 0;
	free(buf);
	return NULL;
}

START_TEST(exec_stdin_pipe)
{
	struct conn c;
	conn_open(&c);
	struct result r = { .hash_only = true };
	exec_start(c.fd, 9, "{\"argv\":[\"cat\"],\"stdin\":true}", &r);
	/* Input and output at once, both larger than any buffer on the way. */
	struct feeder f = { .fd = c.fd, .id = 9, .total = 6 * 1024 * 1024 + 17 };
	pthread_t t;
	ck_assert_int_eq(pthread_create(&t, NULL, stdin_feeder, &f), 0);
	exec_finish(c.fd, 9, &r);
	pthread_join(t, NULL);
	ck_assert_int_eq(r.code, 0);
	ck_assert_uint_eq(r.out_len, f.total);
	ck_assert_uint_eq(r.out_hash, f.hash);
	result_free(&r);
	conn_close(&c);
}
END_TEST

START_TEST(exec_stdin_closed)
{
	struct conn c;
	conn_open(&c);
	/* stdin false: /dev/null, so cat ends at once. */
	struct result r = { 0 };
	exec_run(c.fd, 1, "{\"argv\":[\"cat\"],\"stdin\":false}", &r);
	ck_assert_int_eq(r.code, 0);
	ck_assert_uint_eq(r.out_len, 0);
	result_free(&r);
	/* stdin true, a little input, then the end. */
	struct result r2 = { 0 };
	exec_start(c.fd, 2, "{\"argv\":[\"wc\",\"-c\"],\"stdin\":true}", &r2);
	ck_assert_int_eq(proto_send(c.fd, PROTO_STDIN, 2, "12345", 5), 0);
	ck_assert_int_eq(proto_send(c.fd, PROTO_STDIN, 2, NULL, 0), 0);
	exec_finish(c.fd, 2, &r2);
	ck_assert_str_eq(r2.out, "5\n");
	result_free(&r2);
	/* A process that never reads its input: STDIN after it is gone is
	 * dropped, the connection carries on. */
	struct result r3 = { 0 };
	exec_run(c.fd, 3, "{\"argv\":[\"true\"],\"stdin\":true}", &r3);
	ck_assert_int_eq(proto_send(c.fd, PROTO_STDIN, 3, "late", 4), 0);
	ping(c.fd, 4);
	conn_close(&c);
}
END_TEST

START_TEST(exec_large_output)
{
	struct conn c;
	conn_open(&c);
	/* seq 1 2700000: about 20 MiB, content known here. */
	const unsigned n = 2700000;
	uint64_t want = FNV_INIT;
	size_t want_len = 0;
	char line[16];
	for (unsigned i = 1; i <= n; i++) {
		int k = snprintf(line, sizeof(line), "%u\n", i);
		want = fnv(want, (uint8_t *)line, (size_t)k);
		want_len += (size_t)k;
	}
	struct result r = { .hash_only = true };
	exec_run(c.fd, 1, "{\"argv\":[\"seq\",\"1\",\"2700000\"]}", &r);
	ck_assert_int_eq(r.code, 0);
	ck_assert_uint_gt(want_len, 20u * 1000 * 1000);
	ck_assert_uint_eq(r.out_len, want_len);
	ck_assert_uint_eq(r.out_hash, want);
	result_free(&r);
	conn_close(&c);
}
END_TEST

START_TEST(exec_timeout)
{
	struct conn c;
	conn_open(&c);
	uint64_t t0 = now_ms();
	struct result r = { 0 };
	exec_run(c.fd, 1, "{\"argv\":[\"sleep\",\"30\"],\"timeout_ms\":300}", &r);
	uint64_t took = now_ms() - t0;
	ck_assert_int_eq(r.sig, SIGKILL);
	ck_assert(r.timed_out);
	ck_assert_uint_ge(took, 300);
	ck_assert_uint_lt(took, 10000);
	result_free(&r);
	/* A timeout that does not expire. */
	struct result r2 = { 0 };
	exec_run(c.fd, 2, "{\"argv\":[\"true\"],\"timeout_ms\":60000}", &r2);
	ck_assert_int_eq(r2.code, 0);
	ck_assert(!r2.timed_out);
	conn_close(&c);
}
END_TEST

START_TEST(exec_signal_frame)
{
	struct conn c;
	conn_open(&c);
	struct result r = { 0 };
	exec_start(c.fd, 4, "{\"argv\":[\"sleep\",\"30\"]}", &r);
	ping(c.fd, 99); /* answered while the exec runs */
	send_json(c.fd, PROTO_SIGNAL, 4, "{\"signal\":15}");
	exec_finish(c.fd, 4, &r);
	ck_assert_int_eq(r.sig, SIGTERM);
	ck_assert(!r.timed_out);
	conn_close(&c);
}
END_TEST

START_TEST(exec_background_output_holder)
{
	struct conn c;
	conn_open(&c);
	/* The shell exits at once; its background child keeps stdout open.
	 * EXIT comes after the drain grace, not after the child. */
	uint64_t t0 = now_ms();
	struct result r = { 0 };
	exec_run(c.fd, 1, "{\"argv\":[\"sh\",\"-c\",\"sleep 3 & echo hi\"]}", &r);
	ck_assert_str_eq(r.out, "hi\n");
	ck_assert_int_eq(r.code, 0);
	ck_assert_uint_lt(now_ms() - t0, 2500);
	result_free(&r);
	conn_close(&c);
}
END_TEST

START_TEST(exec_pty)
{
	unsetenv("TERM"); /* so the pty default shows */
	struct conn c;
	conn_open(&c);
	struct result r = { 0 };
	exec_run(c.fd, 1,
	         "{\"argv\":[\"sh\",\"-c\",\"test -t 0 && test -t 1 && echo tty; stty size; "
	         "echo $TERM; echo e >&2\"],\"pty\":{\"rows\":30,\"cols\":100}}",
	         &r);
	ck_assert_int_eq(r.code, 0);
	ck_assert_ptr_nonnull(r.out);
	ck_assert_ptr_nonnull(strstr(r.out, "tty\r\n"));
	ck_assert_ptr_nonnull(strstr(r.out, "30 100\r\n"));
	ck_assert_ptr_nonnull(strstr(r.out, "xterm-256color\r\n"));
	ck_assert_ptr_nonnull(strstr(r.out, "e\r\n")); /* stderr is the pty too */
	ck_assert_ptr_null(r.err);
	result_free(&r);
	/* Without a pty, no tty. */
	struct result r2 = { 0 };
	exec_run(c.fd, 2, "{\"argv\":[\"sh\",\"-c\",\"test -t 0 || echo notty\"]}", &r2);
	ck_assert_str_eq(r2.out, "notty\n");
	result_free(&r2);
	conn_close(&c);
}
END_TEST

START_TEST(exec_pty_resize_and_input)
{
	struct conn c;
	conn_open(&c);
	struct result r = { 0 };
	exec_start(c.fd, 3,
	           "{\"argv\":[\"sh\",\"-c\",\"read x; stty size; echo got $x; read y; echo end\"],"
	           "\"pty\":{\"rows\":24,\"cols\":80}}",
	           &r);
	send_json(c.fd, PROTO_RESIZE, 3, "{\"rows\":50,\"cols\":132}");
	ck_assert_int_eq(proto_send(c.fd, PROTO_STDIN, 3, "go\n", 3), 0);
	/* Empty STDIN on a pty sends ^D: read gets end of file. */
	ck_assert_int_eq(proto_send(c.fd, PROTO_STDIN, 3, NULL, 0), 0);
	exec_finish(c.fd, 3, &r);
	ck_assert_ptr_nonnull(strstr(r.out, "50 132\r\n"));
	ck_assert_ptr_nonnull(strstr(r.out, "got go\r\n"));
	ck_assert_ptr_nonnull(strstr(r.out, "end\r\n"));
	result_free(&r);
	conn_close(&c);
}
END_TEST

START_TEST(exec_drop_kills_group)
{
	struct conn c;
	conn_open(&c);
	struct result r = { 0 };
	exec_start(c.fd, 1, "{\"argv\":[\"sleep\",\"30\"]}", &r);
	ck_assert_int_eq(kill(r.pid, 0), 0);
	/* The host goes away mid-exec: the handler kills and reaps it. */
	ck_assert_int_lt(conn_close(&c), 0);
	ck_assert_int_eq(kill(r.pid, 0), -1);
	ck_assert_int_eq(errno, ESRCH);
}
END_TEST

START_TEST(exec_request_during_exec)
{
	struct conn c;
	conn_open(&c);
	struct result r = { 0 };
	exec_start(c.fd, 1, "{\"argv\":[\"sleep\",\"30\"]}", &r);
	send_json(c.fd, PROTO_STAT, 2, "{\"path\":\"/\"}");
	ck_assert_int_eq(recv_error(c.fd, 2), EPROTO);
	expect_closed(c.fd);
	ck_assert_int_eq(conn_close(&c), -EPROTO);
	ck_assert_int_eq(kill(r.pid, 0), -1);
}
END_TEST

struct par {
	int i;
	bool ok;
};

static void *par_exec(void *arg)
{
	struct par *p = arg;
	struct conn c;
	conn_open(&c);
	char req[160], want[64];
	snprintf(
	    req, sizeof(req),
	    "{\"argv\":[\"sh\",\"-c\",\"echo conn $0; echo e$0 >&2; exit $(($0 %% 7))\",\"%d\"]}",
	    p->i);
	snprintf(want, sizeof(want), "conn %d\n", p->i);
	struct result r = { 0 };
	exec_run(c.fd, (uint32_t)p->i, req, &r);
	char werr[32];
	snprintf(werr, sizeof(werr), "e%d\n", p->i);
	p->ok =
	    r.out && !strcmp(r.out, want) && r.err && !strcmp(r.err, werr) && r.code == p->i % 7;
	result_free(&r);
	conn_close(&c);
	return NULL;
}

START_TEST(exec_64_concurrent)
{
	enum { N = 64 };
	pthread_t t[N];
	struct par p[N];
	for (int i = 0; i < N; i++) {
		p[i] = (struct par){ .i = i };
		ck_assert_int_eq(pthread_create(&t[i], NULL, par_exec, &p[i]), 0);
	}
	for (int i = 0; i < N; i++)
		pthread_join(t[i], NULL);
	for (int i = 0; i < N; i++)
		ck_assert_msg(p[i].ok, "connection %d", i);
}
END_TEST

/* ---- files -------------------------------------------------------------- */

static void put_file(int fd, uint32_t id, const char *path, const char *extra, const uint8_t *data,
                     size_t len)
{
	char req[512];
	snprintf(req, sizeof(req), "{\"path\":\"%s\"%s}", path, extra);
	send_json(fd, PROTO_FILE_PUT, id, req);
	size_t off = 0, step = 1000;
	while (off < len) {
		size_t n = len - off < step ? len - off : step;
		ck_assert_int_eq(proto_send(fd, PROTO_DATA, id, data + off, (uint32_t)n), 0);
		off += n;
		step = step >= PROTO_MAX_PAYLOAD / 2 ? PROTO_MAX_PAYLOAD : step * 3;
	}
	ck_assert_int_eq(proto_send(fd, PROTO_DATA, id, NULL, 0), 0);
}

START_TEST(file_put_get)
{
	struct conn c;
	conn_open(&c);
	size_t len = 3 * 1024 * 1024 + 123;
	uint8_t *data = malloc(len);
	for (size_t i = 0; i < len; i++)
		data[i] = (uint8_t)((i * 2654435761u) >> 13);
	char path[128];
	snprintf(path, sizeof(path), "%s/blob.bin", tmpdir);
	put_file(c.fd, 1, path, ",\"mode\":416", data, len); /* 0640 */
	json_t *o = recv_json(c.fd, PROTO_OK, 1);
	ck_assert_int_eq(jint(o, "size"), (int64_t)len);
	json_decref(o);
	struct stat st;
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_eq(st.st_mode & 07777, 0640);
	ck_assert_int_eq(st.st_size, (off_t)len);

	char req[256];
	snprintf(req, sizeof(req), "{\"path\":\"%s\"}", path);
	send_json(c.fd, PROTO_FILE_GET, 2, req);
	o = recv_json(c.fd, PROTO_OK, 2);
	ck_assert_int_eq(jint(o, "size"), (int64_t)len);
	ck_assert_int_eq(jint(o, "mode"), 0640);
	ck_assert_str_eq(json_string_value(json_object_get(o, "type")), "file");
	json_decref(o);
	size_t got = 0;
	for (;;) {
		struct proto_hdr h;
		uint8_t *p;
		ck_assert_int_eq(proto_recv(c.fd, &h, &p), 0);
		ck_assert_uint_eq(h.type, PROTO_DATA);
		ck_assert_uint_eq(h.id, 2);
		ck_assert_uint_le(h.len, 256 * 1024);
		if (!h.len)
			break;
		ck_assert_uint_le(got + h.len, len);
		ck_assert_mem_eq(p, data + got, h.len);
		got += h.len;
		free(p);
	}
	ck_assert_uint_eq(got, len);

	/* Replacing keeps readers of the old file safe: a new inode. */
	put_file(c.fd, 3, path, "", (const uint8_t *)"new", 3);
	o = recv_json(c.fd, PROTO_OK, 3);
	ck_assert_int_eq(jint(o, "size"), 3);
	json_decref(o);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_eq(st.st_mode & 07777, 0644); /* the default */
	ck_assert_int_eq(st.st_size, 3);
	/* An empty file, owned by someone else when we may. */
	if (geteuid() == 0) {
		put_file(c.fd, 4, path, ",\"uid\":123,\"gid\":456", NULL, 0);
		expect_ok(c.fd, 4);
		ck_assert_int_eq(stat(path, &st), 0);
		ck_assert_int_eq(st.st_size, 0);
		ck_assert_int_eq(st.st_uid, 123);
		ck_assert_int_eq(st.st_gid, 456);
	}
	free(data);
	ck_assert_int_eq(conn_close(&c), 0);
}
END_TEST

START_TEST(file_errors)
{
	struct conn c;
	conn_open(&c);
	/* PUT into a missing directory: the data is taken, then ERROR. */
	put_file(c.fd, 1, "/nonexistent-cove/x", "", (const uint8_t *)"abc", 3);
	ck_assert_int_eq(recv_error(c.fd, 1), ENOENT);
	send_json(c.fd, PROTO_FILE_GET, 2, "{\"path\":\"/nonexistent-cove/x\"}");
	ck_assert_int_eq(recv_error(c.fd, 2), ENOENT);
	char req[256];
	snprintf(req, sizeof(req), "{\"path\":\"%s\"}", tmpdir);
	send_json(c.fd, PROTO_FILE_GET, 3, req);
	ck_assert_int_eq(recv_error(c.fd, 3), EISDIR);
	/* PUT onto a directory fails at the rename, and leaves no temp file. */
	put_file(c.fd, 4, tmpdir, "", (const uint8_t *)"abc", 3);
	ck_assert_int_ne(recv_error(c.fd, 4), 0);
	snprintf(req, sizeof(req), "{\"path\":\"%s\"}", tmpdir);
	send_json(c.fd, PROTO_LIST, 5, req);
	json_t *o = recv_json(c.fd, PROTO_OK, 5);
	ck_assert_uint_eq(json_array_size(json_object_get(o, "entries")), 0);
	json_decref(o);
	ping(c.fd, 6);
	ck_assert_int_eq(conn_close(&c), 0);
}
END_TEST

START_TEST(file_put_interrupted)
{
	struct conn c;
	conn_open(&c);
	char path[128];
	snprintf(path, sizeof(path), "%s/partial", tmpdir);
	char req[256];
	snprintf(req, sizeof(req), "{\"path\":\"%s\"}", path);
	send_json(c.fd, PROTO_FILE_PUT, 1, req);
	ck_assert_int_eq(proto_send(c.fd, PROTO_DATA, 1, "abc", 3), 0);
	/* Not DATA: a protocol error, and the temp file goes. */
	send_json(c.fd, PROTO_PING, 1, "{}");
	ck_assert_int_eq(recv_error(c.fd, 1), EPROTO);
	expect_closed(c.fd);
	ck_assert_int_eq(conn_close(&c), -EPROTO);
	snprintf(req, sizeof(req), "ls -A '%s' | grep -q .", tmpdir);
	ck_assert_int_ne(system(req), 0);
}
END_TEST

START_TEST(stat_list_mkdir_remove)
{
	struct conn c;
	conn_open(&c);
	char req[512], a[128];
	snprintf(a, sizeof(a), "%s/a", tmpdir);
	snprintf(req, sizeof(req), "{\"path\":\"%s/b/c\",\"parents\":true,\"mode\":448}", a);
	send_json(c.fd, PROTO_MKDIR, 1, req);
	expect_ok(c.fd, 1);
	send_json(c.fd, PROTO_MKDIR, 2, req); /* parents: existing is fine */
	expect_ok(c.fd, 2);
	snprintf(req, sizeof(req), "{\"path\":\"%s\"}", a);
	send_json(c.fd, PROTO_MKDIR, 3, req);
	ck_assert_int_eq(recv_error(c.fd, 3), EEXIST);
	snprintf(req, sizeof(req), "{\"path\":\"%s/x/y\"}", tmpdir);
	send_json(c.fd, PROTO_MKDIR, 4, req);
	ck_assert_int_eq(recv_error(c.fd, 4), ENOENT);

	snprintf(req, sizeof(req), "%s/file", a);
	put_file(c.fd, 5, req, ",\"mode\":384", (const uint8_t *)"12345", 5);
	expect_ok(c.fd, 5);
	snprintf(req, sizeof(req), "%s/link", a);
	ck_assert_int_eq(symlink("file", req), 0);

	snprintf(req, sizeof(req), "{\"path\":\"%s/b/c\"}", a);
	send_json(c.fd, PROTO_STAT, 6, req);
	json_t *o = recv_json(c.fd, PROTO_OK, 6);
	ck_assert_str_eq(json_string_value(json_object_get(o, "type")), "dir");
	ck_assert_int_eq(jint(o, "mode"), 0700);
	ck_assert_int_eq(jint(o, "uid"), geteuid());
	ck_assert_int_gt(jint(o, "mtime"), 1600000000);
	json_decref(o);
	snprintf(req, sizeof(req), "{\"path\":\"%s/link\"}", a);
	send_json(c.fd, PROTO_STAT, 7, req);
	o = recv_json(c.fd, PROTO_OK, 7);
	ck_assert_str_eq(json_string_value(json_object_get(o, "type")), "symlink");
	ck_assert_str_eq(json_string_value(json_object_get(o, "target")), "file");
	json_decref(o);

	snprintf(req, sizeof(req), "{\"path\":\"%s\"}", a);
	send_json(c.fd, PROTO_LIST, 8, req);
	o = recv_json(c.fd, PROTO_OK, 8);
	json_t *e = json_object_get(o, "entries");
	ck_assert_uint_eq(json_array_size(e), 3);
	static const char *names[] = { "b", "file", "link" },
	                  *types[] = { "dir", "file", "symlink" };
	for (size_t i = 0; i < 3; i++) {
		json_t *it = json_array_get(e, i);
		ck_assert_str_eq(json_string_value(json_object_get(it, "name")), names[i]);
		ck_assert_str_eq(json_string_value(json_object_get(it, "type")), types[i]);
	}
	ck_assert_int_eq(jint(json_array_get(e, 1), "size"), 5);
	ck_assert_int_eq(jint(json_array_get(e, 1), "mode"), 0600);
	json_decref(o);

	snprintf(req, sizeof(req), "{\"path\":\"%s\"}", a);
	send_json(c.fd, PROTO_REMOVE, 9, req);
	ck_assert_int_eq(recv_error(c.fd, 9), ENOTEMPTY);
	snprintf(req, sizeof(req), "{\"path\":\"%s/link\"}", a);
	send_json(c.fd, PROTO_REMOVE, 10, req); /* the link, not its target */
	expect_ok(c.fd, 10);
	snprintf(req, sizeof(req), "{\"path\":\"%s\",\"recursive\":true}", a);
	send_json(c.fd, PROTO_REMOVE, 11, req);
	expect_ok(c.fd, 11);
	snprintf(req, sizeof(req), "{\"path\":\"%s\"}", a);
	send_json(c.fd, PROTO_STAT, 12, req);
	ck_assert_int_eq(recv_error(c.fd, 12), ENOENT);
	send_json(c.fd, PROTO_REMOVE, 13, "{\"path\":\"/\",\"recursive\":true}");
	ck_assert_int_eq(recv_error(c.fd, 13), EBUSY);
	send_json(c.fd, PROTO_LIST, 14, "{\"path\":\"/nonexistent-cove\"}");
	ck_assert_int_eq(recv_error(c.fd, 14), ENOENT);
	send_json(c.fd, PROTO_SYNC, 15, "{}");
	expect_ok(c.fd, 15);
	ck_assert_int_eq(conn_close(&c), 0);
}
END_TEST

START_TEST(shutdown_hook)
{
	struct conn c;
	conn_open(&c);
	shutdown_calls = 0;
	send_json(c.fd, PROTO_SHUTDOWN, 1, "{}");
	expect_ok(c.fd, 1);
	ping(c.fd, 2); /* the hook returned: still serving */
	ck_assert_int_eq(shutdown_calls, 1);
	conn_close(&c);
	static const struct agent_config none = { 0 };
	conn_open_cfg(&c, &none);
	send_json(c.fd, PROTO_SHUTDOWN, 3, "{}");
	ck_assert_int_eq(recv_error(c.fd, 3), EPERM);
	conn_close(&c);
}
END_TEST

/* ---- protocol errors ---------------------------------------------------- */

/* Sends raw bytes, expects ERROR(errno) for id and then the close. */
static void malformed(const void *bytes, size_t len, uint32_t id, int want_errno)
{
	struct conn bad, good;
	conn_open(&good);
	conn_open(&bad);
	ck_assert_int_eq(write(bad.fd, bytes, len), (ssize_t)len);
	ck_assert_int_eq(recv_error(bad.fd, id), want_errno);
	expect_closed(bad.fd);
	ck_assert_int_lt(conn_close(&bad), 0);
	ping(good.fd, 1); /* the other connection is unharmed */
	ck_assert_int_eq(conn_close(&good), 0);
}

static void malformed_json(uint16_t type, const char *json)
{
	uint8_t buf[PROTO_HDR_SIZE + 256];
	size_t n = strlen(json);
	struct proto_hdr h = { .len = (uint32_t)n, .type = type, .id = 77 };
	proto_hdr_encode(buf, &h);
	memcpy(buf + PROTO_HDR_SIZE, json, n);
	malformed(buf, PROTO_HDR_SIZE + n, 77, EPROTO);
}

START_TEST(malformed_frames)
{
	uint8_t b[PROTO_HDR_SIZE];
	struct proto_hdr h = { .len = 0, .type = 999, .id = 31 };
	proto_hdr_encode(b, &h);
	malformed(b, sizeof(b), 31, EPROTO);
	h = (struct proto_hdr){ .len = PROTO_MAX_PAYLOAD + 1, .type = PROTO_DATA, .id = 32 };
	proto_hdr_encode(b, &h);
	malformed(b, sizeof(b), 32, EMSGSIZE);
	h = (struct proto_hdr){ .len = 0, .type = PROTO_DATA, .id = 33 };
	proto_hdr_encode(b, &h);
	malformed(b, sizeof(b), 33, EPROTO); /* DATA outside a FILE_PUT */
	malformed_json(PROTO_EXEC, "{\"argv\":");
	malformed_json(PROTO_EXEC, "[\"ls\"]");
	malformed_json(PROTO_EXEC, "{}");
	malformed_json(PROTO_EXEC, "{\"argv\":[]}");
	malformed_json(PROTO_EXEC, "{\"argv\":[\"ls\",1]}");
	malformed_json(PROTO_EXEC, "{\"argv\":[\"ls\"],\"timeout_ms\":-1}");
	malformed_json(PROTO_EXEC, "{\"argv\":[\"ls\"],\"env\":{\"A=B\":\"x\"}}");
	malformed_json(PROTO_FILE_GET, "{}");
	malformed_json(PROTO_STAT, "{\"path\":\"relative\"}");
	malformed_json(PROTO_MKDIR, "{\"path\":\"/x\",\"mode\":\"755\"}");
	malformed_json(PROTO_RESTORED, "{\"time_ns\":1}");
	malformed_json(PROTO_OK, "{}"); /* the agent's type, not a request */
	malformed_json(PROTO_STDOUT, "x");
}
END_TEST

/* ---- pure parts --------------------------------------------------------- */

static int parse_req(uint16_t type, const char *json, struct agent_req *req)
{
	struct proto_hdr h = { .len = (uint32_t)strlen(json), .type = type, .id = 1 };
	char err[256];
	return agent_req_parse(&h, (const uint8_t *)json, req, err, sizeof(err));
}

START_TEST(request_exec_fields)
{
	struct agent_req q;
	ck_assert_int_eq(parse_req(PROTO_EXEC,
	                           "{\"argv\":[\"a\",\"b\"],\"env\":{\"K\":\"V\",\"U\":null},"
	                           "\"cwd\":\"/w\",\"uid\":5,\"gid\":6,\"timeout_ms\":7,"
	                           "\"pty\":{\"rows\":8,\"cols\":9},\"stdin\":true}",
	                           &q),
	                 0);
	const struct agent_exec_req *x = &q.u.exec;
	ck_assert_str_eq(x->argv[0], "a");
	ck_assert_str_eq(x->argv[1], "b");
	ck_assert_ptr_null(x->argv[2]);
	ck_assert_str_eq(x->env[0], "K=V");
	ck_assert_str_eq(x->env[1], "U");
	ck_assert_ptr_null(x->env[2]);
	ck_assert_str_eq(x->cwd, "/w");
	ck_assert_int_eq(x->uid, 5);
	ck_assert_int_eq(x->gid, 6);
	ck_assert_uint_eq(x->timeout_ms, 7);
	ck_assert(x->pty && x->stdin_open);
	ck_assert_uint_eq(x->rows, 8);
	ck_assert_uint_eq(x->cols, 9);
	agent_req_free(&q);
	ck_assert_int_eq(parse_req(PROTO_EXEC, "{\"argv\":[\"a\"],\"pty\":true}", &q), 0);
	ck_assert(q.u.exec.pty && !q.u.exec.stdin_open);
	ck_assert_uint_eq(q.u.exec.rows, AGENT_DEFAULT_ROWS);
	ck_assert_int_eq(q.u.exec.uid, -1);
	ck_assert_ptr_null(q.u.exec.cwd);
	agent_req_free(&q);
	static const char *bad[] = {
		"{\"argv\":[\"\"]}",
		"{\"argv\":\"ls\"}",
		"{\"argv\":[\"a\"],\"uid\":-1}",
		"{\"argv\":[\"a\"],\"uid\":4294967295}",
		"{\"argv\":[\"a\"],\"cwd\":\"rel\"}",
		"{\"argv\":[\"a\"],\"pty\":{\"rows\":0}}",
		"{\"argv\":[\"a\"],\"pty\":3}",
		"{\"argv\":[\"a\"],\"stdin\":1}",
		"{\"argv\":[\"a\"],\"env\":{\"\":\"x\"}}",
		"{\"argv\":[\"a\"],\"env\":{\"A\":1}}",
		"{\"argv\":[\"a\"],\"env\":[]}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_msg(parse_req(PROTO_EXEC, bad[i], &q) == -EPROTO, "%s", bad[i]);
		agent_req_free(&q);
	}
}
END_TEST

START_TEST(request_other_types)
{
	struct agent_req q;
	ck_assert_int_eq(parse_req(PROTO_SIGNAL, "{\"signal\":9}", &q), 0);
	ck_assert_int_eq(q.u.signal.sig, 9);
	agent_req_free(&q);
	ck_assert_int_eq(parse_req(PROTO_SIGNAL, "{}", &q), -EPROTO);
	agent_req_free(&q);
	ck_assert_int_eq(parse_req(PROTO_SIGNAL, "{\"signal\":65}", &q), -EPROTO);
	agent_req_free(&q);
	ck_assert_int_eq(parse_req(PROTO_RESIZE, "{\"rows\":1,\"cols\":65535}", &q), 0);
	ck_assert_uint_eq(q.u.resize.cols, 65535);
	agent_req_free(&q);
	ck_assert_int_eq(parse_req(PROTO_FILE_PUT, "{\"path\":\"/f\"}", &q), 0);
	ck_assert_uint_eq(q.u.put.mode, 0644);
	ck_assert_int_eq(q.u.put.uid, -1);
	agent_req_free(&q);
	ck_assert_int_eq(parse_req(PROTO_FILE_PUT, "{\"path\":\"/f\",\"mode\":4096}", &q), -EPROTO);
	agent_req_free(&q);
	ck_assert_int_eq(parse_req(PROTO_MKDIR, "{\"path\":\"/d\"}", &q), 0);
	ck_assert_uint_eq(q.u.mkdir.mode, 0755);
	ck_assert(!q.u.mkdir.parents);
	agent_req_free(&q);
	ck_assert_int_eq(parse_req(PROTO_REMOVE, "{\"path\":\"/d\",\"recursive\":true}", &q), 0);
	ck_assert(q.u.remove.recursive);
	agent_req_free(&q);
	ck_assert_int_eq(parse_req(PROTO_STDIN, "raw bytes", &q), 0);
	agent_req_free(&q);
	ck_assert_int_eq(parse_req(PROTO_HELLO, "{}", &q), -EPROTO);
	agent_req_free(&q);
	ck_assert_int_eq(parse_req(PROTO_SYNC, "", &q), 0);
	agent_req_free(&q);
}
END_TEST

START_TEST(net_parsing)
{
	struct agent_net n;
	ck_assert_int_eq(agent_net_parse("172.16.0.2/30,172.16.0.1,172.16.0.1", &n), 0);
	ck_assert_uint_eq(n.prefix, 30);
	ck_assert_uint_eq(ntohl(n.addr.s_addr), 0xac100002u);
	ck_assert_uint_eq(ntohl(n.gateway.s_addr), 0xac100001u);
	ck_assert_uint_eq(ntohl(n.resolver.s_addr), 0xac100001u);
	ck_assert_int_eq(agent_net_parse("10.0.0.5/8,10.9.9.9,198.51.100.53", &n), 0);
	static const char *const bad[] = {
		"",
		"172.16.0.2",
		"172.16.0.2/30",
		"172.16.0.2/30,172.16.0.1",
		"172.16.0.2/30,172.16.0.1,172.16.0.1,x",
		"172.16.0.2/0,172.16.0.1,172.16.0.1",
		"172.16.0.2/33,172.16.0.1,172.16.0.1",
		"172.16.0.2/,172.16.0.1,172.16.0.1",
		"172.16.0.2/3a,172.16.0.1,172.16.0.1",
		"172.16.0.2/30,172.16.0.9,172.16.0.1",
		"172.16.0.2/30,172.16.0.2,172.16.0.1",
		"172.16.0.256/30,172.16.0.1,172.16.0.1",
		"/30,172.16.0.1,172.16.0.1",
		"172.16.0.2/30,,172.16.0.1",
		"172.16.0.2/30,172.16.0.1,",
		"172.16.0.2/030,172.16.0.1,172.16.0.1",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(agent_net_parse(bad[i], &n) == -EINVAL, "accepted '%s'", bad[i]);

	char dir[] = "/tmp/cove-net-XXXXXX", path[64], link[64], buf[128] = "";
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/resolv.conf", dir);
	snprintf(link, sizeof(link), "%s/target", dir);
	ck_assert_int_eq(symlink(link, path), 0); /* replaced, never followed */
	ck_assert_int_eq(agent_net_parse("172.16.0.2/30,172.16.0.1,172.16.0.1", &n), 0);
	ck_assert_int_eq(agent_net_write_resolv(path, &n), 0);
	struct stat st;
	ck_assert_int_eq(lstat(path, &st), 0);
	ck_assert(S_ISREG(st.st_mode));
	ck_assert_int_eq(access(link, F_OK), -1);
	int fd = open(path, O_RDONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_gt(read(fd, buf, sizeof(buf) - 1), 0);
	close(fd);
	ck_assert_ptr_nonnull(strstr(buf, "\nnameserver 172.16.0.1\n"));
	ck_assert_ptr_null(strstr(buf + (strstr(buf, "nameserver") - buf) + 10, "nameserver"));
	unlink(path);
	rmdir(dir);
}
END_TEST

START_TEST(cmdline_parsing)
{
	char v[16];
	const char *cl = "console=ttyS0 reboot=k cove.hostname=box1 quiet root=/dev/vda";
	ck_assert_int_eq(agent_cmdline_get(cl, "cove.hostname", v, sizeof(v)), 0);
	ck_assert_str_eq(v, "box1");
	ck_assert_int_eq(agent_cmdline_get(cl, "reboot", v, sizeof(v)), 0);
	ck_assert_str_eq(v, "k");
	ck_assert_int_eq(agent_cmdline_get(cl, "cove", v, sizeof(v)), -ENOENT);
	ck_assert_int_eq(agent_cmdline_get(cl, "quiet", v, sizeof(v)), -ENOENT);
	ck_assert_int_eq(agent_cmdline_get("", "x", v, sizeof(v)), -ENOENT);
	ck_assert_int_eq(agent_cmdline_get("a=1 a=2\n", "a", v, sizeof(v)), 0);
	ck_assert_str_eq(v, "2"); /* the last one wins */
	ck_assert_int_eq(agent_cmdline_get("x a=\"b c\" y", "a", v, sizeof(v)), 0);
	ck_assert_str_eq(v, "b c");
	ck_assert_int_eq(agent_cmdline_get("a=0123456789abcdefXYZ", "a", v, sizeof(v)),
	                 -ENAMETOOLONG);
	ck_assert_int_eq(agent_cmdline_get("xa=1", "a", v, sizeof(v)), -ENOENT);
	ck_assert(agent_hostname_valid("cove"));
	ck_assert(agent_hostname_valid("a-b.c9"));
	ck_assert(!agent_hostname_valid(""));
	ck_assert(!agent_hostname_valid("a b"));
	ck_assert(!agent_hostname_valid("a/b"));
	ck_assert(!agent_hostname_valid(
	    "0123456789012345678901234567890123456789012345678901234567890123456789"));
}
END_TEST

/* ---- restore notice ----------------------------------------------------- */

#define SEED_HEX "000102030405060708090a0b0c0d0e0f101112131415161718191A1B1C1D1E1F"

/* What the fake hook saw; the real one would set this machine's clock. */
static struct {
	int calls;
	struct agent_restore_req req;
	char hostname[80], sandbox_id[80];
	int fail;      /* -errno to return */
	bool reseeded; /* what to report */
} seen;

static int fake_restored(void *opaque, const struct agent_restore_req *req,
                         struct agent_restore_result *res, char *err, size_t errlen)
{
	ck_assert_ptr_eq(opaque, &seen);
	seen.calls++;
	seen.req = *req;
	snprintf(seen.hostname, sizeof(seen.hostname), "%s", req->hostname);
	snprintf(seen.sandbox_id, sizeof(seen.sandbox_id), "%s", req->sandbox_id);
	seen.req.hostname = seen.hostname;
	seen.req.sandbox_id = seen.sandbox_id;
	if (seen.fail)
		return errf(err, errlen, seen.fail, "restore: setting the clock: %s",
		            strerror(-seen.fail));
	res->reseeded = seen.reseeded;
	res->hwrng_bytes = 64; /* an older agent's answer */
	return 0;
}

static const struct agent_config restore_cfg = { .restored = fake_restored, .opaque = &seen };

START_TEST(request_restored_fields)
{
	struct agent_req q;
	ck_assert_int_eq(parse_req(PROTO_RESTORED,
	                           "{\"time_ns\":1700000000123456789,\"hostname\":\"fork-1.local\","
	                           "\"sandbox_id\":\"sb_42\",\"seed\":\"" SEED_HEX "\",\"new\":1}",
	                           &q),
	                 0);
	const struct agent_restore_req *x = &q.u.restored;
	ck_assert(x->time_ns == 1700000000123456789ULL);
	ck_assert_str_eq(x->hostname, "fork-1.local");
	ck_assert_str_eq(x->sandbox_id, "sb_42");
	for (unsigned i = 0; i < AGENT_SEED_BYTES; i++)
		ck_assert_uint_eq(x->seed[i], i); /* upper-case digits too */
	agent_req_free(&q);
	static const char *bad[] = {
		"{}",
		/* time_ns: required, a positive integer */
		"{\"hostname\":\"h\",\"sandbox_id\":\"i\",\"seed\":\"" SEED_HEX "\"}",
		"{\"time_ns\":null,\"hostname\":\"h\",\"sandbox_id\":\"i\",\"seed\":\"" SEED_HEX
		"\"}",
		"{\"time_ns\":0,\"hostname\":\"h\",\"sandbox_id\":\"i\",\"seed\":\"" SEED_HEX "\"}",
		"{\"time_ns\":-5,\"hostname\":\"h\",\"sandbox_id\":\"i\",\"seed\":\"" SEED_HEX
		"\"}",
		"{\"time_ns\":1.5,\"hostname\":\"h\",\"sandbox_id\":\"i\",\"seed\":\"" SEED_HEX
		"\"}",
		"{\"time_ns\":\"1\",\"hostname\":\"h\",\"sandbox_id\":\"i\",\"seed\":\"" SEED_HEX
		"\"}",
		/* hostname */
		"{\"time_ns\":1,\"sandbox_id\":\"i\",\"seed\":\"" SEED_HEX "\"}",
		"{\"time_ns\":1,\"hostname\":\"\",\"sandbox_id\":\"i\",\"seed\":\"" SEED_HEX "\"}",
		"{\"time_ns\":1,\"hostname\":\"a_b\",\"sandbox_id\":\"i\",\"seed\":\"" SEED_HEX
		"\"}",
		"{\"time_ns\":1,\"hostname\":\"a/b\",\"sandbox_id\":\"i\",\"seed\":\"" SEED_HEX
		"\"}",
		"{\"time_ns\":1,\"hostname\":\"a\\nb\",\"sandbox_id\":\"i\",\"seed\":\"" SEED_HEX
		"\"}",
		"{\"time_ns\":1,\"hostname\":7,\"sandbox_id\":\"i\",\"seed\":\"" SEED_HEX "\"}",
		"{\"time_ns\":1,\"hostname\":\"" /* 65 characters */
		"12345678901234567890123456789012345678901234567890123456789012345"
		"\",\"sandbox_id\":\"i\",\"seed\":\"" SEED_HEX "\"}",
		/* sandbox_id */
		"{\"time_ns\":1,\"hostname\":\"h\",\"seed\":\"" SEED_HEX "\"}",
		"{\"time_ns\":1,\"hostname\":\"h\",\"sandbox_id\":\"../x\",\"seed\":\"" SEED_HEX
		"\"}",
		"{\"time_ns\":1,\"hostname\":\"h\",\"sandbox_id\":\"a b\",\"seed\":\"" SEED_HEX
		"\"}",
		"{\"time_ns\":1,\"hostname\":\"h\",\"sandbox_id\":null,\"seed\":\"" SEED_HEX "\"}",
		/* seed: exactly 64 hex digits */
		"{\"time_ns\":1,\"hostname\":\"h\",\"sandbox_id\":\"i\"}",
		"{\"time_ns\":1,\"hostname\":\"h\",\"sandbox_id\":\"i\",\"seed\":\"00\"}",
		"{\"time_ns\":1,\"hostname\":\"h\",\"sandbox_id\":\"i\",\"seed\":\"" SEED_HEX
		"00\"}",
		"{\"time_ns\":1,\"hostname\":\"h\",\"sandbox_id\":\"i\",\"seed\":"
		"\"g00102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\"}",
		"{\"time_ns\":1,\"hostname\":\"h\",\"sandbox_id\":\"i\",\"seed\":"
		"\"0x0102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\"}",
		"{\"time_ns\":1,\"hostname\":\"h\",\"sandbox_id\":\"i\",\"seed\":[1,2]}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_msg(parse_req(PROTO_RESTORED, bad[i], &q) == -EPROTO, "%s", bad[i]);
		agent_req_free(&q);
	}
	/* a time beyond int64 is not valid JSON for the parser */
	ck_assert_int_eq(parse_req(PROTO_RESTORED,
	                           "{\"time_ns\":18446744073709551615,\"hostname\":\"h\","
	                           "\"sandbox_id\":\"i\",\"seed\":\"" SEED_HEX "\"}",
	                           &q),
	                 -EPROTO);
	agent_req_free(&q);
}
END_TEST

START_TEST(restored_hook)
{
	struct conn c;
	memset(&seen, 0, sizeof(seen));
	seen.reseeded = true;
	conn_open_cfg(&c, &restore_cfg);
	/* The host sends its next request right behind the notice: the
	 * answers come in order, the notice's first. */
	send_json(c.fd, PROTO_RESTORED, 4,
	          "{\"time_ns\":1700000000000000001,\"hostname\":\"fork-2\","
	          "\"sandbox_id\":\"sb-2\",\"seed\":\"" SEED_HEX "\"}");
	send_json(c.fd, PROTO_PING, 3, "{}");
	json_t *o = recv_json(c.fd, PROTO_OK, 4);
	json_decref(recv_json(c.fd, PROTO_PONG, 3));
	ck_assert(json_is_true(json_object_get(o, "reseeded")));
	ck_assert_int_eq(jint(o, "hwrng_bytes"), 64);
	json_decref(o);
	ck_assert_int_eq(seen.calls, 1);
	ck_assert(seen.req.time_ns == 1700000000000000001ULL);
	ck_assert_str_eq(seen.hostname, "fork-2");
	ck_assert_str_eq(seen.sandbox_id, "sb-2");
	ck_assert_uint_eq(seen.req.seed[31], 0x1f);
	/* a failed step is an ERROR with its errno, and the connection ends:
	 * nothing sent behind a failed notice runs */
	seen.fail = -EPERM;
	send_json(c.fd, PROTO_RESTORED, 5,
	          "{\"time_ns\":1,\"hostname\":\"h\",\"sandbox_id\":\"i\",\"seed\":\"" SEED_HEX
	          "\"}");
	/* The agent may already have closed (EPIPE): what counts is that the
	 * PING is never answered. */
	int sent = proto_send(c.fd, PROTO_PING, 51, "{}", 2);
	ck_assert(sent == 0 || sent == -EPIPE || sent == -ECONNRESET);
	ck_assert_int_eq(recv_error(c.fd, 5), EPERM);
	expect_closed(c.fd);
	ck_assert_int_lt(conn_close(&c), 0);
	/* so does a notice that could not reseed the CRNG (OK, reseeded false) */
	seen.fail = 0;
	seen.reseeded = false;
	conn_open_cfg(&c, &restore_cfg);
	send_json(c.fd, PROTO_RESTORED, 52,
	          "{\"time_ns\":1,\"hostname\":\"h\",\"sandbox_id\":\"i\",\"seed\":\"" SEED_HEX
	          "\"}");
	o = recv_json(c.fd, PROTO_OK, 52);
	ck_assert(json_is_false(json_object_get(o, "reseeded")));
	json_decref(o);
	expect_closed(c.fd);
	ck_assert_int_lt(conn_close(&c), 0);
	seen.reseeded = true;
	conn_open_cfg(&c, &restore_cfg);
	ping(c.fd, 6);
	/* a bad field breaks the schema: ERROR EPROTO, the hook is not run, and
	 * the connection closes like for any malformed request */
	send_json(c.fd, PROTO_RESTORED, 7,
	          "{\"time_ns\":1,\"hostname\":\"h h\",\"sandbox_id\":\"i\",\"seed\":\"" SEED_HEX
	          "\"}");
	ck_assert_int_eq(recv_error(c.fd, 7), EPROTO);
	expect_closed(c.fd);
	ck_assert_int_eq(seen.calls, 3);
	ck_assert_int_lt(conn_close(&c), 0);
	/* without a hook the notice is refused */
	conn_open(&c);
	send_json(c.fd, PROTO_RESTORED, 8,
	          "{\"time_ns\":1,\"hostname\":\"h\",\"sandbox_id\":\"i\",\"seed\":\"" SEED_HEX
	          "\"}");
	ck_assert_int_eq(recv_error(c.fd, 8), EPERM);
	ck_assert_int_eq(conn_close(&c), 0);
}
END_TEST

static void read_text(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	ssize_t n = read(fd, buf, len - 1);
	ck_assert_int_ge(n, 0);
	buf[n] = 0;
	close(fd);
}

static void write_text(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

START_TEST(restore_files)
{
	char dir[128], path[160], buf[256];
	/* the sandbox id: the directory is created, the file replaced whole */
	snprintf(dir, sizeof(dir), "%s/run-cove", tmpdir);
	ck_assert_int_eq(agent_write_sandbox_id(dir, "sb_1"), 0);
	snprintf(path, sizeof(path), "%s/" AGENT_SANDBOX_ID_FILE, dir);
	read_text(path, buf, sizeof(buf));
	ck_assert_str_eq(buf, "sb_1\n");
	ck_assert_int_eq(agent_write_sandbox_id(dir, "second"), 0);
	read_text(path, buf, sizeof(buf));
	ck_assert_str_eq(buf, "second\n");
	struct stat st;
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0644);
	snprintf(dir, sizeof(dir), "%s/no/such/parent", tmpdir);
	ck_assert_int_eq(agent_write_sandbox_id(dir, "x"), -ENOENT);

	/* /etc/hostname: rewritten when it exists, left alone otherwise */
	snprintf(path, sizeof(path), "%s/hostname", tmpdir);
	ck_assert_int_eq(agent_write_hostname_file(path, "nobody"), 0);
	ck_assert_int_eq(access(path, F_OK), -1);
	write_text(path, "a-much-longer-old-name\n");
	ck_assert_int_eq(agent_write_hostname_file(path, "fork-3"), 1);
	read_text(path, buf, sizeof(buf));
	ck_assert_str_eq(buf, "fork-3\n");
	ck_assert_int_eq(agent_write_hostname_file(tmpdir, "x"), -EISDIR);
}
END_TEST

/* libcove's side, cove_agent_restored(), against the agent's handler behind
 * a stand-in for cove-vmm's hybrid vsock socket. */
struct fake_vmm {
	int lfd;
	pthread_t thread;
	int conns; /* connections to serve */
};

static void *fake_vmm_thread(void *arg)
{
	struct fake_vmm *v = arg;
	for (int i = 0; i < v->conns; i++) {
		int fd = accept4(v->lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			break;
		char line[32], ch;
		size_t n = 0;
		while (n < sizeof(line) - 1 && read(fd, &ch, 1) == 1 && ch != '\n')
			line[n++] = ch;
		line[n] = 0;
		if (strcmp(line, "CONNECT 1024") == 0 && write(fd, "OK 7\n", 5) == 5)
			(void)agent_serve_conn(fd, &restore_cfg);
		close(fd);
	}
	return NULL;
}

static void fake_vmm_start(struct fake_vmm *v, struct cove_sandbox *sb, int conns)
{
	memset(sb, 0, sizeof(*sb));
	snprintf(sb->vsock, sizeof(sb->vsock), "%s/vsock", tmpdir);
	v->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(v->lfd, 0);
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sb->vsock);
	ck_assert_int_eq(bind(v->lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(listen(v->lfd, 4), 0);
	v->conns = conns;
	ck_assert_int_eq(pthread_create(&v->thread, NULL, fake_vmm_thread, v), 0);
}

static void fake_vmm_stop(struct fake_vmm *v)
{
	pthread_join(v->thread, NULL);
	close(v->lfd);
}

static uint64_t realtime_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

START_TEST(host_restore_notice)
{
	struct fake_vmm v;
	struct cove_sandbox sb;
	char err[256];
	memset(&seen, 0, sizeof(seen));
	seen.reseeded = true;
	fake_vmm_start(&v, &sb, 4);

	uint64_t before = realtime_ns();
	ck_assert_int_eq(cove_agent_restored(&sb, "fork-7", "sb_7", err, sizeof(err)), 0);
	uint64_t after = realtime_ns();
	ck_assert_int_eq(seen.calls, 1);
	ck_assert_str_eq(seen.hostname, "fork-7");
	ck_assert_str_eq(seen.sandbox_id, "sb_7");
	ck_assert(seen.req.time_ns >= before && seen.req.time_ns <= after);
	uint8_t first_seed[AGENT_SEED_BYTES], zero[AGENT_SEED_BYTES] = { 0 };
	memcpy(first_seed, seen.req.seed, sizeof(first_seed));
	ck_assert(memcmp(first_seed, zero, sizeof(zero)) != 0);

	/* every notice carries a fresh seed */
	ck_assert_int_eq(cove_agent_restored(&sb, "fork-7", "sb_7", err, sizeof(err)), 0);
	ck_assert(memcmp(first_seed, seen.req.seed, sizeof(first_seed)) != 0);

	/* a guest that could not reseed is an error: the fork is not unique */
	seen.reseeded = false;
	ck_assert_int_eq(cove_agent_restored(&sb, "fork-7", "sb_7", err, sizeof(err)), -EIO);
	ck_assert_ptr_nonnull(strstr(err, "reseed"));

	/* the agent's error comes back with its errno and message */
	seen.fail = -EPERM;
	ck_assert_int_eq(cove_agent_restored(&sb, "fork-7", "sb_7", err, sizeof(err)), -EPERM);
	ck_assert_ptr_nonnull(strstr(err, "setting the clock"));
	fake_vmm_stop(&v);
	ck_assert_int_eq(seen.calls, 4);

	/* bad names never reach the guest */
	ck_assert_int_eq(cove_agent_restored(&sb, "fork_7", "sb", err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "host name"));
	ck_assert_int_eq(cove_agent_restored(&sb, "", "sb", err, sizeof(err)), -EINVAL);
	ck_assert_int_eq(cove_agent_restored(&sb, NULL, "sb", err, sizeof(err)), -EINVAL);
	ck_assert_int_eq(cove_agent_restored(&sb, "h", "a/b", err, sizeof(err)), -EINVAL);
	ck_assert_int_eq(cove_agent_restored(&sb, "h", NULL, err, sizeof(err)), -EINVAL);
	ck_assert_int_eq(seen.calls, 4);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("agent");
	TCase *tc = tcase_create("exec");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, ping_pong);
	tcase_add_test(tc, exec_echo);
	tcase_add_test(tc, exec_exit_codes);
	tcase_add_test(tc, exec_killed_by_signal);
	tcase_add_test(tc, exec_stdout_stderr_apart);
	tcase_add_test(tc, exec_env_cwd);
	tcase_add_test(tc, exec_errors_keep_connection);
	tcase_add_test(tc, exec_uid_gid);
	tcase_add_test(tc, exec_stdin_pipe);
	tcase_add_test(tc, exec_stdin_closed);
	tcase_add_test(tc, exec_large_output);
	tcase_add_test(tc, exec_timeout);
	tcase_add_test(tc, exec_signal_frame);
	tcase_add_test(tc, exec_background_output_holder);
	tcase_add_test(tc, exec_pty);
	tcase_add_test(tc, exec_pty_resize_and_input);
	tcase_add_test(tc, exec_drop_kills_group);
	tcase_add_test(tc, exec_request_during_exec);
	tcase_add_test(tc, exec_64_concurrent);
	suite_add_tcase(s, tc);

	tc = tcase_create("files");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, file_put_get);
	tcase_add_test(tc, file_errors);
	tcase_add_test(tc, file_put_interrupted);
	tcase_add_test(tc, stat_list_mkdir_remove);
	tcase_add_test(tc, shutdown_hook);
	suite_add_tcase(s, tc);

	tc = tcase_create("protocol");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, malformed_frames);
	tcase_add_test(tc, request_exec_fields);
	tcase_add_test(tc, request_other_types);
	tcase_add_test(tc, cmdline_parsing);
	tcase_add_test(tc, net_parsing);
	suite_add_tcase(s, tc);

	tc = tcase_create("restore");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, request_restored_fields);
	tcase_add_test(tc, restored_hook);
	tcase_add_test(tc, restore_files);
	tcase_add_test(tc, host_restore_notice);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN()
