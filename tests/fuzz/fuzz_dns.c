/* libFuzzer target: the resolver's handling of hostile DNS (egress/dns.c on
 * ldns).  The input is a guest query and an upstream answer: two bytes of
 * the query's length, the query, then the answer.  The query goes through
 * the parser and the policy decision and, when it parses, the error reply
 * and the fresh upstream query; the answer through the filter.  Checked:
 * replies fit their limits, and no address the filter keeps is always
 * denied. */
#include <assert.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "egress/dns.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct netpolicy pol;
static struct netaddr host;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!pol.nallow) {
		char err[128];
		netpolicy_init(&pol, NETPOLICY_NONE);
		if (netpolicy_add(&pol, "allowed.test", false, err, sizeof(err)) ||
		    netpolicy_add(&pol, "*.cdn.test", false, err, sizeof(err)) ||
		    netpolicy_add(&pol, "git.test:22", false, err, sizeof(err)) ||
		    netpolicy_add(&pol, "198.51.100.0/25", true, err, sizeof(err)) ||
		    netaddr_parse("192.0.2.5", &host))
			return 0;
	}
	if (size < 2)
		return 0;
	size_t ql = (size_t)data[0] << 8 | data[1];
	data += 2;
	size -= 2;
	if (ql > size)
		ql = size;
	struct dns_question q;
	static uint8_t out[DNS_MSG_MAX];
	if (dns_parse_query(data, ql, &q) == 0) {
		const struct netrule *r;
		(void)dns_allowed(&pol, &q, &r);
		long n = dns_error_reply(&q, DNS_RCODE_REFUSED, out, 512);
		assert(n >= 12 && n <= 512);
		n = dns_build_query(&q, 0x4242, out, 600);
		assert(n == -1 || (n > 12 && n <= 600));
	} else {
		/* Answer a name anyway, to reach the filter with any answer. */
		memset(&q, 0, sizeof(q));
		q.name_ok = true;
		strcpy(q.name, "allowed.test");
		q.qtype = 1;
		q.qclass = 1;
		q.udp_max = 512;
	}
	const uint8_t *a = data + ql;
	size_t al = size - ql;
	if (al < 2 || !q.name_ok)
		return 0;
	struct dns_filter f = { .hosts = &host, .nhosts = 1, .policy = &pol, .max = q.udp_max };
	long n = dns_filter_answer(a, al, (uint16_t)(a[0] << 8 | a[1]), &q, &f, out, sizeof(out));
	assert(n == -1 || (n >= 12 && (size_t)n <= f.max));
	assert(f.npins <= DNS_PINS_MAX);
	for (size_t i = 0; i < f.npins; i++) {
		assert(!net_always_denied(&f.pins[i].addr, &host, 1));
		assert(f.pins[i].ttl <= DNS_TTL_MAX);
	}
	return 0;
}
