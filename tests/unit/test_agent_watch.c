/* Unit tests: PROTO_WATCH, cove-agent's folder watches (guest-agent/watch.c)
 * driven over socketpair(AF_UNIX) by libcove's host side (lib/agent/watch.c):
 * create, write, chmod, rename and remove events with paths relative to the
 * watched folder, a recursive watch following a new folder (a file made in
 * it at once included), folders moved inside the watch, the end of a watch
 * whose folder is removed, the mask mapping, the request and event
 * parsers. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "cove.h"
#include "guest-agent/agent.h"
#include "guest-agent/request.h"
#include "guest-agent/watch.h"
#include "proto.h"
#include "unit.h"

struct conn {
	int fd, agent_fd;
	pthread_t thread;
	int result;
};

static const struct agent_config cfg = { 0 };

static void *agent_thread(void *arg)
{
	struct conn *c = arg;
	c->result = agent_serve_conn(c->agent_fd, &cfg);
	close(c->agent_fd);
	return NULL;
}

static void conn_open(struct conn *c)
{
	int sv[2];
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	c->fd = sv[0];
	c->agent_fd = sv[1];
	ck_assert_int_eq(pthread_create(&c->thread, NULL, agent_thread, c), 0);
}

static int conn_close(struct conn *c)
{
	close(c->fd);
	pthread_join(c->thread, NULL);
	return c->result;
}

static char dir[64];

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/cove-watch.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void teardown(void)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	ck_assert_int_eq(system(cmd), 0);
}

static void put(const char *rel, const char *text)
{
	char p[256];
	snprintf(p, sizeof(p), "%s/%s", dir, rel);
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

static void at(char *out, const char *rel)
{
	snprintf(out, 256, "%s/%s", dir, rel);
}

/* Reads events for up to 3 s until "type name" has come; false if not. */
static bool saw(int fd, const char *type, const char *name)
{
	int64_t end = mono_ms() + 3000;
	char err[256];
	while (mono_ms() < end) {
		struct cove_watch_event ev;
		int r = cove_watch_next(fd, 100, &ev, err, sizeof(err));
		ck_assert_msg(r == 0, "watch ended: %s", err);
		bool hit = ev.kind && !strcmp(cove_watch_kind_name(ev.kind), type) &&
		           !strcmp(ev.name, name);
		cove_watch_event_free(&ev);
		if (hit)
			return true;
	}
	return false;
}

START_TEST(watch_flat)
{
	struct conn c;
	conn_open(&c);
	char err[256], p[256], q[256];
	ck_assert_int_eq(cove_watch_on(c.fd, dir, false, err, sizeof(err)), 0);
	put("a.txt", "x");
	ck_assert(saw(c.fd, "create", "a.txt"));
	put("a.txt", "more");
	ck_assert(saw(c.fd, "write", "a.txt"));
	at(p, "a.txt");
	ck_assert_int_eq(chmod(p, 0600), 0);
	ck_assert(saw(c.fd, "chmod", "a.txt"));
	at(q, "b.txt");
	ck_assert_int_eq(rename(p, q), 0);
	ck_assert(saw(c.fd, "rename", "a.txt"));
	ck_assert(saw(c.fd, "create", "b.txt"));
	ck_assert_int_eq(unlink(q), 0);
	ck_assert(saw(c.fd, "remove", "b.txt"));
	/* Not recursive: a sub-folder's files are not reported. */
	at(p, "sub");
	ck_assert_int_eq(mkdir(p, 0755), 0);
	ck_assert(saw(c.fd, "create", "sub"));
	put("sub/in.txt", "x");
	put("flag", "x");
	ck_assert(saw(c.fd, "create", "flag"));
	ck_assert_int_eq(conn_close(&c), 0);
}
END_TEST

START_TEST(watch_recursive)
{
	struct conn c;
	conn_open(&c);
	char err[256], p[256], q[256];
	at(p, "old");
	ck_assert_int_eq(mkdir(p, 0755), 0);
	ck_assert_int_eq(cove_watch_on(c.fd, dir, true, err, sizeof(err)), 0);
	put("old/f", "x");
	ck_assert(saw(c.fd, "create", "old/f"));
	/* A new folder, and a file in it at once: both reported. */
	at(p, "new");
	ck_assert_int_eq(mkdir(p, 0755), 0);
	put("new/g", "x");
	ck_assert(saw(c.fd, "create", "new"));
	ck_assert(saw(c.fd, "create", "new/g"));
	/* Deeper, made with the parents at once. */
	at(p, "new/x");
	ck_assert_int_eq(mkdir(p, 0755), 0);
	at(p, "new/x/y");
	ck_assert_int_eq(mkdir(p, 0755), 0);
	put("new/x/y/z", "x");
	ck_assert(saw(c.fd, "create", "new/x/y/z"));
	/* A folder renamed inside the watch keeps being followed, by its
	 * new name. */
	at(p, "old");
	at(q, "renamed");
	ck_assert_int_eq(rename(p, q), 0);
	ck_assert(saw(c.fd, "rename", "old"));
	ck_assert(saw(c.fd, "create", "renamed"));
	put("renamed/h", "x");
	ck_assert(saw(c.fd, "create", "renamed/h"));
	at(p, "renamed/h");
	ck_assert_int_eq(unlink(p), 0);
	ck_assert(saw(c.fd, "remove", "renamed/h"));
	ck_assert_int_eq(conn_close(&c), 0);
}
END_TEST

START_TEST(watch_ends)
{
	struct conn c;
	conn_open(&c);
	char err[256], p[256];
	/* Refused: not a folder, missing; the connection goes on. */
	put("file", "x");
	at(p, "file");
	ck_assert_int_eq(cove_watch_on(c.fd, p, false, err, sizeof(err)), -ENOTDIR);
	at(p, "missing");
	ck_assert_int_eq(cove_watch_on(c.fd, p, true, err, sizeof(err)), -ENOENT);
	ck_assert_int_eq(cove_watch_on(c.fd, "rel", true, err, sizeof(err)), -EINVAL);
	/* The watched folder removed: the watch ends with an ERROR. */
	at(p, "w");
	ck_assert_int_eq(mkdir(p, 0755), 0);
	ck_assert_int_eq(cove_watch_on(c.fd, p, true, err, sizeof(err)), 0);
	ck_assert_int_eq(rmdir(p), 0);
	int64_t end = mono_ms() + 3000;
	int r = 0;
	while (r == 0 && mono_ms() < end) {
		struct cove_watch_event ev;
		r = cove_watch_next(c.fd, 100, &ev, err, sizeof(err));
		cove_watch_event_free(&ev);
	}
	ck_assert_int_eq(r, -ENOENT);
	ck_assert_ptr_nonnull(strstr(err, "removed"));
	/* ...and the connection still answers. */
	ck_assert_int_eq(cove_watch_on(c.fd, dir, false, err, sizeof(err)), 0);
	ck_assert_int_eq(conn_close(&c), 0);
}
END_TEST

START_TEST(watch_mask_names)
{
	ck_assert_str_eq(agent_watch_type(IN_CREATE), "create");
	ck_assert_str_eq(agent_watch_type(IN_CREATE | IN_ISDIR), "create");
	ck_assert_str_eq(agent_watch_type(IN_MOVED_TO), "create");
	ck_assert_str_eq(agent_watch_type(IN_MODIFY), "write");
	ck_assert_str_eq(agent_watch_type(IN_DELETE), "remove");
	ck_assert_str_eq(agent_watch_type(IN_MOVED_FROM), "rename");
	ck_assert_str_eq(agent_watch_type(IN_ATTRIB), "chmod");
	ck_assert_ptr_null(agent_watch_type(IN_OPEN));
	ck_assert_ptr_null(agent_watch_type(IN_IGNORED));
}
END_TEST

static int parse(uint16_t type, const char *json, struct agent_req *req)
{
	struct proto_hdr h = { .len = (uint32_t)strlen(json), .type = type, .id = 5 };
	char err[256];
	return agent_req_parse(&h, (const uint8_t *)json, req, err, sizeof(err));
}

START_TEST(watch_request_and_event_parsers)
{
	struct agent_req req;
	ck_assert_int_eq(parse(PROTO_WATCH, "{\"path\":\"/a\",\"recursive\":true}", &req), 0);
	ck_assert_str_eq(req.u.watch.path, "/a");
	ck_assert(req.u.watch.recursive);
	agent_req_free(&req);
	ck_assert_int_eq(parse(PROTO_WATCH, "{\"path\":\"/a\"}", &req), 0);
	ck_assert(!req.u.watch.recursive);
	agent_req_free(&req);
	ck_assert_int_eq(parse(PROTO_WATCH, "{\"path\":\"a\"}", &req), -EPROTO);
	agent_req_free(&req);
	ck_assert_int_eq(parse(PROTO_WATCH, "{\"path\":\"/a\",\"recursive\":1}", &req), -EPROTO);
	agent_req_free(&req);
	ck_assert_int_eq(parse(PROTO_WATCH_EVENT, "{\"name\":\"a\",\"type\":\"create\"}", &req),
	                 -EPROTO);
	agent_req_free(&req);

	struct cove_watch_event ev;
	char err[256];
#define EV(s) cove_watch_event_parse((const uint8_t *)(s), strlen(s), &ev, err, sizeof(err))
	ck_assert_int_eq(EV("{\"id\":1,\"name\":\"d/f\",\"type\":\"rename\"}"), 0);
	ck_assert_int_eq(ev.kind, COVE_WATCH_RENAME);
	ck_assert_str_eq(ev.name, "d/f");
	cove_watch_event_free(&ev);
	ck_assert_int_eq(EV("{\"name\":\"/abs\",\"type\":\"create\"}"), -EPROTO);
	ck_assert_int_eq(EV("{\"name\":\"\",\"type\":\"create\"}"), -EPROTO);
	ck_assert_int_eq(EV("{\"name\":\"a\\u0000b\",\"type\":\"create\"}"), -EPROTO);
	ck_assert_int_eq(EV("{\"name\":\"a\",\"type\":\"open\"}"), -EPROTO);
	ck_assert_int_eq(EV("{\"name\":\"a\"}"), -EPROTO);
	ck_assert_int_eq(EV("[1]"), -EPROTO);
	ck_assert_int_eq(cove_watch_event_parse(NULL, 0, &ev, err, sizeof(err)), -EPROTO);
	ck_assert_int_eq(ev.kind, COVE_WATCH_IDLE);
#undef EV
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("agent_watch");
	TCase *tc = tcase_create("watch");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, watch_flat);
	tcase_add_test(tc, watch_recursive);
	tcase_add_test(tc, watch_ends);
	tcase_add_test(tc, watch_mask_names);
	tcase_add_test(tc, watch_request_and_event_parsers);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN()
