/* The control socket (ctl_fd, a listening Unix stream socket from libcove):
 * one JSON line per connection.  The nft keeper (egress/nftd.h) owns the
 * listener: it answers "status", applies a "policy", and hands an applied
 * "policy", "proxy" and "ca" with the connection to the parser, which
 * replies.
 *   {"op":"policy","policy":{...}} -> {"ok":true} | {"ok":false,"error":"..."}
 *   {"op":"status"}                -> {"ok":true,"policy":{...},"pins":N}
 * A policy is parsed and its table applied in one transaction before it
 * replaces the one in force; a bad one changes nothing. */
#ifndef COVE_EGRESS_CTL_H
#define COVE_EGRESS_CTL_H

#include <stddef.h>

#include "egress.h"

#define CTL_LINE_MAX    65536
#define CTL_CLIENTS_MAX 4

/* ctl_open() - watch the inherited listener (-1: none).  0 or -errno. */
int ctl_open(struct egress *e) __attribute__((warn_unused_result));

/* ctl_handle() - in the parser: the reply line (malloc'd, with "\n") to
 * request @line, one the keeper forwarded ("policy" it has applied,
 * "proxy", "ca"). */
char *ctl_handle(struct egress *e, const char *line, size_t len);

/* ctl_adopt() - in the parser: answer forwarded request @line on @fd (the
 * host's connection, nonblocking; owned from here on).  0 or -errno. */
int ctl_adopt(struct egress *e, int fd, const char *line, size_t len)
    __attribute__((warn_unused_result));

#endif
