/* The VM's device set as the layers above see it (the control API, snapshots):
 * the virtio-mmio transports and disk counters.  Building the set is the
 * VM's own business (vm_priv.h); vm_devices.c holds both, so the machine's
 * shape is read in one place. */
#ifndef COVE_VM_DEVICES_H
#define COVE_VM_DEVICES_H

#include <stddef.h>

#include "core/vm.h"

/* The virtio-mmio transports in slot order (disks, then vsock): what a
 * snapshot saves and a restore fills back.  Returns how many (<= max). */
struct virtio_mmio;
unsigned int vm_devices_transports(struct vm *vm, struct virtio_mmio **out, unsigned int max);

/* The NIC, or NULL (snapshots save its state beside its transport). */
struct vnet;
struct vnet *vm_net(struct vm *vm);

/* Bytes the guest read from and wrote to its disks so far. */
void vm_disk_io(struct vm *vm, uint64_t *read, uint64_t *written);

/* Disk requests that waited for a rate limiter, and the waits' sum in ns. */
void vm_disk_throttled(struct vm *vm, uint64_t *events, uint64_t *ns);

#endif
