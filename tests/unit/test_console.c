/* Unit tests: which console file a request path names
 * (daemon/api/console_path.c): "/ui" redirects, "/ui/" is index.html, a
 * plain name is itself, and nothing leaves the one flat folder of files
 * (no "..", no dot files, no sub-folders, no odd bytes). */
#include <string.h>

#include "daemon/api/console_path.h"
#include "unit.h"

static enum coved_console_kind kind(const char *url, char *name)
{
	return coved_console_path(url, name, 64);
}

START_TEST(names)
{
	char name[64];
	ck_assert_int_eq(kind("/ui", name), CONSOLE_REDIRECT);
	ck_assert_int_eq(kind("/ui/", name), CONSOLE_FILE);
	ck_assert_str_eq(name, "index.html");
	ck_assert_int_eq(kind("/ui/console.js", name), CONSOLE_FILE);
	ck_assert_str_eq(name, "console.js");
	ck_assert_int_eq(kind("/ui/a-b_c.1.css", name), CONSOLE_FILE);
	ck_assert_str_eq(name, "a-b_c.1.css");
}
END_TEST

START_TEST(not_ours)
{
	char name[64];
	ck_assert_int_eq(kind("/", name), CONSOLE_NONE);
	ck_assert_int_eq(kind("/uix", name), CONSOLE_NONE);
	ck_assert_int_eq(kind("/u", name), CONSOLE_NONE);
	ck_assert_int_eq(kind("/sandboxes", name), CONSOLE_NONE);
	ck_assert_int_eq(kind("", name), CONSOLE_NONE);
}
END_TEST

START_TEST(refused)
{
	char name[64];
	const char *bad[] = {
		"/ui/..",   "/ui/../etc/passwd", "/ui/.hidden", "/ui/a/b.js",      "/ui/a%2fb",
		"/ui/A.js", "/ui/a b",           "/ui/x\n.js",  "/ui/\xc3\xa9.js", "/ui//",
		"/ui/./x"
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(kind(bad[i], name) == CONSOLE_MISSING, "%s", bad[i]);
	/* A name that does not fit the caller's buffer is no file. */
	char small[8];
	ck_assert_int_eq(coved_console_path("/ui/abcdefgh.js", small, sizeof(small)),
	                 CONSOLE_MISSING);
	ck_assert_int_eq(coved_console_path("/ui/abc.js", small, sizeof(small)), CONSOLE_FILE);
	ck_assert_int_eq(coved_console_path("/ui/abc.js", small, 0), CONSOLE_MISSING);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("console");
	TCase *tc = tcase_create("paths");
	tcase_add_test(tc, names);
	tcase_add_test(tc, not_ours);
	tcase_add_test(tc, refused);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN()
