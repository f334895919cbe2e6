/* A sandbox's set-up and teardown steps (sandbox.c), shared by cove_start
 * and cove_restore: its registry entry and meta.json, its logs, its cgroup
 * limits, its network, its end. */
#ifndef COVE_LIB_SANDBOX_H
#define COVE_LIB_SANDBOX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/base/cgroup.h"
#include "lib/base/cove_types.h"
#include "lib/base/handle.h"
#include "lib/base/registry.h"

/* Creates the registry entry: <base>/<name> (mkdir takes the name) or,
 * with name NULL, an anonymous <base>/sb-XXXXXX. */
int sandbox_create(struct cove_sandbox *sb, const char *name, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* The entry's meta.json while we set the sandbox up (it names this
 * process, so nobody takes the entry for dead), then once cove-vmm runs
 * (from then on the entry lives with it).  m holds what the caller filled
 * in (cpus, image...). */
int sandbox_meta_begin(struct cove_sandbox *sb, struct registry_meta *m, char *err, size_t errlen)
    __attribute__((warn_unused_result));
int sandbox_meta_vmm(struct cove_sandbox *sb, struct registry_meta *m, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* Where cove-vmm's own output (log) and the guest console (console: cfg's
 * console_log, else the sandbox's directory) go; both PATH_MAX bytes. */
void sandbox_logs(const struct cove_sandbox *sb, const struct cove_config *cfg, char *console,
                  char *log);

/* A root disk on tmpfs is host RAM the VMM writes, charged to its cgroup:
 * l->memory_bytes (when set) makes room for the overlay's cap, known from
 * disk_size (0: unknown, no room added).  A cold boot and a restore both. */
void sandbox_tmpfs_room(const struct cove_sandbox *sb, uint64_t disk_size, struct cgroup_limits *l);

/* The cgroup limits of a sandbox of cfg with these sizes: memory.max is
 * guest RAM plus CGROUP_VMM_OVERHEAD_MIB, pids.max the threads plus spare. */
void sandbox_limits(const struct cove_config *cfg, unsigned int cpus, uint64_t memory_mib,
                    struct cgroup_limits *l);

/* The network of a sandbox that has one (policy's mode not off, or
 * policy_json, a restore's recorded policy, not NULL): net_setup, then
 * m's net record, written to meta.json at once.  0 without a network. */
int sandbox_net_begin(struct cove_sandbox *sb, const struct cove_config *cfg,
                      const struct cove_net_policy *policy, const char *policy_json,
                      const char *limits, struct registry_meta *m, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* Appends "--net fd=3[,limits]" to argv (at argc; arg holds the value)
 * when sb has a network; returns the new argc. */
int sandbox_net_args(const struct cove_sandbox *sb, const char **argv, int argc, char *arg,
                     size_t len);

/* After vmm_spawn: the TAP is cove-vmm's, our fd is closed. */
void sandbox_net_handed(struct cove_sandbox *sb);

/* Stops and frees a sandbox that failed to come up, detached or not. */
void sandbox_abort(struct cove_sandbox *sb);

/* Ends cove-vmm as vmm_reap(sb, grace_ms) does, then removes the runtime
 * directory.  The end of cove_stop, and of a snapshot that stops the
 * sandbox. */
void sandbox_finish(struct cove_sandbox *sb, int grace_ms);

/* ---- part of cove.h's API ---- */

/* Boots a sandbox and waits until its agent announces itself (no sleeps:
 * the agent connects to the host).  Fails with a message naming the
 * problem: sizes out of bounds (-EINVAL, before anything else), no
 * /dev/kvm, a missing kernel or image, cove-vmm exiting early (its last
 * console lines), or the boot timeout. */
int cove_start(const struct cove_config *cfg, struct cove_sandbox **out, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* Asks the guest to shut down, waits for cove-vmm to exit (killing it
 * after a grace period) and removes the runtime directory. */
int cove_stop(struct cove_sandbox *sb);

/* Frees the handle; stops the sandbox first if it still runs, unless it
 * was started detached or attached with cove_open (those keep running). */
void cove_free(struct cove_sandbox *sb);

#endif
