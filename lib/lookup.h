/* Finding sandboxes by name in the registry (lookup.c; part of cove.h's
 * API). */
#ifndef COVE_LIB_LOOKUP_H
#define COVE_LIB_LOOKUP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "lib/base/cove_types.h"

/* Attaches to a running sandbox by name.  The handle is not cove-vmm's
 * parent: liveness comes from a pidfd.  cove_stop on it stops the sandbox;
 * cove_free only releases the handle.  -ENOENT: no such sandbox; -EAGAIN:
 * it is still starting; -ESRCH: its cove-vmm had died, and its entry has
 * been removed; -EINVAL: not a valid name. */
int cove_open(const char *name, struct cove_sandbox **out, char *err, size_t errlen)
    __attribute__((warn_unused_result));

enum cove_state {
	COVE_STATE_STARTING, /* its creator is still setting it up */
	COVE_STATE_RUNNING,
	COVE_STATE_PAUSED,
	COVE_STATE_DEAD, /* cove-vmm is gone; the entry was removed by this call */
};

struct cove_info {
	char name[COVE_NAME_MAX + 1];
	enum cove_state state;
	pid_t pid; /* cove-vmm (its creator while starting; 0 if unknown) */
	unsigned int cpus;
	uint64_t memory_mib;
	char *image;         /* root image it booted from, or NULL */
	char *restored_from; /* snapshot directory it was restored from, or NULL */
	int64_t created;     /* Unix time in seconds; 0 if unknown */
	/* Its limits, as struct cove_config's (0: none; disk_size: the root
	 * disk's virtual size, 0 if unknown). */
	double cpu_quota;
	uint64_t pids_max, disk_size, disk_bps, disk_iops, ttl_s;
	/* Its network: NULL without one, else the policy as JSON
	 * ({"mode":..., "allow":[...], "deny":[...]}, malloc'ed), and the
	 * sandbox's index (its host link is cv<index>). */
	char *net_policy;
	unsigned int net_index;
};

/* "starting", "running", "paused", "dead". */
const char *cove_state_name(enum cove_state state);

/* Lists the runtime directory's sandboxes, sorted by name, into a malloc'ed
 * array (free it with cove_list_free).  Entries whose cove-vmm is gone
 * (the pid does not exist, is a zombie, or was reused: its start time
 * differs from the one recorded) are removed and listed once with
 * COVE_STATE_DEAD. */
int cove_list(struct cove_info **out, size_t *count, char *err, size_t errlen)
    __attribute__((warn_unused_result));
void cove_list_free(struct cove_info *list, size_t count);

#endif
