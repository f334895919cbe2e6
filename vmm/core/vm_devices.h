/* The VM's device set: the legacy devices (serial console, i8042, boot
 * timer) and the virtio-mmio devices, with their addresses and interrupt
 * lines.  Kept apart from vm.c so the machine's shape is read in one place. */
#ifndef COVE_VM_DEVICES_H
#define COVE_VM_DEVICES_H

#include <stddef.h>

#include "core/vm.h"

/* Opens every disk of cfg (before any KVM object exists, so a bad path is
 * reported early).  Fills vm->ndisks. */
int vm_devices_open_disks(struct vm *vm, const struct vm_config *cfg, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* How many virtio-mmio devices cfg asks for (after vm_devices_open_disks). */
unsigned int vm_devices_count(const struct vm *vm, const struct vm_config *cfg);

/* Appends " virtio_mmio.device=..." for virtio slot i (disks first, then
 * vsock) to buf; returns the length it would need (snprintf semantics). */
int vm_devices_cmdline(const struct vm *vm, unsigned int slot, char *buf, size_t len);

/* Creates the devices and registers them on the buses and the I/O loop.
 * Needs vm->vm_fd and vm->loop. */
int vm_devices_create(struct vm *vm, const struct vm_config *cfg, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* The virtio-mmio transports in slot order (disks, then vsock): what a
 * snapshot saves and a restore fills back.  Returns how many (<= max). */
struct virtio_mmio;
unsigned int vm_devices_transports(struct vm *vm, struct virtio_mmio **out, unsigned int max);

/* Bytes the guest read from and wrote to its disks so far. */
void vm_disk_io(struct vm *vm, uint64_t *read, uint64_t *written);

/* Releases every device; safe after a partial vm_devices_create(). */
void vm_devices_destroy(struct vm *vm);

#endif
