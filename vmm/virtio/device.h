/* What the machine (core/vm_devices.c) and snapshots need of a virtio
 * device, whatever its type: its transport, its end, and its own state
 * beside the transport's.  Each device exports one `const struct vdev_ops`;
 * the machine's device table (core/vm_devices.h) names it once. */
#ifndef COVE_VIRTIO_DEVICE_H
#define COVE_VIRTIO_DEVICE_H

#include <stddef.h>

struct virtio_mmio;

struct vdev_ops {
	/* The device's transport (saved and restored by the snapshot code). */
	struct virtio_mmio *(*transport)(void *dev);
	/* Releases the device and whatever backend it holds then. */
	void (*destroy)(void *dev);
	/* The device's own snapshot section, state_size bytes (0: none):
	 * save copies it out; restore puts it back before the transport is
	 * restored.  Both may be NULL when state_size is 0. */
	size_t state_size;
	void (*save)(void *dev, void *out);
	void (*restore)(void *dev, const void *in);
	/* After every transport was restored, before the queues are kicked;
	 * NULL: nothing to do. */
	void (*restored)(void *dev);
};

#endif
