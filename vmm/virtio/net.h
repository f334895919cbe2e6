/* virtio-net (device ID 1, virtio 1.x 5.1) on a TAP backend.
 *
 * Two queues, receive (0) and transmit (1); no control queue.  Every frame
 * carries the 12-byte struct virtio_net_hdr_v1, which passes straight to
 * and from the TAP's vnet header: checksum and TSO offloads are the host
 * kernel's and the guest's business, never a per-packet cost here.
 *
 * Transmit: on the queue's ioeventfd, each chain's readable buffers go to
 * the TAP in one writev (zero copy but for the 12-byte header, which is
 * copied and checked first).  Receive: the TAP fd is watched on the
 * I/O loop.  With room for the largest frame in the guest's buffers, one
 * readv fills them directly; otherwise the frame is read into a host
 * buffer and copied once the guest has room (mergeable buffers spread it
 * over several chains).  While the guest has no room the TAP is not
 * polled at all (back-pressure: the host kernel queues, then drops), until
 * the guest adds buffers and notifies.
 *
 * Malformed chains (bad descriptors, readable buffers on the receive
 * queue, a transmit chain shorter than the header or longer than a frame,
 * a transmit header with offloads not negotiated or offsets outside the
 * frame: virtio/net_hdr.h) fail that packet alone: it is handed back with used length 0 and
 * counted.  A broken ring marks the device DEVICE_NEEDS_RESET.  Neither
 * stops the VMM.
 *
 * Rate limits (vnet_set_limits): a token bucket each for receive and
 * transmit, bytes/s and packets/s, with a one-time burst; a frame that
 * must wait stays where it is (a transmit chain in the ring, a received
 * frame in the host buffer, the TAP unpolled) and a timerfd resumes the
 * queue when there are tokens enough.
 *
 * Threading: register accesses on vCPU threads, queue work on the I/O
 * loop, both under the transport lock.  The TUNSETOFFLOAD that follows
 * feature negotiation is deferred from the vCPU thread to the I/O loop. */
#ifndef COVE_VIRTIO_NET_H
#define COVE_VIRTIO_NET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/tap.h"
#include "virtio/device.h"
#include "virtio/mmio.h"
#include "virtio/net_hdr.h"
#include "virtio/net_io.h"

struct vnet;

/**
 * vnet_create() - a virtio-net device on @tap
 * @cfg:	the transport (see virtio_mmio_init for what it needs with and
 *		without a VM)
 * @tap:	the backend; the device takes it over (closed at vnet_destroy,
 *		also when this fails)
 * @mac:	the guest's MAC address
 * @out:	the device
 *
 * Watches the TAP on cfg->loop (not polled until the driver is ready).
 * Call before the vCPUs run.
 * Return: 0 or -errno.
 */
int vnet_create(const struct virtio_mmio_cfg *cfg, struct tap *tap, const uint8_t mac[6],
                struct vnet **out) __attribute__((warn_unused_result));

/* Tears the device down; same preconditions as virtio_mmio_destroy().
 * NULL is fine. */
void vnet_destroy(struct vnet *n);

/**
 * vnet_set_limits() - rate-limit the device
 * @n:	a device created with an I/O loop
 * @l:	the limits; all-zero rates change nothing
 *
 * Creates a timerfd per limited direction on the I/O loop.  After
 * vnet_create(), before the vCPUs run.
 * Return: 0, -EINVAL without an I/O loop, or -errno.
 */
int vnet_set_limits(struct vnet *n, const struct vnet_limits *l)
    __attribute__((warn_unused_result));

struct virtio_mmio *vnet_transport(struct vnet *n);

/* The device state for a snapshot, and putting it back on a restore
 * (after vnet_create, before virtio_mmio_restore of the transport). */
void vnet_save(struct vnet *n, struct vnet_state *out);
void vnet_restore(struct vnet *n, const struct vnet_state *in);

/* The device as the machine's device table sees it (virtio/device.h). */
extern const struct vdev_ops vnet_vdev_ops;

void vnet_get_stats(struct vnet *n, struct vnet_stats *out);

/* Whether the TAP is polled now (false while a frame waits for the
 * guest's buffers or the limiter); for tests. */
bool vnet_rx_polling(struct vnet *n);

/* Runs one receive pass as if the TAP had become readable (tests, and
 * where there is no I/O loop). */
void vnet_poll_rx(struct vnet *n);

/* Writes this device's "virtio_mmio.device=4K@0x<base>:<gsi>" kernel
 * command-line entry.  Returns its length or -ENOSPC. */
int vnet_cmdline(const struct vnet *n, char *buf, size_t len) __attribute__((warn_unused_result));

#endif
