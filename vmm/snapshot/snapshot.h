/* Snapshots of a running VM, and restoring them (docs/snapshots.md).  A snapshot is a directory:
 *
 *   state          the state file (state_file.h): configuration, every
 *                  vCPU, the irqchip, PIT and kvm-clock, every device
 *   memory         guest RAM as one sparse file (all-zero pages are holes),
 *                  laid out like the memfd (RAM below the MMIO hole, then
 *                  the rest)
 *   disk<N>.qcow2  (or .img) the writable disks as they were, frozen
 *                  read-only; their backing chains end in the base images
 *
 * Restoring maps `memory` MAP_PRIVATE, so pages load lazily and copy on
 * write, and every restore of one snapshot (a fork) shares its page cache;
 * each fork's writable disks get a fresh qcow2 overlay over the frozen
 * ones. */
#ifndef COVE_SNAPSHOT_H
#define COVE_SNAPSHOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/vm.h"

#define SNAPSHOT_STATE_FILE  "state"
#define SNAPSHOT_MEMORY_FILE "memory"

struct vm_snapshot_result {
	uint64_t memory_bytes;      /* guest RAM size */
	uint64_t memory_disk_bytes; /* bytes the memory file holds (not holes) */
	uint64_t state_bytes;
	uint64_t ms; /* from pause to the snapshot on disk */
};

/* Pauses the VM and writes the snapshot directory `dir` (created here; it
 * must not exist).  The writable disks' top files move into it, frozen;
 * the VM goes on with a fresh overlay at each disk's old path.  With
 * resume the VM runs again afterwards, else it stays paused (the caller
 * stops it).  On failure dir is removed, the disks are as before and the
 * VM resumes when asked to.
 *
 * With dirfd >= 0 the directory is that one, made and emptied by the
 * caller (libcove hands it to a jailed VMM over the control socket), and
 * dir only names it in messages: the writable disks are copied in
 * (moved when the VM stops after it) and the VM keeps its disk files. */
int vm_snapshot(struct vm *vm, const char *dir, int dirfd, bool resume,
                struct vm_snapshot_result *res, char *err, size_t errlen)
    __attribute__((warn_unused_result));

struct snapshot;

/* Reads and checks a snapshot directory: the state file (magic, version,
 * CRC, every section), the memory file's size, and whether it fits this
 * host (CPU features, memory, vCPU count).  Nothing runs yet.  memory, if
 * not NULL, is the file to map instead of the directory's own memory file:
 * a copy of it (libcove's memory cache, on a tmpfs with huge pages); its
 * size is checked like the original's. */
int snapshot_open(const char *dir, const char *memory, struct snapshot **out, char *err,
                  size_t errlen) __attribute__((warn_unused_result));

/* Fills cfg for a restore: cpus, memory, disks (each writable disk gets a
 * fresh overlay overlay_dir/disk<N>.qcow2 over the frozen one; created
 * here) and the vsock CID.  cfg->vsock_path and the console are the
 * caller's.  Paths in cfg point into s, which must outlive cfg. */
int snapshot_vm_config(struct snapshot *s, const char *overlay_dir, struct vm_config *cfg,
                       char *err, size_t errlen) __attribute__((warn_unused_result));

/* Checks cfg's devices against the snapshot's own sections of them (a
 * NIC needs --net, no NIC none) and fills in what they keep (the NIC's
 * MAC): core/vm_devices.h, restore_config.  0, or -EINVAL with a line in
 * err. */
int snapshot_devices_config(struct snapshot *s, struct vm_config *cfg, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* Whether the snapshot's VM had a vsock device. */
bool snapshot_has_vsock(const struct snapshot *s);

/* Creates a VM from an opened snapshot: cfg comes from
 * snapshot_vm_config() plus the caller's vsock path and console; the
 * snapshot must fit this host's KVM (CPU features); memory is the
 * snapshot's file mapped MAP_PRIVATE; vCPU, irqchip and device state are
 * restored.  vm_start() then resumes the guest where it was.  On failure
 * *out is NULL.  s must outlive the VM's start. */
int vm_restore(struct vm **out, const struct vm_config *cfg, struct snapshot *s, char *err,
               size_t errlen) __attribute__((warn_unused_result));

void snapshot_close(struct snapshot *s);

#endif
