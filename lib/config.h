/* What cove_start and cove_restore accept (config.c): sizes, limits, the
 * files a configuration names, a network's needs of the host; the
 * defaults of cove.h. */
#ifndef COVE_LIB_CONFIG_H
#define COVE_LIB_CONFIG_H

#include "lib/base/cove_types.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What cove_start (boot) or cove_restore (!boot) needs before anything
 * is created: sizes within bounds (boot only: a restore takes them from the
 * snapshot), a usable /dev/kvm, the files cfg names, a valid name.  0, or
 * -errno with a message in err. */
int config_check(const struct cove_config *cfg, bool boot, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* The sizes a sandbox may boot with (common/cove_limits.h), 0 meaning the
 * default: -EINVAL for memory below COVE_MEMORY_MIN_MIB or more than
 * COVE_CPUS_MAX CPUs, with cove-vmm's wording ("memory must be at least
 * 32 MiB, got 16"). */
int config_check_sizes(unsigned int cpus, uint64_t memory_mib, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* Bounds of struct cove_config's limits (0 is always fine: none). */
#define CONFIG_CPU_QUOTA_MIN 0.01
#define CONFIG_PIDS_MIN      16 /* cove-vmm's own threads need a few */
#define CONFIG_PIDS_MAX      4194304
#define CONFIG_DISK_SIZE_MAX (64ULL << 40)
#define CONFIG_DISK_BPS_MIN  4096
#define CONFIG_RATE_MAX      (1ULL << 50)
#define CONFIG_TTL_MAX_S     (10ULL * 366 * 86400) /* cove-vmm's --ttl bound */

/* The limits of cfg within those bounds: 0, or -EINVAL with a one-line
 * message naming the limit ("ttl must be at most ..."). */
int config_check_limits(const struct cove_config *cfg, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* What a sandbox with a network needs of this host and process: root,
 * /dev/net/tun, cove-egress.  0, or -errno with one line. */
int config_check_net_host(const struct cove_config *cfg, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* cfg's boot timeout, or its default. */
unsigned int config_boot_timeout_ms(const struct cove_config *cfg);

/* ---- part of cove.h's API ---- */

/* Fills cfg with defaults: cove-vmm, build/vmlinux and
 * build/images/minimal.ext4 found relative to the running executable
 * (build/bin/X -> build/...), overridable with $COVE_VMM, $COVE_KERNEL,
 * $COVE_IMAGE. */
void cove_config_defaults(struct cove_config *cfg);

/* Resolves an image name: "minimal", "debian" (build/images/NAME.ext4
 * beside the executable, or $COVE_IMAGES/NAME.ext4) or a path.  Returns a
 * malloc'ed path or NULL. */
char *cove_image_path(const char *name_or_path);

#endif
