/* The policy in force, its nft table and the resolver's pins (policy.c).
 * The table is the keeper's (egress/nftd.h): egress_apply_policy() runs
 * there, the rest in the parser. */
#ifndef COVE_EGRESS_POLICY_H
#define COVE_EGRESS_POLICY_H

#include <stddef.h>

#include "dns.h"
#include "egress.h"

/* egress_apply_policy() - build and apply the table for @p (the pins it
 * still allows carried over) in one transaction; on success @p becomes
 * the policy in force (moved in: the caller's struct is emptied).
 * On failure nothing changes and @err says why.  0 or -errno. */
int egress_apply_policy(struct egress *e, struct netpolicy *p, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* egress_take_policy() - in the parser: @p (which the keeper has just
 * applied) becomes the policy in force (moved in), and the pins it no
 * longer allows are forgotten. */
void egress_take_policy(struct egress *e, struct netpolicy *p);

/* egress_pin() - pin @addrs (IPv4 A answers for @name, TTL each) for
 * every NAME:PORT rule of the policy @name matches, tcp and udp, for
 * max(TTL, 30 s), in one transaction.  0 or -errno. */
int egress_pin(struct egress *e, const char *name, const struct dns_pin *addrs, size_t n)
    __attribute__((warn_unused_result));

#endif
