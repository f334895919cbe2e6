/* Unit tests: egress/sniff.c, the ClientHello SNI/ECH parser (whole, split
 * across reads, split across TLS records, malformed) and the HTTP Host
 * parser and request rewrite. */
#include <string.h>

#include "egress/sniff.h"
#include "unit.h"

/* A ClientHello with @sni (NULL: no server_name) and an ECH extension if
 * @ech; split into records of at most @rec bytes.  Returns its length. */
static size_t hello(uint8_t *out, const char *sni, int ech, size_t rec)
{
	uint8_t body[1024];
	size_t o = 0;
	body[o++] = 3;
	body[o++] = 3;
	memset(body + o, 0x11, 32);
	o += 32;
	body[o++] = 0; /* session id */
	body[o++] = 0;
	body[o++] = 2;
	body[o++] = 0x13;
	body[o++] = 0x01;
	body[o++] = 1;
	body[o++] = 0; /* compression */
	size_t ext_len_at = o;
	o += 2;
	if (sni) {
		size_t n = strlen(sni);
		body[o++] = 0;
		body[o++] = 0;
		body[o++] = (uint8_t)((n + 5) >> 8);
		body[o++] = (uint8_t)(n + 5);
		body[o++] = (uint8_t)((n + 3) >> 8);
		body[o++] = (uint8_t)(n + 3);
		body[o++] = 0;
		body[o++] = (uint8_t)(n >> 8);
		body[o++] = (uint8_t)n;
		memcpy(body + o, sni, n);
		o += n;
	}
	if (ech) {
		body[o++] = 0xfe;
		body[o++] = 0x0d;
		body[o++] = 0;
		body[o++] = 4;
		memset(body + o, 0xaa, 4);
		o += 4;
	}
	/* a supported_versions extension */
	body[o++] = 0;
	body[o++] = 43;
	body[o++] = 0;
	body[o++] = 3;
	body[o++] = 2;
	body[o++] = 3;
	body[o++] = 4;
	size_t el = o - ext_len_at - 2;
	body[ext_len_at] = (uint8_t)(el >> 8);
	body[ext_len_at + 1] = (uint8_t)el;
	uint8_t hs[1100];
	hs[0] = 1;
	hs[1] = 0;
	hs[2] = (uint8_t)(o >> 8);
	hs[3] = (uint8_t)o;
	memcpy(hs + 4, body, o);
	size_t hl = o + 4, w = 0;
	for (size_t off = 0; off < hl; off += rec) {
		size_t n = hl - off < rec ? hl - off : rec;
		out[w++] = 22;
		out[w++] = 3;
		out[w++] = 1;
		out[w++] = (uint8_t)(n >> 8);
		out[w++] = (uint8_t)n;
		memcpy(out + w, hs + off, n);
		w += n;
	}
	return w;
}

START_TEST(sni_whole_and_split)
{
	uint8_t m[2048];
	struct sniff_tls t;
	for (size_t rec = 1; rec <= 2000; rec = rec < 16 ? rec + 1 : rec * 3) {
		size_t n = hello(m, "Allowed.TEST", 0, rec);
		ck_assert_int_eq(sniff_clienthello(m, n, &t), SNIFF_DONE);
		ck_assert_str_eq(t.name, "allowed.test");
		ck_assert_int_eq(t.ech, 0);
		/* Every prefix asks for more, never a wrong answer. */
		for (size_t k = 0; k < n; k++)
			ck_assert_int_eq(sniff_clienthello(m, k, &t), SNIFF_MORE);
	}
}
END_TEST

START_TEST(sni_ech_and_missing)
{
	uint8_t m[2048];
	struct sniff_tls t;
	size_t n = hello(m, "outer.test", 1, 4096);
	ck_assert_int_eq(sniff_clienthello(m, n, &t), SNIFF_DONE);
	ck_assert_int_eq(t.ech, 1);
	n = hello(m, NULL, 0, 4096);
	ck_assert_int_eq(sniff_clienthello(m, n, &t), SNIFF_NONAME);
	n = hello(m, "bad name!", 0, 4096);
	ck_assert_int_eq(sniff_clienthello(m, n, &t), SNIFF_BAD);
}
END_TEST

START_TEST(sni_malformed)
{
	uint8_t m[2048];
	struct sniff_tls t;
	size_t n = hello(m, "a.test", 0, 4096);
	uint8_t b[2048];
	/* Not a handshake record. */
	memcpy(b, m, n);
	b[0] = 23;
	ck_assert_int_eq(sniff_clienthello(b, n, &t), SNIFF_BAD);
	ck_assert_int_eq(sniff_clienthello((const uint8_t *)"GET / HTTP/1.1\r\n", 16, &t),
	                 SNIFF_BAD);
	/* A ServerHello type. */
	memcpy(b, m, n);
	b[5] = 2;
	ck_assert_int_eq(sniff_clienthello(b, n, &t), SNIFF_BAD);
	/* Extension length past the message: every length byte bumped. */
	for (size_t i = 5; i < n; i++) {
		memcpy(b, m, n);
		b[i] ^= 0xff;
		enum sniff_result r = sniff_clienthello(b, n, &t);
		ck_assert(r == SNIFF_BAD || r == SNIFF_DONE || r == SNIFF_NONAME ||
		          r == SNIFF_MORE);
	}
	/* Over the cap without an end. */
	static uint8_t big[SNIFF_TLS_MAX + 10];
	big[0] = 22;
	big[1] = 3;
	big[2] = 1;
	big[3] = 0x40;
	big[4] = 0x00;
	big[5] = 1;
	big[6] = 0x00;
	big[7] = 0xff;
	big[8] = 0xff;
	ck_assert_int_eq(sniff_clienthello(big, sizeof(big), &t), SNIFF_BAD);
}
END_TEST

static enum sniff_result host(const char *req, struct sniff_http *h)
{
	return sniff_http_host((const uint8_t *)req, strlen(req), h);
}

START_TEST(http_host)
{
	struct sniff_http h;
	ck_assert_int_eq(host("GET / HTTP/1.1\r\nHost: Allowed.Test\r\nAccept: */*\r\n\r\n", &h),
	                 SNIFF_DONE);
	ck_assert_str_eq(h.name, "allowed.test");
	ck_assert_int_eq(h.port, 0);
	ck_assert_int_eq(host("GET / HTTP/1.1\r\nhOsT:   a.test:8080  \r\n\r\nbody", &h),
	                 SNIFF_DONE);
	ck_assert_str_eq(h.name, "a.test");
	ck_assert_int_eq(h.port, 8080);
	ck_assert_uint_eq(h.head_len, strlen("GET / HTTP/1.1\r\nhOsT:   a.test:8080  \r\n\r\n"));
	ck_assert_int_eq(host("GET / HTTP/1.1\r\nHost: a.test\r\n", &h), SNIFF_MORE);
	ck_assert_int_eq(host("GET / HTTP/1.1\r\nHost: a.test\r\nHost: b.test\r\n\r\n", &h),
	                 SNIFF_BAD);
	ck_assert_int_eq(host("GET / HTTP/1.1\r\nAccept: x\r\n\r\n", &h), SNIFF_NONAME);
	ck_assert_int_eq(host("GET / HTTP/1.1\r\nHost: 198.51.100.7\r\n\r\n", &h), SNIFF_NONAME);
	ck_assert_int_eq(host("GET / HTTP/1.1\r\nHost: [::1]:80\r\n\r\n", &h), SNIFF_NONAME);
	ck_assert_int_eq(host("GET http://b.test/ HTTP/1.1\r\nHost: a.test\r\n\r\n", &h),
	                 SNIFF_BAD);
	ck_assert_int_eq(host("GET http://a.test/x HTTP/1.1\r\nHost: a.test\r\n\r\n", &h),
	                 SNIFF_DONE);
	/* Absolute form of any scheme (issue 26): its authority must be Host's. */
	ck_assert_int_eq(host("GET x://denied.test/ HTTP/1.1\r\nHost: allowed.test\r\n\r\n", &h),
	                 SNIFF_BAD);
	ck_assert_int_eq(host("GET ftp://denied.test/ HTTP/1.1\r\nHost: allowed.test\r\n\r\n", &h),
	                 SNIFF_BAD);
	ck_assert_int_eq(host("GET x://allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\n\r\n", &h),
	                 SNIFF_DONE);
	ck_assert_int_eq(host("GET http://a.test:8080/ HTTP/1.1\r\nHost: a.test\r\n\r\n", &h),
	                 SNIFF_BAD);
	ck_assert_int_eq(host("GET http://u@a.test/ HTTP/1.1\r\nHost: a.test\r\n\r\n", &h),
	                 SNIFF_BAD);
	ck_assert_int_eq(host("CONNECT b.test:443 HTTP/1.1\r\nHost: a.test\r\n\r\n", &h),
	                 SNIFF_BAD);
	ck_assert_int_eq(host("GET /#f HTTP/1.1\r\nHost: a.test\r\n\r\n", &h), SNIFF_BAD);
	ck_assert_int_eq(host("GET / HTTP/1.1\r\nHost: a.test\r\n folded\r\n\r\n", &h), SNIFF_BAD);
	ck_assert_int_eq(host("GET / HTTP/2.0\r\nHost: a.test\r\n\r\n", &h), SNIFF_BAD);
	ck_assert_int_eq(host("\x16\x03\x01\x02", &h), SNIFF_BAD);
	ck_assert_int_eq(host("GET / HTTP/1.1\r\nHost: a.test:99999\r\n\r\n", &h), SNIFF_BAD);
	ck_assert_int_eq(host("GET / HTTP/1.1\r\nHost: a\x01.test\r\n\r\n", &h), SNIFF_BAD);
	static char big[SNIFF_HTTP_MAX + 10];
	memset(big, 'A', sizeof(big) - 1);
	ck_assert_int_eq(host(big, &h), SNIFF_BAD);
}
END_TEST

START_TEST(http_rewrite)
{
	const char *req = "GET / HTTP/1.1\r\nHost: a.test\r\nConnection: keep-alive\r\n"
	                  "Keep-Alive: 5\r\nAccept: */*\r\n\r\n";
	struct sniff_http h;
	ck_assert_int_eq(host(req, &h), SNIFF_DONE);
	uint8_t out[512];
	long n = sniff_http_rewrite(&h, out, sizeof(out));
	ck_assert_int_gt(n, 0);
	out[n] = '\0';
	ck_assert_str_eq((char *)out, "GET / HTTP/1.1\r\nHost: a.test\r\nAccept: */*\r\n"
	                              "Connection: close\r\n\r\n");
	ck_assert_int_eq(sniff_http_rewrite(&h, out, 10), -1);
	/* Rebuilt from the parse: bare LF lines come out as CRLF. */
	ck_assert_int_eq(host("GET /x HTTP/1.0\nHost:a.test\nConnection: x\n\nBODY", &h),
	                 SNIFF_DONE);
	ck_assert_uint_eq(h.head_len, strlen("GET /x HTTP/1.0\nHost:a.test\nConnection: x\n\n"));
	n = sniff_http_rewrite(&h, out, sizeof(out));
	ck_assert_int_gt(n, 0);
	out[n] = '\0';
	ck_assert_str_eq((char *)out,
	                 "GET /x HTTP/1.0\r\nHost: a.test\r\nConnection: close\r\n\r\n");
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("egress_sniff");
	TCase *t = tcase_create("sniff");
	tcase_add_test(t, sni_whole_and_split);
	tcase_add_test(t, sni_ech_and_missing);
	tcase_add_test(t, sni_malformed);
	tcase_add_test(t, http_host);
	tcase_add_test(t, http_rewrite);
	suite_add_tcase(s, t);
	return s;
}

UNIT_MAIN()
