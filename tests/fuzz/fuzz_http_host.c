/* libFuzzer target: the guest's first bytes on :15080 through the Host
 * parser and the upstream rewrite (egress/sniff.c).  What it accepts is a
 * request head ending in a blank line, with a normalized name, and the
 * rewrite parses again to the same name. */
#include <assert.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "egress/sniff.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sniff_http h;
	if (sniff_http_host(data, size, &h) != SNIFF_DONE)
		return 0;
	assert(h.head_len >= 4 && h.head_len <= size && h.head_len <= SNIFF_HTTP_MAX);
	assert(!memcmp(data + h.head_len - 4, "\r\n\r\n", 4));
	static uint8_t out[SNIFF_HTTP_MAX + 64];
	long n = sniff_http_rewrite(data, h.head_len, out, sizeof(out));
	if (n < 0)
		return 0;
	struct sniff_http h2;
	enum sniff_result r = sniff_http_host(out, (size_t)n, &h2);
	if (r != SNIFF_BAD) {
		assert(r == SNIFF_DONE);
		assert(!strcmp(h.name, h2.name) && h.port == h2.port);
	}
	return 0;
}
