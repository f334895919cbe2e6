/* The VM's device set: the legacy devices (serial console, i8042, boot
 * timer) and the virtio devices, which one table makes (device_types in
 * vm_devices.c; docs/devices.md says how to add one).  vm.c builds and
 * frees the set; the control API and snapshots read it. */
#ifndef COVE_VM_DEVICES_H
#define COVE_VM_DEVICES_H

#include <stddef.h>

#include "core/machine.h"
#include "virtio/device.h"
#include "virtio/mmio.h"

/* One row of the device table: a virtio device type.  Devices take MMIO
 * slots and GSIs in the table's order, each type as many as count says. */
struct vm_device_type {
	const char *key; /* its key in the JSON configuration (vmm/config.c) */
	char tag[5];     /* its own snapshot section (ops->state_size); "": none */
	const struct vdev_ops *ops;
	/* How many devices of the type cfg asks for (after the disks are open). */
	unsigned int (*count)(const struct vm *vm, const struct vm_config *cfg);
	/* Creates device i of the type on transport mc.  *out is set as soon
	 * as the device exists, even if a later step fails (then it is freed
	 * with the set).  0, or -errno with a line in err. */
	int (*create)(struct vm *vm, const struct vm_config *cfg, unsigned int i,
	              const struct virtio_mmio_cfg *mc, void **out, char *err, size_t errlen);
	/* A restore: checks cfg against the type's saved section (NULL: the
	 * snapshot has none) and takes what the device keeps from it (the
	 * NIC's MAC).  NULL: nothing to check.  0, or -EINVAL with err. */
	int (*restore_config)(struct vm_config *cfg, const void *state, char *err, size_t errlen);
};

/* Looks up a saved section of a device type: tag, which device of the
 * type, its size; NULL when the snapshot has none (snapshot/restore.c). */
typedef const void *(*vm_devices_state_fn)(void *ctx, const char *tag, unsigned int index,
                                           size_t size);

/* Checks cfg against the devices' saved sections and fills in what they
 * keep (restore_config of each type with a tag).  0, or -EINVAL with err. */
int vm_devices_restore_config(struct vm_config *cfg, vm_devices_state_fn state, void *ctx,
                              char *err, size_t errlen) __attribute__((warn_unused_result));

/* How many devices have a saved section of their own in a snapshot. */
unsigned int vm_devices_saved_sections(vm_devices_state_fn state, void *ctx);

/* Opens every disk of cfg, and the TAP (before any KVM object exists, so
 * a bad path is reported early).  Fills vm->ndisks. */
int vm_devices_open_disks(struct vm *vm, const struct vm_config *cfg, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* How many virtio-mmio devices cfg asks for (after vm_devices_open_disks). */
unsigned int vm_devices_count(const struct vm *vm, const struct vm_config *cfg);

/* Appends " virtio_mmio.device=..." for virtio slot i to buf; returns the
 * length it would need (snprintf semantics). */
int vm_devices_cmdline(const struct vm *vm, unsigned int slot, char *buf, size_t len);

/* Creates the devices and registers them on the buses and the I/O loop.
 * Needs vm->loop; with vm->vm_fd -1 (no KVM VM: unit tests) nothing is
 * wired to KVM.  Each disk vm_devices_open_disks() opened passes to its
 * device: vm_devices_destroy() closes it there, or in vm->disk_backends[]
 * if no device took it. */
int vm_devices_create(struct vm *vm, const struct vm_config *cfg, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* Releases every device and closes every disk (the one each device holds
 * now, after any snapshot's swap); safe after vm_devices_open_disks()
 * alone or a partial vm_devices_create(). */
void vm_devices_destroy(struct vm *vm);

/* Renames the paths the VM opens again while it runs (writable disks a
 * snapshot freezes, the vsock socket's "_<port>" siblings) to the names
 * they have inside root once cove-vmm has pivoted into it.  Before
 * jail_enter(); 0, or -errno with a message in err. */
int vm_enter_root(struct vm *vm, const char *root, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* The transport of a VM's device. */
struct virtio_mmio *vm_device_transport(const struct vm_device *d);

/* Device `index` of the type with configuration key `key`, or NULL. */
void *vm_device_find(struct vm *vm, const char *key, unsigned int index);

/* Disk i's device, or NULL; the NIC, or NULL. */
struct vblk;
struct vblk *vm_disk(struct vm *vm, unsigned int i);
struct vnet;
struct vnet *vm_net(struct vm *vm);

/* Bytes the guest read from and wrote to its disks so far. */
void vm_disk_io(struct vm *vm, uint64_t *read, uint64_t *written);

/* Disk requests that waited for a rate limiter, and the waits' sum in ns. */
void vm_disk_throttled(struct vm *vm, uint64_t *events, uint64_t *ns);

#endif
