/* The sandbox's resolver on gateway:53, udp and tcp: the guest's only DNS
 * server.  Names no allow rule matches get REFUSED and never go upstream;
 * allowed ones are asked upstream afresh, the answer filtered
 * (egress/dns.c), NAME:PORT pins applied in nft, then the reply sent.
 * Upstream failure or timeout: SERVFAIL (fails closed). */
#ifndef COVE_EGRESS_RESOLVER_H
#define COVE_EGRESS_RESOLVER_H

#include <netinet/in.h>
#include <stdbool.h>

#include "egress.h"

/* resolver_open() - bind udp and tcp on the gateway's port 53 and watch
 * them.  Before confinement.  0 or -errno.
 * #syscalls: socket bind listen */
int resolver_open(struct egress *e) __attribute__((warn_unused_result));

/* egress_is_guest() - whether @sa (@len bytes, from recvfrom or accept)
 * is the guest's address.  The resolver and proxy answer nobody else:
 * tap0's ingress guard drops forged sources first, this is the second
 * line (a reply to a forged source would carry the query's name out). */
bool egress_is_guest(const struct egress *e, const struct sockaddr_in *sa, socklen_t len);

/* egress_accept_guest() - accept4() on @lfd (non-blocking, close-on-exec),
 * closing connections from anyone but the guest.
 * Return: an fd, or -1 with errno (EAGAIN: none waiting).
 * #syscalls: accept4 close */
int egress_accept_guest(const struct egress *e, int lfd) __attribute__((warn_unused_result));

#endif
