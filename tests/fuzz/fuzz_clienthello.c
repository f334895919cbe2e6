/* libFuzzer target: the guest's first bytes on :15443 as the proxy reads
 * them, through the ClientHello parser (egress/sniff.c): whole, and cut at
 * a point the first byte picks (a ClientHello split across reads must not
 * be judged on the first part).  A name it returns is normalized. */
#include <assert.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "egress/sniff.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	size_t cut = data[0] % (size);
	data++;
	size--;
	struct sniff_tls t;
	enum sniff_result r = sniff_clienthello(data, size, &t);
	if (r == SNIFF_DONE) {
		char n[NETRULE_NAME_MAX + 1];
		assert(netname_normalize(t.name, n, sizeof(n)) == 0 && !strcmp(n, t.name));
	}
	struct sniff_tls t2;
	enum sniff_result r2 = sniff_clienthello(data, cut < size ? cut : size, &t2);
	/* A prefix never decides differently from the whole, unless it needs more. */
	if (r2 == SNIFF_DONE)
		assert(r == SNIFF_DONE && !strcmp(t.name, t2.name));
	return 0;
}
