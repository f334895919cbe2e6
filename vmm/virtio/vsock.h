/* virtio-vsock (device ID 19, virtio 1.x 5.10) inside the VMM, no vhost:
 * guest AF_VSOCK stream sockets are bridged to host Unix sockets in
 * Firecracker's hybrid convention (see backend/vsock_unix.h).
 *
 * Queues: rx 0 (device to driver), tx 1 (driver to device), event 2.
 * Stream sockets only; no feature bits beyond the transport's.
 *
 * All work runs on the VM's I/O loop thread: queue notifications through
 * the transport, socket readiness through one nested epoll set the device
 * watches on cfg->loop.  Both take the transport lock, so the device never
 * runs concurrently with itself or with a register access.
 *
 * Flow control follows the spec's credit scheme: the device never sends
 * the guest more than its advertised buffer space allows, and advertises
 * VSOCK_CONN_BUF_ALLOC bytes per connection for the guest's data, which it
 * buffers when the Unix peer is slow.  A guest that overruns that credit
 * gets its connection reset.  The guest is hostile: a malformed packet is
 * dropped or answered with RST, never trusted. */
#ifndef COVE_VIRTIO_VSOCK_H
#define COVE_VIRTIO_VSOCK_H

#include <stddef.h>
#include <stdint.h>

#include "virtio/device.h"
#include "virtio/mmio.h"
#include "virtio/vsock_wire.h"

struct vsock;

/* Creates a virtio-vsock device with config space guest_cid behind a
 * virtio-mmio window at cfg->base (registered on cfg->bus), interrupting
 * on cfg->gsi, and listens on the Unix socket uds_path (a stale socket file
 * there is replaced).  cfg->loop is required, even without a VM (vm_fd -1):
 * the device watches its sockets on it.  Call before the vCPUs run and
 * before evloop_start() (the device's loop callback takes the transport
 * lock, which exists only once this returns).  Returns 0 and *out, or -errno:
 * -EINVAL (guest_cid outside [3, 0xfffffffe], no loop, empty path),
 * -EADDRINUSE (a live listener owns uds_path), -EEXIST (uds_path is not a
 * socket), -ENAMETOOLONG (uds_path leaves no room for "_<port>"). */
int vsock_create(const struct virtio_mmio_cfg *cfg, uint64_t guest_cid, const char *uds_path,
                 struct vsock **out) __attribute__((warn_unused_result));

/* The Unix socket path the device listens on. */
const char *vsock_uds_path(const struct vsock *v);

/* The same socket under another name: the path uds_path has inside the
 * jail once cove-vmm has pivoted into it (guest-initiated connections go
 * to "<path>_<port>" from then on).  -ENAMETOOLONG, -ENOMEM. */
int vsock_set_uds_path(struct vsock *v, const char *path) __attribute__((warn_unused_result));

/* Closes every socket, unlinks uds_path (if it is still ours) and frees the
 * device.  Call with the vCPUs stopped and the I/O loop stopped but not yet
 * destroyed (evloop_stop(), vsock_destroy(), evloop_destroy()).  NULL is
 * fine. */
void vsock_destroy(struct vsock *v);

/* The transport, for save/restore and tests.  Connections are runtime
 * only: after virtio_mmio_restore() call vsock_transport_reset(). */
struct virtio_mmio *vsock_transport(struct vsock *v);

/* Drops every connection (host clients see EOF; no RST goes to the guest)
 * and posts VIRTIO_VSOCK_EVENT_TRANSPORT_RESET on the event queue, now or
 * as soon as the driver provides an event buffer.  Takes the transport
 * lock: call from any thread except inside this device's own callbacks,
 * e.g. right after virtio_mmio_restore() with the loop stopped. */
void vsock_transport_reset(struct vsock *v);

/* The device as the machine's device table sees it (virtio/device.h). */
extern const struct vdev_ops vsock_vdev_ops;

/* Writes this device's "virtio_mmio.device=4K@0x<base>:<gsi>" kernel
 * command-line entry.  Returns its length or -ENOSPC. */
int vsock_cmdline(const struct vsock *v, char *buf, size_t len) __attribute__((warn_unused_result));

/* Shortens the CONNECT-line and guest-response timeouts (tests). */
void vsock_set_timeouts(struct vsock *v, unsigned int line_ms, unsigned int response_ms);

/* Live connections, host clients still sending CONNECT (tests). */
unsigned int vsock_conn_count(struct vsock *v);
unsigned int vsock_pending_count(struct vsock *v);

#endif
