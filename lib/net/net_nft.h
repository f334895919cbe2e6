/* The host's side of the network (net_nft.c): the nftables table
 * `inet cove`, ip_forward. */
#ifndef COVE_NET_NFT_H
#define COVE_NET_NFT_H

#include <stddef.h>

#include "lib/base/sandbox_net.h"

/* Ensures the host table `inet cove` (masquerade of 100.100.0.0/16 out of
 * non-cv* links; from cv* only IPv4 from the link's own /30, never to
 * another cv* or an always-denied range but the upstreams; no input from
 * cv* but replies and DNS to the upstreams given) in one transaction, and
 * ip_forward=1.
 * The transaction is skipped when the record file (<base>/.net.host)
 * names this very table (boot id and handle) with every upstream given
 * already in it. */
int net_host_rules(const char *record, const struct net_upstream *up, size_t nup, char *err,
                   size_t errlen) __attribute__((warn_unused_result));

/* net_host_rules_text() - the transaction net_host_rules makes (pure; the
 * unit test's golden substrings).  Return: a malloc'd string or NULL. */
char *net_host_rules_text(const struct net_upstream *up, size_t nup);

/* nf_tables usable here (a dry-run transaction): 0 or -errno with why. */
int net_nft_probe(char *err, size_t errlen);

#endif
