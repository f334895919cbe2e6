/* Unit tests: coved's etcd client (daemon/cluster/etcd.c) against a real
 * etcd (/usr/bin/etcd on free loopback ports in a temporary data dir, see
 * etcd_server.h): reads and writes, leases, txns that win and lose,
 * failover, deadlines with dead and mute endpoints, threads; and against a
 * fake gateway whose answers are malformed or too long.  The parser alone:
 * test_cluster_etcd_json.c. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clock.h"
#include "daemon/cluster/etcd.h"
#include "etcd_server.h"
#include "unit.h"

static char err[1024];

static struct unit_etcd srv;
static bool srv_up;

static void live_start(void)
{
	srv_up = unit_etcd_start(&srv, 20000);
}

static void live_stop(void)
{
	unit_etcd_stop(&srv);
}

static struct etcd *client(const char *const *ep, size_t n, unsigned int timeout_ms)
{
	ck_assert_msg(srv_up, "no etcd to test against: %s", srv.why);
	struct etcd *e = etcd_new(ep, n, timeout_ms, err, sizeof(err));
	ck_assert_msg(e != NULL, "%s", err);
	return e;
}

/* A loopback URL where nothing listens, and one that takes connections
 * but never answers (a listening socket nobody accepts on): its fd. */
static void dead_url(char *url, size_t len)
{
	int port = unit_free_port();
	ck_assert_int_gt(port, 0);
	snprintf(url, len, "http://127.0.0.1:%d", port);
}

static int mute_url(char *url, size_t len)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t alen = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert(fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
	          listen(fd, 8) == 0 && getsockname(fd, (struct sockaddr *)&a, &alen) == 0);
	snprintf(url, len, "http://127.0.0.1:%d", ntohs(a.sin_port));
	return fd;
}

START_TEST(client_args)
{
	const char *ok[] = { "http://127.0.0.1:1/", "https://etcd.example:2379" };
	struct etcd *e = etcd_new(ok, 2, 100, err, sizeof(err));
	ck_assert_msg(e != NULL, "%s", err);
	etcd_free(e);
	etcd_free(NULL);
	const char *bad[] = { "ftp://x", "http://", "http://a b", "127.0.0.1:2379", NULL };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_ptr_null(etcd_new(&bad[i], 1, 100, err, sizeof(err)));
		ck_assert(err[0]);
	}
	const char *nine[9] = { "http://a", "http://a", "http://a", "http://a", "http://a",
		                "http://a", "http://a", "http://a", "http://a" };
	ck_assert_ptr_null(etcd_new(nine, 9, 100, err, sizeof(err)));
	ck_assert_ptr_null(etcd_new(nine, 0, 100, err, sizeof(err)));
	ck_assert_ptr_null(etcd_new(nine, 1, 0, err, sizeof(err)));
}
END_TEST

START_TEST(live_kv)
{
	const char *ep[] = { srv.url };
	struct etcd *e = client(ep, 1, 3000);
	struct etcd_kvs k;
	ck_assert_msg(etcd_put(e, "/t/kv/a", "one", 3, 0, err, sizeof(err)) == 0, "%s", err);
	ck_assert_msg(etcd_get(e, "/t/kv/a", &k, err, sizeof(err)) == 0, "%s", err);
	ck_assert(k.n == 1 && k.kv[0].value_len == 3 && k.kv[0].version == 1 &&
	          k.kv[0].mod_rev > 0 && k.kv[0].create_rev == k.kv[0].mod_rev &&
	          k.revision >= k.kv[0].mod_rev && k.kv[0].lease == 0);
	ck_assert_str_eq(k.kv[0].key, "/t/kv/a");
	ck_assert_str_eq(k.kv[0].value, "one");
	etcd_kvs_free(&k);
	/* Binary values and empty ones come back as they went. */
	ck_assert_int_eq(etcd_put(e, "/t/kv/bin", "\0\xff\n", 3, 0, err, sizeof(err)), 0);
	ck_assert_int_eq(etcd_put(e, "/t/kv/empty", NULL, 0, 0, err, sizeof(err)), 0);
	ck_assert_int_eq(etcd_get(e, "/t/kv/bin", &k, err, sizeof(err)), 0);
	ck_assert(k.n == 1 && k.kv[0].value_len == 3 && memcmp(k.kv[0].value, "\0\xff\n", 3) == 0);
	etcd_kvs_free(&k);
	ck_assert_int_eq(etcd_get(e, "/t/kv/empty", &k, err, sizeof(err)), 0);
	ck_assert(k.n == 1 && k.kv[0].value_len == 0);
	etcd_kvs_free(&k);
	ck_assert_int_eq(etcd_delete(e, "/t/kv/a", err, sizeof(err)), 0);
	ck_assert_int_eq(etcd_get(e, "/t/kv/a", &k, err, sizeof(err)), 0);
	ck_assert(k.n == 0 && k.revision > 0);
	ck_assert_int_eq(etcd_delete(e, "/t/kv/a", err, sizeof(err)), 0);
	/* A prefix lists its keys in order, and nothing beside them. */
	const char *keys[] = { "/t/p/b", "/t/p/a", "/t/p/c", "/t/q", "/t/p" };
	for (size_t i = 0; i < 5; i++)
		ck_assert_int_eq(etcd_put(e, keys[i], "x", 1, 0, err, sizeof(err)), 0);
	ck_assert_msg(etcd_range_prefix(e, "/t/p/", &k, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(k.n, 3);
	ck_assert_str_eq(k.kv[0].key, "/t/p/a");
	ck_assert_str_eq(k.kv[2].key, "/t/p/c");
	etcd_kvs_free(&k);
	ck_assert_int_eq(etcd_range_prefix(e, "/t/none/", &k, err, sizeof(err)), 0);
	ck_assert_int_eq(k.n, 0);
	ck_assert_int_eq(etcd_range_prefix(e, "", &k, err, sizeof(err)), 0);
	ck_assert_int_ge(k.n, 6);
	etcd_kvs_free(&k);
	ck_assert_int_eq(etcd_get(e, "", &k, err, sizeof(err)), -EINVAL);
	etcd_free(e);
}
END_TEST

START_TEST(live_lease)
{
	const char *ep[] = { srv.url };
	struct etcd *e = client(ep, 1, 3000);
	struct etcd_kvs k;
	int64_t id, ttl = 0;
	ck_assert_msg(etcd_lease_grant(e, 5, &id, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_gt(id, 0);
	ck_assert_int_eq(etcd_put(e, "/t/l/node", "up", 2, id, err, sizeof(err)), 0);
	ck_assert_int_eq(etcd_get(e, "/t/l/node", &k, err, sizeof(err)), 0);
	ck_assert(k.n == 1 && k.kv[0].lease == id);
	etcd_kvs_free(&k);
	ck_assert_msg(etcd_lease_keepalive(e, id, &ttl, err, sizeof(err)) == 0, "%s", err);
	ck_assert(ttl >= 1 && ttl <= 5);
	ck_assert_int_eq(etcd_lease_revoke(e, id, err, sizeof(err)), 0);
	ck_assert_int_eq(etcd_get(e, "/t/l/node", &k, err, sizeof(err)), 0);
	ck_assert_int_eq(k.n, 0);
	ck_assert_int_eq(etcd_lease_keepalive(e, id, &ttl, err, sizeof(err)), -ENOENT);
	ck_assert_msg(strstr(err, srv.url) && strstr(err, "keepalive"), "%s", err);
	ck_assert_int_eq(etcd_lease_revoke(e, id, err, sizeof(err)), -ENOENT);
	ck_assert_int_eq(etcd_put(e, "/t/l/node", "up", 2, id, err, sizeof(err)), -ENOENT);
	ck_assert_int_eq(etcd_lease_grant(e, 0, &id, err, sizeof(err)), -EINVAL);
	etcd_free(e);
}
END_TEST

START_TEST(live_txn)
{
	const char *ep[] = { srv.url };
	struct etcd *e = client(ep, 1, 3000);
	struct etcd_kvs k;
	bool won;
	ck_assert_int_eq(etcd_put(e, "/t/x/alloc", "v1", 2, 0, err, sizeof(err)), 0);
	ck_assert_int_eq(etcd_get(e, "/t/x/alloc", &k, err, sizeof(err)), 0);
	int64_t rev = k.kv[0].mod_rev;
	etcd_kvs_free(&k);
	/* The create: alloc unchanged since read, no record yet. */
	struct etcd_cmp c[] = { { "/t/x/alloc", ETCD_CMP_MOD, rev, NULL },
		                { "/t/x/sb", ETCD_CMP_CREATE, 0, NULL } };
	struct etcd_op ok[] = { { ETCD_OP_PUT, "/t/x/alloc", "v2", 2, 0 },
		                { ETCD_OP_PUT, "/t/x/sb", "running", 7, 0 },
		                { ETCD_OP_GET, "/t/x/alloc", NULL, 0, 0 },
		                { ETCD_OP_GET, "/t/x/absent", NULL, 0, 0 } };
	struct etcd_op fail[] = { { ETCD_OP_GET, "/t/x/alloc", NULL, 0, 0 } };
	ck_assert_msg(etcd_txn(e, c, 2, ok, 4, fail, 1, &won, &k, err, sizeof(err)) == 0, "%s",
	              err);
	ck_assert(won && k.n == 1 && k.revision > rev && k.kv[0].mod_rev == k.revision);
	ck_assert_str_eq(k.kv[0].value, "v2");
	etcd_kvs_free(&k);
	/* The same again loses on the changed mod revision: the failure ops run. */
	ck_assert_int_eq(etcd_txn(e, c, 2, ok, 4, fail, 1, &won, &k, err, sizeof(err)), 0);
	ck_assert(!won && k.n == 1 && k.kv[0].mod_rev > rev);
	ck_assert_str_eq(k.kv[0].value, "v2");
	etcd_kvs_free(&k);
	/* An absent key's mod revision is 0; a value compare; no failure ops. */
	struct etcd_cmp c2[] = { { "/t/x/none", ETCD_CMP_MOD, 0, NULL },
		                 { "/t/x/sb", ETCD_CMP_VALUE, 0, "running" },
		                 { "/t/x/sb", ETCD_CMP_VERSION, 1, NULL } };
	struct etcd_op del = { ETCD_OP_DELETE, "/t/x/sb", NULL, 0, 0 };
	ck_assert_int_eq(etcd_txn(e, c2, 3, &del, 1, NULL, 0, &won, NULL, err, sizeof(err)), 0);
	ck_assert(won);
	ck_assert_int_eq(etcd_get(e, "/t/x/sb", &k, err, sizeof(err)), 0);
	ck_assert_int_eq(k.n, 0);
	ck_assert_int_eq(etcd_txn(e, c2, 3, &del, 1, NULL, 0, &won, &k, err, sizeof(err)), 0);
	ck_assert(!won && k.n == 0);
	etcd_free(e);
}
END_TEST

START_TEST(live_failover)
{
	char dead[64], mute[64];
	struct etcd_kvs k;
	dead_url(dead, sizeof(dead));
	int fd = mute_url(mute, sizeof(mute));
	/* Refused first: reads and writes go on to the live one at once. */
	const char *ep[] = { dead, srv.url };
	struct etcd *e = client(ep, 2, 2000);
	int64_t t0 = mono_ms();
	ck_assert_msg(etcd_put(e, "/t/f/a", "1", 1, 0, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(etcd_get(e, "/t/f/a", &k, err, sizeof(err)), 0);
	ck_assert_int_eq(k.n, 1);
	etcd_kvs_free(&k);
	ck_assert_int_lt(mono_ms() - t0, 2000);
	etcd_free(e);
	/* Mute first: a read gives it half the time, then the live one answers
	 * within the whole; the next call starts at the live one. */
	const char *ep2[] = { mute, srv.url };
	e = client(ep2, 2, 1000);
	t0 = mono_ms();
	ck_assert_msg(etcd_get(e, "/t/f/a", &k, err, sizeof(err)) == 0, "%s", err);
	etcd_kvs_free(&k);
	int64_t took = mono_ms() - t0;
	ck_assert_msg(took >= 400 && took < 1000, "%lld ms", (long long)took);
	/* A write sent to the mute one first would time out. */
	ck_assert_msg(etcd_put(e, "/t/f/b", "2", 1, 0, err, sizeof(err)) == 0, "%s", err);
	etcd_free(e);
	/* A write that reached the mute one may have been applied: no retry. */
	e = client(ep2, 2, 600);
	t0 = mono_ms();
	ck_assert_int_eq(etcd_put(e, "/t/f/c", "3", 1, 0, err, sizeof(err)), -ETIMEDOUT);
	took = mono_ms() - t0;
	ck_assert_msg(took < 800, "%lld ms", (long long)took);
	ck_assert_msg(strstr(err, mute) && !strstr(err, srv.url), "%s", err);
	etcd_free(e);
	close(fd);
}
END_TEST

START_TEST(live_all_dead)
{
	char d1[64], d2[64], mute[64];
	struct etcd_kvs k;
	dead_url(d1, sizeof(d1));
	dead_url(d2, sizeof(d2));
	int fd = mute_url(mute, sizeof(mute));
	const char *ep[] = { d1, d2 };
	struct etcd *e = etcd_new(ep, 2, 1000, err, sizeof(err));
	ck_assert_ptr_nonnull(e);
	int64_t t0 = mono_ms();
	ck_assert_int_eq(etcd_get(e, "/t/a", &k, err, sizeof(err)), -ECONNREFUSED);
	ck_assert_int_lt(mono_ms() - t0, 1000);
	ck_assert_msg(strstr(err, d1) && strstr(err, d2) && !strchr(err, '\n'), "%s", err);
	ck_assert(k.n == 0 && k.kv == NULL);
	etcd_free(e);
	const char *ep2[] = { mute, d1, d2 };
	e = etcd_new(ep2, 3, 600, err, sizeof(err));
	ck_assert_ptr_nonnull(e);
	for (int i = 0; i < 2; i++) {
		bool won;
		t0 = mono_ms();
		int r = i ? etcd_get(e, "/t/a", &k, err, sizeof(err))
		          : etcd_txn(e, NULL, 0, NULL, 0, NULL, 0, &won, NULL, err, sizeof(err));
		int64_t took = mono_ms() - t0;
		ck_assert_msg(r < 0 && took < 800, "%d after %lld ms: %s", r, (long long)took, err);
	}
	etcd_free(e);
	close(fd);
}
END_TEST

/* Answers that are no etcd's: each fails its call, naming the endpoint. */
START_TEST(fake_answers)
{
	static const struct unit_reply replies[] = {
		{ 200, "not json", 0 },
		{ 502, "<html>bad gateway</html>", 0 },
		{ 200, "{\"header\":{},\"kvs\":[{\"key\":\"L2I=\"}],\"count\":\"1\"}", 0 },
		{ 404, "{\"error\":\"etcdserver: requested lease not found\",\"code\":5}", 0 },
		{ 200, "{\"header\":{},\"succeeded\":true,\"responses\":[{}]}", 0 },
		{ 200, NULL, (size_t)1 << 40 },
		{ 200, NULL, 0 },
	};
	char url[64];
	struct etcd_kvs k;
	bool won = true;
	struct unit_canned *c = unit_canned_start(replies, 7, url, sizeof(url));
	ck_assert_ptr_nonnull(c);
	const char *ep[] = { url };
	struct etcd *e = etcd_new(ep, 1, 3000, err, sizeof(err));
	ck_assert_ptr_nonnull(e);
	ck_assert_int_eq(etcd_get(e, "/a", &k, err, sizeof(err)), -EPROTO);
	ck_assert_msg(strstr(err, url) && strstr(err, "not JSON"), "%s", err);
	ck_assert_int_eq(etcd_get(e, "/a", &k, err, sizeof(err)), -EPROTO);
	ck_assert_msg(strstr(err, "HTTP status 502"), "%s", err);
	ck_assert_int_eq(etcd_get(e, "/a", &k, err, sizeof(err)), -EPROTO);
	ck_assert_msg(strstr(err, "not asked for") && k.n == 0, "%s", err);
	ck_assert_int_eq(etcd_lease_keepalive(e, 5, NULL, err, sizeof(err)), -ENOENT);
	ck_assert_int_eq(etcd_txn(e, NULL, 0, NULL, 0, NULL, 0, &won, NULL, err, sizeof(err)),
	                 -EPROTO);
	ck_assert(!won);
	/* Too long: announced, or found out on the way. */
	for (int i = 0; i < 2; i++) {
		int64_t t0 = mono_ms();
		int r = etcd_get(e, "/a", &k, err, sizeof(err));
		ck_assert_msg(r == -EPROTO && strstr(err, "answer over") && mono_ms() - t0 < 3000,
		              "%s", err);
	}
	etcd_free(e);
	ck_assert_int_eq(unit_canned_stop(c), 7);
}
END_TEST

/* One client, several threads at once. */
static void *hammer(void *arg)
{
	struct etcd *e = ((void **)arg)[0];
	long me = (long)((void **)arg)[1];
	char key[32], val[32], msg[512];
	for (int i = 0; i < 30; i++) {
		struct etcd_kvs k;
		snprintf(key, sizeof(key), "/t/h/%ld", me);
		snprintf(val, sizeof(val), "%d", i);
		if (etcd_put(e, key, val, strlen(val), 0, msg, sizeof(msg)) ||
		    etcd_get(e, key, &k, msg, sizeof(msg)))
			return (void *)1;
		bool same = k.n == 1 && strcmp(k.kv[0].value, val) == 0;
		etcd_kvs_free(&k);
		if (!same)
			return (void *)1;
	}
	return NULL;
}

START_TEST(live_threads)
{
	const char *ep[] = { srv.url };
	struct etcd *e = client(ep, 1, 5000);
	pthread_t t[6];
	void *args[6][2], *rv;
	for (long i = 0; i < 6; i++) {
		args[i][0] = e;
		args[i][1] = (void *)i;
		ck_assert_int_eq(pthread_create(&t[i], NULL, hammer, args[i]), 0);
	}
	for (int i = 0; i < 6; i++) {
		ck_assert_int_eq(pthread_join(t[i], &rv), 0);
		ck_assert_ptr_null(rv);
	}
	etcd_free(e);
}
END_TEST

static TCase *live_tcase(void)
{
	TCase *tc = tcase_create("live");
	tcase_add_unchecked_fixture(tc, live_start, live_stop);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, client_args);
	tcase_add_test(tc, live_kv);
	tcase_add_test(tc, live_lease);
	tcase_add_test(tc, live_txn);
	tcase_add_test(tc, live_failover);
	tcase_add_test(tc, live_all_dead);
	tcase_add_test(tc, fake_answers);
	tcase_add_test(tc, live_threads);
	return tc;
}

static Suite *make_suite(void)
{
	Suite *s = suite_create("cluster_etcd");
	suite_add_tcase(s, live_tcase());
	return s;
}

UNIT_MAIN()
