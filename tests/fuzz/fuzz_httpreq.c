/* libFuzzer target: an intercepted request's head (egress/httpreq.c, on
 * libhttp-parser), fed in two pieces at a point the input chooses, then
 * rebuilt with an injected header.  What it accepts rebuilds into a head
 * that parses again with the same method and target, the injected header
 * once and "Connection: close". */
#include <assert.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "egress/httpreq.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!size)
		return 0;
	static struct httpreq q, q2;
	httpreq_init(&q);
	size_t cut = data[0] % size, used = 0, used2 = 0;
	data++;
	size--;
	cut = cut > size ? size : cut;
	enum httpreq_result r = httpreq_feed(&q, data, cut, &used);
	if (r == HTTPREQ_MORE && used == cut)
		r = httpreq_feed(&q, data + cut, size - cut, &used2);
	if (r != HTTPREQ_DONE)
		return 0;
	assert(q.head_end <= q.len && q.len <= sizeof(q.buf));
	struct proxy_hdr add = { "Authorization", "Bearer x", 13, 8 };
	static uint8_t out[HTTPREQ_HEAD_MAX * 2];
	long n = httpreq_rewrite(&q, &add, 1, out, sizeof(out));
	if (n < 0)
		return 0;
	httpreq_init(&q2);
	r = httpreq_feed(&q2, out, (size_t)n, &used);
	if (r == HTTPREQ_BAD)
		return 0; /* e.g. over the head cap with the added lines */
	assert(r == HTTPREQ_DONE && q2.head_end == (size_t)n);
	assert(!strcmp(httpreq_method(&q), httpreq_method(&q2)));
	assert(q.url.len == q2.url.len &&
	       !memcmp(q.buf + q.url.off, q2.buf + q2.url.off, q.url.len));
	struct proxy_hdr h[HTTPREQ_HDRS_MAX];
	size_t nh = httpreq_headers(&q2, h, HTTPREQ_HDRS_MAX), auth = 0, close = 0;
	for (size_t i = 0; i < nh; i++) {
		auth += h[i].nlen == 13 && !strncasecmp(h[i].name, "authorization", 13);
		close += h[i].nlen == 10 && !strncasecmp(h[i].name, "connection", 10);
	}
	assert(auth == 1 && close == 1);
	return 0;
}
