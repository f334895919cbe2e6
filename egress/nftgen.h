/* The sandbox's nft table `inet cove_sb` as text for libnftables, built
 * from the configuration and a policy.  Pure (unit-tested against golden
 * substrings); egress/nft.c applies it.  The layout is in
 * docs/network.md ("cove-egress").  Interval sets refuse overlapping
 * elements, so the rules' address and port ranges are cut into disjoint
 * pieces first. */
#ifndef COVE_EGRESS_NFTGEN_H
#define COVE_EGRESS_NFTGEN_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "netrule.h"

#define NFT_TABLE      "cove_sb"
#define NFT_NIC_TABLE  "cove_nic" /* netdev: tap0's ingress guard */
#define NFT_LOG_GROUP  14
#define NFT_PROXY_HTTP 15080
#define NFT_PROXY_TLS  15443

/* A DNS pin: (addr, proto, port) for timeout_s seconds. */
struct nft_pin {
	struct netaddr addr;
	uint8_t proto; /* 6 tcp, 17 udp */
	uint16_t port;
	uint32_t timeout_s;
};

/* nftgen_ruleset() - the whole table in one transaction: create (so the
 * delete cannot fail), delete, then the new table with @pins re-added;
 * then the same for table netdev NFT_NIC_TABLE (tap0's ingress guard).
 * Return: a malloc'd string, or NULL on allocation failure. */
char *nftgen_ruleset(const struct egress_config *c, const struct netpolicy *p,
                     const struct nft_pin *pins, size_t npins);

/* nftgen_pins() - "add element" for @pins (IPv4 only) into the pinned set;
 * with @replace each is deleted first (refreshing its timeout).
 * Return: a malloc'd string, or NULL. */
char *nftgen_pins(const struct nft_pin *pins, size_t npins, int replace);

#endif
