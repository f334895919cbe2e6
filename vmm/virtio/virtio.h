/* Constants shared by the virtio transport, the virtqueue and the devices
 * (virtio 1.x).  Everything on the wire is little-endian; Cove runs on
 * little-endian hosts only (x86_64), so fields are used as they are. */
#ifndef COVE_VIRTIO_H
#define COVE_VIRTIO_H

#include <stdint.h>

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "virtio structures are read in place: little-endian hosts only"
#endif

/* Device IDs (virtio 1.x, 5). */
#define VIRTIO_ID_NET   1
#define VIRTIO_ID_BLOCK 2
#define VIRTIO_ID_RNG   4
#define VIRTIO_ID_VSOCK 19

/* Device status bits (2.1). */
#define VIRTIO_STATUS_ACKNOWLEDGE        0x01
#define VIRTIO_STATUS_DRIVER             0x02
#define VIRTIO_STATUS_DRIVER_OK          0x04
#define VIRTIO_STATUS_FEATURES_OK        0x08
#define VIRTIO_STATUS_DEVICE_NEEDS_RESET 0x40
#define VIRTIO_STATUS_FAILED             0x80

/* Transport and ring feature bits (6). */
#define VIRTIO_RING_F_INDIRECT_DESC 28
#define VIRTIO_RING_F_EVENT_IDX     29
#define VIRTIO_F_VERSION_1          32

#define VIRTIO_BIT(n) (1ULL << (n))

/* Features every device gets from the transport and the shared virtqueue. */
#define VIRTIO_TRANSPORT_FEATURES                                               \
	(VIRTIO_BIT(VIRTIO_F_VERSION_1) | VIRTIO_BIT(VIRTIO_RING_F_EVENT_IDX) | \
	 VIRTIO_BIT(VIRTIO_RING_F_INDIRECT_DESC))

/* VendorID register value; free-form for virtio-mmio. */
#define VIRTIO_COVE_VENDOR_ID 0x45564f43 /* "COVE" little-endian */

#endif
