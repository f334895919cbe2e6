/* Internals of the VM layer, shared by the files that implement core/vm.h:
 * vm.c (lifecycle, the build step), vcpu.c (the vCPU threads) and
 * vm_devices.c (the machine's device set).  Nothing outside core/
 * includes it. */
#ifndef COVE_VM_PRIV_H
#define COVE_VM_PRIV_H

#include <signal.h>
#include <stddef.h>

#include "core/vm.h"

/* ---- vCPU threads (vcpu.c) ---- */

/* Interrupts KVM_RUN; blocked in every thread but the vCPU threads. */
#define VCPU_KICK_SIGNAL SIGUSR1

/* Installs the (empty) kick handler; once per process, before vcpu_start(). */
int vcpu_install_kick_handler(void) __attribute__((warn_unused_result));

/* Starts the vCPU's thread.  The vCPU is fully set up (registers, CPUID). */
int vcpu_start(struct vcpu *v) __attribute__((warn_unused_result));

/* Makes the vCPU leave KVM_RUN soon (it then re-reads the VM's requests). */
void vcpu_kick(struct vcpu *v);

/* ---- the device set (vm_devices.c) ---- */

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
 * Needs vm->loop; with vm->vm_fd -1 (no KVM VM: unit tests) nothing is
 * wired to KVM.  Each disk vm_devices_open_disks() opened passes to its
 * device's slot: vm_devices_destroy() closes it there, or in
 * vm->disk_backends[] if no device took it. */
int vm_devices_create(struct vm *vm, const struct vm_config *cfg, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* Releases every device and closes every disk (the one each device holds
 * now, after any snapshot's swap); safe after vm_devices_open_disks()
 * alone or a partial vm_devices_create(). */
void vm_devices_destroy(struct vm *vm);

#endif
