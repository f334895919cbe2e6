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

#endif
