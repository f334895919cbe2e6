/* The policy in force, its nft table and the resolver's pins
 * (egress/policy.h). */
#include "policy.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "nft.h"
#include "nftd.h"
#include "nftgen.h"

int egress_apply_policy(struct egress *e, struct netpolicy *p, char *err, size_t errlen)
{
	uint64_t now = loop_now_ms();
	struct nft_pin *keep = malloc(PINS_MAX * sizeof(*keep));
	if (!keep)
		return -ENOMEM;
	size_t n = pins_keep(&e->pins, p, now, keep, PINS_MAX);
	char *rs = nftgen_ruleset(&e->cfg, p, keep, n);
	free(keep);
	if (!rs)
		return -ENOMEM;
	int r = enft_run(e->nft, rs, err, errlen);
	free(rs);
	if (r)
		return r;
	/* The table is new: the domain rules switch now, in the same turn of
	 * the loop, before any other event is handled. */
	netpolicy_free(&e->policy);
	e->policy = *p;
	memset(p, 0, sizeof(*p));
	pins_prune(&e->pins, &e->policy);
	return 0;
}

void egress_take_policy(struct egress *e, struct netpolicy *p)
{
	netpolicy_free(&e->policy);
	e->policy = *p;
	memset(p, 0, sizeof(*p));
	pins_prune(&e->pins, &e->policy);
}

int egress_pin(struct egress *e, const char *name, const struct dns_pin *addrs, size_t n)
{
	if (e->policy.mode != NETPOLICY_RULES || !n)
		return 0;
	/* Every candidate goes to the keeper, which keeps the set's truth
	 * (our table only names pins for the log). */
	static struct nft_pin want[NFTD_PINS_MAX];
	size_t nw = 0;
	uint64_t now = loop_now_ms();
	for (size_t i = 0; i < e->policy.nallow; i++) {
		const struct netrule *r = &e->policy.allow[i];
		if (!r->has_port || !netrule_match_name(r, name, 0))
			continue;
		for (unsigned port = r->port_lo; port <= r->port_hi; port++)
			for (size_t k = 0; k < n; k++)
				for (int pr = 0; pr < 2 && nw < NFTD_PINS_MAX; pr++) {
					struct nft_pin p = { .addr = addrs[k].addr,
						             .proto = pr ? 17 : 6,
						             .port = (uint16_t)port,
						             .timeout_s =
						                 addrs[k].ttl < DNS_PIN_MIN_TTL
						                     ? DNS_PIN_MIN_TTL
						                     : addrs[k].ttl };
					(void)pins_note(&e->pins, &p, name, now);
					want[nw++] = p;
				}
	}
	return nw ? nftd_pin(e, name, want, nw) : 0;
}
