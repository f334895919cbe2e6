/* Unit tests: cove cluster's pure part (cli/cluster.c): the table from GET
 * /cluster's document (states, committed/total, totals of the nodes that
 * are not lost, the fenced line, cleaned strings, malformed documents
 * refused) and the API key from $COVE_API_KEY or a keys file. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cluster.h"
#include "unit.h"

static char err[512];

/* The table of doc, as text (static buffer), or NULL when refused. */
static char *table_of(const char *doc)
{
	static char text[8192];
	FILE *f = fmemopen(text, sizeof(text), "w");
	ck_assert_ptr_nonnull(f);
	int r = cli_cluster_table(f, doc, strlen(doc), err, sizeof(err));
	fclose(f);
	return r == 0 ? text : NULL;
}

/* The line of text that starts with prefix, its spaces squeezed to one. */
static const char *line_of(const char *text, const char *prefix)
{
	static char line[512];
	for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
		if (strncmp(p, prefix, strlen(prefix)))
			continue;
		size_t n = 0;
		for (; *p && *p != '\n' && n + 1 < sizeof(line); p++)
			if (*p != ' ' || (n && line[n - 1] != ' '))
				line[n++] = *p;
		line[n] = 0;
		return line;
	}
	return "";
}

static const char doc3[] =
    "{\"node\": \"n1\", \"self\": {\"fenced\": false},"
    " \"nodes\": ["
    "  {\"id\": \"n1\", \"addr\": \"http://10.0.0.1:3001\", \"version\": \"1\", \"ready\": true,"
    "   \"draining\": false, \"vcpus\": 16, \"vcpus_committed\": 4, \"memory_mib\": 29491,"
    "   \"memory_mib_committed\": 2048, \"sandboxes\": {\"running\": 3, \"paused\": 1},"
    "   \"templates\": [\"base\", \"py\"]},"
    "  {\"id\": \"n2\", \"addr\": \"http://10.0.0.2:3001\", \"ready\": true, \"draining\": true,"
    "   \"vcpus\": 8, \"vcpus_committed\": 2, \"memory_mib\": 14000,"
    "   \"memory_mib_committed\": 512, \"sandboxes\": {\"running\": 1, \"paused\": 0},"
    "   \"templates\": []},"
    "  {\"id\": \"n3\", \"addr\": \"http://10.0.0.3:3001\", \"ready\": false, \"draining\": true,"
    "   \"vcpus\": 32, \"vcpus_committed\": 30, \"memory_mib\": 60000,"
    "   \"memory_mib_committed\": 9000, \"sandboxes\": {\"running\": 7, \"paused\": 2}}"
    " ]}";

START_TEST(table_states_and_totals)
{
	char *t = table_of(doc3);
	ck_assert_msg(t != NULL, "%s", err);
	ck_assert_str_eq(line_of(t, "NODE"),
	                 "NODE ADDR STATE VCPUS MEMORY RUNNING PAUSED TEMPLATES");
	ck_assert_str_eq(line_of(t, "n1 "),
	                 "n1 http://10.0.0.1:3001 ready 4/16 2048/29491 3 1 base,py");
	ck_assert_str_eq(line_of(t, "n2 "), "n2 http://10.0.0.2:3001 draining 2/8 512/14000 1 0 -");
	/* Not ready wins over draining: the node is gone. */
	ck_assert_str_eq(line_of(t, "n3 "), "n3 http://10.0.0.3:3001 lost 30/32 9000/60000 7 2 -");
	/* The totals leave the lost node out. */
	ck_assert_str_eq(line_of(t, "total"), "total 3 nodes 2 live 6/24 2560/43491 4 1 -");
	ck_assert_ptr_null(strstr(t, "fenced"));
	/* Columns line up: every row is as long up to TEMPLATES. */
	const char *head = strstr(t, "TEMPLATES"), *n1 = strstr(t, "base,py");
	ck_assert_int_eq(head - t, n1 - strchr(t, '\n') - 1);
}
END_TEST

START_TEST(table_fenced_self)
{
	char *t =
	    table_of("{\"node\": \"n1\", \"self\": {\"fenced\": true, \"reason\": \"etcd "
	             "unreachable for 12 s\"},"
	             " \"nodes\": [{\"id\": \"n1\", \"addr\": \"http://h:1\", \"ready\": false,"
	             " \"vcpus\": 2, \"memory_mib\": 100}]}");
	ck_assert_msg(t != NULL, "%s", err);
	/* The fenced node keeps serving: it counts in the totals. */
	ck_assert_str_eq(line_of(t, "n1 "), "n1 http://h:1 fenced 0/2 0/100 0 0 -");
	ck_assert_str_eq(line_of(t, "total"), "total 1 node 1 live 0/2 0/100 0 0 -");
	ck_assert_str_eq(line_of(t, "this coved"),
	                 "this coved (n1) is fenced: etcd unreachable for 12 s");
}
END_TEST

START_TEST(table_empty_and_defaults)
{
	char *t = table_of("{\"node\": \"n1\", \"nodes\": []}");
	ck_assert_msg(t != NULL, "%s", err);
	ck_assert_str_eq(line_of(t, "total"), "total 0 nodes 0 live 0/0 0/0 0 0 -");
	/* Absent fields are "-" and 0. */
	t = table_of("{\"nodes\": [{\"id\": \"x\", \"ready\": true}]}");
	ck_assert_msg(t != NULL, "%s", err);
	ck_assert_str_eq(line_of(t, "x "), "x - ready 0/0 0/0 0 0 -");
}
END_TEST

START_TEST(table_cleans_and_cuts)
{
	char *t =
	    table_of("{\"nodes\": [{\"id\": \"a\\u001b[2Jb\", \"addr\": \"x\\ny\", \"ready\": "
	             "true, \"templates\": [\"t-0123456789\", \"t-1123456789\", "
	             "\"t-2123456789\", \"t-3123456789\", \"t-4123456789\"]}]}");
	ck_assert_msg(t != NULL, "%s", err);
	ck_assert_ptr_null(strchr(t, '\033'));
	ck_assert_str_eq(line_of(t, "a?[2Jb "), "a?[2Jb x?y ready 0/0 0/0 0 0 "
	                                        "t-0123456789,t-1123456789,t-2123456789,...");
}
END_TEST

START_TEST(table_refuses_malformed)
{
	static const char *bad[] = {
		"",
		"[]",
		"{\"nodes\": {}}",
		"{\"node\": 1, \"nodes\": []}",
		"{\"self\": [], \"nodes\": []}",
		"{\"nodes\": [1]}",
		"{\"nodes\": [{\"addr\": \"no id\"}]}",
		"{\"nodes\": [{\"id\": \"a\", \"vcpus\": -1}]}",
		"{\"nodes\": [{\"id\": \"a\", \"vcpus\": \"16\"}]}",
		"{\"nodes\": [{\"id\": \"a\", \"ready\": 1}]}",
		"{\"nodes\": [{\"id\": \"a\", \"sandboxes\": {\"running\": 1.5}}]}",
		"{\"nodes\": [{\"id\": \"a\", \"templates\": [3]}]}",
		"{\"nodes\": [], \"nodes\": []}",
		"{\"nodes\": [{\"id\": \"a\"}]",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = 0;
		ck_assert_msg(table_of(bad[i]) == NULL, "accepted %s", bad[i]);
		ck_assert_msg(strstr(err, "coved's answer") != NULL, "%s", err);
	}
}
END_TEST

static int key_of(const char *file_text, mode_t mode, const char *env, char *key, size_t len)
{
	char *p = file_text ? unit_write_tmp(file_text, mode) : NULL;
	int r = cli_cluster_key(p, env, key, len, err, sizeof(err));
	if (p)
		unlink(p);
	return r;
}

START_TEST(key_from_env_and_file)
{
	char key[CLI_CLUSTER_KEY_MAX];
	ck_assert_int_eq(key_of(NULL, 0, "env-key-0123456789", key, sizeof(key)), 0);
	ck_assert_str_eq(key, "env-key-0123456789");
	/* The file wins over the environment; its first key, tenant or not. */
	ck_assert_int_eq(key_of("# ops\n\nops:first-key-0123456789\nsecond-key-0123456789\n", 0600,
	                        "env-key-0123456789", key, sizeof(key)),
	                 0);
	ck_assert_str_eq(key, "first-key-0123456789");
	ck_assert_int_eq(key_of("bare-key-0123456789abcdef\n", 0400, NULL, key, sizeof(key)), 0);
	ck_assert_str_eq(key, "bare-key-0123456789abcdef");
}
END_TEST

START_TEST(key_refusals)
{
	char key[CLI_CLUSTER_KEY_MAX];
	ck_assert_int_eq(key_of(NULL, 0, NULL, key, sizeof(key)), -ENOKEY);
	ck_assert_ptr_nonnull(strstr(err, "COVE_API_KEY"));
	ck_assert_int_eq(key_of(NULL, 0, "", key, sizeof(key)), -ENOKEY);
	/* Nothing that would end the header. */
	ck_assert_int_eq(key_of(NULL, 0, "key-0123456789\r\nX: y", key, sizeof(key)), -EINVAL);
	ck_assert_int_eq(key_of(NULL, 0, "0123456789abcdef", key, 8), -E2BIG);
	/* A key file others may read is refused, as coved refuses it. */
	ck_assert_int_eq(key_of("ops:first-key-0123456789\n", 0640, NULL, key, sizeof(key)),
	                 -EPERM);
	ck_assert_ptr_nonnull(strstr(err, "chmod 600"));
	ck_assert_int_eq(key_of("short\n", 0600, NULL, key, sizeof(key)), -EINVAL);
	ck_assert_int_eq(key_of("# nothing\n", 0600, NULL, key, sizeof(key)), -EINVAL);
	ck_assert_int_eq(key_of("ops:first-key-0123456789\n", 0600, NULL, key, 8), -E2BIG);
	ck_assert_int_eq(
	    cli_cluster_key("/nonexistent/keys", NULL, key, sizeof(key), err, sizeof(err)),
	    -ENOENT);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("cluster_cli");
	TCase *tc = tcase_create("cluster_cli");
	tcase_add_test(tc, table_states_and_totals);
	tcase_add_test(tc, table_fenced_self);
	tcase_add_test(tc, table_empty_and_defaults);
	tcase_add_test(tc, table_cleans_and_cuts);
	tcase_add_test(tc, table_refuses_malformed);
	tcase_add_test(tc, key_from_env_and_file);
	tcase_add_test(tc, key_refusals);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN()
