/* virtio-vsock on the wire (virtio 1.x 5.10): queues, packet header,
 * config space and event, and the device's limits.  Shared by the guest
 * side (vsock.c) and the host side (vsock_host.c). */
#ifndef COVE_VIRTIO_VSOCK_WIRE_H
#define COVE_VIRTIO_VSOCK_WIRE_H

#include <stdint.h>

#define VSOCK_QUEUE_RX    0
#define VSOCK_QUEUE_TX    1
#define VSOCK_QUEUE_EVENT 2
#define VSOCK_NUM_QUEUES  3
#define VSOCK_QUEUE_SIZE  256

/* Well-known CIDs. */
#define VSOCK_HOST_CID          2
#define VSOCK_DEFAULT_GUEST_CID 3

/* Packet types, ops and flags (5.10.6). */
#define VIRTIO_VSOCK_TYPE_STREAM 1

#define VIRTIO_VSOCK_OP_INVALID        0
#define VIRTIO_VSOCK_OP_REQUEST        1
#define VIRTIO_VSOCK_OP_RESPONSE       2
#define VIRTIO_VSOCK_OP_RST            3
#define VIRTIO_VSOCK_OP_SHUTDOWN       4
#define VIRTIO_VSOCK_OP_RW             5
#define VIRTIO_VSOCK_OP_CREDIT_UPDATE  6
#define VIRTIO_VSOCK_OP_CREDIT_REQUEST 7

#define VIRTIO_VSOCK_SHUTDOWN_F_RECEIVE 1 /* the sender will receive no more */
#define VIRTIO_VSOCK_SHUTDOWN_F_SEND    2 /* the sender will send no more */

#define VIRTIO_VSOCK_EVENT_TRANSPORT_RESET 0

/* Packet header, as laid out on both queues. */
struct virtio_vsock_hdr {
	uint64_t src_cid;
	uint64_t dst_cid;
	uint32_t src_port;
	uint32_t dst_port;
	uint32_t len;
	uint16_t type;
	uint16_t op;
	uint32_t flags;
	uint32_t buf_alloc;
	uint32_t fwd_cnt;
} __attribute__((packed));

struct virtio_vsock_config {
	uint64_t guest_cid;
} __attribute__((packed));

struct virtio_vsock_event {
	uint32_t id;
};

/* Limits.  Host-initiated connections use host ports from
 * VSOCK_EPHEMERAL_PORT_MIN upward, unique among live connections. */
#define VSOCK_CONN_BUF_ALLOC     (256 * 1024) /* advertised per connection */
#define VSOCK_MAX_PKT_PAYLOAD    (64 * 1024)  /* largest RW payload we send */
#define VSOCK_MAX_CONNS          1024
#define VSOCK_MAX_PENDING        64 /* host clients that have not sent CONNECT yet */
#define VSOCK_EPHEMERAL_PORT_MIN (1U << 30)
/* How long a host client may take to send its CONNECT line, and how long
 * the guest may take to answer a host-initiated request.  The second is
 * libcove's own step deadline (AGENT_STEP_MS): with 2 s, guests starved of
 * CPU (16 and more sandboxes booting on one emulated CPU) had their first
 * exec refused as if the agent did not listen. */
#define VSOCK_CONNECT_LINE_TIMEOUT_MS 2000
/* After a restore, how long host clients wait for the guest to finish the
 * transport reset (it hands the event buffer back) before they go ahead. */
#define VSOCK_RESET_WAIT_MS       1000
#define VSOCK_RESPONSE_TIMEOUT_MS 10000

#endif
