/* Unit tests: coved's tenants (daemon/conf/keys.c, config.c): the API keys file's
 * TENANT:KEY and bare-key lines, its refusals (mode, bad lines, each with
 * its line number), the "tenants" and "tenant_defaults" quotas, the TLS
 * and listener keys, the quota arithmetic, the per-node ranges (runtime_dir,
 * cgroup_parent, jail_ids, net_indexes) and the "cluster" object. */
#include <errno.h>
#include <jansson.h>
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

/* The per-node ranges: good ones reach the environment, bad ones give
 * one line naming the key and the value. */
START_TEST(config_ranges)
{
	struct coved_config c;
	unsetenv("COVE_JAIL_IDS");
	unsetenv("COVE_NET_INDEXES");
	setenv("COVE_RUNTIME_DIR", "/run/inherited", 1);
	ck_assert_int_eq(config_of("{\"cgroup_parent\":\"/sys/fs/cgroup/cove-n1\","
	                           "\"jail_ids\":\"1900100000-1900100999\","
	                           "\"net_indexes\":\"1000-1999\",\"runtime_dir\":null}",
	                           &c),
	                 0);
	ck_assert_ptr_null(c.runtime_dir);
	ck_assert_str_eq(c.jail_ids, "1900100000-1900100999");
	ck_assert_int_eq(coved_config_setenv(&c, err, sizeof(err)), 0);
	ck_assert_str_eq(getenv("COVE_RUNTIME_DIR"), "/run/inherited"); /* not given: kept */
	ck_assert_str_eq(getenv("COVE_CGROUP_PARENT"), "/sys/fs/cgroup/cove-n1");
	ck_assert_str_eq(getenv("COVE_JAIL_IDS"), "1900100000-1900100999");
	ck_assert_str_eq(getenv("COVE_NET_INDEXES"), "1000-1999");
	coved_config_free(&c);
	ck_assert_int_eq(config_of("{\"runtime_dir\":\"/run/cove-n1\",\"net_indexes\":\"0-16383\","
	                           "\"jail_ids\":\"1-4294967294\"}",
	                           &c),
	                 0);
	ck_assert_int_eq(coved_config_setenv(&c, err, sizeof(err)), 0);
	ck_assert_str_eq(getenv("COVE_RUNTIME_DIR"), "/run/cove-n1");
	coved_config_free(&c);
	static const struct {
		const char *text, *why;
	} bad[] = {
		{ "{\"jail_ids\":\"0-5\"}", "'jail_ids' must be \"FIRST-LAST\" with 1 <= FIRST <= "
		                            "LAST <= 4294967294, got '0-5'" },
		{ "{\"jail_ids\":\"5-4\"}", "'jail_ids' must be \"FIRST-LAST\"" },
		{ "{\"jail_ids\":\"1-4294967295\"}", "got '1-4294967295'" },
		{ "{\"jail_ids\":5}", "'jail_ids' must be \"FIRST-LAST\" with 1 <= FIRST <= LAST "
		                      "<= 4294967294, got 5" },
		{ "{\"net_indexes\":\"0-16384\"}", "'net_indexes' must be \"FIRST-LAST\" with 0 <= "
		                                   "FIRST <= LAST <= 16383, got '0-16384'" },
		{ "{\"net_indexes\":\"10\"}", "'net_indexes' must be" },
		{ "{\"net_indexes\":\" 1-2\"}", "got ' 1-2'" },
		{ "{\"net_indexes\":\"1-2-3\"}", "got '1-2-3'" },
		{ "{\"net_indexes\":\"-1-2\"}", "got '-1-2'" },
		{ "{\"runtime_dir\":\"run/cove\"}", "'runtime_dir' must be an absolute path of at "
		                                    "most 50 bytes or null, got 'run/cove'" },
		{ "{\"runtime_dir\":\"/run/cove-a-runtime-directory-too-long-for-its-sockets\"}",
		  "'runtime_dir' must be an absolute path" },
		{ "{\"cgroup_parent\":\"\"}", "'cgroup_parent' must be an absolute path" },
		{ "{\"cgroup_parent\":[1]}", "'cgroup_parent' must be an absolute path of at most "
		                             "4000 bytes or null, got [1]" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_msg(config_of(bad[i].text, &c) == -EINVAL, "accepted: %s", bad[i].text);
		ck_assert_msg(strstr(err, bad[i].why) && !strchr(err, '\n'), "'%s' gave '%s'",
		              bad[i].text, err);
		coved_config_free(&c);
	}
	unsetenv("COVE_RUNTIME_DIR");
	unsetenv("COVE_CGROUP_PARENT");
	unsetenv("COVE_JAIL_IDS");
	unsetenv("COVE_NET_INDEXES");
}
END_TEST

#define SECRET "0123456789abcdef0123456789abcdef-secret"

static char secret_path[64];

/* A secret file of text and mode at secret_path. */
static void secret_file(const char *text, mode_t mode)
{
	snprintf(secret_path, sizeof(secret_path), "%s", unit_write_tmp(text, mode));
}

/* A config with the good "cluster" object (and "tcp"), its key set to the
 * JSON value (value NULL: without key). */
static int cluster_with(const char *key, const char *value, struct coved_config *c)
{
	json_t *o =
	    json_pack("{s:s, s:{s:[s,s], s:s, s:s, s:i, s:s, s:{s:i, s:i}, s:s}}", "tcp",
	              "127.0.0.1:3001", "cluster", "etcd", "http://127.0.0.1:2379",
	              "https://[::1]:2379", "node_id", "n-1", "advertise", "http://127.0.0.1:3001",
	              "lease_ttl_s", 6, "secret_file", secret_path, "capacity", "vcpus", 16,
	              "memory_mib", 32768, "shared_snapshot_dir", "/mnt/cove-shared");
	ck_assert_ptr_nonnull(o);
	json_t *cl = json_object_get(o, "cluster");
	if (key && value)
		ck_assert_int_eq(
		    json_object_set_new(cl, key, json_loads(value, JSON_DECODE_ANY, NULL)), 0);
	else if (key)
		ck_assert_int_eq(json_object_del(cl, key), 0);
	char *text = json_dumps(o, 0);
	int r = config_of(text, c);
	free(text);
	json_decref(o);
	return r;
}

START_TEST(config_cluster)
{
	struct coved_config c;
	secret_file(SECRET "\n", 0600);
	ck_assert_int_eq(config_of("{}", &c), 0);
	ck_assert(!c.cluster.on && !c.cluster.secret);
	coved_config_free(&c);
	ck_assert_msg(cluster_with(NULL, NULL, &c) == 0, "%s", err);
	const struct coved_cluster_config *k = &c.cluster;
	ck_assert(k->on && k->netcd == 2);
	ck_assert_str_eq(k->etcd[0], "http://127.0.0.1:2379");
	ck_assert_str_eq(k->etcd[1], "https://[::1]:2379");
	ck_assert_str_eq(k->node_id, "n-1");
	ck_assert_str_eq(k->advertise, "http://127.0.0.1:3001");
	ck_assert_uint_eq(k->lease_ttl_s, 6);
	ck_assert_str_eq(k->secret, SECRET); /* its newline stripped */
	ck_assert(k->cap_vcpus == 16 && k->cap_memory_mib == 32768);
	ck_assert_str_eq(k->shared_snapshot_dir, "/mnt/cove-shared");
	coved_config_free(&c);
	/* The defaults: lease 10 s, the host's CPUs and 9/10 of its memory. */
	ck_assert_int_eq(cluster_with("lease_ttl_s", NULL, &c), 0);
	ck_assert_uint_eq(c.cluster.lease_ttl_s, 10);
	coved_config_free(&c);
	ck_assert_int_eq(cluster_with("capacity", "{}", &c), 0);
	ck_assert_uint_eq(c.cluster.cap_vcpus, (uint64_t)sysconf(_SC_NPROCESSORS_ONLN));
	ck_assert(c.cluster.cap_memory_mib > 0 &&
	          c.cluster.cap_memory_mib <
	              (uint64_t)sysconf(_SC_PHYS_PAGES) * (uint64_t)sysconf(_SC_PAGESIZE) >> 20);
	coved_config_free(&c);
	ck_assert_int_eq(cluster_with("shared_snapshot_dir", NULL, &c), 0);
	ck_assert_ptr_null(c.cluster.shared_snapshot_dir);
	coved_config_free(&c);
	ck_assert_int_eq(cluster_with("etcd", "[\"https://etcd.example\"]", &c), 0);
	coved_config_free(&c);
	unlink(secret_path);
}
END_TEST

/* Each bad field of "cluster": one line naming it. */
START_TEST(config_cluster_refusals)
{
	struct coved_config c;
	secret_file(SECRET "\n", 0600);
	static const struct {
		const char *key, *value, *why;
	} bad[] = {
		{ "etcd", "[]", "'cluster.etcd' must be an array of 1 to 8 distinct URLs" },
		{ "etcd", "\"http://127.0.0.1:2379\"", "'cluster.etcd' must be" },
		{ "etcd", "[\"ftp://e:2379\"]", "'cluster.etcd'" },
		{ "etcd", "[\"http://e:2379/v3\"]", "'cluster.etcd'" },
		{ "etcd", "[\"http://e:2379\",\"http://e:2379\"]", "'cluster.etcd'" },
		{ "etcd",
		  "[\"http://a\",\"http://b\",\"http://c\",\"http://d\",\"http://e\","
		  "\"http://f\",\"http://g\",\"http://h\",\"http://i\"]",
		  "'cluster.etcd'" },
		{ "etcd", NULL, "'cluster.etcd' is missing" },
		{ "node_id", "\"N1\"", "'cluster.node_id' must be 1 to 32 of a-z 0-9 -, got 'N1'" },
		{ "node_id", "\"\"", "'cluster.node_id'" },
		{ "node_id", "\"n123456789012345678901234567890123\"", "'cluster.node_id'" },
		{ "node_id", "7", "'cluster.node_id' must be 1 to 32 of a-z 0-9 -, got 7" },
		{ "node_id", NULL, "'cluster.node_id' is missing" },
		{ "advertise", "\"http://127.0.0.1\"",
		  "'cluster.advertise' must be http(s)://HOST:PORT without a path, got "
		  "'http://127.0.0.1'" },
		{ "advertise", "\"http://h:0\"", "'cluster.advertise'" },
		{ "advertise", "\"http://h:65536\"", "'cluster.advertise'" },
		{ "advertise", "\"http://h:3001/\"", "'cluster.advertise'" },
		{ "advertise", "\"127.0.0.1:3001\"", "'cluster.advertise'" },
		{ "advertise", "\"http://u@h:3001\"", "'cluster.advertise'" },
		{ "advertise", NULL, "'cluster.advertise' is missing" },
		{ "lease_ttl_s", "1", "'cluster.lease_ttl_s' must be an integer from 2 to 300" },
		{ "lease_ttl_s", "301", "'cluster.lease_ttl_s'" },
		{ "lease_ttl_s", "\"10\"", "'cluster.lease_ttl_s'" },
		{ "secret_file", NULL, "'cluster.secret_file' is missing" },
		{ "secret_file", "\"/nonexistent/secret\"",
		  "'cluster.secret_file': /nonexistent/secret: No such file" },
		{ "secret_file", "\"/tmp\"", "'cluster.secret_file': /tmp: not a regular file" },
		{ "capacity", "[]", "'cluster.capacity' must be an object" },
		{ "capacity", "{\"cpus\":4}", "'cluster.capacity.cpus'" },
		{ "capacity", "{\"vcpus\":0}", "'cluster.capacity.vcpus' must be an integer" },
		{ "capacity", "{\"memory_mib\":-1}", "'cluster.capacity.memory_mib'" },
		{ "shared_snapshot_dir", "\"mnt/shared\"",
		  "'cluster.shared_snapshot_dir' must be an absolute path" },
		{ "bogus", "1", "unknown config key 'cluster.bogus'" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_msg(cluster_with(bad[i].key, bad[i].value, &c) < 0 &&
		                  strstr(err, bad[i].why) && !strchr(err, '\n'),
		              "%s=%s gave '%s'", bad[i].key, bad[i].value, err);
		coved_config_free(&c);
	}
	/* Cluster mode needs the node listener. */
	char text[256];
	snprintf(text, sizeof(text),
	         "{\"cluster\":{\"etcd\":[\"http://e:2379\"],\"node_id\":\"n1\","
	         "\"advertise\":\"http://h:3001\",\"secret_file\":\"%s\"}}",
	         secret_path);
	ck_assert_int_eq(config_of(text, &c), -EINVAL);
	ck_assert_msg(strstr(err, "\"cluster\" needs \"tcp\"") && !strchr(err, '\n'), "%s", err);
	coved_config_free(&c);
	ck_assert_int_eq(config_of("{\"cluster\":[]}", &c), -EINVAL);
	ck_assert_msg(strstr(err, "'cluster' must be an object"), "%s", err);
	coved_config_free(&c);
	unlink(secret_path);
	/* The secret file: 0600, one line of at least 32 printable bytes;
	 * the secret itself never in the error. */
	static const struct {
		const char *text;
		mode_t mode;
		int r;
		const char *why;
	} sec[] = {
		{ SECRET "\n", 0644, -EPERM, "is readable by others (mode 644): chmod 600 it" },
		{ SECRET, 0640, -EPERM, "chmod 600" },
		{ "0123456789abcdef0123456789abcde\n", 0600, -EINVAL, "is shorter than 32 bytes" },
		{ "", 0600, -EINVAL, "is shorter than 32 bytes" },
		{ SECRET "\n" SECRET "\n", 0600, -EINVAL, "holds more than one line" },
		{ "0123456789abcdef 0123456789abcdef\n", 0600, -EINVAL, "a space" },
	};
	for (size_t i = 0; i < sizeof(sec) / sizeof(sec[0]); i++) {
		secret_file(sec[i].text, sec[i].mode);
		int r = cluster_with(NULL, NULL, &c);
		ck_assert_msg(r == sec[i].r && strstr(err, sec[i].why) &&
		                  strstr(err, "'cluster.secret_file'") &&
		                  !strstr(err, "0123456789"),
		              "secret %zu gave %d '%s'", i, r, err);
		ck_assert_ptr_null(c.cluster.secret);
		coved_config_free(&c);
		unlink(secret_path);
	}
	/* A 32-byte secret without a newline is enough. */
	secret_file("0123456789abcdef0123456789abcdef", 0400);
	ck_assert_msg(cluster_with(NULL, NULL, &c) == 0, "%s", err);
	ck_assert_uint_eq(strlen(c.cluster.secret), 32);
	coved_config_free(&c);
	unlink(secret_path);
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
	tcase_add_test(tc, config_ranges);
	tcase_add_test(tc, config_cluster);
	tcase_add_test(tc, config_cluster_refusals);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN()
