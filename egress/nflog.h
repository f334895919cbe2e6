/* Direct-path decisions: the forward chain's rules log each new flow to
 * NFLOG group NFT_LOG_GROUP with a prefix "cove:VERDICT:WHY"; this reads
 * them (libnetfilter_log, the first bytes of each packet) and writes
 * egress log lines with via "direct". */
#ifndef COVE_EGRESS_NFLOG_H
#define COVE_EGRESS_NFLOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "egress.h"

struct nflog_pkt {
	struct netaddr src, dst;
	uint8_t proto;
	int port; /* -1 when the protocol has none */
};

/* nflog_parse_ip() - source, destination, protocol and port of the IPv4 or IPv6
 * packet at @p (hostile: the guest wrote it).  0 or -EINVAL. */
int nflog_parse_ip(const uint8_t *p, size_t len, struct nflog_pkt *out)
    __attribute__((warn_unused_result));

/* egress_nflog_open() - bind the group, copy 64 bytes of each packet, watch
 * the socket.  Before confinement.  0 or -errno.
 * #syscalls: socket(AF_NETLINK) bind sendmsg recvmsg */
int egress_nflog_open(struct egress *e) __attribute__((warn_unused_result));

#endif
