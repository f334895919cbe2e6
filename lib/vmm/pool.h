/* The VMM pool (pool.c; its API is cove.h's): a member taken for a
 * sandbox, handed over through pool_member.h. */
#ifndef COVE_VMM_POOL_H
#define COVE_VMM_POOL_H

#include <stddef.h>

#include "lib/base/cove_types.h"
#include "lib/vmm/pool_member.h"

/* A ready member of cpus vCPUs, or NULL (no pool, none of that shape
 * ready): counted as a hit or a miss. */
struct pool_member *pool_take(struct cove_vmm_pool *p, unsigned int cpus);
#endif
