/* The sandbox's resolver on gateway:53, udp and tcp: the guest's only DNS
 * server.  Names no allow rule matches get REFUSED and never go upstream;
 * allowed ones are asked upstream afresh, the answer filtered
 * (egress/dns.c), NAME:PORT pins applied in nft, then the reply sent.
 * Upstream failure or timeout: SERVFAIL (fails closed). */
#ifndef COVE_EGRESS_RESOLVER_H
#define COVE_EGRESS_RESOLVER_H

#include "egress.h"

/* resolver_open() - bind udp and tcp on the gateway's port 53 and watch
 * them.  Before confinement.  0 or -errno.
 * #syscalls: socket bind listen */
int resolver_open(struct egress *e) __attribute__((warn_unused_result));

#endif
