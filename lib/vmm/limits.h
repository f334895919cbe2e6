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

/* ---- part of cove.h's API ---- */

/* Whether cove-vmm has exited, waiting up to wait_ms for it (a child is
 * left for cove_stop to reap): a command whose connection broke calls it,
 * and the connection closes a moment before the process ends.  When it has, and why is not NULL, a one-line reason goes there: "the
 * sandbox reached its --ttl of 5 s" for a deadline (also when cove-vmm
 * did not stop by itself and libcove killed it, ttl_s + 3 s after the
 * start), else cove-vmm's status and its log's last line.  For a command
 * that failed because the sandbox went away. */
bool cove_sandbox_exited(struct cove_sandbox *sb, int wait_ms, char *why, size_t len);

#endif
