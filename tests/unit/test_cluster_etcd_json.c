/* Unit tests: etcd's JSON gateway bodies (daemon/cluster/etcd_json.c), no
 * transport: answers canned from etcd 3.4 with absent and zero fields,
 * wrong types, bad base64, inconsistent counts; the request bodies built,
 * and the ones refused. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "daemon/cluster/etcd_json.h"
#include "unit.h"

static char err[1024];

#define HDR "\"header\":{\"cluster_id\":\"1\",\"revision\":\"42\",\"raft_term\":\"2\"}"

static int range(const char *s, struct etcd_kvs *k)
{
	return etcd_json_parse_range(s, strlen(s), k, err, sizeof(err));
}

START_TEST(b64)
{
	const char *in[] = { "", "f", "fo", "foo", "foob", "fooba", "foobar" };
	const char *out[] = { "", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy" };
	for (size_t i = 0; i < sizeof(in) / sizeof(in[0]); i++) {
		char *e = etcd_json_b64_encode(in[i], strlen(in[i])), *d;
		size_t n;
		ck_assert_str_eq(e, out[i]);
		ck_assert_int_eq(etcd_json_b64_decode(e, strlen(e), &d, &n), 0);
		ck_assert(n == strlen(in[i]) && memcmp(d, in[i], n) == 0 && d[n] == '\0');
		free(e);
		free(d);
	}
	unsigned char bin[256];
	for (int i = 0; i < 256; i++)
		bin[i] = (unsigned char)i;
	char *e = etcd_json_b64_encode(bin, sizeof(bin)), *d;
	size_t n;
	ck_assert_int_eq(etcd_json_b64_decode(e, strlen(e), &d, &n), 0);
	ck_assert(n == 256 && memcmp(d, bin, 256) == 0);
	free(e);
	free(d);
	const char *bad[] = { "Zm9",  "Zm9v=", "Zm=v", "Zh==", "Zm9=", "Zm9v\n",
		              "====", "Zg=A",  "Z===", "Zm9-", "Zm 9" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_msg(etcd_json_b64_decode(bad[i], strlen(bad[i]), &d, &n) == -EPROTO, "%s",
		              bad[i]);
		ck_assert_ptr_null(d);
	}
}
END_TEST

START_TEST(range_answers)
{
	struct etcd_kvs k;
	/* Two kvs; the second with zero values left out, as grpc-gateway does. */
	ck_assert_int_eq(range("{" HDR ",\"kvs\":[{\"key\":\"Zm9v\",\"create_revision\":\"2\","
	                       "\"mod_revision\":\"7\",\"version\":\"3\",\"value\":\"YmFy\","
	                       "\"lease\":\"4111120412849204243\"},{\"key\":\"Zm9vMg==\"}],"
	                       "\"count\":\"2\"}",
	                       &k),
	                 0);
	ck_assert(k.n == 2 && k.revision == 42);
	ck_assert_str_eq(k.kv[0].key, "foo");
	ck_assert_str_eq(k.kv[0].value, "bar");
	ck_assert(k.kv[0].create_rev == 2 && k.kv[0].mod_rev == 7 && k.kv[0].version == 3 &&
	          k.kv[0].lease == 4111120412849204243LL && k.kv[0].value_len == 3);
	ck_assert_str_eq(k.kv[1].key, "foo2");
	ck_assert(k.kv[1].value_len == 0 && k.kv[1].value[0] == '\0' && k.kv[1].lease == 0 &&
	          k.kv[1].mod_rev == 0);
	etcd_kvs_free(&k);
	ck_assert(k.n == 0 && k.kv == NULL);
	/* Absent key: a bare header.  Integers as JSON numbers pass too. */
	ck_assert_int_eq(range("{" HDR "}", &k), 0);
	ck_assert(k.n == 0 && k.revision == 42);
	ck_assert_int_eq(range("{\"header\":{\"revision\":5},\"kvs\":[{\"key\":\"YQ==\","
	                       "\"version\":1}],\"count\":1}",
	                       &k),
	                 0);
	ck_assert(k.n == 1 && k.revision == 5 && k.kv[0].version == 1);
	etcd_kvs_free(&k);
	/* A value with NUL bytes keeps its length. */
	ck_assert_int_eq(range("{" HDR ",\"kvs\":[{\"key\":\"YQ==\",\"value\":\"AGIA\"}],"
	                       "\"count\":\"1\"}",
	                       &k),
	                 0);
	ck_assert(k.kv[0].value_len == 3 && memcmp(k.kv[0].value, "\0b\0", 3) == 0);
	etcd_kvs_free(&k);
}
END_TEST

START_TEST(range_malformed)
{
	const char *bad[] = {
		"",
		"not json",
		"[1]",
		"{}",
		"{\"header\":5}",
		"{\"header\":{\"revision\":\"abc\"}}",
		"{\"header\":{\"revision\":\"-1\"}}",
		"{\"header\":{\"revision\":\"99999999999999999999\"}}",
		"{\"header\":{\"revision\":\"1e3\"}}",
		"{\"header\":{\"revision\":1.5}}",
		"{\"header\":{\"revision\":\"\"}}",
		"{\"header\":{\"revision\":true}}",
		"{" HDR ",\"kvs\":{}}",
		"{" HDR ",\"kvs\":[5],\"count\":\"1\"}",
		"{" HDR ",\"kvs\":[{}],\"count\":\"1\"}",
		"{" HDR ",\"kvs\":[{\"key\":\"\"}],\"count\":\"1\"}",
		"{" HDR ",\"kvs\":[{\"key\":5}],\"count\":\"1\"}",
		"{" HDR ",\"kvs\":[{\"key\":\"Zm9\"}],\"count\":\"1\"}",
		"{" HDR ",\"kvs\":[{\"key\":\"YQ==\",\"value\":\"!!!!\"}],\"count\":\"1\"}",
		"{" HDR ",\"kvs\":[{\"key\":\"YQ==\",\"value\":7}],\"count\":\"1\"}",
		"{" HDR ",\"kvs\":[{\"key\":\"YQ==\",\"mod_revision\":\"x\"}],\"count\":\"1\"}",
		"{" HDR ",\"kvs\":[{\"key\":\"YQ==\",\"lease\":\"-3\"}],\"count\":\"1\"}",
		/* Counts that do not match the kvs, a partial listing, duplicates. */
		"{" HDR ",\"kvs\":[{\"key\":\"YQ==\"}]}",
		"{" HDR ",\"kvs\":[{\"key\":\"YQ==\"}],\"count\":\"1000000000\"}",
		"{" HDR ",\"count\":\"9223372036854775807\"}",
		"{" HDR ",\"count\":\"-1\"}",
		"{" HDR ",\"kvs\":[{\"key\":\"YQ==\"}],\"count\":\"1\",\"more\":true}",
		"{" HDR ",\"more\":\"no\"}",
		"{" HDR "," HDR "}",
		"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]"
		"]]]]]]",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct etcd_kvs k;
		err[0] = '\0';
		ck_assert_msg(range(bad[i], &k) == -EPROTO, "%s", bad[i]);
		ck_assert_msg(err[0] && !strchr(err, '\n'), "%s", bad[i]);
		ck_assert(k.n == 0 && k.kv == NULL);
	}
}
END_TEST

START_TEST(lease_answers)
{
	int64_t id, ttl;
#define G(s) etcd_json_parse_grant(s, strlen(s), &id, &ttl, err, sizeof(err))
	ck_assert_int_eq(G("{" HDR ",\"ID\":\"4111120412849204234\",\"TTL\":\"5\"}"), 0);
	ck_assert(id == 4111120412849204234LL && ttl == 5);
	ck_assert_int_eq(G("{" HDR ",\"TTL\":\"5\"}"), -EPROTO);
	ck_assert_int_eq(G("{" HDR ",\"ID\":\"7\"}"), -EPROTO);
	ck_assert_int_eq(G("{\"ID\":\"7\",\"TTL\":\"5\"}"), -EPROTO);
	ck_assert_int_eq(G("{" HDR ",\"ID\":\"7\",\"TTL\":\"5\",\"error\":\"no space\"}"), -EIO);
#undef G
#define K(s) etcd_json_parse_keepalive(s, strlen(s), &ttl, err, sizeof(err))
	ck_assert_int_eq(K("{\"result\":{" HDR ",\"ID\":\"7\",\"TTL\":\"30\"}}\n"), 0);
	ck_assert(ttl == 30);
	/* A second streamed message does not matter. */
	ck_assert_int_eq(K("{\"result\":{" HDR ",\"ID\":\"7\",\"TTL\":\"9\"}}\n{\"result\":{}}"),
	                 0);
	ck_assert(ttl == 9);
	/* Expired: TTL left out (zero), or 0, or negative. */
	ck_assert_int_eq(K("{\"result\":{" HDR ",\"ID\":\"7\"}}"), -ENOENT);
	ck_assert_int_eq(K("{\"result\":{" HDR ",\"ID\":\"7\",\"TTL\":\"0\"}}"), -ENOENT);
	ck_assert_int_eq(K("{\"result\":{" HDR ",\"ID\":\"7\",\"TTL\":\"-1\"}}"), -ENOENT);
	ck_assert_int_eq(
	    K("{\"error\":{\"grpc_code\":5,\"http_code\":404,\"message\":\"etcdserver: "
	      "requested lease not found\"}}"),
	    -ENOENT);
	ck_assert(strstr(err, "lease not found"));
	ck_assert_int_eq(K("{\"result\":5}"), -EPROTO);
	ck_assert_int_eq(K("{" HDR ",\"ID\":\"7\",\"TTL\":\"30\"}"), -EPROTO);
	ck_assert_int_eq(K("{\"result\":{" HDR ",\"TTL\":\"30\"}}"), -EPROTO);
	ck_assert_int_eq(K("{\"result\":{" HDR ",\"ID\":\"7\",\"TTL\":\"x\"}}"), -EPROTO);
#undef K
}
END_TEST

START_TEST(txn_answers)
{
	struct etcd_kvs k;
	bool ok;
#define T(s, g) etcd_json_parse_txn(s, strlen(s), &ok, g, err, sizeof(err))
	ck_assert_int_eq(T("{" HDR ",\"succeeded\":true,\"responses\":[{\"response_put\":{"
	                   "\"header\":{\"revision\":\"7\"}}},{\"response_range\":{\"header\":{},"
	                   "\"kvs\":[{\"key\":\"Zm9v\",\"mod_revision\":\"7\",\"value\":\"YmF6\"}],"
	                   "\"count\":\"1\"}},{\"response_delete_range\":{}},{\"response_range\":"
	                   "{}}]}",
	                   &k),
	                 0);
	ck_assert(ok && k.n == 1 && k.revision == 42 && k.kv[0].mod_rev == 7);
	ck_assert_str_eq(k.kv[0].value, "baz");
	etcd_kvs_free(&k);
	/* The failure branch: "succeeded" left out. */
	ck_assert_int_eq(T("{" HDR ",\"responses\":[{\"response_range\":{\"kvs\":[{\"key\":"
	                   "\"Zm9v\"}],\"count\":\"1\"}}]}",
	                   &k),
	                 0);
	ck_assert(!ok && k.n == 1);
	etcd_kvs_free(&k);
	ck_assert_int_eq(T("{" HDR ",\"succeeded\":true}", NULL), 0);
	ck_assert(ok);
	const char *bad[] = {
		"{" HDR ",\"succeeded\":\"yes\"}",
		"{" HDR ",\"responses\":{}}",
		"{" HDR ",\"responses\":[5]}",
		"{" HDR ",\"succeeded\":true,\"responses\":[5]}",
		"{" HDR ",\"responses\":[{}]}",
		"{" HDR ",\"responses\":[{\"response_put\":{},\"response_range\":{}}]}",
		"{" HDR ",\"responses\":[{\"response_txn\":{}}]}",
		"{" HDR ",\"responses\":[{\"response_put\":5}]}",
		"{" HDR ",\"responses\":[{\"response_range\":{\"kvs\":[{\"key\":\"?\"}],"
		"\"count\":\"1\"}}]}",
		"{\"succeeded\":true}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_msg(T(bad[i], &k) == -EPROTO, "%s", bad[i]);
		ck_assert(k.n == 0 && k.kv == NULL && !ok);
	}
#undef T
}
END_TEST

START_TEST(error_answers)
{
#define E(s) etcd_json_parse_error(s, strlen(s), err, sizeof(err))
	ck_assert_int_eq(E("{\"error\":\"etcdserver: requested lease not found\",\"message\":"
	                   "\"etcdserver: requested lease not found\",\"code\":5}"),
	                 -ENOENT);
	ck_assert(strstr(err, "requested lease not found") && strstr(err, "code 5"));
	ck_assert_int_eq(E("{\"error\":\"no leader\",\"code\":14}"), -EHOSTUNREACH);
	ck_assert_int_eq(E("{\"error\":\"x\",\"code\":3}"), -EINVAL);
	ck_assert_int_eq(E("{\"error\":\"x\",\"code\":8}"), -ENOSPC);
	ck_assert_int_eq(E("{\"error\":\"x\",\"code\":13}"), -EIO);
	ck_assert_int_eq(E("{\"error\":\"x\",\"code\":99}"), -EPROTO);
	ck_assert_int_eq(E("{\"error\":\"x\"}"), -EPROTO);
	ck_assert_int_eq(E("{\"error\":5,\"code\":5}"), -EPROTO);
	ck_assert_int_eq(E("{" HDR "}"), -EPROTO);
	ck_assert_int_eq(E("<html>502</html>"), -EPROTO);
	ck_assert_int_eq(E("{\"error\":\"a\\nb\",\"code\":2}"), -EIO);
	ck_assert(!strchr(err, '\n'));
#undef E
}
END_TEST

/* The request body field name, base64-decoded. */
static char *field_b64(json_t *o, const char *name)
{
	char *d;
	size_t n;
	const char *s = json_string_value(json_object_get(o, name));
	ck_assert_msg(s != NULL, "no %s", name);
	ck_assert_int_eq(etcd_json_b64_decode(s, strlen(s), &d, &n), 0);
	return d;
}

static json_t *req_json(const char *body)
{
	json_t *o = json_loads(body, 0, NULL);
	ck_assert_ptr_nonnull(o);
	return o;
}

START_TEST(requests)
{
	char *body, *d;
	ck_assert_int_eq(etcd_json_range_req("/cove/nodes/", true, &body, err, sizeof(err)), 0);
	json_t *o = req_json(body);
	ck_assert_str_eq(d = field_b64(o, "key"), "/cove/nodes/");
	free(d);
	ck_assert_str_eq(d = field_b64(o, "range_end"), "/cove/nodes0");
	free(d);
	json_decref(o);
	free(body);
	/* "" covers every key; a prefix ending in 0xff rolls over. */
	ck_assert_int_eq(etcd_json_range_req("", true, &body, err, sizeof(err)), 0);
	ck_assert_str_eq(body, "{\"key\":\"AA==\",\"range_end\":\"AA==\"}");
	free(body);
	ck_assert_int_eq(etcd_json_range_req("a\xff\xff", true, &body, err, sizeof(err)), 0);
	o = req_json(body);
	ck_assert_str_eq(d = field_b64(o, "range_end"), "b");
	free(d);
	json_decref(o);
	free(body);
	ck_assert_int_eq(etcd_json_put_req("k", "v\0w", 3, 77, &body, err, sizeof(err)), 0);
	ck_assert_str_eq(body, "{\"key\":\"aw==\",\"value\":\"dgB3\",\"lease\":\"77\"}");
	free(body);
	ck_assert_int_eq(etcd_json_lease_req("TTL", 10, &body, err, sizeof(err)), 0);
	ck_assert_str_eq(body, "{\"TTL\":\"10\"}");
	free(body);
	struct etcd_cmp c[] = { { "a", ETCD_CMP_MOD, 5, NULL },
		                { "b", ETCD_CMP_CREATE, 0, NULL },
		                { "c", ETCD_CMP_VALUE, 0, "x" } };
	struct etcd_op ok[] = { { ETCD_OP_PUT, "a", "1", 1, 0 },
		                { ETCD_OP_DELETE, "b", NULL, 0, 0 } };
	struct etcd_op fail[] = { { ETCD_OP_GET, "a", NULL, 0, 0 } };
	ck_assert_int_eq(etcd_json_txn_req(c, 3, ok, 2, fail, 1, &body, err, sizeof(err)), 0);
	ck_assert_str_eq(body,
	                 "{\"compare\":[{\"key\":\"YQ==\",\"target\":\"MOD\",\"result\":\"EQUAL\","
	                 "\"mod_revision\":\"5\"},{\"key\":\"Yg==\",\"target\":\"CREATE\","
	                 "\"result\":\"EQUAL\",\"create_revision\":\"0\"},{\"key\":\"Yw==\","
	                 "\"target\":\"VALUE\",\"result\":\"EQUAL\",\"value\":\"eA==\"}],"
	                 "\"success\":[{\"request_put\":{\"key\":\"YQ==\",\"value\":\"MQ==\"}},"
	                 "{\"request_delete_range\":{\"key\":\"Yg==\"}}],\"failure\":"
	                 "[{\"request_range\":{\"key\":\"YQ==\"}}]}");
	free(body);
}
END_TEST

START_TEST(request_refusals)
{
	char *body, big[ETCD_KEY_MAX + 2];
	memset(big, 'k', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	ck_assert_int_eq(etcd_json_range_req("", false, &body, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_null(body);
	ck_assert_int_eq(etcd_json_range_req(NULL, true, &body, err, sizeof(err)), -EINVAL);
	ck_assert_int_eq(etcd_json_range_req(big, false, &body, err, sizeof(err)), -EINVAL);
	ck_assert_int_eq(
	    etcd_json_put_req("k", big, ETCD_VALUE_MAX + 1, 0, &body, err, sizeof(err)), -EINVAL);
	ck_assert_int_eq(etcd_json_put_req("k", NULL, 3, 0, &body, err, sizeof(err)), -EINVAL);
	ck_assert_int_eq(etcd_json_put_req("k", "v", 1, -1, &body, err, sizeof(err)), -EINVAL);
	ck_assert_int_eq(etcd_json_lease_req("ID", 0, &body, err, sizeof(err)), -EINVAL);
	struct etcd_cmp c = { "a", ETCD_CMP_MOD, -1, NULL };
	ck_assert_int_eq(etcd_json_txn_req(&c, 1, NULL, 0, NULL, 0, &body, err, sizeof(err)),
	                 -EINVAL);
	c = (struct etcd_cmp){ "a", ETCD_CMP_VALUE, 0, NULL };
	ck_assert_int_eq(etcd_json_txn_req(&c, 1, NULL, 0, NULL, 0, &body, err, sizeof(err)),
	                 -EINVAL);
	c = (struct etcd_cmp){ "a", (enum etcd_cmp_target)9, 0, NULL };
	ck_assert_int_eq(etcd_json_txn_req(&c, 1, NULL, 0, NULL, 0, &body, err, sizeof(err)),
	                 -EINVAL);
	struct etcd_op op = { (enum etcd_op_kind)7, "a", NULL, 0, 0 };
	ck_assert_int_eq(etcd_json_txn_req(NULL, 0, &op, 1, NULL, 0, &body, err, sizeof(err)),
	                 -EINVAL);
	static struct etcd_op many[ETCD_TXN_MAX + 1];
	for (size_t i = 0; i <= ETCD_TXN_MAX; i++)
		many[i] = (struct etcd_op){ ETCD_OP_GET, "a", NULL, 0, 0 };
	ck_assert_int_eq(
	    etcd_json_txn_req(NULL, 0, NULL, 0, many, ETCD_TXN_MAX + 1, &body, err, sizeof(err)),
	    -EINVAL);
	ck_assert_ptr_null(body);
	ck_assert_int_eq(
	    etcd_json_txn_req(NULL, 0, NULL, 0, many, ETCD_TXN_MAX, &body, err, sizeof(err)), 0);
	free(body);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("cluster_etcd_json");
	TCase *tc = tcase_create("json");
	tcase_add_test(tc, b64);
	tcase_add_test(tc, range_answers);
	tcase_add_test(tc, range_malformed);
	tcase_add_test(tc, lease_answers);
	tcase_add_test(tc, txn_answers);
	tcase_add_test(tc, error_answers);
	tcase_add_test(tc, requests);
	tcase_add_test(tc, request_refusals);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN()
