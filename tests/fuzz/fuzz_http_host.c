/* libFuzzer target: the guest's first bytes on :15080 through the Host
 * parser and the upstream rewrite (egress/sniff.c over egress/httpreq.c).
 * What it accepts is a request head within the input whose absolute-form
 * target, if any, names the Host, with a normalized name; the rewrite
 * parses again to the same name and port. */
#include <assert.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "egress/httpreq.h"
#include "egress/sniff.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sniff_http h;
	if (sniff_http_host(data, size, &h) != SNIFF_DONE)
		return 0;
	assert(h.head_len >= 4 && h.head_len <= size && h.head_len <= SNIFF_HTTP_MAX);
	assert(data[h.head_len - 1] == '\n' && h.name[0] && h.req);
	struct httpreq_target t;
	const char *why;
	assert(httpreq_target(h.req, &t, &why) == 0 && t.have_host && !t.host.ip);
	assert(!t.absolute || (!strcmp(t.abs.name, h.name) && t.abs.port == h.port));
	static uint8_t out[SNIFF_HTTP_MAX * 2];
	long n = sniff_http_rewrite(&h, out, sizeof(out));
	if (n < 0)
		return 0;
	struct sniff_http h2;
	enum sniff_result r = sniff_http_host(out, (size_t)n, &h2);
	if (r != SNIFF_BAD) {
		assert(r == SNIFF_DONE && h2.head_len == (size_t)n);
		assert(!strcmp(h.name, h2.name) && h.port == h2.port);
	}
	return 0;
}
