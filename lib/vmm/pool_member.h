/* One member of the VMM pool (pool_member.c): a pre-spawned cove-vmm
 * --pool, and its hand-over to a sandbox in three steps (pool.c's comment
 * tells them). */
#ifndef COVE_VMM_POOL_MEMBER_H
#define COVE_VMM_POOL_MEMBER_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "lib/base/cgroup.h"
#include "lib/base/cove_types.h"
#include "lib/base/handle.h"
#include "lib/base/jail.h"
#include "lib/base/registry.h"

#define POOL_PREFIX ".pool-" /* a member's directory in the runtime base */

/* What a member sees of its pool: the pool's lock and refill signal, and
 * the member cgroups left empty by hand-overs, removed by the refill
 * thread (an rmdir may be refused for a moment after the move). */
struct pool_shared {
	pthread_mutex_t mu;
	pthread_cond_t cond; /* refill: a member was taken, or stop */
	char *stale_cg[COVE_POOL_SIZE_MAX * COVE_POOL_SHAPES_MAX];
	unsigned int nstale;
};

struct pool_member {
	struct pool_member *next;
	struct pool_shared *pool;
	unsigned int cpus;
	pid_t pid;
	int pidfd;                  /* -1 once handed to a sandbox */
	int conn;                   /* the connection to its control socket */
	bool moved;                 /* root/ and vmm.log went to a sandbox */
	int64_t t_taken, t_adopted; /* mono_ns at pool_take and after pool_adopt_jail */
	char dir[REGISTRY_DIR_MAX];
	char root[REGISTRY_DIR_MAX + 6];
	char log[REGISTRY_DIR_MAX + 10];
	struct sandbox_jail jail;
};

/* Spawns a member of cpus vCPUs (cove-vmm vmm) for the pool sh and waits
 * for its ready; NULL with err on failure. */
struct pool_member *pool_member_spawn(struct pool_shared *sh, const char *vmm, unsigned int cpus,
                                      char *err, size_t errlen);

/* Whether the member still runs and waits (it says nothing after ready). */
bool pool_member_alive(const struct pool_member *pm);

/* Step 1 of a hand-over: the member's root/ replaces sb's freshly made,
 * empty root (renameat2 RENAME_NOREPLACE), its vmm.log becomes log. */
int pool_adopt_root(struct pool_member *pm, struct cove_sandbox *sb, const char *log, char *err,
                    size_t errlen) __attribute__((warn_unused_result));
/* Step 2, where a spawn would call jail_prepare: sb gets the member's
 * process (pidfd) and jail; the uid claim names sb; the process moves to
 * sb's new cgroup with lim.  From here sandbox_finish ends the VMM. */
int pool_adopt_jail(struct pool_member *pm, struct cove_sandbox *sb,
                    const struct cgroup_limits *lim, const char *log, char *err, size_t errlen)
    __attribute__((warn_unused_result));
/* Step 3, where a spawn would call vmm_spawn: the start request with
 * argv[1..] (vmm_spawn's argv) and the jail's flags; waits up to
 * timeout_ms for its answer (the guest runs, or why not). */
int pool_start(struct pool_member *pm, struct cove_sandbox *sb, char *const argv[],
               unsigned int timeout_ms, char *err, size_t errlen)
    __attribute__((warn_unused_result));
/* Ends the member if it still has its process, removes what is left of its
 * directory; safe on NULL.  Called after pool_start too. */
void pool_member_free(struct pool_member *pm);

#endif
