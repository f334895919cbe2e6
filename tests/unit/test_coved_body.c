/* Unit tests: coved's request bodies (daemon/api/body.c) and its config and
 * API keys files (daemon/conf/): bounds, unknown fields and keys
 * refused, defaults, the keys file's mode, the constant-time compare. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/api/body.h"
#include "daemon/conf/config.h"
#include "daemon/conf/keys.h"
#include "daemon/http/json_body.h"
#include "unit.h"

static char err[512];

static json_t *load(const char *s)
{
	return coved_body_load(s, strlen(s), 16, err, sizeof(err));
}

static int create(const char *s, struct coved_create *c)
{
	json_t *o = load(s);
	ck_assert_msg(o != NULL, "%s: %s", s, err);
	int r = coved_parse_create(o, c, err, sizeof(err));
	json_decref(o);
	return r;
}

START_TEST(depth)
{
	ck_assert(coved_json_depth_ok("{\"a\":[1,{\"b\":2}]}", 17, 3));
	ck_assert(!coved_json_depth_ok("[[[[1]]]]", 9, 3));
	/* Brackets inside strings do not count, escaped quotes do not end them. */
	const char *s = "{\"a\":\"[[[[\\\"[[[[\"}";
	ck_assert(coved_json_depth_ok(s, strlen(s), 1));
	ck_assert_ptr_null(load("[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]"));
	ck_assert_ptr_null(load("[1]"));
	ck_assert_ptr_null(load("{\"a\":1,\"a\":2}"));
	json_t *o = coved_body_load("", 0, 16, err, sizeof(err));
	ck_assert(json_is_object(o) && json_object_size(o) == 0);
	json_decref(o);
}
END_TEST

START_TEST(create_fields)
{
	struct coved_create c;
	ck_assert_int_eq(create("{}", &c), 0);
	ck_assert_str_eq(c.template_id, "base");
	ck_assert(!c.net.given && c.timeout_s == 0);
	coved_create_free(&c);
	ck_assert_int_eq(create("{\"templateID\":\"minimal\",\"metadata\":{\"a\":\"b\"},"
	                        "\"envVars\":{\"X_1\":\"v\"},\"timeout\":30,\"autoPause\":true,"
	                        "\"allow_internet_access\":false,\"network\":{\"allowOut\":"
	                        "[\"1.2.3.4\"]},\"cpuCount\":2,\"memoryMB\":64,\"mcp\":null}",
	                        &c),
	                 0);
	ck_assert_str_eq(c.template_id, "minimal");
	ck_assert(c.timeout_s == 30 && c.auto_pause && c.auto_pause_given && c.cpus == 2 &&
	          c.memory_mib == 64);
	ck_assert(c.net.given && !c.net.internet && json_array_size(c.net.allow_out) == 1);
	coved_create_free(&c);
	/* E2B's autoPause with autoResume, and Cove's idleTimeout. */
	ck_assert_int_eq(create("{\"autoPause\":true,\"autoResume\":{\"enabled\":true},"
	                        "\"idleTimeout\":90}",
	                        &c),
	                 0);
	ck_assert(c.auto_resume && c.auto_resume_given && c.idle_s == 90);
	coved_create_free(&c);
}
END_TEST

START_TEST(create_refusals)
{
	struct coved_create c;
	const char *bad[] = {
		"{\"color\":1}",
		"{\"templateID\":\"../x\"}",
		"{\"templateID\":\"a.ext4\"}",
		"{\"templateID\":\"\"}",
		"{\"templateID\":5}",
		"{\"timeout\":0}",
		"{\"timeout\":-1}",
		"{\"timeout\":\"5\"}",
		"{\"envVars\":{\"1A\":\"x\"}}",
		"{\"envVars\":{\"A\":1}}",
		"{\"metadata\":[]}",
		"{\"mcp\":{}}",
		"{\"volumeMounts\":[]}",
		"{\"autoResume\":{\"enabled\":true}}",
		"{\"autoPause\":false,\"autoResume\":{\"enabled\":true}}",
		"{\"idleTimeout\":0}",
		"{\"idleTimeout\":\"5\"}",
		"{\"autoPauseMemory\":false}",
		"{\"network\":{\"rules\":{}}}",
		"{\"network\":{\"allowOut\":[1]}}",
		"{\"network\":{\"foo\":1}}",
		"{\"cpuCount\":65}",
		NULL,
	};
	for (int i = 0; bad[i]; i++) {
		int r = create(bad[i], &c);
		ck_assert_msg(r == -EINVAL, "%s accepted", bad[i]);
		ck_assert_msg(err[0], "%s: no message", bad[i]);
	}
	/* 65 metadata entries: one too many. */
	char big[4096] = "{\"metadata\":{";
	for (int i = 0; i < 65; i++)
		snprintf(big + strlen(big), sizeof(big) - strlen(big), "%s\"k%d\":\"v\"",
		         i ? "," : "", i);
	strcat(big, "}}");
	ck_assert_int_eq(create(big, &c), -EINVAL);
}
END_TEST

START_TEST(fork_timeout)
{
	unsigned int n;
	uint64_t t;
	json_t *o = load("{\"count\":3,\"timeout\":9}");
	ck_assert_int_eq(coved_parse_fork(o, &n, &t, err, sizeof(err)), 0);
	ck_assert(n == 3 && t == 9);
	json_decref(o);
	o = load("{\"count\":65}");
	ck_assert_int_eq(coved_parse_fork(o, &n, &t, err, sizeof(err)), -EINVAL);
	json_decref(o);
	o = load("{}");
	ck_assert_int_eq(coved_parse_fork(o, &n, &t, err, sizeof(err)), 0);
	ck_assert(n == 1 && t == 0);
	ck_assert_int_eq(coved_parse_timeout(o, true, &t, err, sizeof(err)), -EINVAL);
	json_decref(o);
}
END_TEST

START_TEST(public_traffic)
{
	struct coved_create c;
	/* allowPublicTraffic alone asks for no network (a NIC-less coved takes it). */
	ck_assert_int_eq(create("{\"network\":{\"allowPublicTraffic\":false}}", &c), 0);
	ck_assert(c.net.public_given && !c.net.public_traffic && !c.net.given);
	coved_create_free(&c);
	ck_assert_int_eq(
	    create("{\"network\":{\"allowPublicTraffic\":true,\"allowOut\":[\"1.1.1.1\"]}}", &c),
	    0);
	ck_assert(c.net.public_given && c.net.public_traffic && c.net.given);
	coved_create_free(&c);
	ck_assert_int_eq(create("{\"network\":{}}", &c), 0);
	ck_assert(!c.net.public_given && c.net.public_traffic && c.net.given);
	coved_create_free(&c);
	ck_assert_int_eq(create("{\"network\":{\"allowPublicTraffic\":\"no\"}}", &c), -EINVAL);
	coved_create_free(&c);
	/* Not something a network update changes. */
	json_t *o = load("{\"allowPublicTraffic\":false}");
	struct coved_net n;
	ck_assert_int_eq(coved_parse_net_update(o, &n, err, sizeof(err)), -EINVAL);
	coved_net_free(&n);
	json_decref(o);
}
END_TEST

START_TEST(config_file)
{
	struct coved_config c;
	ck_assert_int_eq(coved_config_load(NULL, &c, err, sizeof(err)), 0);
	ck_assert(c.max_body == 1 << 20 && c.network && c.on_timeout == COVED_ON_TIMEOUT_KILL);
	coved_config_free(&c);
	char *p =
	    unit_write_tmp("{\"tcp\":\"127.0.0.1:3000\",\"on_timeout\":\"pause\",\"max_creates\":4,"
	                   "\"warm_pool\":{\"base\":2,\"py\":0}}",
	                   0600);
	ck_assert_int_eq(coved_config_load(p, &c, err, sizeof(err)), 0);
	ck_assert_str_eq(c.tcp, "127.0.0.1:3000");
	ck_assert(c.on_timeout == COVED_ON_TIMEOUT_PAUSE && c.max_creates == 4);
	ck_assert_int_eq(json_integer_value(json_object_get(c.warm_pool, "base")), 2);
	ck_assert(!c.domain && c.ports_public && c.port_idle_s == 600);
	coved_config_free(&c);
	unlink(p);
	p = unit_write_tmp("{\"domain\":\"8x.cove-test.example\",\"ports_public\":false,"
	                   "\"port_idle_timeout_s\":30}",
	                   0600);
	ck_assert_int_eq(coved_config_load(p, &c, err, sizeof(err)), 0);
	ck_assert_str_eq(c.domain, "8x.cove-test.example");
	ck_assert(!c.ports_public && c.port_idle_s == 30);
	coved_config_free(&c);
	unlink(p);
	const char *bad[] = { "{\"sockett\":\"/x\"}",
		              "{\"max_creates\":0}",
		              "{\"network\":1}",
		              "{\"on_timeout\":\"stop\"}",
		              "[]",
		              "{\"cpus\":9}",
		              "{\"warm_pool\":[\"base\"]}",
		              "{\"warm_pool\":{\"base\":17}}",
		              "{\"warm_pool\":{\"base\":-1}}",
		              "{\"warm_pool\":{\"\":1}}",
		              "{\"domain\":\"Cove.Test\"}",
		              "{\"domain\":\".cove.test\"}",
		              "{\"domain\":\"cove..test\"}",
		              "{\"domain\":\"cove_x.test\"}",
		              "{\"domain\":\"\"}",
		              "{\"port_idle_timeout_s\":0}",
		              "{\"ports_public\":\"yes\"}",
		              NULL };
	for (int i = 0; bad[i]; i++) {
		p = unit_write_tmp(bad[i], 0600);
		ck_assert_msg(coved_config_load(p, &c, err, sizeof(err)) == -EINVAL, "%s accepted",
		              bad[i]);
		coved_config_free(&c);
		unlink(p);
	}
}
END_TEST

START_TEST(keys_file)
{
	struct coved_key *keys;
	size_t n;
	char *p = unit_write_tmp("# comment\nkey-one-0123456789\n\nkey-two-0123456789\n", 0644);
	ck_assert_int_eq(coved_keys_load(p, &keys, &n, err, sizeof(err)), -EPERM);
	chmod(p, 0600);
	ck_assert_int_eq(coved_keys_load(p, &keys, &n, err, sizeof(err)), 0);
	ck_assert_uint_eq(n, 2);
	ck_assert_str_eq(keys[1].key, "key-two-0123456789");
	coved_keys_free(keys, n);
	unlink(p);
	p = unit_write_tmp("short\n", 0600);
	ck_assert_int_eq(coved_keys_load(p, &keys, &n, err, sizeof(err)), -EINVAL);
	unlink(p);
	ck_assert(coved_secret_eq("abc", "abc"));
	ck_assert(!coved_secret_eq("abc", "abd"));
	ck_assert(!coved_secret_eq("abc", "abcd"));
	ck_assert(!coved_secret_eq("abcd", "abc"));
	ck_assert(!coved_secret_eq("", "a"));
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("coved_body");
	TCase *tc = tcase_create("body");
	tcase_add_test(tc, depth);
	tcase_add_test(tc, create_fields);
	tcase_add_test(tc, create_refusals);
	tcase_add_test(tc, fork_timeout);
	tcase_add_test(tc, public_traffic);
	tcase_add_test(tc, config_file);
	tcase_add_test(tc, keys_file);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN()
