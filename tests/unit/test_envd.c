/* Unit tests: coved's envd surface (daemon/envd/) behind a real
 * libmicrohttpd server on a Unix socket, with stand-ins for the control
 * plane's calls (daemon/sandboxes/) and the guest agent's connection handler behind a
 * stand-in for cove-vmm's vsock socket: the Connect framing of Start and
 * Connect, the unary calls and their errors, authentication, re-attach
 * after a client went away, /files up (multipart and octet-stream) and
 * down, the filesystem calls, the journal.  Also the pure parsers
 * (connect.c, multipart.c, envd_req.c). */
#include <errno.h>
#include <jansson.h>
#include <microhttpd.h>
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
#include "daemon/envd/envd.h"
#include "daemon/envd/messages.h"
#include "daemon/http/connect.h"
#include "daemon/http/multipart.h"
#include "daemon/http/reply.h"
#include "daemon/sandboxes/idle.h"
#include "daemon/sandboxes/journal.h"
#include "daemon/sandboxes/lifecycle.h"
#include "daemon/sandboxes/metrics.h"
#include "daemon/sandboxes/sandbox.h"
#include "daemon/sandboxes/table.h"
#include "guest-agent/agent.h"
#include "lib/base/handle.h"
#include "unit.h"

/* ---- pure parsers ------------------------------------------------------- */

START_TEST(connect_frames)
{
	uint8_t body[64] = { 0, 0, 0, 0, 2, '{', '}' };
	const uint8_t *m;
	size_t n;
	char err[128];
	ck_assert_int_eq(connect_unwrap(body, 7, &m, &n, err, sizeof(err)), 0);
	ck_assert_uint_eq(n, 2);
	ck_assert(!memcmp(m, "{}", 2));
	ck_assert_int_eq(connect_unwrap(body, 6, &m, &n, err, sizeof(err)), -EPROTO);
	ck_assert_int_eq(connect_unwrap(body, 8, &m, &n, err, sizeof(err)), -EPROTO);
	ck_assert_int_eq(connect_unwrap(body, 4, &m, &n, err, sizeof(err)), -EPROTO);
	body[0] = 1;
	ck_assert_int_eq(connect_unwrap(body, 7, &m, &n, err, sizeof(err)), -EPROTO);
	uint8_t big[5] = { 0, 0x7f, 0xff, 0xff, 0xff };
	ck_assert_int_eq(connect_unwrap(big, 5, &m, &n, err, sizeof(err)), -EMSGSIZE);
	size_t len;
	uint8_t *f = connect_end_frame("not_found", "x", &len);
	ck_assert_uint_eq(f[0], CONNECT_FLAG_END);
	ck_assert_uint_eq((size_t)f[4] + 5, len);
	ck_assert(
	    !memcmp(f + 5, "{\"error\":{\"code\":\"not_found\",\"message\":\"x\"}}", len - 5));
	free(f);
	ck_assert_uint_eq(connect_http_status("not_found"), 404);
	ck_assert_uint_eq(connect_http_status("unauthenticated"), 401);
	ck_assert_uint_eq(connect_http_status("bogus"), 500);
	ck_assert_str_eq(connect_code_from_errno(-ESRCH), "not_found");
	uint64_t ms;
	ck_assert_int_eq(connect_timeout_ms("60000", &ms), 0);
	ck_assert_uint_eq(ms, 60000);
	ck_assert_int_eq(connect_timeout_ms("12345678901", &ms), -EINVAL);
	ck_assert_int_eq(connect_timeout_ms("1x", &ms), -EINVAL);
}
END_TEST

struct mp_seen {
	char names[4][64], files[4][64];
	char data[4][256];
	size_t len[4];
	int parts, ended;
};

static int t_begin(void *o, const char *name, const char *filename)
{
	struct mp_seen *s = o;
	ck_assert_int_lt(s->parts, 4);
	snprintf(s->names[s->parts], 64, "%s", name);
	snprintf(s->files[s->parts], 64, "%s", filename);
	s->parts++;
	return 0;
}

static int t_data(void *o, const uint8_t *b, size_t n)
{
	struct mp_seen *s = o;
	int i = s->parts - 1;
	ck_assert_uint_le(s->len[i] + n, sizeof(s->data[i]));
	memcpy(s->data[i] + s->len[i], b, n);
	s->len[i] += n;
	return 0;
}

static int t_end(void *o)
{
	((struct mp_seen *)o)->ended++;
	return 0;
}

static const struct mp_callbacks t_cbs = { t_begin, t_data, t_end };

START_TEST(multipart_any_chunking)
{
	const char *body =
	    "preamble\r\n--XyZ\r\n"
	    "Content-Disposition: form-data; name=\"file\"; filename=\"/a/b.txt\"\r\n"
	    "Content-Type: application/octet-stream\r\n\r\n"
	    "line1\r\n--XyW not yet\r\n"
	    "\r\n--XyZ\r\n"
	    "content-disposition: form-data; name=other\r\n\r\n"
	    "v\r\n--XyZ--\r\nepilogue";
	size_t len = strlen(body);
	char boundary[80];
	ck_assert_int_eq(
	    mp_boundary("multipart/form-data; boundary=\"XyZ\"", boundary, sizeof(boundary)), 0);
	ck_assert_str_eq(boundary, "XyZ");
	ck_assert_int_eq(mp_boundary("text/plain; boundary=x", boundary, sizeof(boundary)),
	                 -EINVAL);
	for (size_t step = 1; step <= len; step++) {
		struct mp_parser *p = malloc(sizeof(*p));
		struct mp_seen s = { 0 };
		ck_assert_int_eq(mp_init(p, boundary, &t_cbs, &s), 0);
		for (size_t i = 0; i < len; i += step) {
			size_t n = len - i < step ? len - i : step;
			ck_assert_int_eq(mp_feed(p, (const uint8_t *)body + i, n), 0);
		}
		ck_assert_int_eq(mp_finish(p), 0);
		ck_assert_int_eq(s.parts, 2);
		ck_assert_int_eq(s.ended, 2);
		ck_assert_str_eq(s.names[0], "file");
		ck_assert_str_eq(s.files[0], "/a/b.txt");
		ck_assert_uint_eq(s.len[0], strlen("line1\r\n--XyW not yet\r\n"));
		ck_assert(!memcmp(s.data[0], "line1\r\n--XyW not yet\r\n", s.len[0]));
		ck_assert_str_eq(s.names[1], "other");
		ck_assert_uint_eq(s.len[1], 1);
		free(p);
	}
	/* Truncated: no closing delimiter. */
	struct mp_parser *p = malloc(sizeof(*p));
	struct mp_seen s = { 0 };
	ck_assert_int_eq(mp_init(p, "XyZ", &t_cbs, &s), 0);
	ck_assert_int_eq(mp_feed(p, (const uint8_t *)body, 60), 0);
	ck_assert_int_eq(mp_finish(p), -EPROTO);
	/* Garbage after a delimiter. */
	ck_assert_int_eq(mp_init(p, "XyZ", &t_cbs, &s), 0);
	ck_assert_int_eq(mp_feed(p, (const uint8_t *)"--XyZjunk", 9), -EPROTO);
	free(p);
}
END_TEST

START_TEST(envd_request_bodies)
{
	char err[256];
	json_t *o;
	const char *start = "{\"process\":{\"cmd\":\"/bin/bash\",\"args\":[\"-l\",\"-c\",\"ls\"],"
	                    "\"envs\":{\"A\":\"1\"},\"cwd\":\"w\"},\"stdin\":true,\"tag\":\"t\"}";
	ck_assert_int_eq(envd_json((const uint8_t *)start, strlen(start), &o, err, sizeof(err)), 0);
	struct envd_start st;
	ck_assert_int_eq(envd_parse_start(o, &st, err, sizeof(err)), 0);
	ck_assert_str_eq(st.argv[0], "/bin/bash");
	ck_assert_str_eq(st.argv[3], "ls");
	ck_assert_ptr_null(st.argv[4]);
	ck_assert_str_eq(st.env[0], "A=1");
	ck_assert_str_eq(st.cwd, "w");
	ck_assert(st.stdin_open);
	ck_assert_str_eq(st.tag, "t");
	envd_start_free(&st);
	json_decref(o);
	static const char *bad[] = {
		"{}",
		"{\"process\":{}}",
		"{\"process\":{\"cmd\":\"\"}}",
		"{\"process\":{\"cmd\":\"x\",\"args\":[1]}}",
		"{\"process\":{\"cmd\":\"x\",\"envs\":{\"A=B\":\"1\"}}}",
		"{\"process\":{\"cmd\":\"x\",\"envs\":{\"A\":1}}}",
		"{\"process\":{\"cmd\":\"x\"},\"stdin\":\"yes\"}",
		"{\"process\":{\"cmd\":\"x\"},\"pty\":{\"size\":{\"rows\":0,\"cols\":1}}}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_int_eq(
		    envd_json((const uint8_t *)bad[i], strlen(bad[i]), &o, err, sizeof(err)), 0);
		ck_assert_msg(envd_parse_start(o, &st, err, sizeof(err)) == -EPROTO, "%s", bad[i]);
		envd_start_free(&st);
		json_decref(o);
	}
	ck_assert_int_eq(envd_json((const uint8_t *)"[1]", 3, &o, err, sizeof(err)), -EPROTO);
	ck_assert_int_eq(envd_json((const uint8_t *)"{\"a\":1,\"a\":2}", 13, &o, err, sizeof(err)),
	                 -EPROTO);
	int pid, sig;
	const char *tag;
	o = json_loads("{\"process\":{\"pid\":\"42\"},\"signal\":\"SIGNAL_SIGKILL\"}", 0, NULL);
	ck_assert_int_eq(envd_parse_selector(o, &pid, &tag, err, sizeof(err)), 0);
	ck_assert_int_eq(pid, 42);
	ck_assert_int_eq(envd_parse_signal(o, &sig, err, sizeof(err)), 0);
	ck_assert_int_eq(sig, 9);
	json_decref(o);
	o = json_loads("{\"process\":{\"pid\":0},\"signal\":\"SIGNAL_SIGHUP\"}", 0, NULL);
	ck_assert_int_eq(envd_parse_selector(o, &pid, &tag, err, sizeof(err)), -EPROTO);
	ck_assert_int_eq(envd_parse_signal(o, &sig, err, sizeof(err)), -EPROTO);
	json_decref(o);
	o = json_loads("{\"input\":{\"stdin\":\"aGk=\"}}", 0, NULL);
	uint8_t *data;
	size_t n;
	ck_assert_int_eq(envd_parse_input(o, &data, &n, err, sizeof(err)), 0);
	ck_assert_uint_eq(n, 2);
	ck_assert(!memcmp(data, "hi", 2));
	free(data);
	json_decref(o);
	char path[ENVD_PATH_MAX + 1];
	ck_assert_int_eq(envd_resolve_path("a/../b/./c", path, sizeof(path)), 0);
	ck_assert_str_eq(path, "/root/b/c");
	ck_assert_int_eq(envd_resolve_path("/../../x//y/", path, sizeof(path)), 0);
	ck_assert_str_eq(path, "/x/y");
	ck_assert_int_eq(envd_resolve_path("~/f", path, sizeof(path)), 0);
	ck_assert_str_eq(path, "/root/f");
	ck_assert_int_eq(envd_resolve_path("", path, sizeof(path)), -EINVAL);
	/* base64 both ways, with and without padding, both alphabets. */
	for (size_t len = 0; len < 40; len++) {
		uint8_t in[40];
		for (size_t i = 0; i < len; i++)
			in[i] = (uint8_t)(i * 37 + 250);
		char *b = envd_b64_encode(in, len);
		ck_assert_int_eq(envd_b64_decode(b, strlen(b), &data, &n), 0);
		ck_assert_uint_eq(n, len);
		ck_assert(!len || !memcmp(data, in, len));
		free(data);
		free(b);
	}
	ck_assert_int_eq(envd_b64_decode("-_8", 3, &data, &n), 0);
	ck_assert_uint_eq(n, 2);
	ck_assert_uint_eq(data[0], 0xfb);
	free(data);
	ck_assert_int_eq(envd_b64_decode("a", 1, &data, &n), -EINVAL);
	ck_assert_int_eq(envd_b64_decode("ab!d", 4, &data, &n), -EINVAL);
}
END_TEST

START_TEST(envd_users)
{
	char u[COVE_USER_MAX + 1];
	/* "Basic " + base64("app:") and base64("app"), the query parameter. */
	ck_assert_int_eq(envd_user(NULL, "Basic YXBwOg==", u, sizeof(u)), 1);
	ck_assert_str_eq(u, "app");
	ck_assert_int_eq(envd_user(NULL, "basic YXBw", u, sizeof(u)), 1);
	ck_assert_str_eq(u, "app");
	ck_assert_int_eq(envd_user("root", "Basic YXBwOg==", u, sizeof(u)), 1);
	ck_assert_str_eq(u, "root");
	/* None: no header, another scheme, an empty name. */
	ck_assert_int_eq(envd_user(NULL, NULL, u, sizeof(u)), 0);
	ck_assert_int_eq(envd_user("", "Bearer abc", u, sizeof(u)), 0);
	ck_assert_int_eq(envd_user(NULL, "Basic Og==", u, sizeof(u)), 0); /* ":" */
	ck_assert_int_eq(envd_user(NULL, "Basic ", u, sizeof(u)), 0);
	ck_assert_str_eq(u, "");
	/* Malformed: bad base64, a bad name, NUL inside, too long. */
	ck_assert_int_eq(envd_user(NULL, "Basic !!!", u, sizeof(u)), -EINVAL);
	ck_assert_int_eq(envd_user(NULL, "Basic YSBiOg==", u, sizeof(u)), -EINVAL); /* "a b:" */
	ck_assert_int_eq(envd_user(NULL, "Basic YQBiOg==", u, sizeof(u)), -EINVAL); /* "a\0b:" */
	ck_assert_int_eq(envd_user("a:b", NULL, u, sizeof(u)), -EINVAL);
	char longname[COVE_USER_MAX + 2];
	memset(longname, 'a', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = 0;
	ck_assert_int_eq(envd_user(longname, NULL, u, sizeof(u)), -EINVAL);
	longname[COVE_USER_MAX] = 0;
	ck_assert_int_eq(envd_user(longname, NULL, u, sizeof(u)), 1);
}
END_TEST

/* ---- stand-ins for the control plane (daemon/sandboxes/) ----------------- */

struct coved_sb {
	int refs;
};
static struct coved_sb the_sb;
static struct cove_sandbox the_cove;
static bool sb_paused;
static const char *const sb_envs[] = { "SB_ENV=from-create", "SHADOW=create", NULL };
static pthread_mutex_t jlock = PTHREAD_MUTEX_INITIALIZER;
static json_t *journal;

struct coved_sb *coved_sb_find(struct coved *d, const char *id)
{
	(void)d;
	if (strcmp(id, "sb1") != 0)
		return NULL;
	__atomic_add_fetch(&the_sb.refs, 1, __ATOMIC_SEQ_CST);
	return &the_sb;
}

void coved_sb_unref(struct coved_sb *sb)
{
	__atomic_sub_fetch(&sb->refs, 1, __ATOMIC_SEQ_CST);
}

const char *coved_sb_id(const struct coved_sb *sb)
{
	(void)sb;
	return "sb1";
}

bool coved_sb_token_ok(const struct coved_sb *sb, const char *token)
{
	(void)sb;
	return token && !strcmp(token, "tok");
}

struct cove_sandbox *coved_sb_cove(struct coved_sb *sb)
{
	(void)sb;
	return sb_paused ? NULL : &the_cove;
}

const char *const *coved_sb_envs(const struct coved_sb *sb)
{
	(void)sb;
	return sb_envs;
}

/* The idle timeout's count of requests in flight (idle.h): every request
 * that began ends, which teardown checks once MHD has stopped. */
static int sb_busy;

int coved_sb_wake(struct coved_sb *sb, char *msg, size_t len)
{
	(void)sb;
	(void)msg;
	(void)len;
	return 0;
}

void coved_sb_busy(struct coved_sb *sb)
{
	(void)sb;
	__atomic_add_fetch(&sb_busy, 1, __ATOMIC_SEQ_CST);
}

void coved_sb_unbusy(struct coved_sb *sb)
{
	(void)sb;
	__atomic_sub_fetch(&sb_busy, 1, __ATOMIC_SEQ_CST);
}

void coved_journal(struct coved_sb *sb, json_t *ev)
{
	(void)sb;
	pthread_mutex_lock(&jlock);
	json_array_append_new(journal, ev);
	pthread_mutex_unlock(&jlock);
}

void coved_metric_exec(struct coved *d, double seconds, uint64_t out_bytes, uint64_t in_bytes)
{
	(void)d;
	(void)seconds;
	(void)out_bytes;
	(void)in_bytes;
}

/* ---- the server, the agent, a client ------------------------------------ */

static char tmpdir[64], http_sock[96];
static int vsock_lfd = -1;
static pthread_t acceptor;
static struct MHD_Daemon *mhd;

static void *agent_conn(void *arg)
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

static void *agent_accept(void *arg)
{
	(void)arg;
	for (;;) {
		int fd = accept4(vsock_lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			break;
		pthread_t t;
		if (pthread_create(&t, NULL, agent_conn, (void *)(intptr_t)fd) == 0)
			pthread_detach(t);
		else
			close(fd);
	}
	return NULL;
}

static enum MHD_Result access_cb(void *cls, struct MHD_Connection *c, const char *url,
                                 const char *method, const char *version, const char *upload_data,
                                 size_t *upload_data_size, void **req_cls)
{
	(void)cls;
	(void)version;
	if (!envd_route(c, url))
		return coved_json_error(c, 404, "not envd");
	return envd_handle(NULL, c, url, method, upload_data, upload_data_size, req_cls);
}

static void done_cb(void *cls, struct MHD_Connection *c, void **req_cls,
                    enum MHD_RequestTerminationCode toe)
{
	(void)cls;
	(void)c;
	(void)toe;
	envd_request_done(NULL, req_cls);
}

static int unix_listen(const char *path)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(fd, 0);
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(listen(fd, 64), 0);
	return fd;
}

static void setup(void)
{
	signal(SIGPIPE, SIG_IGN);
	strcpy(tmpdir, "/tmp/cove-envd-test-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
	journal = json_array();
	sb_paused = false;
	sb_busy = 0;
	memset(&the_cove, 0, sizeof(the_cove));
	snprintf(the_cove.vsock, sizeof(the_cove.vsock), "%s/vsock", tmpdir);
	vsock_lfd = unix_listen(the_cove.vsock);
	ck_assert_int_eq(pthread_create(&acceptor, NULL, agent_accept, NULL), 0);
	snprintf(http_sock, sizeof(http_sock), "%s/http", tmpdir);
	int hfd = unix_listen(http_sock);
	mhd = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION, 0,
	                       NULL, NULL, access_cb, NULL, MHD_OPTION_LISTEN_SOCKET, hfd,
	                       MHD_OPTION_NOTIFY_COMPLETED, done_cb, NULL,
	                       MHD_OPTION_CONNECTION_TIMEOUT, 60u, MHD_OPTION_END);
	ck_assert_ptr_nonnull(mhd);
}

static void teardown(void)
{
	MHD_stop_daemon(mhd);
	ck_assert_int_eq(__atomic_load_n(&sb_busy, __ATOMIC_SEQ_CST), 0);
	shutdown(vsock_lfd, SHUT_RDWR);
	pthread_join(acceptor, NULL);
	close(vsock_lfd);
	json_decref(journal);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot clean %s\n", tmpdir);
}

/* Sends one HTTP/1.1 request (Connection: close); returns the socket. */
static int http_send(const char *method, const char *path, const char *headers, const void *body,
                     size_t len)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", http_sock);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	char head[2048];
	int n = snprintf(
	    head, sizeof(head),
	    "%s %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n%sContent-Length: %zu\r\n\r\n",
	    method, path, headers ? headers : "", len);
	ck_assert_int_eq(write(fd, head, (size_t)n), n);
	/* A request refused from its head alone may be answered and closed
	 * before its body is written (EPIPE): the answer is still read. */
	if (len && write(fd, body, len) != (ssize_t)len)
		ck_assert(errno == EPIPE || errno == ECONNRESET);
	return fd;
}

#define AUTH "E2b-Sandbox-Id: sb1\r\nX-Access-Token: tok\r\n"

struct resp {
	int status;
	bool chunked;
	char *body; /* de-chunked */
	size_t len;
};

static void resp_free(struct resp *r)
{
	free(r->body);
}

static size_t read_all(int fd, char **out)
{
	size_t cap = 4096, len = 0;
	char *b = malloc(cap);
	for (;;) {
		if (len + 4096 > cap)
			b = realloc(b, cap *= 2);
		ssize_t n = read(fd, b + len, cap - len - 1);
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	b[len] = 0;
	*out = b;
	return len;
}

static void parse_resp(char *raw, size_t rawlen, struct resp *r)
{
	ck_assert_int_eq(sscanf(raw, "HTTP/1.1 %d", &r->status), 1);
	char *end = strstr(raw, "\r\n\r\n");
	ck_assert_ptr_nonnull(end);
	*end = 0;
	r->chunked = strcasestr(raw, "transfer-encoding: chunked") != NULL;
	char *p = end + 4;
	size_t left = rawlen - (size_t)(p - raw);
	r->body = malloc(left + 1);
	r->len = 0;
	if (!r->chunked) {
		memcpy(r->body, p, left);
		r->len = left;
	} else {
		while (left) {
			char *e;
			unsigned long n = strtoul(p, &e, 16);
			e = strstr(p, "\r\n");
			if (!e || n == 0)
				break;
			e += 2;
			memcpy(r->body + r->len, e, n);
			r->len += n;
			left -= (size_t)(e + n + 2 - p);
			p = e + n + 2;
		}
	}
	r->body[r->len] = 0;
}

static void http(const char *method, const char *path, const char *headers, const void *body,
                 size_t len, struct resp *r)
{
	int fd = http_send(method, path, headers, body, len);
	char *raw;
	size_t n = read_all(fd, &raw);
	close(fd);
	parse_resp(raw, n, r);
	free(raw);
}

/* A unary Connect call: its status and JSON body. */
static json_t *unary(const char *path, const char *json, int *status)
{
	struct resp r;
	http("POST", path, AUTH "Content-Type: application/json\r\n", json, strlen(json), &r);
	*status = r.status;
	json_t *o = json_loads(r.body, 0, NULL);
	ck_assert_msg(o != NULL, "not JSON: %s", r.body);
	resp_free(&r);
	return o;
}

/* The frames of a stream body: each an object, flags in a parallel array. */
static json_t *frames(const char *b, size_t len, uint8_t *flags, int max)
{
	json_t *a = json_array();
	size_t i = 0;
	int k = 0;
	while (i + 5 <= len && k < max) {
		const uint8_t *u = (const uint8_t *)b + i;
		size_t n = (size_t)u[1] << 24 | (size_t)u[2] << 16 | (size_t)u[3] << 8 | u[4];
		ck_assert_uint_le(i + 5 + n, len);
		json_t *o = json_loadb(b + i + 5, n, 0, NULL);
		ck_assert_ptr_nonnull(o);
		flags[k++] = u[0];
		json_array_append_new(a, o);
		i += 5 + n;
	}
	ck_assert_uint_eq(i, len);
	return a;
}

static uint8_t *envelope(const char *json, size_t *len)
{
	size_t n = strlen(json);
	uint8_t *b = malloc(n + 5);
	connect_envelope(b, 0, (uint32_t)n);
	memcpy(b + 5, json, n);
	*len = n + 5;
	return b;
}

#define STREAM_HDRS AUTH "Content-Type: application/connect+json\r\n"

/* Collected output of a Start/Connect stream. */
struct run {
	int pid;
	char out[4096], err[4096];
	bool ended;
	int exit_code;
	const char *status;
	json_t *all;
	json_t *eos;
};

static void b64_append(char *dst, const char *b64)
{
	uint8_t *d;
	size_t n;
	ck_assert_int_eq(envd_b64_decode(b64, strlen(b64), &d, &n), 0);
	strncat(dst, (const char *)d, n);
	free(d);
}

static void run_parse(const char *body, size_t len, struct run *run)
{
	uint8_t fl[512];
	memset(run, 0, sizeof(*run));
	run->all = frames(body, len, fl, 512);
	size_t i;
	json_t *f;
	json_array_foreach(run->all, i, f)
	{
		if (fl[i] == CONNECT_FLAG_END) {
			ck_assert_uint_eq(i, json_array_size(run->all) - 1);
			run->eos = f;
			continue;
		}
		ck_assert_uint_eq(fl[i], 0);
		json_t *ev = json_object_get(f, "event");
		json_t *v;
		if ((v = json_object_get(ev, "start")))
			run->pid = (int)json_integer_value(json_object_get(v, "pid"));
		else if ((v = json_object_get(ev, "data"))) {
			const char *s = json_string_value(json_object_get(v, "stdout"));
			if (s)
				b64_append(run->out, s);
			s = json_string_value(json_object_get(v, "stderr"));
			if (s)
				b64_append(run->err, s);
		} else if ((v = json_object_get(ev, "end"))) {
			run->ended = true;
			run->exit_code = (int)json_integer_value(json_object_get(v, "exitCode"));
			run->status = json_string_value(json_object_get(v, "status"));
		}
	}
	ck_assert_ptr_nonnull(run->eos);
}

static void stream_call(const char *path, const char *json, struct run *run)
{
	size_t len;
	uint8_t *b = envelope(json, &len);
	struct resp r;
	http("POST", path, STREAM_HDRS, b, len, &r);
	free(b);
	ck_assert_int_eq(r.status, 200);
	run_parse(r.body, r.len, run);
	resp_free(&r);
}

START_TEST(health_auth_errors)
{
	struct resp r;
	http("GET", "/health", NULL, NULL, 0, &r);
	ck_assert_int_eq(r.status, 204);
	resp_free(&r);
	int st;
	json_t *o;
	struct resp r2;
	http("POST", "/process.Process/List",
	     "E2b-Sandbox-Id: sb1\r\nContent-Type: application/json\r\n", "{}", 2, &r2);
	ck_assert_int_eq(r2.status, 401);
	ck_assert(strstr(r2.body, "\"code\":\"unauthenticated\""));
	resp_free(&r2);
	http("POST", "/process.Process/List",
	     "E2b-Sandbox-Id: nope\r\nX-Access-Token: tok\r\nContent-Type: application/json\r\n",
	     "{}", 2, &r2);
	ck_assert_int_eq(r2.status, 404);
	ck_assert(strstr(r2.body, "\"code\":\"not_found\""));
	resp_free(&r2);
	o = unary("/process.Process/Nope", "{}", &st);
	ck_assert_int_eq(st, 501);
	ck_assert_str_eq(json_string_value(json_object_get(o, "code")), "unimplemented");
	json_decref(o);
	o = unary("/process.Process/SendSignal", "{not json", &st);
	ck_assert_int_eq(st, 400);
	ck_assert_str_eq(json_string_value(json_object_get(o, "code")), "invalid_argument");
	json_decref(o);
	o = unary("/process.Process/SendSignal",
	          "{\"process\":{\"pid\":999999999},\"signal\":\"SIGNAL_SIGKILL\"}", &st);
	ck_assert_int_eq(st, 404);
	ck_assert_str_eq(json_string_value(json_object_get(o, "code")), "not_found");
	json_decref(o);
	/* A stream's errors come in its end message, with HTTP 200. */
	struct run run;
	stream_call("/process.Process/Start", "{\"process\":{}}", &run);
	ck_assert_str_eq(
	    json_string_value(json_object_get(json_object_get(run.eos, "error"), "code")),
	    "invalid_argument");
	json_decref(run.all);
	struct resp r3;
	http("POST", "/process.Process/Start", STREAM_HDRS, "{}", 2, &r3);
	ck_assert_int_eq(r3.status, 200);
	ck_assert_uint_eq((uint8_t)r3.body[0], CONNECT_FLAG_END);
	resp_free(&r3);
	/* A paused sandbox. */
	sb_paused = true;
	o = unary("/process.Process/List", "{}", &st);
	ck_assert_int_eq(st, 503);
	json_decref(o);
	sb_paused = false;
}
END_TEST

static int health_status(const char *headers)
{
	struct resp r;
	http("GET", "/health", headers, NULL, 0, &r);
	resp_free(&r);
	return r.status;
}

/* /health answers as the sandbox's own envd: 204 only while it runs and
 * its agent answers; 502 (isRunning() false) otherwise. */
START_TEST(health_is_the_sandboxes)
{
	ck_assert_int_eq(health_status(AUTH), 204);
	ck_assert_int_eq(health_status("E2b-Sandbox-Id: nope\r\nX-Access-Token: tok\r\n"), 502);
	ck_assert_int_eq(health_status("E2b-Sandbox-Id: sb1\r\nX-Access-Token: bad\r\n"), 502);
	ck_assert_int_eq(health_status("E2b-Sandbox-Id: sb1\r\n"), 502);
	sb_paused = true;
	ck_assert_int_eq(health_status(AUTH), 502);
	sb_paused = false;
	/* An agent that does not answer: no listener behind the vsock. */
	shutdown(vsock_lfd, SHUT_RDWR);
	pthread_join(acceptor, NULL);
	close(vsock_lfd);
	vsock_lfd = -1;
	unlink(the_cove.vsock);
	ck_assert_int_eq(health_status(AUTH), 502);
	vsock_lfd = unix_listen(the_cove.vsock);
	ck_assert_int_eq(pthread_create(&acceptor, NULL, agent_accept, NULL), 0);
	ck_assert_int_eq(health_status(AUTH), 204);
}
END_TEST

static void touch(const char *rel)
{
	char p[256];
	snprintf(p, sizeof(p), "%s/w/%s", tmpdir, rel);
	FILE *f = fopen(p, "w");
	ck_assert_ptr_nonnull(f);
	fputs("x", f);
	fclose(f);
}

/* The frames' filesystem events as "type name" lines. */
static void fs_events(json_t *all, char *out, size_t outlen)
{
	size_t i;
	json_t *f;
	out[0] = 0;
	json_array_foreach(all, i, f)
	{
		json_t *e = json_object_get(f, "filesystem");
		if (!e)
			continue;
		size_t n = strlen(out);
		snprintf(out + n, outlen - n, "%s %s\n",
		         json_string_value(json_object_get(e, "type")),
		         json_string_value(json_object_get(e, "name")));
	}
}

START_TEST(watch_dir_and_watchers)
{
	char dir[128], sub[160], body[256];
	snprintf(dir, sizeof(dir), "%s/w", tmpdir);
	ck_assert_int_eq(mkdir(dir, 0755), 0);
	/* WatchDir: start, then the events, until the call's timeout. */
	snprintf(body, sizeof(body), "{\"path\":\"%s\",\"recursive\":true}", dir);
	size_t len;
	uint8_t *b = envelope(body, &len);
	int fd = http_send("POST", "/filesystem.Filesystem/WatchDir",
	                   STREAM_HDRS "Connect-Timeout-Ms: 1500\r\n", b, len);
	free(b);
	usleep(300 * 1000);
	touch("a");
	snprintf(sub, sizeof(sub), "%s/sub", dir);
	ck_assert_int_eq(mkdir(sub, 0755), 0);
	touch("sub/b");
	char *raw;
	size_t n = read_all(fd, &raw);
	close(fd);
	struct resp r;
	parse_resp(raw, n, &r);
	free(raw);
	uint8_t fl[64];
	json_t *all = frames(r.body, r.len, fl, 64);
	resp_free(&r);
	ck_assert(json_object_get(json_array_get(all, 0), "start"));
	char evs[2048];
	fs_events(all, evs, sizeof(evs));
	ck_assert_msg(strstr(evs, "EVENT_TYPE_CREATE a\n") && strstr(evs, "EVENT_TYPE_WRITE a\n") &&
	                  strstr(evs, "EVENT_TYPE_CREATE sub\n") &&
	                  strstr(evs, "EVENT_TYPE_CREATE sub/b\n"),
	              "events: %s", evs);
	json_t *eos = json_array_get(all, json_array_size(all) - 1);
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(eos, "error"), "code")),
	                 "deadline_exceeded");
	json_decref(all);
	/* A folder that is not there: the stream's end says so. */
	struct run run;
	stream_call("/filesystem.Filesystem/WatchDir", "{\"path\":\"/nonexistent/x\"}", &run);
	ck_assert_str_eq(
	    json_string_value(json_object_get(json_object_get(run.eos, "error"), "code")),
	    "not_found");
	json_decref(run.all);

	/* Polled: CreateWatcher, GetWatcherEvents, RemoveWatcher. */
	int st;
	json_t *o = unary("/filesystem.Filesystem/CreateWatcher", body, &st);
	ck_assert_int_eq(st, 200);
	const char *wid = json_string_value(json_object_get(o, "watcherId"));
	ck_assert_ptr_nonnull(wid);
	char id[64], req[128];
	snprintf(id, sizeof(id), "%s", wid);
	json_decref(o);
	touch("sub/c");
	usleep(200 * 1000);
	snprintf(req, sizeof(req), "{\"watcherId\":\"%s\"}", id);
	o = unary("/filesystem.Filesystem/GetWatcherEvents", req, &st);
	ck_assert_int_eq(st, 200);
	json_t *list = json_object_get(o, "events");
	ck_assert_uint_ge(json_array_size(list), 1);
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(list, 0), "name")),
	                 "sub/c");
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(list, 0), "type")),
	                 "EVENT_TYPE_CREATE");
	json_decref(o);
	o = unary("/filesystem.Filesystem/GetWatcherEvents", req, &st);
	ck_assert_int_eq(st, 200);
	ck_assert_uint_eq(json_array_size(json_object_get(o, "events")), 0);
	json_decref(o);
	o = unary("/filesystem.Filesystem/RemoveWatcher", req, &st);
	ck_assert_int_eq(st, 200);
	json_decref(o);
	o = unary("/filesystem.Filesystem/GetWatcherEvents", req, &st);
	ck_assert_int_eq(st, 404);
	json_decref(o);
	o = unary("/filesystem.Filesystem/RemoveWatcher", "{\"watcherId\":\"UPPER\"}", &st);
	ck_assert_int_eq(st, 400);
	json_decref(o);
}
END_TEST

START_TEST(start_streams_output_and_exit)
{
	char json[512];
	snprintf(
	    json, sizeof(json),
	    "{\"process\":{\"cmd\":\"/bin/sh\",\"args\":[\"-c\",\"echo hi ${#A} $SB_ENV $SHADOW; "
	    "echo oops >&2; pwd; exit 3\"],\"envs\":{\"A\":\"secret-a\",\"SHADOW\":\"req\"},"
	    "\"cwd\":\"%s\"}}",
	    tmpdir);
	struct run run;
	stream_call("/process.Process/Start", json, &run);
	ck_assert_int_gt(run.pid, 0);
	char want[256];
	snprintf(want, sizeof(want), "hi 8 from-create req\n%s\n", tmpdir);
	ck_assert_str_eq(run.out, want);
	ck_assert_str_eq(run.err, "oops\n");
	ck_assert(run.ended);
	ck_assert_int_eq(run.exit_code, 3);
	ck_assert_str_eq(run.status, "exit status 3");
	ck_assert_uint_eq(json_object_size(run.eos), 0);
	/* The first frame is the start event. */
	ck_assert_ptr_nonnull(
	    json_object_get(json_object_get(json_array_get(run.all, 0), "event"), "start"));
	json_decref(run.all);
	/* Journaled once: names, never values. */
	pthread_mutex_lock(&jlock);
	ck_assert_uint_ge(json_array_size(journal), 1);
	json_t *j = json_array_get(journal, 0);
	char *text = json_dumps(j, JSON_COMPACT);
	pthread_mutex_unlock(&jlock);
	ck_assert_ptr_null(strstr(text, "secret-a"));
	free(text);
	ck_assert_str_eq(json_string_value(json_object_get(j, "type")), "exec");
	ck_assert_str_eq(json_string_value(json_object_get(j, "cmd")), "/bin/sh");
	ck_assert_str_eq(json_string_value(json_array_get(json_object_get(j, "env_names"), 0)),
	                 "A");
	ck_assert_int_eq(json_integer_value(json_object_get(j, "exit_code")), 3);
	ck_assert_int_eq(json_integer_value(json_object_get(j, "stderr_bytes")), 5);
	ck_assert_str_eq(json_string_value(json_object_get(j, "stderr_head")), "oops\n");
	/* Under a pty the output is data.pty. */
	stream_call("/process.Process/Start",
	            "{\"process\":{\"cmd\":\"/bin/sh\",\"args\":[\"-c\",\"stty size\"]},"
	            "\"pty\":{\"size\":{\"cols\":90,\"rows\":33}}}",
	            &run);
	ck_assert(run.ended);
	ck_assert_str_eq(run.out, ""); /* nothing as stdout */
	char *all = json_dumps(run.all, JSON_COMPACT);
	ck_assert_ptr_nonnull(strstr(all, "\"pty\":\""));
	free(all);
	json_decref(run.all);
	/* A program that does not exist. */
	stream_call("/process.Process/Start", "{\"process\":{\"cmd\":\"/no/such\"}}", &run);
	ck_assert_str_eq(
	    json_string_value(json_object_get(json_object_get(run.eos, "error"), "code")),
	    "not_found");
	json_decref(run.all);
}
END_TEST

/* Reads from a stream socket until what came holds the start frame; the
 * bytes read are kept in *buf (malloc'ed, *len). */
static int read_start(int fd, char **buf, size_t *len)
{
	size_t cap = 65536;
	*buf = malloc(cap);
	*len = 0;
	for (;;) {
		ssize_t n = read(fd, *buf + *len, cap - *len - 1);
		ck_assert_int_gt(n, 0);
		*len += (size_t)n;
		(*buf)[*len] = 0;
		char *p = memmem(*buf, *len, "\"pid\":", 6); /* the frames hold NUL bytes */
		if (p)
			return atoi(p + 6);
	}
}

/* The rest of a response after read_start, parsed. */
static void read_rest(int fd, char *buf, size_t len, struct run *run)
{
	char *rest;
	size_t n = read_all(fd, &rest);
	close(fd);
	buf = realloc(buf, len + n + 1);
	memcpy(buf + len, rest, n + 1);
	free(rest);
	struct resp r;
	parse_resp(buf, len + n, &r);
	free(buf);
	run_parse(r.body, r.len, run);
	resp_free(&r);
}

static void wait_file(const char *path)
{
	for (int i = 0; i < 2000 && access(path, F_OK) < 0; i++)
		usleep(5000);
	ck_assert_int_eq(access(path, F_OK), 0);
}

START_TEST(background_input_list_kill_reattach)
{
	/* Started, then the client goes away: the process runs on. */
	size_t len;
	char json[512], marker[128];
	snprintf(marker, sizeof(marker), "%s/marker", tmpdir);
	snprintf(json, sizeof(json),
	         "{\"process\":{\"cmd\":\"/bin/sh\",\"args\":[\"-c\","
	         "\"echo a; read x; echo b $x; touch %s; exec sleep 100\"]},"
	         "\"stdin\":true,\"tag\":\"bg\"}",
	         marker);
	uint8_t *b = envelope(json, &len);
	int fd = http_send("POST", "/process.Process/Start", STREAM_HDRS, b, len);
	free(b);
	char *got;
	size_t glen;
	int pid = read_start(fd, &got, &glen);
	free(got);
	ck_assert_int_gt(pid, 0);
	close(fd);
	int st;
	snprintf(json, sizeof(json), "{\"process\":{\"pid\":%d},\"input\":{\"stdin\":\"ego=\"}}",
	         pid);
	json_t *o = unary("/process.Process/SendInput", json, &st);
	ck_assert_int_eq(st, 200);
	json_decref(o);
	o = unary("/process.Process/List", "{}", &st);
	ck_assert_int_eq(st, 200);
	json_t *procs = json_object_get(o, "processes");
	bool seen = false;
	size_t i;
	json_t *p;
	json_array_foreach(procs, i, p)
	{
		if (json_integer_value(json_object_get(p, "pid")) != pid)
			continue;
		seen = true;
		ck_assert_str_eq(json_string_value(json_object_get(p, "tag")), "bg");
		json_t *cfg = json_object_get(p, "config");
		ck_assert_str_eq(json_string_value(json_object_get(cfg, "cmd")), "/bin/sh");
		ck_assert_str_eq(json_string_value(json_array_get(json_object_get(cfg, "args"), 0)),
		                 "-c");
	}
	ck_assert(seen);
	json_decref(o);
	/* Re-attach by tag, in another client; kill it from a third. */
	b = envelope("{\"process\":{\"tag\":\"bg\"}}", &len);
	fd = http_send("POST", "/process.Process/Connect", STREAM_HDRS, b, len);
	free(b);
	snprintf(json, sizeof(json), "{\"process\":{\"pid\":%d},\"signal\":\"SIGNAL_SIGKILL\"}",
	         pid);
	int cpid = read_start(fd, &got, &glen);
	ck_assert_int_eq(cpid, pid);
	wait_file(marker); /* "b z" is in the pipe: the agent reads it before the end */
	o = unary("/process.Process/SendSignal", json, &st);
	ck_assert_int_eq(st, 200);
	json_decref(o);
	struct run run;
	read_rest(fd, got, glen, &run);
	ck_assert_int_eq(run.pid, pid);
	ck_assert_str_eq(run.out, "a\nb z\n");
	ck_assert(run.ended);
	ck_assert_int_eq(run.exit_code, -1);
	ck_assert_str_eq(run.status, "signal: killed");
	json_decref(run.all);
	/* Ended: not listed, killing it again is not_found. */
	o = unary("/process.Process/SendSignal", json, &st);
	ck_assert_int_eq(st, 404);
	json_decref(o);
	/* The journal says the first client left before the end. */
	pthread_mutex_lock(&jlock);
	json_t *j = json_array_get(journal, 0);
	ck_assert(json_is_true(json_object_get(j, "detached")));
	ck_assert(json_is_null(json_object_get(j, "exit_code")));
	pthread_mutex_unlock(&jlock);
}
END_TEST

START_TEST(files_up_down_and_fs_calls)
{
	char path[256], q[512], body[1024];
	snprintf(path, sizeof(path), "%s/d/e/x.txt", tmpdir);
	/* Multipart, as the SDK sends it (the path as the file name too). */
	int n =
	    snprintf(body, sizeof(body),
	             "--bnd\r\nContent-Disposition: form-data; name=\"file\"; filename=\"%s\"\r\n"
	             "Content-Type: application/octet-stream\r\n\r\nhello\r\nworld\r\n--bnd--\r\n",
	             path);
	snprintf(q, sizeof(q), "/files?path=%s", path);
	struct resp r;
	http("POST", q, AUTH "Content-Type: multipart/form-data; boundary=bnd\r\n", body, (size_t)n,
	     &r);
	ck_assert_msg(r.status == 200, "%d %s", r.status, r.body);
	json_t *o = json_loads(r.body, 0, NULL);
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(o, 0), "path")), path);
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(o, 0), "name")), "x.txt");
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(o, 0), "type")), "file");
	json_decref(o);
	resp_free(&r);
	http("GET", q, AUTH, NULL, 0, &r);
	ck_assert_int_eq(r.status, 200);
	ck_assert_uint_eq(r.len, 12);
	ck_assert(!memcmp(r.body, "hello\r\nworld", 12));
	resp_free(&r);
	/* Octet-stream, 3 MiB: streamed, every byte back. */
	size_t big = 3u << 20;
	char *data = malloc(big);
	for (size_t i = 0; i < big; i++)
		data[i] = (char)('a' + i % 23);
	snprintf(q, sizeof(q), "/files?path=%s/big.bin", tmpdir);
	http("POST", q, AUTH "Content-Type: application/octet-stream\r\n", data, big, &r);
	ck_assert_int_eq(r.status, 200);
	resp_free(&r);
	http("GET", q, AUTH, NULL, 0, &r);
	ck_assert_int_eq(r.status, 200);
	ck_assert_uint_eq(r.len, big);
	ck_assert(!memcmp(r.body, data, big));
	resp_free(&r);
	free(data);
	/* Missing file: 404 in the REST error form. */
	snprintf(q, sizeof(q), "/files?path=%s/none", tmpdir);
	http("GET", q, AUTH, NULL, 0, &r);
	ck_assert_int_eq(r.status, 404);
	ck_assert(strstr(r.body, "\"code\":404"));
	resp_free(&r);
	/* Stat, ListDir, MakeDir, Move, Remove. */
	int st;
	char json[512];
	snprintf(json, sizeof(json), "{\"path\":\"%s\"}", path);
	o = unary("/filesystem.Filesystem/Stat", json, &st);
	ck_assert_int_eq(st, 200);
	json_t *e = json_object_get(o, "entry");
	ck_assert_str_eq(json_string_value(json_object_get(e, "type")), "FILE_TYPE_FILE");
	ck_assert_int_eq(json_integer_value(json_object_get(e, "size")), 12);
	ck_assert_str_eq(json_string_value(json_object_get(e, "permissions")), "-rw-r--r--");
	ck_assert(json_is_string(json_object_get(e, "modifiedTime")));
	json_decref(o);
	snprintf(json, sizeof(json), "{\"path\":\"%s/d\",\"depth\":2}", tmpdir);
	o = unary("/filesystem.Filesystem/ListDir", json, &st);
	ck_assert_int_eq(st, 200);
	json_t *ents = json_object_get(o, "entries");
	ck_assert_uint_eq(json_array_size(ents), 2);
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(ents, 0), "type")),
	                 "FILE_TYPE_DIRECTORY");
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(ents, 1), "path")), path);
	json_decref(o);
	snprintf(json, sizeof(json), "{\"path\":\"%s/m/n\"}", tmpdir);
	o = unary("/filesystem.Filesystem/MakeDir", json, &st);
	ck_assert_int_eq(st, 200);
	json_decref(o);
	o = unary("/filesystem.Filesystem/MakeDir", json, &st);
	ck_assert_int_eq(st, 409);
	ck_assert_str_eq(json_string_value(json_object_get(o, "code")), "already_exists");
	json_decref(o);
	snprintf(json, sizeof(json), "{\"source\":\"%s\",\"destination\":\"%s/m/moved\"}", path,
	         tmpdir);
	o = unary("/filesystem.Filesystem/Move", json, &st);
	ck_assert_int_eq(st, 200);
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(o, "entry"), "name")),
	                 "moved");
	json_decref(o);
	snprintf(json, sizeof(json), "{\"path\":\"%s/m\"}", tmpdir);
	o = unary("/filesystem.Filesystem/Remove", json, &st);
	ck_assert_int_eq(st, 200);
	json_decref(o);
	o = unary("/filesystem.Filesystem/Stat", json, &st);
	ck_assert_int_eq(st, 404);
	ck_assert_str_eq(json_string_value(json_object_get(o, "code")), "not_found");
	json_decref(o);
	/* Uploads are journaled with their size. */
	pthread_mutex_lock(&jlock);
	bool seen = false;
	size_t i;
	json_t *j;
	json_array_foreach(journal, i, j)
	{
		if (!strcmp(json_string_value(json_object_get(j, "op")), "write") &&
		    json_integer_value(json_object_get(j, "bytes")) == (json_int_t)big)
			seen = true;
	}
	pthread_mutex_unlock(&jlock);
	ck_assert(seen);
	/* A malformed multipart body: 400, nothing written. */
	snprintf(q, sizeof(q), "/files?path=%s/bad.txt", tmpdir);
	http("POST", q, AUTH "Content-Type: multipart/form-data; boundary=bnd\r\n", "--bnd\r\nx", 9,
	     &r);
	ck_assert_int_eq(r.status, 400);
	resp_free(&r);
	snprintf(path, sizeof(path), "%s/bad.txt", tmpdir);
	ck_assert_int_eq(access(path, F_OK), -1);
}
END_TEST

START_TEST(start_and_files_as_user)
{
	/* An unknown user fails the start with the guest's line. */
	struct run run;
	size_t len;
	uint8_t *b = envelope("{\"process\":{\"cmd\":\"id\",\"args\":[\"-u\"]}}", &len);
	struct resp r;
	/* base64("cove-no-such-user:") */
	http("POST", "/process.Process/Start",
	     STREAM_HDRS "Authorization: Basic Y292ZS1uby1zdWNoLXVzZXI6\r\n", b, len, &r);
	ck_assert_int_eq(r.status, 200);
	static const char unknown[] = "user 'cove-no-such-user' is not in /etc/passwd";
	ck_assert(memmem(r.body, r.len, unknown, strlen(unknown)) != NULL);
	resp_free(&r);
	/* A malformed one is refused before anything runs. */
	http("POST", "/process.Process/Start", STREAM_HDRS "Authorization: Basic !!\r\n", b, len,
	     &r);
	ck_assert(memmem(r.body, r.len, "invalid_argument", 16) != NULL);
	resp_free(&r);
	if (geteuid() == 0) {
		/* base64("4242:") */
		http("POST", "/process.Process/Start",
		     STREAM_HDRS "Authorization: Basic NDI0Mjo=\r\n", b, len, &r);
		ck_assert_int_eq(r.status, 200);
		run_parse(r.body, r.len, &run);
		ck_assert_str_eq(run.out, "4242\n");
		json_decref(run.all);
		resp_free(&r);
		/* /files as a user: the file and the folders made for it are its. */
		char q[256], path[200];
		snprintf(q, sizeof(q), "/files?path=%s/u/f.txt&username=4242", tmpdir);
		http("POST", q, AUTH "Content-Type: application/octet-stream\r\n", "x", 1, &r);
		ck_assert_int_eq(r.status, 200);
		resp_free(&r);
		struct stat st;
		snprintf(path, sizeof(path), "%s/u/f.txt", tmpdir);
		ck_assert_int_eq(stat(path, &st), 0);
		ck_assert(st.st_uid == 4242 && st.st_gid == 4242);
		snprintf(path, sizeof(path), "%s/u", tmpdir);
		ck_assert_int_eq(stat(path, &st), 0);
		ck_assert_uint_eq(st.st_uid, 4242);
		/* A folder that was there keeps its owner. */
		ck_assert_int_eq(stat(tmpdir, &st), 0);
		ck_assert_uint_eq(st.st_uid, 0);
		snprintf(q, sizeof(q), "/files?path=%s/g.txt&username=4242", tmpdir);
		http("POST", q, AUTH "Content-Type: application/octet-stream\r\n", "y", 1, &r);
		ck_assert_int_eq(r.status, 200);
		resp_free(&r);
		ck_assert_int_eq(stat(tmpdir, &st), 0);
		ck_assert_uint_eq(st.st_uid, 0);
	}
	free(b);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("envd");
	TCase *t = tcase_create("pure");
	tcase_add_test(t, connect_frames);
	tcase_add_test(t, multipart_any_chunking);
	tcase_add_test(t, envd_request_bodies);
	tcase_add_test(t, envd_users);
	suite_add_tcase(s, t);
	t = tcase_create("server");
	tcase_add_checked_fixture(t, setup, teardown);
	tcase_set_timeout(t, 60);
	tcase_add_test(t, health_auth_errors);
	tcase_add_test(t, health_is_the_sandboxes);
	tcase_add_test(t, watch_dir_and_watchers);
	tcase_add_test(t, start_streams_output_and_exit);
	tcase_add_test(t, background_input_list_kill_reattach);
	tcase_add_test(t, files_up_down_and_fs_calls);
	tcase_add_test(t, start_and_files_as_user);
	suite_add_tcase(s, t);
	return s;
}

UNIT_MAIN()
