/* Unit tests: detached processes (guest-agent/proc.c, types 40-47) driven
 * through libcove's lib/proc.c against the agent's connection handler behind
 * a stand-in for cove-vmm's hybrid vsock socket: start, attach (replay from
 * the ring, live output, exit), input, close stdin, signals, list, timeouts,
 * a late re-attach after the exit, MOVE, streaming put/get.  Also the output
 * ring and the request parser, which need no process. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "cove.h"
#include "guest-agent/agent.h"
#include "guest-agent/proc_ring.h"
#include "guest-agent/request.h"
#include "lib/base/handle.h"
#include "proto.h"
#include "unit.h"

/* ---- the ring ----------------------------------------------------------- */

START_TEST(ring_replay_and_evict)
{
	struct proc_ring r;
	proc_ring_init(&r, 10);
	ck_assert_int_eq(proc_ring_append(&r, 1, "abcd", 4), 0);
	ck_assert_int_eq(proc_ring_append(&r, 2, "EF", 2), 0);
	uint8_t buf[16];
	int stream = 0;
	uint64_t at = 99;
	ck_assert_uint_eq(proc_ring_get(&r, 0, &stream, buf, sizeof(buf), &at), 4);
	ck_assert_int_eq(stream, 1);
	ck_assert_uint_eq(at, 0);
	ck_assert_uint_eq(proc_ring_get(&r, 2, &stream, buf, sizeof(buf), &at), 2);
	ck_assert(!memcmp(buf, "cd", 2));
	ck_assert_uint_eq(proc_ring_get(&r, 4, &stream, buf, 1, &at), 1);
	ck_assert_int_eq(stream, 2);
	ck_assert_uint_eq(buf[0], 'E');
	ck_assert_uint_eq(proc_ring_get(&r, 6, &stream, buf, sizeof(buf), &at), 0);
	/* Over the cap: the oldest chunk goes, a reader from 0 skips ahead. */
	ck_assert_int_eq(proc_ring_append(&r, 1, "ghijkl", 6), 0);
	ck_assert_uint_eq(r.head_off, 4);
	ck_assert_uint_eq(proc_ring_get(&r, 0, &stream, buf, sizeof(buf), &at), 2);
	ck_assert_uint_eq(at, 4);
	/* A chunk bigger than the cap is kept alone. */
	ck_assert_int_eq(proc_ring_append(&r, 1, "0123456789abc", 13), 0);
	ck_assert_uint_eq(r.head_off, 12);
	ck_assert_uint_eq(r.bytes, 13);
	ck_assert_int_eq(proc_ring_append(&r, 3, "x", 1), -EINVAL);
	ck_assert_int_eq(proc_ring_append(&r, 1, "x", 0), -EINVAL);
	proc_ring_fini(&r);
	/* More chunks than slots. */
	proc_ring_init(&r, 0);
	for (int i = 0; i < PROC_RING_SLOTS + 10; i++)
		ck_assert_int_eq(proc_ring_append(&r, 1, "z", 1), 0);
	ck_assert_uint_eq(r.next_seq - r.head_seq, PROC_RING_SLOTS);
	ck_assert_uint_eq(r.head_off, 10);
	proc_ring_fini(&r);
}
END_TEST

/* ---- the parser --------------------------------------------------------- */

static int parse(uint16_t type, const void *payload, uint32_t len, struct agent_req *req)
{
	struct proto_hdr h = { .len = len, .type = type, .id = 7 };
	uint8_t *copy = malloc(len + 1);
	memcpy(copy, payload, len);
	copy[len] = 0;
	char err[256];
	int r = agent_req_parse(&h, copy, req, err, sizeof(err));
	free(copy); /* JSON types keep nothing of the payload */
	return r;
}

START_TEST(request_proc_fields)
{
	struct agent_req req;
	const char *ok = "{\"argv\":[\"sh\"],\"tag\":\"t1\",\"stdin\":true}";
	ck_assert_int_eq(parse(PROTO_PROC_START, ok, (uint32_t)strlen(ok), &req), 0);
	ck_assert_str_eq(req.tag, "t1");
	ck_assert(req.u.exec.stdin_open);
	agent_req_free(&req);
	static const struct {
		uint16_t type;
		const char *json;
	} bad[] = {
		{ PROTO_PROC_START, "{\"argv\":[],\"tag\":\"x\"}" },
		{ PROTO_PROC_START, "{\"argv\":[\"sh\"],\"tag\":5}" },
		{ PROTO_PROC_ATTACH, "{}" },
		{ PROTO_PROC_ATTACH, "{\"pid\":0}" },
		{ PROTO_PROC_ATTACH, "{\"pid\":2147483648}" },
		{ PROTO_PROC_ATTACH, "{\"pid\":5,\"offset\":-1}" },
		{ PROTO_PROC_SIGNAL, "{\"pid\":5}" },
		{ PROTO_PROC_SIGNAL, "{\"pid\":5,\"signal\":65}" },
		{ PROTO_PROC_RESIZE, "{\"pid\":5,\"rows\":0}" },
		{ PROTO_PROC_CLOSE_STDIN, "{\"pid\":\"5\"}" },
		{ PROTO_MOVE, "{\"from\":\"/a\"}" },
		{ PROTO_MOVE, "{\"from\":\"/a\",\"to\":\"b\"}" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int r = parse(bad[i].type, bad[i].json, (uint32_t)strlen(bad[i].json), &req);
		ck_assert_msg(r == -EPROTO, "%s accepted", bad[i].json);
		agent_req_free(&req);
	}
	char tag[AGENT_TAG_MAX + 64];
	int n = snprintf(tag, sizeof(tag), "{\"argv\":[\"sh\"],\"tag\":\"");
	memset(tag + n, 'a', AGENT_TAG_MAX + 1);
	strcpy(tag + n + AGENT_TAG_MAX + 1, "\"}");
	ck_assert_int_eq(parse(PROTO_PROC_START, tag, (uint32_t)strlen(tag), &req), -EPROTO);
	agent_req_free(&req);
	const char *mv = "{\"from\":\"/a\",\"to\":\"/b\"}";
	ck_assert_int_eq(parse(PROTO_MOVE, mv, (uint32_t)strlen(mv), &req), 0);
	ck_assert_str_eq(req.u.move.to, "/b");
	agent_req_free(&req);
	/* PROC_INPUT: a 4-byte pid first. */
	uint8_t in[6] = { 5, 0, 0, 0, 'h', 'i' };
	struct proto_hdr h = { .len = 6, .type = PROTO_PROC_INPUT };
	char err[128];
	ck_assert_int_eq(agent_req_parse(&h, in, &req, err, sizeof(err)), 0);
	ck_assert_int_eq(req.u.proc.pid, 5);
	ck_assert_uint_eq(req.u.proc.len, 2);
	ck_assert_ptr_eq(req.u.proc.data, in + 4);
	agent_req_free(&req);
	h.len = 3;
	ck_assert_int_eq(agent_req_parse(&h, in, &req, err, sizeof(err)), -EPROTO);
	agent_req_free(&req);
	uint8_t zero[4] = { 0 };
	h.len = 4;
	ck_assert_int_eq(agent_req_parse(&h, zero, &req, err, sizeof(err)), -EPROTO);
	agent_req_free(&req);
	uint8_t big[4] = { 0xff, 0xff, 0xff, 0xff };
	ck_assert_int_eq(agent_req_parse(&h, big, &req, err, sizeof(err)), -EPROTO);
	agent_req_free(&req);
}
END_TEST

/* ---- through libcove, against the agent --------------------------------- */

static char tmpdir[64];
static struct cove_sandbox sb;
static int lfd = -1;
static pthread_t acceptor;

static void *conn_thread(void *arg)
{
	int fd = (int)(intptr_t)arg;
	char line[32], ch;
	size_t n = 0;
	while (n < sizeof(line) - 1 && read(fd, &ch, 1) == 1 && ch != '\n')
		line[n++] = ch;
	line[n] = 0;
	static const struct agent_config cfg = { 0 };
	if (strcmp(line, "CONNECT 1024") == 0 && write(fd, "OK 7\n", 5) == 5)
		(void)agent_serve_conn(fd, &cfg);
	close(fd);
	return NULL;
}

static void *accept_thread(void *arg)
{
	(void)arg;
	for (;;) {
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			break;
		pthread_t t;
		if (pthread_create(&t, NULL, conn_thread, (void *)(intptr_t)fd) == 0)
			pthread_detach(t);
		else
			close(fd);
	}
	return NULL;
}

static void setup(void)
{
	signal(SIGPIPE, SIG_IGN);
	strcpy(tmpdir, "/tmp/cove-proc-test-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
	memset(&sb, 0, sizeof(sb));
	snprintf(sb.vsock, sizeof(sb.vsock), "%s/vsock", tmpdir);
	lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(lfd, 0);
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sb.vsock);
	ck_assert_int_eq(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(listen(lfd, 64), 0);
	ck_assert_int_eq(pthread_create(&acceptor, NULL, accept_thread, NULL), 0);
}

static void teardown(void)
{
	shutdown(lfd, SHUT_RDWR);
	pthread_join(acceptor, NULL);
	close(lfd);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot clean %s\n", tmpdir);
}

struct collected {
	char out[8192], errb[8192];
	size_t nout, nerr;
	bool exited;
	struct cove_proc_event exit;
};

/* Reads an attach until its EXIT (or, with until_out, until stdout holds
 * that text). */
static void collect(int fd, struct collected *c, const char *until_out)
{
	char err[256];
	for (;;) {
		struct cove_proc_event ev;
		int r = cove_proc_next(fd, 5000, &ev, err, sizeof(err));
		ck_assert_msg(r == 0, "cove_proc_next: %s", err);
		if (ev.kind == COVE_PROC_STDOUT || ev.kind == COVE_PROC_STDERR) {
			bool o = ev.kind == COVE_PROC_STDOUT;
			size_t *n = o ? &c->nout : &c->nerr;
			char *b = o ? c->out : c->errb;
			ck_assert_uint_lt(*n + ev.len, sizeof(c->out));
			memcpy(b + *n, ev.data, ev.len);
			*n += ev.len;
			b[*n] = 0;
			free(ev.data);
			if (until_out && strstr(c->out, until_out))
				return;
		} else if (ev.kind == COVE_PROC_EXIT) {
			c->exited = true;
			c->exit = ev;
			return;
		}
	}
}

static int start(const char *script, bool in, uint64_t timeout_ms, const char *tag)
{
	const char *argv[] = { "/bin/sh", "-c", script, NULL };
	const char *env[] = { "PROC_TEST=yes", NULL };
	struct cove_proc_spec spec = { .argv = argv,
		                       .env = env,
		                       .cwd = tmpdir,
		                       .tag = tag,
		                       .stdin_open = in,
		                       .timeout_ms = timeout_ms };
	int pid = 0;
	char err[256];
	int r = cove_proc_start(&sb, &spec, &pid, err, sizeof(err));
	ck_assert_msg(r == 0, "cove_proc_start: %s", err);
	ck_assert_int_gt(pid, 0);
	return pid;
}

static int attach(int pid, uint64_t offset)
{
	char err[256];
	uint64_t first = 0;
	int fd = cove_proc_attach(&sb, pid, offset, &first, err, sizeof(err));
	ck_assert_msg(fd >= 0, "cove_proc_attach: %s", err);
	return fd;
}

START_TEST(proc_output_input_exit_and_replay)
{
	int pid = start("echo out $PROC_TEST; echo err >&2; read x; echo got $x; pwd; exit 3", true,
	                0, "job");
	int fd = attach(pid, 0);
	struct collected c = { 0 };
	collect(fd, &c, "out yes\n");
	char err[256];
	ck_assert_int_eq(cove_proc_input(&sb, pid, "hi\n", 3, err, sizeof(err)), 0);
	collect(fd, &c, NULL);
	close(fd);
	ck_assert(c.exited);
	ck_assert_int_eq(c.exit.exit_code, 3);
	ck_assert_int_eq(c.exit.signal, 0);
	char want[256];
	snprintf(want, sizeof(want), "out yes\ngot hi\n%s\n", tmpdir);
	ck_assert_str_eq(c.out, want);
	ck_assert_str_eq(c.errb, "err\n");
	/* A late attach replays the output and reports the same exit. */
	struct collected d = { 0 };
	fd = attach(pid, 0);
	collect(fd, &d, NULL);
	close(fd);
	ck_assert_str_eq(d.out, want);
	ck_assert_int_eq(d.exit.exit_code, 3);
	/* From an offset: only what follows it. */
	struct collected e = { 0 };
	fd = attach(pid, 4);
	collect(fd, &e, NULL);
	close(fd);
	ck_assert_uint_eq(e.nout + e.nerr + 4, c.nout + c.nerr);
	/* It is listed as ended, with its tag, command and environment. */
	json_t *procs = NULL;
	ck_assert_int_eq(cove_proc_list(&sb, &procs, err, sizeof(err)), 0);
	bool seen = false;
	size_t i;
	json_t *p;
	json_array_foreach(procs, i, p)
	{
		if (json_integer_value(json_object_get(p, "pid")) != pid)
			continue;
		seen = true;
		ck_assert_str_eq(json_string_value(json_object_get(p, "tag")), "job");
		ck_assert(json_is_false(json_object_get(p, "running")));
		ck_assert_int_eq(json_integer_value(json_object_get(p, "code")), 3);
		ck_assert_str_eq(json_string_value(json_array_get(json_object_get(p, "argv"), 0)),
		                 "/bin/sh");
		ck_assert_str_eq(
		    json_string_value(json_object_get(json_object_get(p, "env"), "PROC_TEST")),
		    "yes");
		ck_assert_str_eq(json_string_value(json_object_get(p, "cwd")), tmpdir);
	}
	ck_assert(seen);
	json_decref(procs);
	/* Input to an ended process: its stdin is closed. */
	ck_assert_int_eq(cove_proc_input(&sb, pid, "x", 1, err, sizeof(err)), -EPIPE);
}
END_TEST

START_TEST(proc_survives_detach_then_signal)
{
	int pid = start("echo a; exec sleep 1000", false, 0, NULL);
	int fd = attach(pid, 0);
	struct collected c = { 0 };
	collect(fd, &c, "a\n");
	close(fd); /* the host goes away: the process runs on */
	char err[256];
	json_t *procs = NULL;
	ck_assert_int_eq(cove_proc_list(&sb, &procs, err, sizeof(err)), 0);
	size_t i;
	json_t *p;
	bool running = false;
	json_array_foreach(procs, i, p)
	{
		if (json_integer_value(json_object_get(p, "pid")) == pid)
			running = json_is_true(json_object_get(p, "running"));
	}
	json_decref(procs);
	ck_assert(running);
	ck_assert_int_eq(kill(pid, 0), 0);
	/* No stdin was asked for. */
	ck_assert_int_eq(cove_proc_input(&sb, pid, "x", 1, err, sizeof(err)), -EPIPE);
	ck_assert_int_eq(cove_proc_signal(&sb, pid, SIGKILL, err, sizeof(err)), 0);
	struct collected d = { 0 };
	fd = attach(pid, 0);
	collect(fd, &d, NULL);
	close(fd);
	ck_assert_str_eq(d.out, "a\n");
	ck_assert_int_eq(d.exit.signal, SIGKILL);
	ck_assert_int_eq(cove_proc_signal(&sb, pid, SIGKILL, err, sizeof(err)), -ESRCH);
}
END_TEST

START_TEST(proc_close_stdin_timeout_unknown)
{
	int pid = start("cat", true, 0, NULL);
	char err[256];
	ck_assert_int_eq(cove_proc_input(&sb, pid, "xyz", 3, err, sizeof(err)), 0);
	ck_assert_int_eq(cove_proc_close_stdin(&sb, pid, err, sizeof(err)), 0);
	int fd = attach(pid, 0);
	struct collected c = { 0 };
	collect(fd, &c, NULL);
	close(fd);
	ck_assert_str_eq(c.out, "xyz");
	ck_assert_int_eq(c.exit.exit_code, 0);
	pid = start("exec sleep 100", false, 200, NULL);
	fd = attach(pid, 0);
	struct collected d = { 0 };
	collect(fd, &d, NULL);
	close(fd);
	ck_assert_int_eq(d.exit.signal, SIGKILL);
	ck_assert(d.exit.timed_out);
	uint64_t first;
	ck_assert_int_eq(cove_proc_attach(&sb, 999999999, 0, &first, err, sizeof(err)), -ESRCH);
	ck_assert_int_eq(cove_proc_input(&sb, 999999999, "x", 1, err, sizeof(err)), -ESRCH);
	/* A program that cannot run: the guest's errno. */
	const char *argv[] = { "/no/such/program", NULL };
	struct cove_proc_spec spec = { .argv = argv };
	int p2;
	ck_assert_int_eq(cove_proc_start(&sb, &spec, &p2, err, sizeof(err)), -ENOENT);
}
END_TEST

START_TEST(proc_large_output)
{
	/* More than the ring holds.  An attach that starts late, or falls
	 * behind, skips ahead to the oldest byte the ring still has
	 * (docs/protocol.md, PROC_ATTACH), so what it must get is the end:
	 * each line is one 1000-byte pipe write, the ring keeps its last 1024
	 * chunks or 1 MiB, so at least 1,000,000 bytes arrive, ending with
	 * the last line. */
	enum { LINES = 3000, LINE = 1000 };
	int pid = start("i=0; while [ $i -lt 3000 ]; do printf '%0999d\\n' $i; i=$((i+1)); done",
	                false, 0, NULL);
	int fd = attach(pid, 0);
	char err[256], last[LINE + 1], tail[LINE];
	snprintf(last, sizeof(last), "%0999d\n", LINES - 1);
	size_t total = 0;
	for (;;) {
		struct cove_proc_event ev;
		ck_assert_int_eq(cove_proc_next(fd, 5000, &ev, err, sizeof(err)), 0);
		if (ev.kind == COVE_PROC_EXIT) {
			ck_assert_int_eq(ev.exit_code, 0);
			break;
		}
		/* The last LINE bytes seen so far. */
		size_t n = ev.len < LINE ? ev.len : LINE;
		memmove(tail, tail + n, LINE - n);
		memcpy(tail + LINE - n, ev.data + ev.len - n, n);
		total += ev.len;
		free(ev.data);
	}
	close(fd);
	ck_assert_uint_ge(total, 1000000);
	ck_assert(memcmp(tail, last, LINE) == 0);
}
END_TEST

START_TEST(move_and_stream_files)
{
	char from[128], to[128];
	snprintf(from, sizeof(from), "%s/a.txt", tmpdir);
	snprintf(to, sizeof(to), "%s/b.txt", tmpdir);
	char err[256];
	int fd = cove_put_begin(&sb, from, 0600, err, sizeof(err));
	ck_assert_msg(fd >= 0, "%s", err);
	ck_assert_int_eq(cove_put_data(fd, "hello ", 6, err, sizeof(err)), 0);
	ck_assert_int_eq(cove_put_data(fd, "world", 5, err, sizeof(err)), 0);
	uint64_t size = 0;
	ck_assert_int_eq(cove_put_end(fd, &size, err, sizeof(err)), 0);
	ck_assert_uint_eq(size, 11);
	ck_assert_int_eq(cove_agent_call(&sb, PROTO_MOVE,
	                                 json_pack("{s:s, s:s}", "from", from, "to", to), NULL, err,
	                                 sizeof(err)),
	                 0);
	ck_assert_int_eq(access(from, F_OK), -1);
	fd = cove_get_begin(&sb, to, &size, err, sizeof(err));
	ck_assert_msg(fd >= 0, "%s", err);
	ck_assert_uint_eq(size, 11);
	char got[32] = "";
	size_t n = 0;
	for (;;) {
		uint8_t *data;
		uint32_t len;
		ck_assert_int_eq(cove_get_next(fd, &data, &len, err, sizeof(err)), 0);
		if (!len)
			break;
		ck_assert_uint_lt(n + len, sizeof(got));
		memcpy(got + n, data, len);
		n += len;
		free(data);
	}
	close(fd);
	got[n] = 0;
	ck_assert_str_eq(got, "hello world");
	ck_assert_int_eq(cove_agent_call(&sb, PROTO_MOVE,
	                                 json_pack("{s:s, s:s}", "from", from, "to", to), NULL, err,
	                                 sizeof(err)),
	                 -ENOENT);
}
END_TEST

START_TEST(proc_pty)
{
	const char *argv[] = { "/bin/sh", "-c", "stty size; read x; echo got $x; exit 4", NULL };
	struct cove_proc_spec spec = { .argv = argv, .pty = true, .rows = 30, .cols = 100 };
	int pid = 0;
	char err[256];
	ck_assert_int_eq(cove_proc_start(&sb, &spec, &pid, err, sizeof(err)), 0);
	int fd = attach(pid, 0);
	struct collected c = { 0 };
	collect(fd, &c, "30 100");
	ck_assert_int_eq(cove_proc_resize(&sb, pid, 40, 120, err, sizeof(err)), 0);
	ck_assert_int_eq(cove_proc_input(&sb, pid, "yes\n", 4, err, sizeof(err)), 0);
	collect(fd, &c, NULL);
	close(fd);
	ck_assert(strstr(c.out, "got yes"));
	ck_assert_uint_eq(c.nerr, 0); /* a pty has one stream */
	ck_assert_int_eq(c.exit.exit_code, 4);
	ck_assert_int_eq(cove_proc_resize(&sb, pid, 40, 120, err, sizeof(err)), -ENOTTY);
	json_t *procs = NULL;
	ck_assert_int_eq(cove_proc_list(&sb, &procs, err, sizeof(err)), 0);
	size_t i;
	json_t *p;
	json_array_foreach(procs, i, p)
	{
		if (json_integer_value(json_object_get(p, "pid")) == pid)
			ck_assert(json_is_true(json_object_get(p, "pty")));
	}
	json_decref(procs);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("proc");
	TCase *t = tcase_create("pure");
	tcase_add_test(t, ring_replay_and_evict);
	tcase_add_test(t, request_proc_fields);
	suite_add_tcase(s, t);
	t = tcase_create("agent");
	tcase_add_checked_fixture(t, setup, teardown);
	tcase_set_timeout(t, 60);
	tcase_add_test(t, proc_output_input_exit_and_replay);
	tcase_add_test(t, proc_survives_detach_then_signal);
	tcase_add_test(t, proc_close_stdin_timeout_unknown);
	tcase_add_test(t, proc_large_output);
	tcase_add_test(t, move_and_stream_files);
	tcase_add_test(t, proc_pty);
	suite_add_tcase(s, t);
	return s;
}

UNIT_MAIN()
