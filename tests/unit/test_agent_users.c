/* guest-agent/users.c: user specs resolved against passwd and group
 * texts, and the files' bounds. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "guest-agent/users.h"
#include "unit.h"

static const char passwd[] = "root:x:0:0:root:/root:/bin/bash\n"
                             "# a comment\n"
                             "\n"
                             "broken line\n"
                             "bad:x:notanumber:1:bad:/bad:/bin/sh\n"
                             "daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n"
                             "app:x:1000:1000:App,,,:/home/app:/bin/sh\n"
                             "nohome:x:1001:1001:::/bin/sh\n"
                             "+nis\n"
                             "last:x:1002:100::/home/last:/bin/sh"; /* no final newline */

static const char group[] = "root:x:0:\n"
                            "daemon:x:1:\n"
                            "users:x:100:app,last\n"
                            "dev:x:500:other,app\n"
                            "app:x:1000:\n"
                            "docker:x:999:app\n"
                            "empty:x:600:\n";

static int resolve(const char *spec, struct agent_user *u, char *err, size_t errlen)
{
	return agent_user_resolve_text(spec, passwd, strlen(passwd), group, strlen(group), u, err,
	                               errlen);
}

static bool has_group(const struct agent_user *u, gid_t g)
{
	for (size_t i = 0; i < u->ngroups; i++)
		if (u->groups[i] == g)
			return true;
	return false;
}

START_TEST(names_and_groups)
{
	struct agent_user u;
	char err[256];
	ck_assert_int_eq(resolve("root", &u, err, sizeof(err)), 0);
	ck_assert_uint_eq(u.uid, 0);
	ck_assert_uint_eq(u.gid, 0);
	ck_assert_str_eq(u.home, "/root");
	ck_assert_uint_eq(u.ngroups, 1);
	ck_assert_int_eq(resolve("app", &u, err, sizeof(err)), 0);
	ck_assert_uint_eq(u.uid, 1000);
	ck_assert_uint_eq(u.gid, 1000);
	ck_assert_str_eq(u.home, "/home/app");
	ck_assert_uint_eq(u.groups[0], 1000); /* the primary group first */
	ck_assert_uint_eq(u.ngroups, 4);
	ck_assert(has_group(&u, 100) && has_group(&u, 500) && has_group(&u, 999));
	ck_assert(!has_group(&u, 600));
	/* Without a final newline, the last entry still counts. */
	ck_assert_int_eq(resolve("last", &u, err, sizeof(err)), 0);
	ck_assert_uint_eq(u.uid, 1002);
	ck_assert_uint_eq(u.gid, 100);
	ck_assert_uint_eq(u.ngroups, 1); /* its primary group lists it too: once */
	/* An empty home is "/". */
	ck_assert_int_eq(resolve("nohome", &u, err, sizeof(err)), 0);
	ck_assert_str_eq(u.home, "/");
}
END_TEST

START_TEST(numbers_and_explicit_groups)
{
	struct agent_user u;
	char err[256];
	/* A uid with an entry takes its gid, home and groups. */
	ck_assert_int_eq(resolve("1000", &u, err, sizeof(err)), 0);
	ck_assert_uint_eq(u.gid, 1000);
	ck_assert_str_eq(u.home, "/home/app");
	ck_assert_uint_eq(u.ngroups, 4);
	/* A uid without one: gid the same number, home "/", no groups. */
	ck_assert_int_eq(resolve("4242", &u, err, sizeof(err)), 0);
	ck_assert_uint_eq(u.uid, 4242);
	ck_assert_uint_eq(u.gid, 4242);
	ck_assert_str_eq(u.home, "/");
	ck_assert_uint_eq(u.ngroups, 1);
	ck_assert_uint_eq(u.groups[0], 4242);
	/* An explicit group is the only one. */
	ck_assert_int_eq(resolve("app:dev", &u, err, sizeof(err)), 0);
	ck_assert_uint_eq(u.uid, 1000);
	ck_assert_uint_eq(u.gid, 500);
	ck_assert_uint_eq(u.ngroups, 1);
	ck_assert_uint_eq(u.groups[0], 500);
	ck_assert_int_eq(resolve("4242:77", &u, err, sizeof(err)), 0);
	ck_assert_uint_eq(u.uid, 4242);
	ck_assert_uint_eq(u.gid, 77);
	ck_assert_int_eq(resolve("app:0", &u, err, sizeof(err)), 0);
	ck_assert_uint_eq(u.gid, 0);
	ck_assert_int_eq(resolve("0", &u, err, sizeof(err)), 0);
	ck_assert_str_eq(u.home, "/root");
	/* The largest id; (uid_t)-1 is not one. */
	ck_assert_int_eq(resolve("4294967294", &u, err, sizeof(err)), 0);
	ck_assert_uint_eq(u.uid, 4294967294u);
	ck_assert_int_eq(resolve("4294967295", &u, err, sizeof(err)), -EINVAL);
	/* No files at all: only numbers work. */
	ck_assert_int_eq(agent_user_resolve_text("7:8", NULL, 0, NULL, 0, &u, err, sizeof(err)), 0);
	ck_assert_uint_eq(u.uid, 7);
	ck_assert_uint_eq(u.gid, 8);
	ck_assert_int_eq(agent_user_resolve_text("root", NULL, 0, NULL, 0, &u, err, sizeof(err)),
	                 -EINVAL);
}
END_TEST

START_TEST(unknown_and_malformed)
{
	struct agent_user u;
	char err[256];
	ck_assert_int_eq(resolve("bob", &u, err, sizeof(err)), -EINVAL);
	ck_assert_str_eq(err, "user 'bob' is not in /etc/passwd");
	ck_assert_int_eq(resolve("app:staff", &u, err, sizeof(err)), -EINVAL);
	ck_assert_str_eq(err, "group 'staff' is not in /etc/group");
	/* Lines the parser skips never match. */
	ck_assert_int_eq(resolve("bad", &u, err, sizeof(err)), -EINVAL);
	ck_assert_int_eq(resolve("broken line", &u, err, sizeof(err)), -EINVAL);
	ck_assert_int_eq(resolve("+nis", &u, err, sizeof(err)), -EINVAL);
	static const char *bad[] = {
		"", ":", "app:", ":dev", "a:b:c", "a b", "a\tb", "\x7f", NULL
	};
	for (size_t i = 0; bad[i]; i++) {
		ck_assert_msg(!agent_user_spec_valid(bad[i]), "%s", bad[i]);
		ck_assert_int_eq(resolve(bad[i], &u, err, sizeof(err)), -EINVAL);
		ck_assert(strchr(err, '\n') == NULL);
	}
	ck_assert(!agent_user_spec_valid(NULL));
	char longspec[AGENT_USER_SPEC_MAX + 2];
	memset(longspec, 'a', sizeof(longspec) - 1);
	longspec[sizeof(longspec) - 1] = 0;
	ck_assert(!agent_user_spec_valid(longspec));
	longspec[AGENT_USER_SPEC_MAX] = 0;
	ck_assert(agent_user_spec_valid(longspec));
	ck_assert(agent_user_spec_valid("www-data:www-data"));
}
END_TEST

START_TEST(long_lines)
{
	struct agent_user u;
	char err[256];
	size_t n = AGENT_USERS_LINE_MAX + 64;
	char *text = malloc(n + 64);
	ck_assert_ptr_nonnull(text);
	/* A line of exactly AGENT_USERS_LINE_MAX bytes is read. */
	int head = snprintf(text, n, "app:x:5:5:");
	size_t tail = strlen(":/h:/bin/sh");
	memset(text + head, 'g', AGENT_USERS_LINE_MAX - (size_t)head - tail);
	strcpy(text + AGENT_USERS_LINE_MAX - tail, ":/h:/bin/sh\n");
	ck_assert_int_eq(strlen(text), AGENT_USERS_LINE_MAX + 1);
	ck_assert_int_eq(
	    agent_user_resolve_text("app", text, strlen(text), NULL, 0, &u, err, sizeof(err)), 0);
	ck_assert_uint_eq(u.uid, 5);
	/* One byte more is refused with a line, wherever the user is. */
	memmove(text + 1, text, strlen(text) + 1);
	text[0] = 'x';
	ck_assert_int_eq(
	    agent_user_resolve_text("root", text, strlen(text), NULL, 0, &u, err, sizeof(err)),
	    -E2BIG);
	ck_assert_str_eq(err, "a line of /etc/passwd is over 4096 bytes");
	ck_assert_int_eq(agent_user_resolve_text("app", passwd, strlen(passwd), text, strlen(text),
	                                         &u, err, sizeof(err)),
	                 -E2BIG);
	ck_assert_str_eq(err, "a line of /etc/group is over 4096 bytes");
	free(text);
}
END_TEST

START_TEST(files)
{
	struct agent_user u;
	char err[256];
	char pw[64], gr[64];
	snprintf(pw, sizeof(pw), "%s", unit_write_tmp(passwd, 0644));
	snprintf(gr, sizeof(gr), "%s", unit_write_tmp(group, 0644));
	ck_assert_int_eq(agent_user_resolve("app", pw, gr, &u, err, sizeof(err)), 0);
	ck_assert_uint_eq(u.ngroups, 4);
	/* A missing group file is an empty one. */
	ck_assert_int_eq(agent_user_resolve("app", pw, "/nonexistent/group", &u, err, sizeof(err)),
	                 0);
	ck_assert_uint_eq(u.ngroups, 1);
	ck_assert_int_eq(agent_user_resolve("app", "/nonexistent/passwd", gr, &u, err, sizeof(err)),
	                 -EINVAL);
	/* Over AGENT_USERS_FILE_MAX: refused with a line. */
	ck_assert_int_eq(truncate(gr, AGENT_USERS_FILE_MAX + 1), 0);
	ck_assert_int_eq(agent_user_resolve("app", pw, gr, &u, err, sizeof(err)), -EFBIG);
	ck_assert(strstr(err, "is over 4194304 bytes") != NULL);
	ck_assert_int_eq(agent_user_resolve("app", pw, "/", &u, err, sizeof(err)), -EINVAL);
	unlink(pw);
	unlink(gr);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("agent_users");
	TCase *tc = tcase_create("users");
	tcase_add_test(tc, names_and_groups);
	tcase_add_test(tc, numbers_and_explicit_groups);
	tcase_add_test(tc, unknown_and_malformed);
	tcase_add_test(tc, long_lines);
	tcase_add_test(tc, files);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN()
