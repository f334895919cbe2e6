/* The guest's transmit header (struct virtio_net_hdr_v1) checked before
 * it reaches the host's tun driver, which builds an skb from it: offload
 * flags the device never offered, a GSO type it did not negotiate, or
 * checksum and segment fields that point outside the frame would make the
 * host kernel parse guest-chosen offsets.  Pure: unit-tested with
 * fabricated headers (test_net). */
#ifndef COVE_VIRTIO_NET_HDR_H
#define COVE_VIRTIO_NET_HDR_H

#include <stdint.h>

/* Feature bits (5.1.3). */
#define VIRTIO_NET_F_CSUM       0
#define VIRTIO_NET_F_GUEST_CSUM 1
#define VIRTIO_NET_F_MAC        5
#define VIRTIO_NET_F_GUEST_TSO4 7
#define VIRTIO_NET_F_GUEST_TSO6 8
#define VIRTIO_NET_F_GUEST_ECN  9
#define VIRTIO_NET_F_HOST_TSO4  11
#define VIRTIO_NET_F_HOST_TSO6  12
#define VIRTIO_NET_F_HOST_ECN   13
#define VIRTIO_NET_F_MRG_RXBUF  15
#define VIRTIO_NET_F_STATUS     16

#define VNET_HDR_LEN 12 /* struct virtio_net_hdr_v1 */

struct virtio_net_hdr_v1 {
	uint8_t flags;
	uint8_t gso_type;
	uint16_t hdr_len;
	uint16_t gso_size;
	uint16_t csum_start;
	uint16_t csum_offset;
	uint16_t num_buffers;
};

#define VIRTIO_NET_HDR_F_NEEDS_CSUM 1
#define VIRTIO_NET_HDR_GSO_NONE     0
#define VIRTIO_NET_HDR_GSO_TCPV4    1
#define VIRTIO_NET_HDR_GSO_UDP      3
#define VIRTIO_NET_HDR_GSO_TCPV6    4
#define VIRTIO_NET_HDR_GSO_UDP_L4   5
#define VIRTIO_NET_HDR_GSO_ECN      0x80
#define VNET_ETH_HLEN               14

/**
 * vnet_tx_hdr_check() - whether a transmit header may go to the TAP
 * @h:		the header, copied out of guest memory (decide on the copy)
 * @frame_len:	the frame's bytes after the header
 * @features:	the negotiated feature bits (1 << VIRTIO_NET_F_*)
 *
 * Allowed: no flags, or NEEDS_CSUM with VIRTIO_NET_F_CSUM and csum_start
 * (past the Ethernet header) + csum_offset + 2 within the frame; GSO none,
 * or TCPv4 / TCPv6 (with HOST_TSO4 / HOST_TSO6, ECN only with HOST_ECN)
 * with NEEDS_CSUM, 0 < gso_size <= frame_len; hdr_len within the frame;
 * a frame of at least an Ethernet header.
 * Return: 0, or -EINVAL.
 */
int vnet_tx_hdr_check(const struct virtio_net_hdr_v1 *h, uint32_t frame_len, uint64_t features)
    __attribute__((warn_unused_result));

#endif
