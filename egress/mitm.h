/* Interception (issue 15): a connection to a host that a credential rule
 * covers is terminated here instead of spliced.  TLS: the guest's
 * handshake is answered with a leaf for its SNI from the sandbox CA
 * (egress/tlsca.c, ALPN http/1.1), the server is dialled with TLS and its
 * certificate verified for that name.  Plain HTTP on port 80 the same,
 * without TLS.  Then the request head is parsed (egress/httpreq.c) and
 * judged (issue 26, httpreq_intercepted()): its Host (or absolute-form
 * authority) must be the name the connection was intercepted for, CONNECT
 * and TRACE are refused, the path is normalised (egress/httppath.h) and
 * forwarded in origin form.  Cove writes the Host header itself from that
 * name, the first matching rule's headers (over plain HTTP only a rule
 * with "schemes": ["http"]) replace the guest's of the same names,
 * "Connection: close" makes it the connection's one request, and the rest
 * is forwarded as it is, both ways.  A refused request gets 403 and a log
 * line; a reference that does not resolve 502 and a log line; a head that
 * does not parse 400 (431 when too large); a server whose certificate
 * fails 502.  The egress log gets one line per injected request with the
 * rule's name and "[redacted]". */
#ifndef COVE_EGRESS_MITM_H
#define COVE_EGRESS_MITM_H

#include <stdbool.h>

struct conn;
struct mitm;

/* mitm_new() - intercept @c (c->tls: its ClientHello is in c->head and is
 * taken; else the request head is, and stays there for mitm_start).
 * NULL when out of memory or no certificate could be made. */
struct mitm *mitm_new(struct conn *c);

/* mitm_start() - @c is connected to the server: run the exchange. */
void mitm_start(struct conn *c);

void mitm_free(struct mitm *m);

#endif
