/* A sandbox's limits that cove-vmm and libcove enforce (limits.c): the
 * --ttl watchdog and the root disk's size and rate options. */
#ifndef COVE_VMM_LIMITS_H
#define COVE_VMM_LIMITS_H

#include <stddef.h>
#include <stdint.h>

#include "lib/base/cove_types.h"
#include "lib/base/handle.h"

/* Records ttl_s and, for a sandbox that is not detached, starts a thread
 * that SIGKILLs cove-vmm through (a copy of) its pidfd if it still runs
 * ttl_s + TTL_GRACE_MS after now.  Call right after vmm_spawn().  A thread
 * that cannot start is not an error: cove-vmm enforces the ttl itself. */
#define TTL_GRACE_MS 3000
void ttl_watch(struct cove_sandbox *sb, uint64_t ttl_s);

/* Ends and joins the watchdog (a no-op without one). */
void ttl_unwatch(struct cove_sandbox *sb);

/* The virtual size of the root disk for cfg (the image's, or cfg's
 * disk_size, refused with a message when smaller than the image), and the
 * cove-vmm --disk options of its limits (",bps=N,iops=N,max_file=N"). */
int sandbox_disk_size(const struct cove_config *cfg, const char *image, uint64_t *size, char *err,
                      size_t errlen) __attribute__((warn_unused_result));
void sandbox_disk_limits(char *out, size_t len, uint64_t size, uint64_t bps, uint64_t iops);

#endif
