/* Unit tests: coved's tenants (daemon/conf/keys.c, config.c): the API keys file's
 * TENANT:KEY and bare-key lines, its refusals (mode, bad lines, each with
 * its line number), the "tenants" and "tenant_defaults" quotas, the TLS
 * and listener keys, and the quota arithmetic. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/conf/config.h"
#include "daemon/conf/keys.h"
#include "unit.h"

static char err[512];

static int keys_of(const char *text, mode_t mode, struct coved_key **k, size_t *n)
{
	char *p = unit_write_tmp(text, mode);
	int r = coved_keys_load(p, k, n, err, sizeof(err));
	unlink(p);
	return r;
}

START_TEST(keys_tenants)
{
	struct coved_key *k;
	size_t n;
	ck_assert_int_eq(keys_of("# two tenants and a bare key\n"
	                         "alice:alice-key-0123456789\n"
	                         "\n"
	                         "bob.team-2:bob-key-0123456789ab  \n"
	                         "alice:alice-second-key-0123\r\n"
	                         "bare-key-0123456789abcdef\n",
	                         0600, &k, &n),
	                 0);
	ck_assert_uint_eq(n, 4);
	ck_assert_str_eq(k[0].tenant, "alice");
	ck_assert_str_eq(k[0].key, "alice-key-0123456789");
	ck_assert_str_eq(k[1].tenant, "bob.team-2");
	ck_assert_str_eq(k[1].key, "bob-key-0123456789ab"); /* trailing blanks go */
	ck_assert_str_eq(k[2].tenant, "alice");
	ck_assert(k[0].t == NULL);
	/* A bare key is its own tenant, named by a hash, never the key. */
	ck_assert_uint_eq(strlen(k[3].tenant), 16);
	ck_assert(strncmp(k[3].tenant, "key-", 4) == 0);
	ck_assert(strstr(k[3].tenant, "0123") == NULL);
	ck_assert(coved_tenant_name_ok(k[3].tenant, strlen(k[3].tenant)));
	ck_assert_str_eq(k[3].key, "bare-key-0123456789abcdef");
	char first[COVED_TENANT_LEN + 1];
	snprintf(first, sizeof(first), "%s", k[3].tenant);
	coved_keys_free(k, n);
	/* The same bare key names the same tenant on every load. */
	ck_assert_int_eq(
	    keys_of("bare-key-0123456789abcdef\nother-bare-key-0123456\n", 0600, &k, &n), 0);
	ck_assert_str_eq(k[0].tenant, first);
	ck_assert_str_ne(k[1].tenant, first);
	coved_keys_free(k, n);
}
END_TEST

START_TEST(keys_refusals)
{
	struct coved_key *k;
	size_t n;
	ck_assert_int_eq(keys_of("alice:alice-key-0123456789\n", 0640, &k, &n), -EPERM);
	ck_assert_msg(strstr(err, "chmod 600") && !strchr(err, '\n'), "%s", err);
	ck_assert_int_eq(keys_of("alice:alice-key-0123456789\n", 0604, &k, &n), -EPERM);
	static const struct {
		const char *text, *why;
	} bad[] = {
		{ "alice:short\n", "line 1: a key is shorter than 16 bytes" },
		{ "# c\nbad tenant:key-0123456789abcdef\n", "line 2: the tenant before ':'" },
		{ ":key-0123456789abcdef\n", "line 1: the tenant before ':'" },
		{ "..:key-0123456789abcdef\n", "line 1: the tenant before ':'" },
		{ "alice:key with space 0123456789\n", "line 1: a key holds a space" },
		{ "a:key-0123456789abcdef\nb:key-0123456789abcdef\n",
		  "line 2: a key given before" },
		{ "# only a comment\n\n", "holds no key" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_msg(keys_of(bad[i].text, 0600, &k, &n) == -EINVAL, "accepted: %s",
		              bad[i].text);
		ck_assert_msg(strstr(err, bad[i].why) && !strchr(err, '\n'), "'%s' gave '%s'",
		              bad[i].text, err);
		ck_assert(k == NULL && n == 0);
	}
	char big[700];
	memset(big, 'x', sizeof(big) - 2);
	big[sizeof(big) - 2] = '\n';
	big[sizeof(big) - 1] = 0;
	ck_assert_int_eq(keys_of(big, 0600, &k, &n), -EINVAL);
	ck_assert_msg(strstr(err, "line 1: longer than"), "%s", err);
}
END_TEST

static int config_of(const char *text, struct coved_config *c)
{
	char *p = unit_write_tmp(text, 0600);
	int r = coved_config_load(p, c, err, sizeof(err));
	unlink(p);
	return r;
}

START_TEST(config_tenants)
{
	struct coved_config c;
	struct coved_quota q;
	ck_assert_int_eq(coved_config_load(NULL, &c, err, sizeof(err)), 0);
	coved_config_quota(&c, "anyone", &q);
	ck_assert(q.max_sandboxes == UINT64_MAX && q.max_memory_mib == UINT64_MAX);
	ck_assert(c.header_timeout_s == 10 && c.max_connections_per_ip == 32 && !c.tls_cert);
	coved_config_free(&c);
	ck_assert_int_eq(config_of("{\"tenants\":{\"alice\":{\"max_sandboxes\":0,\"max_cpus\":4},"
	                           "\"bob\":{}},"
	                           "\"tenant_defaults\":{\"max_creates\":2},"
	                           "\"tcp\":\"127.0.0.1:3000\",\"tls_cert\":\"/c.pem\","
	                           "\"tls_key\":\"/k.pem\",\"header_timeout_s\":3,"
	                           "\"max_connections_per_ip\":4}",
	                           &c),
	                 0);
	coved_config_quota(&c, "alice", &q);
	ck_assert(q.max_sandboxes == 0 && q.max_cpus == 4 && q.max_creates == 2 &&
	          q.max_memory_mib == UINT64_MAX);
	coved_config_quota(&c, "carol", &q);
	ck_assert(q.max_sandboxes == UINT64_MAX && q.max_creates == 2);
	ck_assert_str_eq(c.tls_key, "/k.pem");
	ck_assert(c.header_timeout_s == 3 && c.max_connections_per_ip == 4);
	coved_config_free(&c);
	static const char *const bad[] = {
		"{\"tenants\":[]}",
		"{\"tenants\":{\"a b\":{}}}",
		"{\"tenants\":{\"a\":{\"max_sandbox\":1}}}",
		"{\"tenants\":{\"a\":{\"max_cpus\":-1}}}",
		"{\"tenants\":{\"a\":3}}",
		"{\"tenant_defaults\":{\"max_memory_mib\":\"1\"}}",
		"{\"tls_cert\":\"/c.pem\"}",
		"{\"header_timeout_s\":0}",
		"{\"max_connections_per_ip\":0}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_msg(config_of(bad[i], &c) == -EINVAL, "accepted: %s", bad[i]);
		ck_assert_msg(!strchr(err, '\n'), "%s", err);
		coved_config_free(&c);
	}
}
END_TEST

START_TEST(quota_arithmetic)
{
	const struct coved_quota q = {
		.max_sandboxes = 2, .max_creates = 1, .max_cpus = 4, .max_memory_mib = 1024
	};
	struct coved_usage used = { .sandboxes = 1, .cpus = 2, .memory_mib = 512 };
	struct coved_usage one = { .sandboxes = 1, .creates = 1, .cpus = 2, .memory_mib = 512 };
	char msg[300];
	ck_assert_int_eq(coved_quota_check("a", &q, &used, &one, msg, sizeof(msg)), 0);
	used.sandboxes = 2;
	ck_assert_int_eq(coved_quota_check("a", &q, &used, &one, msg, sizeof(msg)), 429);
	ck_assert_msg(strstr(msg, "tenant a holds 2 of its 2 sandboxes (max_sandboxes)"), "%s",
	              msg);
	used.sandboxes = 1;
	used.creates = 1;
	ck_assert_int_eq(coved_quota_check("a", &q, &used, &one, msg, sizeof(msg)), 429);
	ck_assert_msg(strstr(msg, "max_creates"), "%s", msg);
	used.creates = 0;
	one.cpus = 3;
	ck_assert_int_eq(coved_quota_check("a", &q, &used, &one, msg, sizeof(msg)), 429);
	ck_assert_msg(strstr(msg, "max_cpus") && strstr(msg, "needs 3 more"), "%s", msg);
	one.cpus = 2;
	one.memory_mib = 513;
	ck_assert_int_eq(coved_quota_check("a", &q, &used, &one, msg, sizeof(msg)), 429);
	ck_assert_msg(strstr(msg, "max_memory_mib"), "%s", msg);
	/* A resume adds only a create: a full sandbox count does not stop it. */
	used.sandboxes = 2;
	const struct coved_usage resume = { .creates = 1 };
	ck_assert_int_eq(coved_quota_check("a", &q, &used, &resume, msg, sizeof(msg)), 0);
	/* Quota 0: nothing at all; usage above a lowered quota: no wrap. */
	const struct coved_quota zero = { 0, 0, 0, 0 };
	const struct coved_usage none = { 0 };
	ck_assert_int_eq(coved_quota_check("b", &zero, &none, &one, msg, sizeof(msg)), 429);
	used.cpus = 10;
	one.memory_mib = 1;
	ck_assert_int_eq(coved_quota_check("a", &q, &used, &one, msg, sizeof(msg)), 429);
	const struct coved_quota unl = { UINT64_MAX, UINT64_MAX, UINT64_MAX, UINT64_MAX };
	ck_assert_int_eq(coved_quota_check("c", &unl, &used, &one, msg, sizeof(msg)), 0);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("coved_tenants");
	TCase *tc = tcase_create("tenants");
	tcase_add_test(tc, keys_tenants);
	tcase_add_test(tc, keys_refusals);
	tcase_add_test(tc, config_tenants);
	tcase_add_test(tc, quota_arithmetic);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN()
