/* libFuzzer target: an intercepted request's head (egress/httpreq.c, on
 * libhttp-parser), fed in two pieces at a point the input chooses, judged
 * as egress/mitm.c judges it (httpreq_intercepted() for api.test:443),
 * then rebuilt with Cove's Host, the normalised target and an injected
 * header.  What it accepts rebuilds into a head that parses again with the
 * same method and target, one Host (api.test), the injected header once
 * and "Connection: close", and that is judged again to the same target. */
#include <assert.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "egress/httpreq.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static size_t count(const struct proxy_hdr *h, size_t nh, const char *name)
{
	size_t n = 0, l = strlen(name);
	for (size_t i = 0; i < nh; i++)
		n += h[i].nlen == l && !strncasecmp(h[i].name, name, l);
	return n;
}

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
	static char tgt[HTTPREQ_TARGET_MAX], tgt2[HTTPREQ_TARGET_MAX];
	size_t tlen = 0, tlen2 = 0;
	const char *why = NULL;
	int st = httpreq_intercepted(&q, "api.test", 443, tgt, sizeof(tgt), &tlen, &why);
	if (st) {
		assert((st == 400 || st == 403) && why);
		return 0;
	}
	assert(tlen == strlen(tgt) && (tgt[0] == '/' || !strcmp(tgt, "*")));
	struct proxy_hdr add = { "Authorization", "Bearer x", 13, 8 };
	static uint8_t out[HTTPREQ_HEAD_MAX * 2];
	long n = httpreq_rewrite(&q, tgt, tlen, "api.test", &add, 1, out, sizeof(out));
	if (n < 0)
		return 0;
	httpreq_init(&q2);
	r = httpreq_feed(&q2, out, (size_t)n, &used);
	if (r == HTTPREQ_BAD)
		return 0; /* e.g. over the head cap with the added lines */
	assert(r == HTTPREQ_DONE && q2.head_end == (size_t)n);
	assert(!strcmp(httpreq_method(&q), httpreq_method(&q2)));
	assert(q2.url.len == tlen && !memcmp(q2.buf + q2.url.off, tgt, tlen));
	struct proxy_hdr h[HTTPREQ_HDRS_MAX];
	size_t nh = httpreq_headers(&q2, h, HTTPREQ_HDRS_MAX);
	assert(count(h, nh, "authorization") == 1 && count(h, nh, "connection") == 1 &&
	       count(h, nh, "host") == 1);
	st = httpreq_intercepted(&q2, "api.test", 443, tgt2, sizeof(tgt2), &tlen2, &why);
	assert(st == 0 && tlen2 == tlen && !memcmp(tgt, tgt2, tlen));
	return 0;
}
