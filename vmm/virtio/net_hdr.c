#include "virtio/net_hdr.h"

#include <endian.h>
#include <errno.h>
#include <stdbool.h>

static bool feat(uint64_t features, unsigned int bit)
{
	return features >> bit & 1;
}

int vnet_tx_hdr_check(const struct virtio_net_hdr_v1 *h, uint32_t frame_len, uint64_t features)
{
	uint32_t hdr_len = le16toh(h->hdr_len), gso_size = le16toh(h->gso_size);
	uint32_t start = le16toh(h->csum_start), off = le16toh(h->csum_offset);
	bool csum = h->flags & VIRTIO_NET_HDR_F_NEEDS_CSUM;
	if (frame_len < VNET_ETH_HLEN || (h->flags & ~VIRTIO_NET_HDR_F_NEEDS_CSUM))
		return -EINVAL; /* DATA_VALID and RSC_INFO are the receive side's */
	if (csum && (!feat(features, VIRTIO_NET_F_CSUM) || start < VNET_ETH_HLEN ||
	             start + off + 2 > frame_len))
		return -EINVAL;
	if (hdr_len > frame_len)
		return -EINVAL;
	uint8_t gso = h->gso_type & (uint8_t)~VIRTIO_NET_HDR_GSO_ECN;
	bool ecn = h->gso_type & VIRTIO_NET_HDR_GSO_ECN;
	if (gso == VIRTIO_NET_HDR_GSO_NONE)
		return ecn ? -EINVAL : 0;
	if (gso == VIRTIO_NET_HDR_GSO_TCPV4 && !feat(features, VIRTIO_NET_F_HOST_TSO4))
		return -EINVAL;
	if (gso == VIRTIO_NET_HDR_GSO_TCPV6 && !feat(features, VIRTIO_NET_F_HOST_TSO6))
		return -EINVAL;
	if (gso != VIRTIO_NET_HDR_GSO_TCPV4 && gso != VIRTIO_NET_HDR_GSO_TCPV6)
		return -EINVAL; /* UDP fragmentation and USO are not offered */
	if (ecn && !feat(features, VIRTIO_NET_F_HOST_ECN))
		return -EINVAL;
	if (!csum || gso_size == 0 || gso_size > frame_len)
		return -EINVAL;
	return 0;
}
