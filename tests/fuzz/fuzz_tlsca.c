/* libFuzzer target: what egress/tlsca.c reads from outside.  The first
 * byte picks the input: the guest's ALPN list (tlsca_alpn_pick: the pick
 * lies inside the list and is "http/1.1"), a rules file's upstream_ca PEM
 * (tlsca_upstream: refused or accepted, never a crash), or an SNI name for
 * a leaf (tlsca_leaf: a certificate or NULL). */
#include <assert.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "egress/tlsca.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct tlsca ca;
	static bool ready;
	char err[256];
	if (!ready) {
		if (tlsca_init(&ca, err, sizeof(err)) < 0)
			abort();
		ready = true;
	}
	if (size < 1)
		return 0;
	const uint8_t *in = data + 1;
	size_t n = size - 1;
	switch (data[0] % 3) {
	case 0: {
		const unsigned char *out = NULL;
		unsigned char outlen = 0;
		if (tlsca_alpn_pick(in, (unsigned int)n, &out, &outlen)) {
			assert(out > in && out + outlen <= in + n);
			assert(outlen == 8 && !memcmp(out, "http/1.1", 8));
		}
		break;
	}
	case 1:
		(void)tlsca_upstream(&ca, (const char *)in, n, err, sizeof(err));
		break;
	default: {
		char name[256];
		if (n >= sizeof(name))
			n = sizeof(name) - 1;
		memcpy(name, in, n);
		name[n] = 0;
		(void)tlsca_leaf(&ca, name);
		break;
	}
	}
	return 0;
}
