/* The agent's exec defaults and users (PROTO_DEFAULTS, EXEC's "user"),
 * SYMLINK and MKDIR's owners: the request parser, and the agent's
 * connection handler over a socketpair (as test_agent.c).  The tests that
 * change ids need root and use the host's "nobody". */
#include <errno.h>
#include <pthread.h>
#include <pwd.h>
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
#include "guest-agent/request.h"
#include "lib/base/handle.h"
#include "proto.h"
#include "proto_json.h"
#include "unit.h"

/* ---- the request parser ---------------------------------------------------- */

static int parse_req(uint16_t type, const char *json, struct agent_req *req)
{
	struct proto_hdr h = { .len = (uint32_t)strlen(json), .type = type, .id = 1 };
	char err[256];
	return agent_req_parse(&h, (const uint8_t *)json, req, err, sizeof(err));
}

START_TEST(request_exec_user)
{
	struct agent_req q;
	ck_assert_int_eq(parse_req(PROTO_EXEC, "{\"argv\":[\"a\"],\"user\":\"app:dev\"}", &q), 0);
	ck_assert_str_eq(q.u.exec.user, "app:dev");
	ck_assert_int_eq(q.u.exec.uid, -1);
	agent_req_free(&q);
	ck_assert_int_eq(parse_req(PROTO_PROC_START, "{\"argv\":[\"a\"],\"user\":\"1000\"}", &q),
	                 0);
	ck_assert_str_eq(q.u.exec.user, "1000");
	agent_req_free(&q);
	ck_assert_int_eq(parse_req(PROTO_EXEC, "{\"argv\":[\"a\"],\"user\":null}", &q), 0);
	ck_assert_ptr_null(q.u.exec.user);
	agent_req_free(&q);
	static const char *bad[] = {
		"{\"argv\":[\"a\"],\"user\":\"\"}",      "{\"argv\":[\"a\"],\"user\":5}",
		"{\"argv\":[\"a\"],\"user\":\"a b\"}",   "{\"argv\":[\"a\"],\"user\":\"a:\"}",
		"{\"argv\":[\"a\"],\"user\":\"a:b:c\"}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_msg(parse_req(PROTO_EXEC, bad[i], &q) == -EPROTO, "%s", bad[i]);
		agent_req_free(&q);
	}
}
END_TEST

START_TEST(request_defaults)
{
	struct agent_req q;
	ck_assert_int_eq(
	    parse_req(PROTO_DEFAULTS,
	              "{\"env\":{\"A\":\"1\",\"B\":\"\"},\"cwd\":\"/app\",\"user\":\"app\"}", &q),
	    0);
	ck_assert_str_eq(q.u.defaults.env[0], "A=1");
	ck_assert_str_eq(q.u.defaults.env[1], "B=");
	ck_assert_ptr_null(q.u.defaults.env[2]);
	ck_assert_str_eq(q.u.defaults.cwd, "/app");
	ck_assert_str_eq(q.u.defaults.user, "app");
	agent_req_free(&q);
	ck_assert_int_eq(parse_req(PROTO_DEFAULTS, "{}", &q), 0);
	ck_assert_ptr_null(q.u.defaults.env);
	ck_assert_ptr_null(q.u.defaults.cwd);
	ck_assert_ptr_null(q.u.defaults.user);
	agent_req_free(&q);
	static const char *bad[] = {
		"{\"env\":{\"A\":null}}",    "{\"env\":{\"\":\"x\"}}",
		"{\"env\":{\"A=B\":\"x\"}}", "{\"env\":[\"A=B\"]}",
		"{\"env\":{\"A\":1}}",       "{\"env\":{\"A\":\"x\\u0000y\"}}",
		"{\"cwd\":\"rel\"}",         "{\"cwd\":3}",
		"{\"user\":\"\"}",           "{\"user\":\"a b\"}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_msg(parse_req(PROTO_DEFAULTS, bad[i], &q) == -EPROTO, "%s", bad[i]);
		agent_req_free(&q);
	}
	/* The bounds: AGENT_DEFAULTS_ENV_MAX variables, values of
	 * AGENT_DEFAULTS_VALUE_MAX bytes. */
	json_t *env = json_object();
	for (int i = 0; i <= AGENT_DEFAULTS_ENV_MAX; i++) {
		char k[16];
		snprintf(k, sizeof(k), "V%d", i);
		json_object_set_new(env, k, json_string("x"));
	}
	json_t *o = json_pack("{s:o}", "env", env);
	char *text = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	ck_assert_int_eq(parse_req(PROTO_DEFAULTS, text, &q), -EPROTO);
	agent_req_free(&q);
	free(text);
	char *big = malloc(AGENT_DEFAULTS_VALUE_MAX + 2);
	memset(big, 'v', AGENT_DEFAULTS_VALUE_MAX + 1);
	big[AGENT_DEFAULTS_VALUE_MAX + 1] = 0;
	o = json_pack("{s:{s:s}}", "env", "BIG", big);
	text = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	ck_assert_int_eq(parse_req(PROTO_DEFAULTS, text, &q), -EPROTO);
	agent_req_free(&q);
	free(text);
	big[AGENT_DEFAULTS_VALUE_MAX] = 0;
	o = json_pack("{s:{s:s}}", "env", "BIG", big);
	text = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	ck_assert_int_eq(parse_req(PROTO_DEFAULTS, text, &q), 0);
	agent_req_free(&q);
	free(text);
	free(big);
}
END_TEST

START_TEST(request_symlink_mkdir)
{
	struct agent_req q;
	ck_assert_int_eq(parse_req(PROTO_SYMLINK,
	                           "{\"path\":\"/l\",\"target\":\"../t\",\"uid\":5,\"gid\":6}", &q),
	                 0);
	ck_assert_str_eq(q.u.symlink.path, "/l");
	ck_assert_str_eq(q.u.symlink.target, "../t");
	ck_assert_int_eq(q.u.symlink.uid, 5);
	ck_assert_int_eq(q.u.symlink.gid, 6);
	agent_req_free(&q);
	ck_assert_int_eq(parse_req(PROTO_SYMLINK, "{\"path\":\"/l\",\"target\":\"t\"}", &q), 0);
	ck_assert_int_eq(q.u.symlink.uid, -1);
	ck_assert_ptr_null(q.u.symlink.user);
	agent_req_free(&q);
	ck_assert_int_eq(
	    parse_req(PROTO_SYMLINK, "{\"path\":\"/l\",\"target\":\"t\",\"user\":\"a:b\"}", &q), 0);
	ck_assert_str_eq(q.u.symlink.user, "a:b");
	agent_req_free(&q);
	ck_assert_int_eq(parse_req(PROTO_USER, "{\"user\":\"app:dev\"}", &q), 0);
	ck_assert_str_eq(q.u.user.spec, "app:dev");
	agent_req_free(&q);
	ck_assert_int_eq(parse_req(PROTO_USER, "{}", &q), -EPROTO);
	agent_req_free(&q);
	ck_assert_int_eq(parse_req(PROTO_USER, "{\"user\":\"a b\"}", &q), -EPROTO);
	agent_req_free(&q);
	/* FREEZE's self-thaw timeout: default, given, out of range. */
	ck_assert_int_eq(parse_req(PROTO_FREEZE, "{}", &q), 0);
	ck_assert_uint_eq(q.u.freeze.timeout_ms, 10000);
	agent_req_free(&q);
	ck_assert_int_eq(parse_req(PROTO_FREEZE, "{\"timeout_ms\":500}", &q), 0);
	ck_assert_uint_eq(q.u.freeze.timeout_ms, 500);
	agent_req_free(&q);
	ck_assert_int_eq(parse_req(PROTO_FREEZE, "{\"timeout_ms\":0}", &q), -EPROTO);
	agent_req_free(&q);
	ck_assert_int_eq(parse_req(PROTO_FREEZE, "{\"timeout_ms\":60001}", &q), -EPROTO);
	agent_req_free(&q);
	ck_assert_int_eq(parse_req(PROTO_THAW, "{}", &q), 0);
	agent_req_free(&q);
	static const char *bad[] = {
		"{\"path\":\"l\",\"target\":\"t\"}",
		"{\"path\":\"/l\"}",
		"{\"path\":\"/l\",\"target\":\"\"}",
		"{\"path\":\"/l\",\"target\":\"t\",\"uid\":-1}",
		"{\"path\":\"/l\",\"target\":\"t\",\"gid\":4294967295}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_msg(parse_req(PROTO_SYMLINK, bad[i], &q) == -EPROTO, "%s", bad[i]);
		agent_req_free(&q);
	}
	ck_assert_int_eq(parse_req(PROTO_MKDIR, "{\"path\":\"/d\",\"uid\":7,\"gid\":8}", &q), 0);
	ck_assert_int_eq(q.u.mkdir.uid, 7);
	ck_assert_int_eq(q.u.mkdir.gid, 8);
	agent_req_free(&q);
	ck_assert_int_eq(parse_req(PROTO_MKDIR, "{\"path\":\"/d\"}", &q), 0);
	ck_assert_int_eq(q.u.mkdir.uid, -1);
	ck_assert_ptr_null(q.u.mkdir.user);
	agent_req_free(&q);
	ck_assert_int_eq(parse_req(PROTO_MKDIR, "{\"path\":\"/d\",\"user\":\"app\"}", &q), 0);
	ck_assert_str_eq(q.u.mkdir.user, "app");
	agent_req_free(&q);
	ck_assert_int_eq(parse_req(PROTO_FILE_PUT, "{\"path\":\"/f\",\"user\":\"1:2\"}", &q), 0);
	ck_assert_str_eq(q.u.put.user, "1:2");
	agent_req_free(&q);
	ck_assert_int_eq(parse_req(PROTO_FILE_PUT, "{\"path\":\"/f\",\"user\":\"\"}", &q), -EPROTO);
	agent_req_free(&q);
}
END_TEST

/* ---- the agent over a socketpair ----------------------------------------- */

struct conn {
	int fd, agent_fd;
	pthread_t thread;
};

static void *agent_thread(void *arg)
{
	struct conn *c = arg;
	(void)agent_serve_conn(c->agent_fd, NULL);
	close(c->agent_fd);
	return NULL;
}

static void conn_open(struct conn *c)
{
	int sv[2];
	signal(SIGPIPE, SIG_IGN);
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	c->fd = sv[0];
	c->agent_fd = sv[1];
	ck_assert_int_eq(pthread_create(&c->thread, NULL, agent_thread, c), 0);
}

static void conn_close(struct conn *c)
{
	close(c->fd);
	pthread_join(c->thread, NULL);
}

/* Sends a request and reads its reply: OK (0) or ERROR (its errno, the
 * message in msg). */
static int call(int fd, uint16_t type, const char *json, char *msg, size_t msglen)
{
	ck_assert_int_eq(proto_send(fd, type, 1, json, (uint32_t)strlen(json)), 0);
	struct proto_hdr h;
	uint8_t *p;
	ck_assert_int_eq(proto_recv(fd, &h, &p), 0);
	ck_assert(h.type == PROTO_OK || h.type == PROTO_ERROR);
	int e = 0;
	if (h.type == PROTO_ERROR) {
		json_t *o = json_loads((const char *)p, 0, NULL);
		e = (int)json_integer_value(json_object_get(o, "errno"));
		snprintf(msg, msglen, "%s", json_string_value(json_object_get(o, "message")));
		json_decref(o);
	}
	free(p);
	return e;
}

/* Runs an EXEC: its stdout in out, 0 with the exit code in *code, or the
 * ERROR's errno with its message in out. */
static int run(int fd, const char *json, char *out, size_t outlen, int *code)
{
	ck_assert_int_eq(proto_send(fd, PROTO_EXEC, 2, json, (uint32_t)strlen(json)), 0);
	size_t n = 0;
	out[0] = 0;
	for (;;) {
		struct proto_hdr h;
		uint8_t *p;
		ck_assert_int_eq(proto_recv(fd, &h, &p), 0);
		json_t *o = h.type == PROTO_ERROR || h.type == PROTO_EXIT
		                ? json_loads((const char *)p, 0, NULL)
		                : NULL;
		if (h.type == PROTO_STDOUT && n + h.len < outlen) {
			memcpy(out + n, p, h.len);
			out[n += h.len] = 0;
		}
		free(p);
		if (h.type == PROTO_ERROR) {
			int e = (int)json_integer_value(json_object_get(o, "errno"));
			snprintf(out, outlen, "%s",
			         json_string_value(json_object_get(o, "message")));
			json_decref(o);
			return e;
		}
		if (h.type == PROTO_EXIT) {
			*code = (int)json_integer_value(json_object_get(o, "code"));
			json_decref(o);
			return 0;
		}
	}
}

START_TEST(exec_defaults_env_cwd)
{
	struct conn c;
	conn_open(&c);
	char msg[256], out[512];
	int code;
	setenv("COVE_BASE", "base", 1);
	setenv("COVE_OVER", "base", 1);
	ck_assert_int_eq(call(c.fd, PROTO_DEFAULTS,
	                      "{\"env\":{\"COVE_OVER\":\"dflt\",\"COVE_D\":\"dflt\","
	                      "\"COVE_R\":\"dflt\",\"COVE_GONE\":\"dflt\"},\"cwd\":\"/tmp\"}",
	                      msg, sizeof(msg)),
	                 0);
	/* The request's env over the defaults' over the agent's. */
	ck_assert_int_eq(run(c.fd,
	                     "{\"argv\":[\"sh\",\"-c\",\"echo $COVE_BASE $COVE_OVER $COVE_D "
	                     "$COVE_R ${COVE_GONE-unset}; pwd\"],"
	                     "\"env\":{\"COVE_R\":\"req\",\"COVE_GONE\":null}}",
	                     out, sizeof(out), &code),
	                 0);
	ck_assert_int_eq(code, 0);
	ck_assert_str_eq(out, "base dflt dflt req unset\n/tmp\n");
	/* Its own cwd wins; new defaults replace the old ones whole. */
	ck_assert_int_eq(run(c.fd, "{\"argv\":[\"pwd\"],\"cwd\":\"/\"}", out, sizeof(out), &code),
	                 0);
	ck_assert_str_eq(out, "/\n");
	ck_assert_int_eq(
	    call(c.fd, PROTO_DEFAULTS, "{\"env\":{\"COVE_D\":\"two\"}}", msg, sizeof(msg)), 0);
	ck_assert_int_eq(run(c.fd, "{\"argv\":[\"sh\",\"-c\",\"echo $COVE_OVER $COVE_D\"]}", out,
	                     sizeof(out), &code),
	                 0);
	ck_assert_str_eq(out, "base two\n");
	ck_assert_int_eq(call(c.fd, PROTO_DEFAULTS, "{}", msg, sizeof(msg)), 0);
	conn_close(&c);
}
END_TEST

START_TEST(exec_users)
{
	if (geteuid() != 0)
		return; /* needs root */
	struct conn c;
	conn_open(&c);
	char msg[256], out[512];
	int code;
	static const char probe[] = "\"argv\":[\"sh\",\"-c\",\"id -u; id -g; id -G; echo $HOME\"]";
	char req[256];
	/* A default user (the host's nobody), HOME from its passwd entry. */
	ck_assert_int_eq(
	    call(c.fd, PROTO_DEFAULTS, "{\"user\":\"nobody\",\"cwd\":\"/\"}", msg, sizeof(msg)), 0);
	snprintf(req, sizeof(req), "{%s}", probe);
	ck_assert_int_eq(run(c.fd, req, out, sizeof(out), &code), 0);
	ck_assert_int_eq(code, 0);
	ck_assert(!strncmp(out, "65534\n65534\n65534\n/", 19));
	/* The request's user wins: root keeps the agent's ids, with its HOME. */
	snprintf(req, sizeof(req), "{%s,\"user\":\"root\"}", probe);
	ck_assert_int_eq(run(c.fd, req, out, sizeof(out), &code), 0);
	ck_assert(!strncmp(out, "0\n0\n", 4));
	ck_assert(strstr(out, "\n/root\n") != NULL);
	/* uid:gid without an entry; HOME set by the env stays. */
	snprintf(req, sizeof(req), "{%s,\"user\":\"4242:4343\",\"env\":{\"HOME\":\"/h\"}}", probe);
	ck_assert_int_eq(run(c.fd, req, out, sizeof(out), &code), 0);
	ck_assert_str_eq(out, "4242\n4343\n4343\n/h\n");
	/* An unknown user fails that exec with one line; the connection goes on. */
	snprintf(req, sizeof(req), "{%s,\"user\":\"cove-no-such-user\"}", probe);
	ck_assert_int_eq(run(c.fd, req, out, sizeof(out), &code), EINVAL);
	ck_assert_str_eq(out, "user 'cove-no-such-user' is not in /etc/passwd");
	snprintf(req, sizeof(req), "{%s,\"user\":\"nobody:cove-no-such-group\"}", probe);
	ck_assert_int_eq(run(c.fd, req, out, sizeof(out), &code), EINVAL);
	ck_assert_str_eq(out, "group 'cove-no-such-group' is not in /etc/group");
	/* Without a cwd anywhere: the user's home when it can go there. */
	ck_assert_int_eq(call(c.fd, PROTO_DEFAULTS, "{}", msg, sizeof(msg)), 0);
	struct passwd *pw = getpwnam("daemon");
	struct stat st;
	if (pw && stat(pw->pw_dir, &st) == 0 && S_ISDIR(st.st_mode)) {
		char want[300];
		snprintf(want, sizeof(want), "%s\n", pw->pw_dir);
		ck_assert_int_eq(
		    run(c.fd, "{\"argv\":[\"pwd\"],\"user\":\"daemon\"}", out, sizeof(out), &code),
		    0);
		ck_assert_str_eq(out, want);
	}
	ck_assert_int_eq(
	    run(c.fd, "{\"argv\":[\"pwd\"],\"user\":\"4242\"}", out, sizeof(out), &code), 0);
	ck_assert_str_eq(out, "/\n");
	/* An older host's uid/gid stands for itself, not the default user. */
	ck_assert_int_eq(call(c.fd, PROTO_DEFAULTS, "{\"user\":\"nobody\"}", msg, sizeof(msg)), 0);
	snprintf(req, sizeof(req), "{%s,\"uid\":0,\"gid\":0}", probe);
	ck_assert_int_eq(run(c.fd, req, out, sizeof(out), &code), 0);
	ck_assert(!strncmp(out, "0\n0\n", 4));
	ck_assert_int_eq(call(c.fd, PROTO_DEFAULTS, "{}", msg, sizeof(msg)), 0);
	conn_close(&c);
}
END_TEST

START_TEST(symlink_and_owned_mkdir)
{
	char dir[] = "/tmp/cove-defaults-test-XXXXXX";
	ck_assert_ptr_nonnull(mkdtemp(dir));
	struct conn c;
	conn_open(&c);
	char req[512], path[256], msg[256], buf[64];
	bool root = geteuid() == 0;
	snprintf(path, sizeof(path), "%s/link", dir);
	snprintf(req, sizeof(req), "{\"path\":\"%s\",\"target\":\"one\"%s}", path,
	         root ? ",\"uid\":4242,\"gid\":4343" : "");
	ck_assert_int_eq(call(c.fd, PROTO_SYMLINK, req, msg, sizeof(msg)), 0);
	ssize_t n = readlink(path, buf, sizeof(buf) - 1);
	ck_assert_int_eq(n, 3);
	struct stat st;
	ck_assert_int_eq(lstat(path, &st), 0);
	if (root)
		ck_assert(st.st_uid == 4242 && st.st_gid == 4343);
	/* ln -sf: a link (or file) there is replaced; a folder is not. */
	snprintf(req, sizeof(req), "{\"path\":\"%s\",\"target\":\"/two\"}", path);
	ck_assert_int_eq(call(c.fd, PROTO_SYMLINK, req, msg, sizeof(msg)), 0);
	n = readlink(path, buf, sizeof(buf) - 1);
	ck_assert_int_eq(n, 4);
	snprintf(req, sizeof(req), "{\"path\":\"%s\",\"target\":\"x\"}", dir);
	ck_assert_int_eq(call(c.fd, PROTO_SYMLINK, req, msg, sizeof(msg)), EISDIR);
	ck_assert(strstr(msg, "symlink") != NULL);
	/* Its owner by name, resolved in the guest. */
	snprintf(req, sizeof(req), "{\"path\":\"%s\",\"target\":\"t\",\"user\":\"%s\"}", path,
	         root ? "4242:4344" : "cove-no-such-user");
	if (root) {
		ck_assert_int_eq(call(c.fd, PROTO_SYMLINK, req, msg, sizeof(msg)), 0);
		ck_assert_int_eq(lstat(path, &st), 0);
		ck_assert(st.st_uid == 4242 && st.st_gid == 4344);
	}
	snprintf(req, sizeof(req),
	         "{\"path\":\"%s\",\"target\":\"t\",\"user\":\"cove-no-such-user\"}", path);
	ck_assert_int_eq(call(c.fd, PROTO_SYMLINK, req, msg, sizeof(msg)), EINVAL);
	ck_assert_str_eq(msg, "user 'cove-no-such-user' is not in /etc/passwd");
	/* MKDIR's owner: every folder it makes, and the last one. */
	snprintf(req, sizeof(req), "{\"path\":\"%s/a/b\",\"parents\":true,\"uid\":%d,\"gid\":%d}",
	         dir, root ? 4242 : (int)geteuid(), root ? 4343 : (int)getegid());
	ck_assert_int_eq(call(c.fd, PROTO_MKDIR, req, msg, sizeof(msg)), 0);
	snprintf(path, sizeof(path), "%s/a", dir);
	ck_assert_int_eq(stat(path, &st), 0);
	if (root) {
		ck_assert(st.st_uid == 4242 && st.st_gid == 4343);
		ck_assert_int_eq(stat(dir, &st), 0); /* there before: left alone */
		ck_assert_uint_eq(st.st_uid, 0);
		/* An existing last folder is given to the owner asked for. */
		snprintf(req, sizeof(req), "{\"path\":\"%s/a\",\"parents\":true,\"uid\":7}", dir);
		ck_assert_int_eq(call(c.fd, PROTO_MKDIR, req, msg, sizeof(msg)), 0);
		ck_assert_int_eq(stat(path, &st), 0);
		ck_assert(st.st_uid == 7 && st.st_gid == 4343);
		/* ... unless it asks to keep an existing one's owner. */
		snprintf(req, sizeof(req),
		         "{\"path\":\"%s/a/c\",\"parents\":true,\"user\":\"9:9\","
		         "\"keep_existing\":true}",
		         dir);
		ck_assert_int_eq(call(c.fd, PROTO_MKDIR, req, msg, sizeof(msg)), 0);
		ck_assert_int_eq(stat(path, &st), 0);
		ck_assert_uint_eq(st.st_uid, 7);
		snprintf(path, sizeof(path), "%s/a/c", dir);
		ck_assert_int_eq(stat(path, &st), 0);
		ck_assert(st.st_uid == 9 && st.st_gid == 9);
	}
	conn_close(&c);
	snprintf(req, sizeof(req), "rm -rf '%s'", dir);
	ck_assert_int_eq(system(req), 0);
}
END_TEST

/* ---- libcove's side, behind a stand-in for cove-vmm's vsock socket ----- */

static struct cove_sandbox sb;
static char tmpdir[64];
static int lfd = -1;
static pthread_t acceptor;

static void *vsock_conn(void *arg)
{
	int fd = (int)(intptr_t)arg;
	char line[32], ch;
	size_t n = 0;
	while (n < sizeof(line) - 1 && read(fd, &ch, 1) == 1 && ch != '\n')
		line[n++] = ch;
	line[n] = 0;
	if (strcmp(line, "CONNECT 1024") == 0 && write(fd, "OK 7\n", 5) == 5)
		(void)agent_serve_conn(fd, NULL);
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
		if (pthread_create(&t, NULL, vsock_conn, (void *)(intptr_t)fd) == 0)
			pthread_detach(t);
		else
			close(fd);
	}
	return NULL;
}

static void host_setup(void)
{
	signal(SIGPIPE, SIG_IGN);
	strcpy(tmpdir, "/tmp/cove-defaults-host-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
	memset(&sb, 0, sizeof(sb));
	snprintf(sb.vsock, sizeof(sb.vsock), "%s/vsock", tmpdir);
	lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(lfd, 0);
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sb.vsock);
	ck_assert_int_eq(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(listen(lfd, 16), 0);
	ck_assert_int_eq(pthread_create(&acceptor, NULL, accept_thread, NULL), 0);
}

static void host_teardown(void)
{
	shutdown(lfd, SHUT_RDWR);
	pthread_join(acceptor, NULL);
	close(lfd);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot clean %s\n", tmpdir);
}

static void collect_out(void *opaque, const void *data, size_t len)
{
	char *out = opaque;
	size_t n = strlen(out);
	if (n + len < 512) {
		memcpy(out + n, data, len);
		out[n + len] = 0;
	}
}

START_TEST(host_defaults_and_users)
{
	char err[256], out[512] = "";
	const char *env[] = { "COVE_D=dflt", "COVE_R=dflt", NULL };
	struct cove_exec_defaults d = { .env = env, .cwd = "/tmp" };
	ck_assert_int_eq(cove_set_exec_defaults(&sb, &d, err, sizeof(err)), 0);
	const char *argv[] = { "sh", "-c", "echo $COVE_D $COVE_R; pwd; id -u", NULL };
	const char *renv[] = { "COVE_R=req", NULL };
	struct cove_exec_opts o = {
		.argv = argv, .env = renv, .stdin_fd = -1, .on_stdout = collect_out, .opaque = out
	};
	struct cove_exec_result res;
	ck_assert_int_eq(cove_exec(&sb, &o, &res, err, sizeof(err)), 0);
	char want[64];
	snprintf(want, sizeof(want), "dflt req\n/tmp\n%u\n", (unsigned)geteuid());
	ck_assert_str_eq(out, want);
	o.user = "cove-no-such-user";
	ck_assert_int_eq(cove_exec(&sb, &o, &res, err, sizeof(err)), -EINVAL);
	ck_assert_str_eq(err, "user 'cove-no-such-user' is not in /etc/passwd");
	o.user = "a b";
	ck_assert_int_eq(cove_exec(&sb, &o, &res, err, sizeof(err)), -EINVAL);
	struct cove_proc_spec spec = { .argv = argv, .user = "cove-no-such-user" };
	int pid;
	ck_assert_int_eq(cove_proc_start(&sb, &spec, &pid, err, sizeof(err)), -EINVAL);
	ck_assert_str_eq(err, "user 'cove-no-such-user' is not in /etc/passwd");
	if (geteuid() == 0) {
		out[0] = 0;
		o.user = "4242:4343";
		ck_assert_int_eq(cove_exec(&sb, &o, &res, err, sizeof(err)), 0);
		ck_assert_str_eq(out, "dflt req\n/tmp\n4242\n");
	}
	/* Refused before anything is sent. */
	const char *bad_env[] = { "NOEQUALS", NULL };
	struct cove_exec_defaults bad = { .env = bad_env };
	ck_assert_int_eq(cove_set_exec_defaults(&sb, &bad, err, sizeof(err)), -EINVAL);
	bad = (struct cove_exec_defaults){ .cwd = "rel" };
	ck_assert_int_eq(cove_set_exec_defaults(&sb, &bad, err, sizeof(err)), -EINVAL);
	bad = (struct cove_exec_defaults){ .user = "" };
	ck_assert_int_eq(cove_set_exec_defaults(&sb, &bad, err, sizeof(err)), -EINVAL);
	bad = (struct cove_exec_defaults){ 0 };
	ck_assert_int_eq(cove_set_exec_defaults(&sb, &bad, err, sizeof(err)), 0);
}
END_TEST

START_TEST(host_files_owned)
{
	char err[256], path[128], local[128];
	bool root = geteuid() == 0;
	long uid = root ? 4242 : -1, gid = root ? 4343 : -1;
	snprintf(path, sizeof(path), "%s/d/e", tmpdir);
	ck_assert_int_eq(cove_mkdir(&sb, path, 0750, uid, gid, true, err, sizeof(err)), 0);
	struct stat st;
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0750);
	if (root)
		ck_assert(st.st_uid == 4242 && st.st_gid == 4343);
	ck_assert_int_eq(cove_mkdir(&sb, path, 0750, -1, -1, false, err, sizeof(err)), -EEXIST);
	ck_assert_int_eq(cove_mkdir(&sb, "rel", 0750, -1, -1, false, err, sizeof(err)), -EINVAL);
	ck_assert_int_eq(cove_mkdir(&sb, path, 0750, -2, -1, false, err, sizeof(err)), -EINVAL);
	snprintf(local, sizeof(local), "%s/local", tmpdir);
	FILE *f = fopen(local, "w");
	fputs("x", f);
	fclose(f);
	snprintf(path, sizeof(path), "%s/d/e/f", tmpdir);
	ck_assert_int_eq(cove_put_file_owned(&sb, local, path, 0640, uid, gid, err, sizeof(err)),
	                 0);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0640);
	if (root)
		ck_assert(st.st_uid == 4242 && st.st_gid == 4343);
	char link[128], buf[64];
	snprintf(link, sizeof(link), "%s/d/l", tmpdir);
	ck_assert_int_eq(cove_symlink(&sb, "e/f", link, uid, gid, err, sizeof(err)), 0);
	ck_assert_int_eq(readlink(link, buf, sizeof(buf)), 3);
	ck_assert_int_eq(cove_symlink(&sb, "e", link, -1, -1, err, sizeof(err)), 0);
	ck_assert_int_eq(readlink(link, buf, sizeof(buf)), 1);
	ck_assert_int_eq(cove_symlink(&sb, "", link, -1, -1, err, sizeof(err)), -EINVAL);
	/* Names resolved in the guest, for chown-like steps. */
	long u = -1, g = -1;
	ck_assert_int_eq(cove_user_lookup(&sb, "root", &u, &g, err, sizeof(err)), 0);
	ck_assert(u == 0 && g == 0);
	ck_assert_int_eq(cove_user_lookup(&sb, "4242:77", &u, &g, err, sizeof(err)), 0);
	ck_assert(u == 4242 && g == 77);
	ck_assert_int_eq(cove_user_lookup(&sb, "4242", &u, &g, err, sizeof(err)), 0);
	ck_assert(u == 4242 && g == 4242);
	ck_assert_int_eq(cove_user_lookup(&sb, "cove-no-such-user", &u, &g, err, sizeof(err)),
	                 -EINVAL);
	ck_assert_str_eq(err, "user 'cove-no-such-user' is not in /etc/passwd");
	ck_assert_int_eq(cove_user_lookup(&sb, "a:", &u, &g, err, sizeof(err)), -EINVAL);
	ck_assert_int_eq(cove_symlink(&sb, "x", "rel", -1, -1, err, sizeof(err)), -EINVAL);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("agent_defaults");
	TCase *tc = tcase_create("requests");
	tcase_add_test(tc, request_exec_user);
	tcase_add_test(tc, request_defaults);
	tcase_add_test(tc, request_symlink_mkdir);
	suite_add_tcase(s, tc);
	tc = tcase_create("agent");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, exec_defaults_env_cwd);
	tcase_add_test(tc, exec_users);
	tcase_add_test(tc, symlink_and_owned_mkdir);
	suite_add_tcase(s, tc);
	tc = tcase_create("host");
	tcase_add_checked_fixture(tc, host_setup, host_teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, host_defaults_and_users);
	tcase_add_test(tc, host_files_owned);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN()
