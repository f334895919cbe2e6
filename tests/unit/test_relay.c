/* Unit tests: the HTTP framing of requests relayed to sandboxes' ports
 * (daemon/http/relay.c): routing values, the request head, and the
 * parser of the server's answer, fed whole and a byte at a time. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/http/relay.h"
#include "unit.h"

START_TEST(port_values)
{
	ck_assert_int_eq(relay_port_value("8000"), 8000);
	ck_assert_int_eq(relay_port_value("1"), 1);
	ck_assert_int_eq(relay_port_value("65535"), 65535);
	const char *bad[] = { "",    "0",   "65536", "08000",  "-1", "+80",
		              " 80", "80 ", "8o",    "123456", NULL };
	for (int i = 0; bad[i]; i++)
		ck_assert_msg(relay_port_value(bad[i]) == -EINVAL, "%s", bad[i]);
	ck_assert_int_eq(relay_port_value(NULL), -EINVAL);
}
END_TEST

START_TEST(host_routes)
{
	uint16_t port = 0;
	char id[RELAY_ID_MAX + 1];
	ck_assert_int_eq(relay_host_route("8000-abc123.cove.test", "cove.test", &port, id), 1);
	ck_assert_int_eq(port, 8000);
	ck_assert_str_eq(id, "abc123");
	/* Any case, the listener's port, a trailing dot. */
	ck_assert_int_eq(relay_host_route("49983-AbC.Cove.Test:8443", "cove.test", &port, id), 1);
	ck_assert_int_eq(port, 49983);
	ck_assert_str_eq(id, "abc");
	ck_assert_int_eq(relay_host_route("3000-x9.cove.test.", "cove.test", &port, id), 1);
	ck_assert_str_eq(id, "x9");
	/* Not a port's: the control plane's names and others. */
	const char *other[] = { "cove.test",
		                "api.cove.test",
		                "api-x.cove.test",
		                "8000-abc.other.test",
		                "8000-abc.x.cove.test",
		                "8000-abc.evilcove.test",
		                "localhost:3000",
		                "127.0.0.1",
		                "8000-abc.cove.test:https",
		                "",
		                NULL };
	for (int i = 0; other[i]; i++)
		ck_assert_msg(relay_host_route(other[i], "cove.test", &port, id) == 0, "%s",
		              other[i]);
	ck_assert_int_eq(relay_host_route(NULL, "cove.test", &port, id), 0);
	/* Looks like one, is not. */
	const char *bad[] = { "0-abc.cove.test",
		              "70000-abc.cove.test",
		              "080-abc.cove.test",
		              "80-.cove.test",
		              "80-a_b.cove.test",
		              "80-a%62.cove.test",
		              NULL };
	for (int i = 0; bad[i]; i++)
		ck_assert_msg(relay_host_route(bad[i], "cove.test", &port, id) == -EINVAL, "%s",
		              bad[i]);
	char longid[100];
	memset(longid, 'a', sizeof(longid));
	memcpy(longid, "80-", 3);
	snprintf(longid + 3 + RELAY_ID_MAX + 1, sizeof(longid) - 3 - RELAY_ID_MAX - 1,
	         ".cove.test");
	ck_assert_int_eq(relay_host_route(longid, "cove.test", &port, id), -EINVAL);
}
END_TEST

START_TEST(upgrade_and_filters)
{
	ck_assert(relay_is_upgrade("keep-alive, Upgrade", "websocket"));
	ck_assert(relay_is_upgrade("upgrade", "h2c"));
	ck_assert(!relay_is_upgrade("keep-alive", "websocket"));
	ck_assert(!relay_is_upgrade("upgrade", NULL));
	ck_assert(!relay_is_upgrade("upgrades", "websocket"));
	ck_assert(!relay_is_upgrade(NULL, "websocket"));
	/* Requests: coved's credentials and hop-by-hop headers stay here. */
	const char *stay[] = { "X-Access-Token",
		               "x-api-key",
		               "E2B-Traffic-Access-Token",
		               "E2b-Sandbox-Id",
		               "e2b-sandbox-port",
		               "X-Cove-Node-Auth",
		               "Connection",
		               "Keep-Alive",
		               "Transfer-Encoding",
		               "Content-Length",
		               "Upgrade",
		               "TE",
		               "Proxy-Authorization",
		               "Expect",
		               "Host",
		               NULL };
	for (int i = 0; stay[i]; i++)
		ck_assert_msg(!relay_pass_on(stay[i], NULL), "%s", stay[i]);
	ck_assert(relay_pass_on("Authorization", NULL)); /* the app's own */
	ck_assert(relay_pass_on("Cookie", "close"));
	ck_assert(!relay_pass_on("X-Hop", "close, X-Hop"));
	ck_assert(relay_pass_back("Set-Cookie", NULL));
	ck_assert(relay_pass_back("Date", NULL));
	ck_assert(!relay_pass_back("Content-Length", NULL));
	ck_assert(!relay_pass_back("transfer-encoding", NULL));
	ck_assert(!relay_pass_back("Connection", NULL));
	ck_assert(!relay_pass_back("X-Drop", "X-Drop"));
}
END_TEST

START_TEST(request_heads)
{
	struct relay_hdr h[] = { { "Host", "8000-abc.cove.test" },
		                 { "User-Agent", "t/1" },
		                 { "X-Access-Token", "secret" },
		                 { "X-API-Key", "key" },
		                 { "Connection", "keep-alive, X-Drop" },
		                 { "X-Drop", "1" },
		                 { "Cookie", "a=1" },
		                 { "Cookie", "b=2" },
		                 { "Transfer-Encoding", "chunked" } };
	struct relay_req q = { .method = "POST",
		               .target = "/a%20b?x=1&y=%2F",
		               .hdrs = h,
		               .nhdrs = sizeof(h) / sizeof(h[0]),
		               .body = RELAY_BODY_CHUNKED,
		               .port = 8000 };
	char *out;
	size_t len;
	char err[200];
	ck_assert_int_eq(relay_req_head(&q, &out, &len, err, sizeof(err)), 0);
	ck_assert_str_eq(out, "POST /a%20b?x=1&y=%2F HTTP/1.1\r\n"
	                      "Host: 8000-abc.cove.test\r\n"
	                      "User-Agent: t/1\r\n"
	                      "Cookie: a=1\r\n"
	                      "Cookie: b=2\r\n"
	                      "Transfer-Encoding: chunked\r\n"
	                      "Connection: close\r\n\r\n");
	ck_assert_uint_eq(len, strlen(out));
	free(out);
	/* No Host: one of the port's; a length; an upgrade. */
	struct relay_hdr h2[] = { { "Connection", "Upgrade" }, { "Upgrade", "websocket" } };
	struct relay_req q2 = { .method = "GET",
		                .target = "/ws",
		                .hdrs = h2,
		                .nhdrs = 2,
		                .upgrade = "websocket",
		                .port = 9000 };
	ck_assert_int_eq(relay_req_head(&q2, &out, &len, err, sizeof(err)), 0);
	ck_assert_str_eq(out, "GET /ws HTTP/1.1\r\nHost: 127.0.0.1:9000\r\n"
	                      "Connection: Upgrade\r\nUpgrade: websocket\r\n\r\n");
	free(out);
	q2.upgrade = NULL;
	q2.nhdrs = 0;
	q2.body = RELAY_BODY_LENGTH;
	q2.length = 12345678901ULL;
	ck_assert_int_eq(relay_req_head(&q2, &out, &len, err, sizeof(err)), 0);
	ck_assert_ptr_nonnull(strstr(out, "\r\nContent-Length: 12345678901\r\n"));
	free(out);
	/* Refused: targets not in origin form, bad methods, split headers. */
	const char *targets[] = { "http://x/", "//x/", "x", "/a b", "/a\r\n", "", NULL };
	for (int i = 0; targets[i]; i++) {
		q2.target = targets[i];
		ck_assert_msg(relay_req_head(&q2, &out, &len, err, sizeof(err)) == -EINVAL, "%s",
		              targets[i]);
		ck_assert_ptr_null(out);
	}
	q2.target = "*";
	ck_assert_int_eq(relay_req_head(&q2, &out, &len, err, sizeof(err)), -EINVAL);
	q2.method = "OPTIONS";
	ck_assert_int_eq(relay_req_head(&q2, &out, &len, err, sizeof(err)), 0);
	free(out);
	q2.target = "/";
	q2.method = "GE T";
	ck_assert_int_eq(relay_req_head(&q2, &out, &len, err, sizeof(err)), -EINVAL);
	q2.method = "GET";
	struct relay_hdr h3[] = { { "X-A", "1\r\nX-Injected: 2" } };
	q2.hdrs = h3;
	q2.nhdrs = 1;
	ck_assert_int_eq(relay_req_head(&q2, &out, &len, err, sizeof(err)), -EINVAL);
	struct relay_hdr h4[] = { { "X A", "1" } };
	q2.hdrs = h4;
	ck_assert_int_eq(relay_req_head(&q2, &out, &len, err, sizeof(err)), -EINVAL);
	char ch[24];
	ck_assert_uint_eq(relay_chunk_head(255, ch), 4);
	ck_assert_str_eq(ch, "ff\r\n");
}
END_TEST

/* feed() - text through a fresh parser, step bytes at a time (0: whole);
 * the body into body (its length in *blen).  Return: the last feed's
 * result, or relay_resp_eof's when eof. */
static long feed(struct relay_resp *r, bool head_req, const char *text, size_t step, bool eof,
                 char *body, size_t *blen, size_t *taken)
{
	relay_resp_init(r, head_req);
	size_t n = strlen(text), off = 0;
	*blen = 0;
	long k = 0;
	while (off < n && !r->done && !(r->head_done && r->upgraded)) {
		size_t c = step && step < n - off ? step : n - off;
		k = relay_resp_feed(r, (const uint8_t *)text + off, c, (uint8_t *)body, blen);
		if (k < 0)
			return k;
		off += (size_t)k;
		if ((size_t)k < c)
			break;
	}
	if (taken)
		*taken = off;
	if (eof)
		return relay_resp_eof(r);
	return k;
}

static const char *hdr(const struct relay_resp *r, const char *name)
{
	for (unsigned i = 0; i < r->nhdrs; i++) {
		const char *n, *v;
		relay_resp_header(r, i, &n, &v);
		if (strcasecmp(n, name) == 0)
			return v;
	}
	return NULL;
}

START_TEST(answers)
{
	struct relay_resp *r = malloc(sizeof(*r));
	static char body[1 << 16];
	size_t blen, taken;
	const size_t steps[] = { 0, 1, 2, 7 };
	for (size_t s = 0; s < sizeof(steps) / sizeof(steps[0]); s++) {
		size_t st = steps[s];
		/* A length. */
		const char *a = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nSet-Cookie: a=1\r\n"
		                "Set-Cookie: b=2\r\nContent-Length: 5\r\n\r\nhello";
		ck_assert_int_ge(feed(r, false, a, st, false, body, &blen, NULL), 0);
		ck_assert(r->head_done && r->done && !r->upgraded);
		ck_assert_int_eq(r->status, 200);
		ck_assert_int_eq(r->length, 5);
		ck_assert_uint_eq(r->nhdrs, 4);
		ck_assert_str_eq(hdr(r, "content-type"), "text/plain");
		ck_assert_uint_eq(blen, 5);
		ck_assert_mem_eq(body, "hello", 5);
		/* Chunks, undone; a trailer; bytes after the end are not taken. */
		const char *c = "HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n"
		                "5\r\nhello\r\n6;x=y\r\n world\r\n0\r\nX-T: 1\r\n\r\nGARBAGE";
		ck_assert_int_ge(feed(r, false, c, st, false, body, &blen, &taken), 0);
		ck_assert(r->done);
		ck_assert_int_eq(r->status, 201);
		ck_assert_int_eq(r->length, -1);
		ck_assert_uint_eq(blen, 11);
		ck_assert_mem_eq(body, "hello world", 11);
		ck_assert_uint_eq(taken, strlen(c) - 7);
		/* To the end of the stream. */
		const char *e = "HTTP/1.0 200 OK\r\nServer: x\r\n\r\nstreamed to the end";
		ck_assert_int_eq(feed(r, false, e, st, true, body, &blen, NULL), 0);
		ck_assert(r->done);
		ck_assert_uint_eq(blen, 19);
		/* Informational answers are skipped. */
		const char *i = "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 404 Not Found\r\n"
		                "Content-Length: 2\r\n\r\nno";
		ck_assert_int_ge(feed(r, false, i, st, false, body, &blen, NULL), 0);
		ck_assert_int_eq(r->status, 404);
		ck_assert_uint_eq(r->nhdrs, 1);
		ck_assert_mem_eq(body, "no", 2);
		/* HEAD: the length it names, no body. */
		const char *h = "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n";
		ck_assert_int_ge(feed(r, true, h, st, false, body, &blen, NULL), 0);
		ck_assert(r->done);
		ck_assert_int_eq(r->length, 1000);
		ck_assert_uint_eq(blen, 0);
		/* 204: no body whatever it says. */
		ck_assert_int_ge(
		    feed(r, false, "HTTP/1.1 204 No Content\r\n\r\n", st, false, body, &blen, NULL),
		    0);
		ck_assert(r->done);
		ck_assert_int_eq(r->length, 0);
		/* 101: the head, then the new protocol's bytes are not taken. */
		const char *u =
		    "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
		    "Connection: Upgrade\r\nSec-WebSocket-Accept: abc\r\n\r\n\x81\x02hi";
		ck_assert_int_ge(feed(r, false, u, st, false, body, &blen, &taken), 0);
		ck_assert(r->head_done && r->upgraded);
		ck_assert_int_eq(r->status, 101);
		ck_assert_str_eq(hdr(r, "Sec-WebSocket-Accept"), "abc");
		ck_assert_uint_eq(taken, strlen(u) - 4);
		ck_assert_uint_eq(blen, 0);
	}
	free(r);
}
END_TEST

START_TEST(bad_answers)
{
	struct relay_resp *r = malloc(sizeof(*r));
	static char body[1 << 16];
	size_t blen;
	const char *bad[] = {
		"SSH-2.0-OpenSSH\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n",
		"HTTP/1.1 200 OK\r\nX: a\001b\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
		"HTTP/1.1 2000 OK\r\n\r\n",
		"HTTP/1.1 20\nX-A: b\r\n\r\n",
		NULL,
	};
	for (int i = 0; bad[i]; i++) {
		long k = feed(r, false, bad[i], 0, false, body, &blen, NULL);
		ck_assert_msg(k == -EPROTO, "%d: %ld", i, k);
		ck_assert(r->err[0]);
	}
	/* Cut short: inside the head, inside a length, inside chunks. */
	ck_assert_int_eq(feed(r, false, "HTTP/1.1 200 OK\r\nContent-", 0, true, body, &blen, NULL),
	                 -EPROTO);
	ck_assert_int_eq(feed(r, false, "HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nabc", 0, true,
	                      body, &blen, NULL),
	                 -EPROTO);
	ck_assert_int_eq(feed(r, false,
	                      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nab", 0,
	                      true, body, &blen, NULL),
	                 -EPROTO);
	ck_assert_int_eq(feed(r, false, "", 0, true, body, &blen, NULL), -EPROTO);
	/* A head over its bound, and too many lines. */
	size_t big = RELAY_HEAD_MAX + 100;
	char *h = malloc(big + 64);
	strcpy(h, "HTTP/1.1 200 OK\r\nX-Big: ");
	size_t o = strlen(h);
	memset(h + o, 'a', big);
	strcpy(h + o + big, "\r\n\r\n");
	ck_assert_int_eq(feed(r, false, h, 4096, false, body, &blen, NULL), -EPROTO);
	o = (size_t)sprintf(h, "HTTP/1.1 200 OK\r\n");
	for (int i = 0; i <= RELAY_HEADERS_MAX; i++)
		o += (size_t)sprintf(h + o, "X-%d: 1\r\n", i);
	strcpy(h + o, "\r\n");
	ck_assert_int_eq(feed(r, false, h, 0, false, body, &blen, NULL), -EPROTO);
	ck_assert_ptr_nonnull(strstr(r->err, "128"));
	free(h);
	free(r);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("relay");
	TCase *t = tcase_create("relay");
	tcase_add_test(t, port_values);
	tcase_add_test(t, host_routes);
	tcase_add_test(t, upgrade_and_filters);
	tcase_add_test(t, request_heads);
	tcase_add_test(t, answers);
	tcase_add_test(t, bad_answers);
	suite_add_tcase(s, t);
	return s;
}

UNIT_MAIN()
