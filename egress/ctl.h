/* The control socket (ctl_fd, a listening Unix stream socket from libcove):
 * one JSON line per connection.
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

/* ctl_handle() - the reply line (malloc'd, with "\n") to request @line. */
char *ctl_handle(struct egress *e, const char *line, size_t len);

#endif
