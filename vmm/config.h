/* cove-vmm's configuration from its command line and an optional JSON
 * file (--config), checked into a struct vm_config.  Pure: no VM is
 * touched, so every bad input is reported before one exists. */
#ifndef COVE_VMM_CONFIG_H
#define COVE_VMM_CONFIG_H

#include <stddef.h>

#include "core/vm.h"
#include "jail/jail.h"

/* The host-side limits of one disk, as the disk options give them. */
struct vmm_disk_limits {
	uint64_t bps, bps_burst, iops, iops_burst, max_file;
};

struct vmm_config {
	struct vm_config vm;
	void *json;                     /* the parsed --config document; strings point into it */
	char *disk_specs[VM_MAX_DISKS]; /* copies of --disk values */
	char *vsock_spec;               /* copy of the --vsock value */
	char *net_spec;                 /* copy of the --net value */
	const char *api_path;           /* --api: the control socket, or NULL */
	const char *restore_dir;        /* --restore: a snapshot directory, or NULL */
	const char *overlay_dir;        /* --overlay-dir: where a restore puts disk overlays */
	const char *restore_memory;     /* --restore-memory: the memory file to map, or NULL */
	struct jail_config jail;        /* --jail, --jail-uid, --jail-gid, --jail-fsize */
	enum vmm_seccomp_mode seccomp;  /* --seccomp: every thread's filter (default kill) */
	/* --disk-limit INDEX,...: limits for a restored snapshot's disks,
	 * applied by vmm_config_apply_disk_limits() */
	struct vmm_disk_limits restore_limits[VM_MAX_DISKS];
	unsigned int restore_limits_set; /* bit i: disk i has some */
	unsigned int pool_cpus;          /* --pool CPUS: a pre-spawned VMM (vmm/pool.c); 0: not */
	int show_help;
	int show_seccomp_list; /* --seccomp-list: print the filters' tables */
};

/* The longest --ttl: ten years, far from any overflow of a timerfd. */
#define VMM_TTL_MAX (10ULL * 366 * 86400)

/* Loads a JSON config file into c (unknown keys are errors). */
int vmm_config_load_json(struct vmm_config *c, const char *path, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* After snapshot_vm_config() filled c->vm's disks from a snapshot: puts
 * the --disk-limit values on them.  -EINVAL (message in err) for an index
 * the snapshot does not have. */
int vmm_config_apply_disk_limits(struct vmm_config *c, char *err, size_t errlen)
    __attribute__((warn_unused_result));

void vmm_config_free(struct vmm_config *c);

extern const char vmm_usage[];

#endif
