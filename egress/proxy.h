/* The transparent proxy on gateway:15080 (HTTP) and :15443 (TLS), where
 * nft redirects the guest's TCP 80 and 443 that no CIDR rule sends direct.
 * It reads the Host header or the ClientHello's SNI (egress/sniff.c),
 * matches the name against the domain allow rules (any name in open mode),
 * resolves it upstream itself (never the address the guest chose), drops
 * denied and always-denied addresses, dials, then splices.  A refused
 * HTTP request gets 403; a refused TLS connection a reset.  ClientHellos
 * with ECH are refused: the SNI they show is not the name they reach. */
#ifndef COVE_EGRESS_PROXY_H
#define COVE_EGRESS_PROXY_H

#include "egress.h"

/* proxy_open() - listen on the gateway's proxy ports.  0 or -errno.
 * #syscalls: socket bind listen */
int proxy_open(struct egress *e) __attribute__((warn_unused_result));

/* publish_open() - watch the inherited publish listeners: each accepted
 * connection is spliced to guest:guest_port.  0 or -errno. */
int publish_open(struct egress *e) __attribute__((warn_unused_result));

#endif
