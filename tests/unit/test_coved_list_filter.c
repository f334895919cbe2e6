/* Unit tests: the list's filters (daemon/sandboxes/list_filter.c): no
 * state asked shows running, paused and dead; a list of states; a
 * template exactly; every metadata pair, each decoded as E2B's SDK
 * encodes them (encodeURIComponent, then URLSearchParams: '+' a space),
 * a pair without '=' or with a bad escape matching nothing, empty pairs
 * skipped. */
#include <jansson.h>

#include "daemon/sandboxes/list_filter.h"
#include "unit.h"

START_TEST(states_and_template)
{
	struct coved_list_filter f = { 0 };
	ck_assert(coved_list_filter_match(&f, "running", "base", NULL));
	ck_assert(coved_list_filter_match(&f, "dead", "base", NULL));
	ck_assert(!coved_list_filter_match(&f, "stopped", "base", NULL));
	f.states = "paused,stopped";
	ck_assert(coved_list_filter_match(&f, "stopped", "base", NULL));
	ck_assert(!coved_list_filter_match(&f, "running", "base", NULL));
	ck_assert(!coved_list_filter_match(&f, "pause", "base", NULL));
	f = (struct coved_list_filter){ .template_id = "base" };
	ck_assert(coved_list_filter_match(&f, "running", "base", NULL));
	ck_assert(!coved_list_filter_match(&f, "running", "base2", NULL));
	ck_assert(!coved_list_filter_match(&f, "running", NULL, NULL));
	f.template_id = "";
	ck_assert(coved_list_filter_match(&f, "running", NULL, NULL));
}
END_TEST

START_TEST(metadata)
{
	json_t *m = json_pack("{s:s, s:s, s:s}", "owner", "console test", "note", "<img src=x>&a=b",
	                      "k", "v");
	struct coved_list_filter f = { .metadata = "k=v" };
	ck_assert(coved_list_filter_match(&f, "running", "t", m));
	f.metadata = "k=v&owner=console+test";
	ck_assert(coved_list_filter_match(&f, "running", "t", m));
	f.metadata = "owner=console%20test&note=%3Cimg+src%3Dx%3E%26a%3Db";
	ck_assert(coved_list_filter_match(&f, "running", "t", m));
	/* As E2B's SDK sends them: encodeURIComponent, then URLSearchParams. */
	f.metadata = "owner=console%2520test&note=%253Cimg%2520src%253Dx%253E%2526a%253Db";
	ck_assert(coved_list_filter_match(&f, "running", "t", m));
	f.metadata = "owner=console%25";
	ck_assert(!coved_list_filter_match(&f, "running", "t", m));
	f.metadata = "k=w";
	ck_assert(!coved_list_filter_match(&f, "running", "t", m));
	f.metadata = "k=v&missing=1";
	ck_assert(!coved_list_filter_match(&f, "running", "t", m));
	f.metadata = "k";
	ck_assert(!coved_list_filter_match(&f, "running", "t", m));
	f.metadata = "k=v%";
	ck_assert(!coved_list_filter_match(&f, "running", "t", m));
	f.metadata = "k=v%4";
	ck_assert(!coved_list_filter_match(&f, "running", "t", m));
	f.metadata = "k=%zz";
	ck_assert(!coved_list_filter_match(&f, "running", "t", m));
	f.metadata = "k=v%00";
	ck_assert(!coved_list_filter_match(&f, "running", "t", m));
	f.metadata = "k=v";
	ck_assert(!coved_list_filter_match(&f, "running", "t", NULL));
	f.metadata = "&k=v&&"; /* empty pairs are no pairs */
	ck_assert(coved_list_filter_match(&f, "running", "t", m));
	json_decref(m);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("coved_list_filter");
	TCase *tc = tcase_create("filter");
	tcase_add_test(tc, states_and_template);
	tcase_add_test(tc, metadata);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN()
