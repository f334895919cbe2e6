/* A snapshot's note (snapshot.c): what cove_snapshot records beside the
 * snapshot files and a restore reads back. */
#ifndef COVE_LIB_SNAPSHOT_H
#define COVE_LIB_SNAPSHOT_H

#include <stdint.h>

#include "lib/base/cove_types.h"
#include "lib/base/registry.h"

/* The CPUs, memory and limits a snapshot was taken with, from its note;
 * 0 when unknown.  net: its network (on, policy, limits). */
void snapshot_note_read(const char *snapdir, unsigned int *cpus, uint64_t *memory_mib,
                        struct registry_limits *limits, struct registry_net *net);

/* ---- part of cove.h's API ---- */

/* Snapshots a running sandbox into dir (made absolute; it must not exist)
 * through cove-vmm's control socket.  The sandbox then resumes, or with
 * stop_after its cove-vmm exits and the sandbox is stopped as by
 * cove_stop (cove_free is still needed).  The disk's current overlay moves
 * into the snapshot; the sandbox continues on a fresh one. */
int cove_snapshot(struct cove_sandbox *sb, const char *dir, bool stop_after, char *err,
                  size_t errlen) __attribute__((warn_unused_result));

/* Has the guest write its dirty pages back (the agent's SYNC), waiting at
 * most ms, before a snapshot that sandboxes will start from: otherwise
 * each of them writes the same blocks back after its restore, and copies
 * the same qcow2 clusters.  The snapshot is right without it (memory and
 * disk are taken together): callers go on when it fails.  0 or -errno. */
#define SNAPSHOT_SYNC_MS 30000 /* what the callers give cove_snapshot_sync */
int cove_snapshot_sync(struct cove_sandbox *sb, int64_t ms, char *err, size_t errlen)
    __attribute__((warn_unused_result));

#endif
