/* A running sandbox's network from outside (net_ctl.c; part of cove.h's
 * API). */
#ifndef COVE_NET_CTL_H
#define COVE_NET_CTL_H

#include <stddef.h>

#include "lib/base/cove_types.h"

/* Replaces a running sandbox's network policy at once (one nftables
 * transaction in its namespace; the domain rules switch at the same
 * moment) through its cove-egress control socket.  -ENOTSUP with "sandbox
 * NAME was started without networking" when it has no network; -EINVAL
 * for a bad rule (nothing changed); -EIO with cove-egress's own error.
 * The new policy is recorded in meta.json. */
int cove_net_set(struct cove_sandbox *sb, const struct cove_net_policy *policy, char *err,
                 size_t errlen) __attribute__((warn_unused_result));

/* One line for cove doctor: whether this process can give sandboxes a
 * network (root, /dev/net/tun, nf_tables, user namespaces, ip_forward).
 * 0 when it can, 1 when not (out says why). */
int cove_net_probe(char *out, size_t len);

#endif
