/* Unit tests: credential injection's pure parts: the rules file parser and
 * matcher (common/proxyrule.c), the HTTP request head on libhttp-parser,
 * the decisions on an intercepted request and its rebuild
 * (egress/httpreq.c), the path normaliser (egress/httppath.c), the guest's bundle block
 * (guest-agent/ca.c) and the sandbox CA (egress/tlsca.c). */
#include <errno.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <string.h>

#include "egress/httppath.h"
#include "egress/httpreq.h"
#include "egress/tlsca.h"
#include "guest-agent/ca.h"
#include "proxyrule.h"
#include "unit.h"

static const char good[] =
    "{\"secrets\":{\"T\":{\"env\":\"T\"},\"U\":{\"file\":\"/u\"}},\"rules\":["
    "{\"name\":\"a\",\"match_hosts\":[\"API.test.\"],\"match_paths\":[\"/v1/\",\"/x/*/y\"],"
    "\"match_methods\":[\"get\"],\"headers\":{\"Authorization\":\"Bearer {{secrets.T}}\"},"
    "\"env_vars\":{\"GH_TOKEN\":\"dummy\"}},"
    "{\"name\":\"b\",\"match_hosts\":[\"*.acct.test\"],\"match_headers\":{\"X-Account\":\"b\"},"
    "\"headers\":{\"Authorization\":\"{{secrets.U}}-{{secrets.T}}\"}}]}";

static int parse(const char *text, struct proxy_rules *r, char *err)
{
	return proxy_rules_parse(text, strlen(text), r, err, 300);
}

START_TEST(rules_parse_and_match)
{
	struct proxy_rules r;
	char err[300] = "";
	ck_assert_int_eq(parse(good, &r, err), 0);
	ck_assert_uint_eq(r.n, 2);
	ck_assert_str_eq(r.rules[0].hosts[0], "api.test");
	ck_assert_str_eq(r.rules[0].methods[0], "GET");
	ck_assert_ptr_nonnull(proxy_rules_for_host(&r, "api.test"));
	ck_assert_ptr_null(proxy_rules_for_host(&r, "acct.test"));
	ck_assert_ptr_nonnull(proxy_rules_for_host(&r, "x.acct.test"));
	ck_assert_ptr_null(proxy_rules_for_host(&r, "xacct.test"));
	ck_assert_uint_eq(r.rules[0].schemes, PROXY_SCHEME_HTTPS);
	const struct proxy_rule *u =
	    proxy_rules_match(&r, "api.test", true, "GET", "/v1/me?q=1", 10, NULL, 0);
	ck_assert_ptr_nonnull(u);
	ck_assert_str_eq(u->name, "a");
	ck_assert_ptr_null(proxy_rules_match(&r, "api.test", true, "POST", "/v1/me", 6, NULL, 0));
	ck_assert_ptr_null(proxy_rules_match(&r, "api.test", true, "GET", "/v2/me", 6, NULL, 0));
	ck_assert_ptr_nonnull(proxy_rules_match(&r, "api.test", true, "GET", "/x/z/y", 6, NULL, 0));
	/* FNM_PATHNAME: '*' stays within one segment. */
	ck_assert_ptr_null(proxy_rules_match(&r, "api.test", true, "GET", "/x/z/w/y", 8, NULL, 0));
	/* Plain HTTP: no rule without "schemes": ["http"]. */
	ck_assert_ptr_null(proxy_rules_match(&r, "api.test", false, "GET", "/v1/me", 6, NULL, 0));
	struct proxy_hdr h[2] = { { "x-account", "a", 9, 1 }, { "X-ACCOUNT", "b", 9, 1 } };
	ck_assert_ptr_null(proxy_rules_match(&r, "q.acct.test", true, "GET", "/", 1, h, 1));
	ck_assert_ptr_nonnull(proxy_rules_match(&r, "q.acct.test", true, "GET", "/", 1, h + 1, 1));
	struct proxy_secret s[2] = { { "T", "tt", 2 }, { "U", "uuu", 3 } };
	char out[64], miss[16];
	ck_assert_int_eq(
	    proxy_expand(r.rules[1].headers[0].value, s, 2, out, sizeof(out), miss, sizeof(miss)),
	    6);
	ck_assert_str_eq(out, "uuu-tt");
	ck_assert_int_eq(proxy_expand("{{secrets.Z}}", s, 2, out, sizeof(out), miss, sizeof(miss)),
	                 -ENOENT);
	ck_assert_str_eq(miss, "Z");
	ck_assert_int_eq(proxy_expand("x{{secrets.U}}", s, 2, out, 4, miss, sizeof(miss)), -E2BIG);
	proxy_rules_free(&r);
}
END_TEST

START_TEST(rules_schemes)
{
	struct proxy_rules r;
	char err[300] = "";
	ck_assert_int_eq(parse("{\"rules\":[{\"name\":\"h\",\"match_hosts\":[\"a.test\"],"
	                       "\"schemes\":[\"http\"],\"headers\":{\"A\":\"b\"}},"
	                       "{\"name\":\"both\",\"match_hosts\":[\"b.test\"],"
	                       "\"schemes\":[\"https\",\"http\"],\"headers\":{\"A\":\"b\"}}]}",
	                       &r, err),
	                 0);
	ck_assert_uint_eq(r.rules[0].schemes, PROXY_SCHEME_HTTP);
	ck_assert_uint_eq(r.rules[1].schemes, PROXY_SCHEME_HTTP | PROXY_SCHEME_HTTPS);
	ck_assert_ptr_null(proxy_rules_match(&r, "a.test", true, "GET", "/", 1, NULL, 0));
	ck_assert_ptr_nonnull(proxy_rules_match(&r, "a.test", false, "GET", "/", 1, NULL, 0));
	ck_assert_ptr_nonnull(proxy_rules_match(&r, "b.test", true, "GET", "/", 1, NULL, 0));
	ck_assert_ptr_nonnull(proxy_rules_match(&r, "b.test", false, "GET", "/", 1, NULL, 0));
	proxy_rules_free(&r);
}
END_TEST

START_TEST(rules_refused)
{
	static const struct {
		const char *text, *want;
	} bad[] = {
		{ "{", "not JSON" },
		{ "[]", "not a JSON object" },
		{ "{\"rules\":[{\"name\":\"a\",\"headers\":{\"A\":\"b\"}}]}",
		  "no \"match_hosts\"" },
		{ "{\"rules\":[{\"name\":\"a\",\"match_hosts\":[],\"headers\":{\"A\":\"b\"}}]}",
		  "non-empty" },
		{ "{\"rules\":[{\"name\":\"a\",\"match_hosts\":[\"a.test\"],\"headers\":{\"A\":"
		  "\"{{secrets.X}}\"}}]}",
		  "unknown secret 'X'" },
		{ "{\"rules\":[{\"name\":\"a\",\"match_hosts\":[\"a.test\"],\"headers\":{"
		  "\"Transfer-Encoding\":\"x\"}}]}",
		  "cannot be injected" },
		{ "{\"rules\":[{\"name\":\"a\",\"match_hosts\":[\"a.test\"],\"headers\":{"
		  "\"Proxy-Authorization\":\"x\"}}]}",
		  "cannot be injected" },
		{ "{\"rules\":[{\"name\":\"a\",\"match_hosts\":[\"a.test\"],\"headers\":{\"A\":"
		  "\"x\\r\\nB: y\"}}]}",
		  "control bytes" },
		{ "{\"rules\":[{\"name\":\"a\",\"match_hosts\":[\"a "
		  "b\"],\"headers\":{\"A\":\"b\"}}]}",
		  "not a name" },
		{ "{\"rules\":[],\"extra\":1}", "unknown key" },
		{ "{\"rules\":[{\"name\":\"a\",\"match_hosts\":[\"a.test\"],\"headers\":{\"A\":"
		  "\"b\"}},"
		  "{\"name\":\"a\",\"match_hosts\":[\"b.test\"],\"headers\":{\"A\":\"b\"}}]}",
		  "two rules" },
		{ "{\"secrets\":{\"S\":{\"file\":\"/x\",\"env\":\"Y\"}},\"rules\":[]}",
		  "secret 'S'" },
		{ "{\"secrets\":{\"S\":{\"env\":\"1Y\"}},\"rules\":[]}", "variable name" },
		{ "{\"secrets\":{\"S\":{\"env\":\"Y\"}},\"rules\":[{\"name\":\"a\",\"match_hosts\":"
		  "["
		  "\"a.test\"],\"env_vars\":{\"E\":\"{{secrets.S}}\"}}]}",
		  "never a secret" },
		{ "{\"rules\":[{\"name\":\"a\",\"match_hosts\":[\"a.test\"],\"schemes\":"
		  "[\"ftp\"],\"headers\":{\"A\":\"b\"}}]}",
		  "scheme 'ftp'" },
		{ "{\"rules\":[{\"name\":\"a\",\"match_hosts\":[\"a.test\"],\"schemes\":"
		  "[\"HTTP\"],\"headers\":{\"A\":\"b\"}}]}",
		  "scheme 'HTTP'" },
		{ "{\"rules\":[{\"name\":\"a\",\"match_hosts\":[\"a.test\"],\"schemes\":"
		  "[],\"headers\":{\"A\":\"b\"}}]}",
		  "non-empty" },
		{ "{\"rules\":[{\"name\":\"a\",\"match_hosts\":[\"a.test\"],\"schemes\":"
		  "\"http\",\"headers\":{\"A\":\"b\"}}]}",
		  "\"schemes\" must be" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct proxy_rules r;
		char err[300] = "";
		ck_assert_int_eq(parse(bad[i].text, &r, err), -EINVAL);
		ck_assert_msg(strstr(err, bad[i].want), "%zu: '%s' lacks '%s'", i, err,
		              bad[i].want);
	}
	ck_assert(proxy_header_forbidden("HOST", 4));
	ck_assert(proxy_header_forbidden("proxy-x", 7));
	ck_assert(!proxy_header_forbidden("authorization", 13));
}
END_TEST

static enum httpreq_result feed_all(struct httpreq *q, const char *s, size_t step)
{
	enum httpreq_result r = HTTPREQ_MORE;
	size_t n = strlen(s);
	for (size_t o = 0; o < n && r == HTTPREQ_MORE;) {
		size_t k = n - o < step ? n - o : step, used;
		r = httpreq_feed(q, (const uint8_t *)s + o, k, &used);
		o += used;
	}
	return r;
}

START_TEST(httpreq_head_and_rewrite)
{
	static const char req[] = "GET /v1/me?x=1 HTTP/1.1\r\nHost: api.test\r\n"
	                          "Authorization: guest\r\nConnection: keep-alive\r\n"
	                          "X-Account: a\r\n\r\nBODY";
	for (size_t step = 1; step <= sizeof(req); step += 7) {
		static struct httpreq q;
		httpreq_init(&q);
		ck_assert_int_eq(feed_all(&q, req, step), HTTPREQ_DONE);
		ck_assert_str_eq(httpreq_method(&q), "GET");
		ck_assert_uint_eq(q.url.len, 10);
		ck_assert(!memcmp(q.buf + q.url.off, "/v1/me?x=1", 10));
		ck_assert(!memcmp(q.buf + q.head_end, "BODY", q.len - q.head_end));
		struct proxy_hdr h[8];
		ck_assert_uint_eq(httpreq_headers(&q, h, 8), 4);
		ck_assert(h[3].vlen == 1 && h[3].value[0] == 'a');
		struct proxy_hdr add = { "authorization", "Bearer s", 13, 8 };
		uint8_t out[512];
		long n = httpreq_rewrite(&q, NULL, 0, NULL, &add, 1, out, sizeof(out));
		ck_assert_int_gt(n, 0);
		out[n] = 0;
		ck_assert_str_eq((char *)out, "GET /v1/me?x=1 HTTP/1.1\r\nHost: api.test\r\n"
		                              "X-Account: a\r\nauthorization: Bearer s\r\n"
		                              "Connection: close\r\n\r\n");
		ck_assert_int_eq(httpreq_rewrite(&q, NULL, 0, NULL, &add, 1, out, 20), -1);
		/* Cove's own Host and target. */
		n = httpreq_rewrite(&q, "/v1/x", 5, "api.test", &add, 1, out, sizeof(out));
		ck_assert_int_gt(n, 0);
		out[n] = 0;
		ck_assert_str_eq((char *)out, "GET /v1/x HTTP/1.1\r\nHost: api.test\r\n"
		                              "X-Account: a\r\nauthorization: Bearer s\r\n"
		                              "Connection: close\r\n\r\n");
	}
	static struct httpreq q;
	httpreq_init(&q);
	ck_assert_int_eq(feed_all(&q, "GET / HTTP/1.1\r\nHost: a\r\nBad Header: x\r\n\r\n", 100),
	                 HTTPREQ_BAD);
	ck_assert_int_eq(q.status, 400);
	httpreq_init(&q);
	ck_assert_int_eq(feed_all(&q,
	                          "POST / HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: "
	                          "chunked\r\n\r\n",
	                          100),
	                 HTTPREQ_BAD);
	httpreq_init(&q);
	char big[HTTPREQ_HEAD_MAX + 64];
	memset(big, 'a', sizeof(big));
	memcpy(big, "GET /", 5);
	big[sizeof(big) - 1] = 0;
	ck_assert_int_eq(feed_all(&q, big, 4096), HTTPREQ_BAD);
	ck_assert_int_eq(q.status, 431);
}
END_TEST

START_TEST(path_normalize)
{
	static const struct {
		const char *in;
		long want; /* >= 0: the output below */
		const char *out;
	} c[] = {
		{ "/", 0, "/" },
		{ "/v1/x", 0, "/v1/x" },
		{ "/v1/../admin", 0, "/admin" },
		{ "/v1/./x/.", 0, "/v1/x/" },
		{ "/a/b/..", 0, "/a/" },
		{ "/..", 0, "/" },
		{ "/../../etc", 0, "/etc" },
		{ "/a//../b", 0, "/a/b" },
		{ "/%7euser/%41%62c", 0, "/~user/Abc" },
		{ "/a%2fb/c%3d", 0, "/a%2Fb/c%3D" },
		{ "/file%2Etxt", 0, "/file.txt" },
		{ "/v1/%2e%2e/admin", -EPERM, NULL },
		{ "/v1/%2E/admin", -EPERM, NULL },
		{ "/v1/.%2e/admin", -EPERM, NULL },
		{ "/v1/x%2F..%2Fadmin", -EPERM, NULL },
		{ "/v1/x%2f..", -EPERM, NULL },
		{ "/v1/..%5Cadmin", -EPERM, NULL },
		{ "/v1/..;/admin", -EPERM, NULL },
		{ "/v1/.;x/admin", -EPERM, NULL },
		{ "v1/x", -EINVAL, NULL },
		{ "", -EINVAL, NULL },
		{ "/a%2", -EINVAL, NULL },
		{ "/a%zz", -EINVAL, NULL },
		{ "/a\\..\\b", -EINVAL, NULL },
		{ "/a b", -EINVAL, NULL },
		{ "/a\x80", -EINVAL, NULL },
	};
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		char out[64];
		long n = httppath_normalize(c[i].in, strlen(c[i].in), out, sizeof(out));
		if (c[i].want < 0) {
			ck_assert_msg(n == c[i].want, "%s: %ld, not %ld", c[i].in, n, c[i].want);
			continue;
		}
		ck_assert_msg(n >= 0 && !strcmp(out, c[i].out), "%s: %ld '%s', not '%s'", c[i].in,
		              n, n >= 0 ? out : "", c[i].out);
		ck_assert_uint_eq((size_t)n, strlen(out));
	}
	char small[4];
	ck_assert_int_eq(httppath_normalize("/abc", 4, small, sizeof(small)), -E2BIG);
}
END_TEST

/* The decision for an intercepted request to api.test on 443. */
static int judge(const char *req, char *tgt, const char **why)
{
	static struct httpreq q;
	httpreq_init(&q);
	if (feed_all(&q, req, 100) != HTTPREQ_DONE)
		return -1;
	size_t tl;
	return httpreq_intercepted(&q, "api.test", 443, tgt, HTTPREQ_TARGET_MAX, &tl, why);
}

START_TEST(intercept_decisions)
{
	static char tgt[HTTPREQ_TARGET_MAX];
	const char *why = "";
	static const struct {
		const char *req;
		int status;
		const char *tgt;
	} c[] = {
		{ "GET /v1/x?a=1 HTTP/1.1\r\nHost: api.test\r\n\r\n", 0, "/v1/x?a=1" },
		{ "GET /v1/x HTTP/1.1\r\nHost: API.test.:443\r\n\r\n", 0, "/v1/x" },
		{ "GET /v1/../admin HTTP/1.1\r\nHost: api.test\r\n\r\n", 0, "/admin" },
		{ "GET https://api.test/v1/x?q HTTP/1.1\r\nHost: api.test\r\n\r\n", 0, "/v1/x?q" },
		{ "GET https://api.test HTTP/1.1\r\nHost: api.test\r\n\r\n", 0, "/" },
		{ "GET /v1/x HTTP/1.0\r\n\r\n", 0, "/v1/x" },
		{ "OPTIONS * HTTP/1.1\r\nHost: api.test\r\n\r\n", 0, "*" },
		{ "GET /v1/x HTTP/1.1\r\nHost: evil.test\r\n\r\n", 403, NULL },
		{ "GET /v1/x HTTP/1.1\r\nHost: api.test\r\nHost: evil.test\r\n\r\n", 403, NULL },
		{ "GET /v1/x HTTP/1.1\r\nHost: api.test\r\nhost: api.test\r\n\r\n", 403, NULL },
		{ "GET /v1/x HTTP/1.1\r\nHost: 198.51.100.7\r\n\r\n", 403, NULL },
		{ "GET /v1/x HTTP/1.1\r\nHost: api.test:8443\r\n\r\n", 403, NULL },
		{ "GET https://evil.test/v1/x HTTP/1.1\r\nHost: api.test\r\n\r\n", 403, NULL },
		{ "GET https://evil.test/v1/x HTTP/1.0\r\n\r\n", 403, NULL },
		{ "GET x://evil.test/v1/x HTTP/1.1\r\nHost: api.test\r\n\r\n", 403, NULL },
		{ "GET https://u@api.test/v1/x HTTP/1.1\r\nHost: api.test\r\n\r\n", 403, NULL },
		{ "CONNECT evil.test:443 HTTP/1.1\r\nHost: api.test\r\n\r\n", 403, NULL },
		{ "TRACE /v1/x HTTP/1.1\r\nHost: api.test\r\n\r\n", 403, NULL },
		{ "GET /v1/%2e%2e/admin HTTP/1.1\r\nHost: api.test\r\n\r\n", 403, NULL },
		{ "GET * HTTP/1.1\r\nHost: api.test\r\n\r\n", 400, NULL },
		{ "GET /v1/x HTTP/1.1\r\nHost: \r\n\r\n", 400, NULL },
		{ "GET /a%zz HTTP/1.1\r\nHost: api.test\r\n\r\n", 400, NULL },
	};
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		int st = judge(c[i].req, tgt, &why);
		ck_assert_msg(st == c[i].status, "%zu: %d, not %d (%s)", i, st, c[i].status,
		              why ? why : "");
		if (!st)
			ck_assert_msg(!strcmp(tgt, c[i].tgt), "%zu: '%s', not '%s'", i, tgt,
			              c[i].tgt);
		else
			ck_assert_ptr_nonnull(why);
	}
}
END_TEST

START_TEST(ca_bundle_block)
{
	char t[256];
	snprintf(t, sizeof(t), "sys1\n%sold\n%ssys2\n", AGENT_CA_BEGIN, AGENT_CA_END);
	size_t n = agent_ca_strip(t, strlen(t));
	t[n] = 0;
	ck_assert_str_eq(t, "sys1\nsys2\n");
	snprintf(t, sizeof(t), "a\n%sunterminated", AGENT_CA_BEGIN);
	n = agent_ca_strip(t, strlen(t));
	t[n] = 0;
	ck_assert_str_eq(t, "a\n");
}
END_TEST

START_TEST(sandbox_ca)
{
	static struct tlsca t;
	char err[200];
	ck_assert_int_eq(tlsca_init(&t, err, sizeof(err)), 0);
	X509 *leaf = tlsca_leaf(&t, "api.test");
	ck_assert_ptr_nonnull(leaf);
	ck_assert_ptr_eq(tlsca_leaf(&t, "api.test"), leaf);
	X509_STORE *st = X509_STORE_new();
	X509_STORE_add_cert(st, t.ca);
	X509_STORE_CTX *ctx = X509_STORE_CTX_new();
	X509_STORE_CTX_init(ctx, st, leaf, NULL);
	X509_VERIFY_PARAM_set1_host(X509_STORE_CTX_get0_param(ctx), "api.test", 0);
	ck_assert_int_eq(X509_verify_cert(ctx), 1);
	X509_STORE_CTX_free(ctx);
	X509_STORE_free(st);
	ck_assert(strstr(t.ca_pem, "BEGIN CERTIFICATE"));
	ck_assert(!strstr(t.ca_pem, "PRIVATE"));
	ck_assert_int_eq(X509_check_ca(t.ca), 1);
	static struct tlsca t2;
	ck_assert_int_eq(tlsca_init(&t2, err, sizeof(err)), 0);
	ck_assert_str_ne(t.ca_pem, t2.ca_pem);
	ck_assert_int_eq(tlsca_upstream(&t, t2.ca_pem, strlen(t2.ca_pem), err, sizeof(err)), 0);
	ck_assert_int_eq(tlsca_upstream(&t, "junk", 4, err, sizeof(err)), -EINVAL);
	tlsca_free(&t);
	tlsca_free(&t2);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("proxy");
	TCase *t = tcase_create("proxy");
	tcase_add_test(t, rules_parse_and_match);
	tcase_add_test(t, rules_refused);
	tcase_add_test(t, httpreq_head_and_rewrite);
	tcase_add_test(t, rules_schemes);
	tcase_add_test(t, path_normalize);
	tcase_add_test(t, intercept_decisions);
	tcase_add_test(t, ca_bundle_block);
	tcase_add_test(t, sandbox_ca);
	suite_add_tcase(s, t);
	return s;
}

UNIT_MAIN()
