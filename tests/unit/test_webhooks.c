/* Unit tests: webhooks (daemon/sandboxes/webhooks.c, webhook_req.c): the
 * registration's checks; the signature against a known HMAC-SHA-256; a
 * receiver (an MHD server here) gets each event POSTed with a timestamp
 * and a signature it can check, a 500 answered is retried a second later,
 * a hook that wants other types gets nothing; a tenant sees and deletes
 * only its own hooks; the secret is in no answer but in the 0600 file. */
#include <jansson.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "daemon/sandboxes/sandbox.h"
#include "daemon/sandboxes/state.h"
#include "daemon/sandboxes/table.h"
#include "daemon/sandboxes/webhook_req.h"
#include "daemon/sandboxes/webhooks.h"
#include "unit.h"

/* Stand-in for the sandbox table's ids. */
int coved_new_id(char *out)
{
	static atomic_int n;
	snprintf(out, COVED_ID_LEN + 1, "hook%016d", atomic_fetch_add(&n, 1));
	return 0;
}

#define SECRET "0123456789abcdef-secret"

struct got {
	char body[4096];
	size_t len;
	char ts[32], sig[128], event[32];
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct got got[8];
static atomic_int ngot, fail_next;

static enum MHD_Result answer(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *data,
                              size_t *size, void **state)
{
	(void)cls;
	(void)url;
	(void)method;
	(void)version;
	struct got *g = *state;
	if (!g) {
		*state = calloc(1, sizeof(struct got));
		return MHD_YES;
	}
	if (*size) {
		size_t n =
		    *size < sizeof(g->body) - g->len - 1 ? *size : sizeof(g->body) - g->len - 1;
		memcpy(g->body + g->len, data, n);
		g->len += n;
		*size = 0;
		return MHD_YES;
	}
	const char *ts = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Cove-Timestamp");
	const char *sig = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Cove-Signature");
	const char *ev = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Cove-Event");
	snprintf(g->ts, sizeof(g->ts), "%s", ts ? ts : "");
	snprintf(g->sig, sizeof(g->sig), "%s", sig ? sig : "");
	snprintf(g->event, sizeof(g->event), "%s", ev ? ev : "");
	int fail = atomic_exchange(&fail_next, 0);
	pthread_mutex_lock(&mu);
	int i = atomic_load(&ngot);
	if (i < 8)
		got[i] = *g;
	atomic_store(&ngot, i + 1);
	pthread_mutex_unlock(&mu);
	struct MHD_Response *r = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
	enum MHD_Result ret = MHD_queue_response(c, fail ? 500 : 200, r);
	MHD_destroy_response(r);
	return ret;
}

static void done(void *cls, struct MHD_Connection *c, void **state,
                 enum MHD_RequestTerminationCode why)
{
	(void)cls;
	(void)c;
	(void)why;
	free(*state);
	*state = NULL;
}

static int wait_got(int n, int ms)
{
	int64_t end = mono_ms() + ms;
	while (atomic_load(&ngot) < n && mono_ms() < end)
		usleep(10000);
	return atomic_load(&ngot);
}

static json_t *event(const char *type, int id)
{
	return json_pack("{s:i, s:s, s:s, s:s}", "id", id, "type", type, "sandboxID",
	                 "sbx0000000000000001", "reason", "requested");
}

START_TEST(parse_and_sign)
{
	struct coved_webhook_req r;
	char err[300];
	json_t *b = json_pack("{s:s, s:s}", "url", "ftp://x", "secret", SECRET);
	ck_assert_int_eq(coved_webhook_parse(b, &r, err, sizeof(err)), -1);
	json_decref(b);
	b = json_pack("{s:s, s:s}", "url", "http://x/h", "secret", "short");
	ck_assert_int_eq(coved_webhook_parse(b, &r, err, sizeof(err)), -1);
	json_decref(b);
	b = json_pack("{s:s, s:s, s:[s]}", "url", "http://x/h", "secret", SECRET, "events", "nope");
	ck_assert_int_eq(coved_webhook_parse(b, &r, err, sizeof(err)), -1);
	json_decref(b);
	b = json_pack("{s:s, s:s, s:[s,s]}", "url", "https://x/h", "secret", SECRET, "events",
	              "paused", "dead");
	ck_assert_int_eq(coved_webhook_parse(b, &r, err, sizeof(err)), 0);
	ck_assert_uint_eq(r.types, coved_event_bit("paused") | coved_event_bit("dead"));
	coved_webhook_req_free(&r);
	json_decref(b);
	char sig[COVED_WEBHOOK_SIG_LEN + 1];
	ck_assert_int_eq(coved_webhook_sign("0123456789abcdef", 1700000000, "{\"a\":1}", 7, sig),
	                 0);
	ck_assert_str_eq(sig, "9eb18f493f8ec135d9eb2dad817c369bb4e9cbfa818657897a7437c1cd8c3a23");
}
END_TEST

START_TEST(deliver)
{
	struct MHD_Daemon *srv = MHD_start_daemon(
	    MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION, 0, NULL, NULL, answer,
	    NULL, MHD_OPTION_NOTIFY_COMPLETED, done, NULL, MHD_OPTION_END);
	ck_assert_ptr_nonnull(srv);
	int port = MHD_get_daemon_info(srv, MHD_DAEMON_INFO_BIND_PORT)->port;
	char dir[] = "/tmp/cove-hooks.XXXXXX";
	ck_assert_ptr_nonnull(mkdtemp(dir));
	struct coved d;
	memset(&d, 0, sizeof(d));
	d.cfg.state_dir = dir;
	d.cfg.webhook_private_ok = true; /* the receiver is on loopback */
	struct coved_webhooks *w;
	char err[300], url[100];
	ck_assert_int_eq(coved_webhooks_start(&d, &w, err, sizeof(err)), 0);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/hook", port);
	json_t *b = json_pack("{s:s, s:s}", "url", url, "secret", SECRET), *out = NULL;
	ck_assert_int_eq(coved_webhook_add(w, "alice", b, &out, err, sizeof(err)), 0);
	ck_assert_ptr_null(json_object_get(out, "secret"));
	char id[64];
	snprintf(id, sizeof(id), "%s", json_string_value(json_object_get(out, "id")));
	json_decref(out);
	json_decref(b);
	/* Only killed: gets no paused. */
	b = json_pack("{s:s, s:s, s:[s]}", "url", url, "secret", SECRET, "events", "killed");
	ck_assert_int_eq(coved_webhook_add(w, "alice", b, &out, err, sizeof(err)), 0);
	json_decref(out);
	json_decref(b);
	json_t *l = coved_webhook_list(w, "alice");
	ck_assert_uint_eq(json_array_size(l), 2);
	char *text = json_dumps(l, 0);
	ck_assert_ptr_null(strstr(text, SECRET));
	free(text);
	json_decref(l);
	l = coved_webhook_list(w, "bob");
	ck_assert_uint_eq(json_array_size(l), 0);
	json_decref(l);
	ck_assert_int_eq(coved_webhook_delete(w, "bob", id, err, sizeof(err)), 404);
	char path[300];
	snprintf(path, sizeof(path), "%s/webhooks.json", dir);
	struct stat st;
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_uint_eq(st.st_mode & 0777, 0600);

	/* The first answer is a 500: the retry comes about a second later. */
	atomic_store(&fail_next, 1);
	int64_t t0 = mono_ms();
	json_t *ev = event("paused", 7);
	coved_webhooks_post(w, "alice", "paused", ev);
	coved_webhooks_post(w, "bob", "paused", ev); /* bob has no hooks */
	ck_assert_int_eq(wait_got(2, 5000), 2);
	ck_assert_int_ge(mono_ms() - t0, 900);
	ck_assert_int_eq(wait_got(3, 300), 2); /* the killed-only hook got nothing */
	char *want = json_dumps(ev, JSON_COMPACT);
	json_decref(ev);
	for (int i = 0; i < 2; i++) {
		ck_assert_str_eq(got[i].body, want);
		ck_assert_str_eq(got[i].event, "paused");
		long long ts = atoll(got[i].ts);
		ck_assert_int_le(llabs(ts - wall_ms() / 1000), 5);
		char sig[COVED_WEBHOOK_SIG_LEN + 1], hdr[80];
		ck_assert_int_eq(coved_webhook_sign(SECRET, ts, got[i].body, got[i].len, sig), 0);
		snprintf(hdr, sizeof(hdr), "v1=%s", sig);
		ck_assert_str_eq(got[i].sig, hdr);
	}
	free(want);
	ck_assert_int_eq(coved_webhook_delete(w, "alice", id, err, sizeof(err)), 0);
	coved_webhooks_stop(w);
	/* The registration left survives a restart, secret and all. */
	ck_assert_int_eq(coved_webhooks_start(&d, &w, err, sizeof(err)), 0);
	l = coved_webhook_list(w, "alice");
	ck_assert_uint_eq(json_array_size(l), 1);
	json_decref(l);
	/* Without webhook_private_ok a loopback receiver is never dialled. */
	d.cfg.webhook_private_ok = false;
	ev = event("killed", 8);
	coved_webhooks_post(w, "alice", "killed", ev);
	json_decref(ev);
	ck_assert_int_eq(wait_got(3, 2500), 2);
	coved_webhooks_stop(w);
	MHD_stop_daemon(srv);
	unlink(path);
	rmdir(dir);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("webhooks");
	TCase *tc = tcase_create("webhooks");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, parse_and_sign);
	tcase_add_test(tc, deliver);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN()
