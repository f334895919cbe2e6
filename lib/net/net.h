/* A sandbox's network (docs/network.md), set up and
 * torn down in order (net.c): the index K, the sandbox's own network
 * namespace with its TAP and veth, the host's rules, and cove-egress, the
 * process that owns that namespace and enforces the policy.  These take
 * a sandbox's names and struct sandbox_net, not its handle. */
#ifndef COVE_NET_NET_H
#define COVE_NET_NET_H

#include <stdbool.h>
#include <stddef.h>

#include "lib/base/cove_types.h"
#include "lib/base/sandbox_net.h"

struct json_t;

/* Claims an index K for the sandbox name (entry sbdir) in <base>/.net/<K>
 * (O_EXCL), K from net_index_range, its link cv<K> absent: n->index and
 * n->claim.  A claim whose sandbox directory is gone, and whose link no
 * longer exists, is stale and taken over.  0, or -errno with one line
 * (-EUSERS: every K of the range is taken). */
int net_claim_index(struct sandbox_net *n, const char *sbdir, const char *name, char *err,
                    size_t errlen) __attribute__((warn_unused_result));

/* Sets the network of the sandbox name (entry dir, cgroup cgroup_fd or
 * -1) up: K, the egress uid, cove-egress in its namespaces and the
 * cgroup, tap0, the veth; returns once cove-egress has its config, while
 * it applies its rules.  policy: the JSON object; cfg's publish and dns
 * specs (checked), detached and egress.  On failure everything is undone.
 * Forwarding in the sandbox's namespace stays off until net_finish: the
 * guest can boot meanwhile, and nothing it sends leaves. */
int net_setup(struct sandbox_net *n, const char *dir, const char *name, int cgroup_fd,
              const struct cove_config *cfg, struct json_t *policy, const char *limits, char *err,
              size_t errlen) __attribute__((warn_unused_result));

/* The rest, once cove-vmm is spawned: the host rules, cove-egress's "ok"
 * (its rules are in place), then forwarding on in the sandbox's namespace.
 * 0 (also without a pending set-up), or -errno with one line in err; the
 * caller then tears the sandbox down. */
int net_finish(struct sandbox_net *n, char *err, size_t errlen) __attribute__((warn_unused_result));

/* Stops cove-egress (through its pidfd) and, with release, removes the
 * host link and releases K and the uid; without (the entry was cleaned
 * and its name taken again meanwhile) K is left to whoever holds it now.
 * After cove-vmm is gone (it holds the TAP, which keeps the namespace).
 * For a handle from cove_open (n from meta.json) as well. */
void net_teardown(struct sandbox_net *n, const char *name, bool release);

/* The leftovers of a sandbox found dead (its record m, entry base/name
 * already removed): cove-egress (when it still runs and is one), the host
 * link and the claim. */
struct registry_meta;
void net_clean_dead(const char *base, const struct registry_meta *m);

#endif
