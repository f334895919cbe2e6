/* libFuzzer target: the nft keeper's check of a request from the parser
 * (egress/nftd.c), the one message a compromised parser can shape.  The
 * input is the message.  Checked: what parses is canonical (building it
 * again gives the same bytes), every field is in its range, and the
 * policy check and the keeper's nft text for it run clean. */
#include <assert.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "egress/nftd.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct netpolicy pol;
static struct netaddr host;
static struct nftd_msg m;
static uint8_t again[NFTD_MSG_MAX];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!pol.nallow) {
		char err[128];
		netpolicy_init(&pol, NETPOLICY_RULES);
		if (netpolicy_add(&pol, "pinned.test:2222", false, err, sizeof(err)) ||
		    netpolicy_add(&pol, "*.cdn.test:443-450", false, err, sizeof(err)) ||
		    netpolicy_add(&pol, "web.test", false, err, sizeof(err)) ||
		    netaddr_parse("100.100.0.1", &host))
			return 0;
	}
	if (nftd_msg_parse(data, size, &m))
		return 0;
	assert(m.npins >= 1 && m.npins <= NFTD_PINS_MAX);
	size_t nl = strlen(m.name);
	assert(nl >= 1 && nl <= NETRULE_NAME_MAX);
	for (size_t i = 0; i < m.npins; i++) {
		const struct nft_pin *p = &m.pins[i];
		assert(p->addr.family == AF_INET);
		assert(p->proto == 6 || p->proto == 17);
		assert(p->port >= 1);
		assert(p->timeout_s >= NFTD_TIMEOUT_MIN && p->timeout_s <= NFTD_TIMEOUT_MAX);
	}
	long n = nftd_msg_build(m.seq, m.name, m.pins, m.npins, again, sizeof(again));
	assert(n == (long)size && !memcmp(again, data, size));
	if (nftd_pins_allowed(&pol, &host, 1, &m) == 0) {
		for (size_t i = 0; i < m.npins; i++)
			assert(!net_always_denied(&m.pins[i].addr, &host, 1));
		char *s = nftgen_pins(m.pins, m.npins, 1);
		assert(s);
		free(s);
	}
	return 0;
}
