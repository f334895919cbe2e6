/* The VMM pool (pool.c; its API is cove.h's): a member taken for a
 * sandbox, handed over through pool_member.h. */
#ifndef COVE_LIB_VMM_POOL_H
#define COVE_LIB_VMM_POOL_H

#include <stddef.h>

#include "lib/base/cove_types.h"
#include "lib/vmm/pool_member.h"

/* A ready member of cpus vCPUs, or NULL (no pool, none of that shape
 * ready): counted as a hit or a miss. */
struct pool_member *pool_take(struct cove_vmm_pool *p, unsigned int cpus);

/* ---- part of cove.h's API: the VMM pool (docs/pool.md) ----
 * Members are cove-vmm processes started with --pool CPUS: exec'd inside
 * their namespaces and cgroup, with a per-sandbox jail uid, KVM VM, vCPUs
 * and I/O loop made and no guest memory.  Each serves one sandbox, never
 * a second.  A background thread keeps `size` ready members per shape;
 * cove_vmm_pool_free ends every member that was not taken. */

/* Starts the pool and its refill thread (members come up in the
 * background).  0, or -errno with one line in err (bad options). */
int cove_vmm_pool_new(const struct cove_vmm_pool_opts *o, struct cove_vmm_pool **out, char *err,
                      size_t errlen) __attribute__((warn_unused_result));
void cove_vmm_pool_stats(struct cove_vmm_pool *p, struct cove_vmm_pool_stats *s);
/* Waits up to timeout_ms until every shape has size ready members: true
 * when it has (for tests and benchmarks). */
bool cove_vmm_pool_wait_full(struct cove_vmm_pool *p, unsigned int timeout_ms);
/* Stops refilling and ends every member not taken (their directories,
 * uid claims and cgroups go too).  Safe on NULL. */
void cove_vmm_pool_free(struct cove_vmm_pool *p);

#endif
