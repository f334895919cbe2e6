/* virtio-rng, the entropy device (device ID 4, virtio 1.x 5.4): one request
 * queue whose device-writable buffers are filled from the host's
 * getrandom(2).
 *
 * The driver learns how many bytes it got from the used length; the spec
 * lets a device fill less than the whole buffer, so each chain gets at most
 * VRNG_MAX_CHAIN_BYTES and each notification at most VRNG_MAX_BATCH_BYTES
 * (and one queue's worth of chains), so a greedy guest cannot hold the I/O
 * thread.  Chains left over after a full batch are taken up on a later pass
 * of the I/O loop (with a VM) or at the next notification (without one).
 *
 * A chain with a driver-readable buffer, or a malformed chain, completes
 * with used length 0; a broken ring marks the device DEVICE_NEEDS_RESET.
 * Neither stops the VMM.  No feature bits, no config space, no state of its
 * own beyond the transport. */
#ifndef COVE_VIRTIO_RNG_H
#define COVE_VIRTIO_RNG_H

#include <stddef.h>

#include "virtio/device.h"
#include "virtio/mmio.h"

#define VRNG_QUEUE_SIZE      64
#define VRNG_MAX_CHAIN_BYTES (64 * 1024)
#define VRNG_MAX_BATCH_BYTES (1024 * 1024)

struct vrng;

/* Creates a virtio-rng device behind a virtio-mmio window at cfg->base
 * (registered on cfg->bus), interrupting on cfg->gsi; see
 * virtio_mmio_init() for what cfg needs with and without a VM.  Call before
 * the vCPUs run.  Returns 0 and *out, or -errno. */
int vrng_create(const struct virtio_mmio_cfg *cfg, struct vrng **out)
    __attribute__((warn_unused_result));

/* Tears the device down; same preconditions as virtio_mmio_destroy().
 * NULL is fine. */
void vrng_destroy(struct vrng *r);

/* The transport, for save/restore (virtio_mmio_save/restore: the device
 * keeps no state of its own beyond it) and for tests. */
struct virtio_mmio *vrng_transport(struct vrng *r);

/* The device as the machine's device table sees it (virtio/device.h). */
extern const struct vdev_ops vrng_vdev_ops;

/* Writes this device's "virtio_mmio.device=4K@0x<base>:<gsi>" kernel
 * command-line entry.  Returns its length or -ENOSPC. */
int vrng_cmdline(const struct vrng *r, char *buf, size_t len) __attribute__((warn_unused_result));

#endif
