/* virtio-blk (device ID 2, virtio 1.x 5.2) on a disk backend.
 *
 * Requests run synchronously on the I/O loop thread when the driver
 * notifies the queue; one interrupt per batch, when the driver asks for it.
 * Every malformed request (bad chain, short header, unaligned length,
 * sector past the end) fails alone with a status byte, if it has one; a
 * broken ring marks the device DEVICE_NEEDS_RESET.  Neither stops the VMM.
 *
 * Several disks per VM: one vblk per disk, each with its own MMIO window
 * and GSI.  A disk may be rate limited (vblk_set_limits). */
#ifndef COVE_VIRTIO_BLK_H
#define COVE_VIRTIO_BLK_H

#include <stddef.h>
#include <stdint.h>

#include "backend/disk.h"
#include "virtio/device.h"
#include "virtio/mmio.h"

/* Feature bits (5.2.3). */
#define VIRTIO_BLK_F_SIZE_MAX     1
#define VIRTIO_BLK_F_SEG_MAX      2
#define VIRTIO_BLK_F_RO           5
#define VIRTIO_BLK_F_BLK_SIZE     6
#define VIRTIO_BLK_F_FLUSH        9
#define VIRTIO_BLK_F_DISCARD      13
#define VIRTIO_BLK_F_WRITE_ZEROES 14

/* Request types and status values (5.2.6). */
#define VIRTIO_BLK_T_IN           0
#define VIRTIO_BLK_T_OUT          1
#define VIRTIO_BLK_T_FLUSH        4
#define VIRTIO_BLK_T_GET_ID       8
#define VIRTIO_BLK_T_DISCARD      11
#define VIRTIO_BLK_T_WRITE_ZEROES 13

#define VIRTIO_BLK_S_OK     0
#define VIRTIO_BLK_S_IOERR  1
#define VIRTIO_BLK_S_UNSUPP 2

#define VIRTIO_BLK_WZ_F_UNMAP 1 /* discard/write-zeroes segment flag */

#define VIRTIO_BLK_SECTOR_SIZE 512
#define VIRTIO_BLK_ID_BYTES    20

/* What the device offers; visible for tests and the guest's view. */
#define VBLK_QUEUE_SIZE            256
#define VBLK_SEG_MAX               (VBLK_QUEUE_SIZE - 2) /* header and status take two */
#define VBLK_MAX_DISCARD_SECTORS   (1U << 22)            /* 2 GiB per segment */
#define VBLK_MAX_DISCARD_SEG       16
#define VBLK_DISCARD_ALIGN_SECTORS 8 /* 4 KiB file-system blocks */

/* Request header, as the driver lays it out. */
struct virtio_blk_req_hdr {
	uint32_t type;
	uint32_t reserved;
	uint64_t sector;
};

/* One discard / write-zeroes range. */
struct virtio_blk_discard_seg {
	uint64_t sector;
	uint32_t num_sectors;
	uint32_t flags;
};

/* Config space (5.2.4), packed as the spec lays it out. */
struct virtio_blk_config {
	uint64_t capacity; /* in 512-byte sectors */
	uint32_t size_max;
	uint32_t seg_max;
	uint16_t cylinders;
	uint8_t heads;
	uint8_t sectors;
	uint32_t blk_size;
	uint8_t physical_block_exp;
	uint8_t alignment_offset;
	uint16_t min_io_size;
	uint32_t opt_io_size;
	uint8_t writeback;
	uint8_t unused0;
	uint16_t num_queues;
	uint32_t max_discard_sectors;
	uint32_t max_discard_seg;
	uint32_t discard_sector_alignment;
	uint32_t max_write_zeroes_sectors;
	uint32_t max_write_zeroes_seg;
	uint8_t write_zeroes_may_unmap;
	uint8_t unused1[3];
} __attribute__((packed));

struct vblk;

/* Creates a virtio-blk device for `disk` behind a virtio-mmio window at
 * cfg->base (registered on cfg->bus), interrupting on cfg->gsi; see
 * virtio_mmio_init() for what cfg needs with and without a VM.  The disk
 * stays the caller's: close it after vblk_destroy().  A read-only disk
 * offers VIRTIO_BLK_F_RO and answers writes, discards and write-zeroes with
 * VIRTIO_BLK_S_IOERR.  Call before the vCPUs run.  Returns 0 and *out, or
 * -errno (-EINVAL for a disk with no whole sector). */
int vblk_create(const struct virtio_mmio_cfg *cfg, struct disk *disk, struct vblk **out)
    __attribute__((warn_unused_result));

/* Tears the device down; same preconditions as virtio_mmio_destroy().
 * NULL is fine. */
void vblk_destroy(struct vblk *b);

/* The transport, for save/restore (virtio_mmio_save/restore: the device
 * keeps no state of its own beyond it) and for tests. */
struct virtio_mmio *vblk_transport(struct vblk *b);

/* The device as the machine's device table sees it (virtio/device.h). */
extern const struct vdev_ops vblk_vdev_ops;

/* The disk behind the device, and replacing it (a snapshot freezing the
 * disk and going on with a fresh overlay of the same size).  Swap only
 * with the vCPUs paused and no queue work running; returns the old disk,
 * which the caller closes.  With a NULL disk requests wait in the ring. */
struct disk *vblk_disk(struct vblk *b);
struct disk *vblk_swap_disk(struct vblk *b, struct disk *disk);

/* Host-side I/O limits of one disk (token buckets, base/ratelimit.h):
 * bytes/s over reads and writes, operations/s over every request, each
 * with a burst (0: a tenth of a second's worth).  0 rates: unlimited. */
struct vblk_limits {
	uint64_t bps, bps_burst;
	uint64_t iops, iops_burst;
};

/* Applies limits: a request the buckets cannot serve yet stays in the
 * ring, and the queue stops until a timerfd on cfg->loop fires when there
 * are tokens enough (no polling, no sleeping on the I/O thread).  Call
 * after vblk_create(), before the vCPUs run.  -EINVAL without an I/O loop,
 * else 0 or -errno from timerfd_create/evloop_add. */
int vblk_set_limits(struct vblk *b, const struct vblk_limits *l)
    __attribute__((warn_unused_result));

/* Requests that had to wait for the limiter, and the sum of their waits. */
void vblk_throttle_counts(struct vblk *b, uint64_t *events, uint64_t *ns);

/* Bytes of guest reads and writes served so far. */
void vblk_io_counts(struct vblk *b, uint64_t *read, uint64_t *written);

/* Writes this device's "virtio_mmio.device=4K@0x<base>:<gsi>" kernel
 * command-line entry.  Returns its length or -ENOSPC. */
int vblk_cmdline(const struct vblk *b, char *buf, size_t len) __attribute__((warn_unused_result));

#endif
