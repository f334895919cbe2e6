/* Networks made ahead of time (net_pool.c; the pool itself is cove.h's):
 * a sandbox takes a ready slot. */
#ifndef COVE_NET_POOL_H
#define COVE_NET_POOL_H

#include <stddef.h>

#include "lib/base/cove_types.h"
#include "lib/base/sandbox_net.h"

struct json_t;

/* net_pool.c: takes a ready slot of pool p for the sandbox name (entry
 * dir, cgroup cgroup_fd or -1) with the given policy and net limits, as
 * net_setup and net_finish would leave it.  -EAGAIN when the pool cannot
 * serve it (empty, or cfg asks what a slot cannot give; err may then say
 * why): the caller calls net_setup. */
int net_pool_take(struct cove_net_pool *p, const struct cove_config *cfg, const char *dir,
                  const char *name, int cgroup_fd, struct json_t *policy, const char *limits,
                  struct sandbox_net *out, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* ---- part of cove.h's API ---- */

/* A pool of sandbox networks made ahead of time (lib/net/net_pool.c): each
 * slot is a namespace with its TAP and veth and a cove-egress that
 * denies everything, ready for a sandbox to take and give its own policy
 * in one transaction.  A background thread keeps size slots ready (1 to
 * COVE_NET_POOL_MAX) on the runtime directory of the caller, using cfg's
 * egress and net_dns; slots left by a pool whose process died are removed
 * first.  Set cfg->net_pool to use it.  cove_net_pool_free removes every
 * slot not taken (taken ones belong to their sandboxes). */
int cove_net_pool_new(const struct cove_config *cfg, unsigned int size, struct cove_net_pool **out,
                      char *err, size_t errlen) __attribute__((warn_unused_result));
void cove_net_pool_free(struct cove_net_pool *p);
/* Removes the slots a pool whose process died left (as cove_net_pool_new
 * does first), for a process that keeps no pool of its own: 0, or -errno
 * with err when the runtime directory or the index range is unusable. */
int cove_net_pool_clean(char *err, size_t errlen) __attribute__((warn_unused_result));
void cove_net_pool_stats(struct cove_net_pool *p, struct cove_net_pool_stats *st);

#endif
