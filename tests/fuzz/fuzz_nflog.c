/* libFuzzer target: the first bytes of a packet the guest sent, as NFLOG
 * hands them to cove-egress (egress/nflog.c, nflog_parse_ip()).  What it
 * accepts has an IPv4 or IPv6 destination copied from within the input
 * and a port only for TCP and UDP. */
#include <assert.h>
#include <errno.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "egress/nflog.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* An exact-size copy, so ASan sees any read past the end. */
	uint8_t *p = malloc(size ? size : 1);
	if (!p)
		return 0;
	memcpy(p, data, size);
	struct nflog_pkt pk;
	int r = nflog_parse_ip(p, size, &pk);
	if (r) {
		assert(r == -EINVAL);
	} else {
		assert(pk.dst.family == AF_INET || pk.dst.family == AF_INET6);
		size_t off = pk.dst.family == AF_INET ? 16 : 24;
		size_t al = pk.dst.family == AF_INET ? 4 : 16;
		assert(size >= off + al && !memcmp(pk.dst.a, data + off, al));
		assert(pk.port >= -1 && pk.port <= 65535);
		assert(pk.port == -1 || pk.proto == IPPROTO_TCP || pk.proto == IPPROTO_UDP);
	}
	free(p);
	return 0;
}
