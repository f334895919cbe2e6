/* Building, starting and freeing a microVM (struct vm, core/machine.h).
 *
 * Lifecycle: vm_create() -> VM_CREATED -> vm_start() -> VM_RUNNING
 *   <-> vm_pause()/vm_resume() (VM_PAUSED: every vCPU parked outside KVM_RUN)
 *   -> the guest resets, faults or vm_request_stop() -> VM_STOPPED
 *   -> vm_wait() returns the reason -> vm_destroy(). */
#ifndef COVE_VM_H
#define COVE_VM_H

#include <stddef.h>

#include "core/machine.h"
#include "core/vm_state.h"

/* Checks the configuration, opens the kernel, initrd and disks, creates
 * guest memory and loads the kernel, then creates the KVM VM, its vCPUs
 * and devices.  Bad input (a missing or malformed kernel, a disk that
 * cannot be opened, too little memory) is reported in err before any KVM
 * VM exists.  On failure everything is released and *out is NULL. */
int vm_create(struct vm **out, const struct vm_config *cfg, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* The part of a VM that needs nothing of its guest (cove-vmm --pool):
 * /dev/kvm opened and checked, KVM_CREATE_VM, the irqchip and PIT, cpus
 * bare vCPUs with their kvm_run mappings, the I/O loop's epoll set and the
 * signal watch.  No guest memory, no device, no thread.  Later a cold boot
 * or a restore builds into it (vm_config.prepared).  On failure *out is
 * NULL and err says why. */
int vm_prepare(struct vm **out, unsigned int cpus, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* Where a new VM's memory, vCPU and device state come from: a cold boot
 * (vm_create) or a snapshot (vm_restore, snapshot/restore.c).  vm_build()
 * runs the steps both share, calling the source's hooks between them:
 *   open the disks -> before_kvm -> open KVM, KVM_CREATE_VM -> after_kvm
 *   -> irqchip/PIT, memory slots, bare vCPUs -> vcpus -> I/O loop, devices
 *   -> devices -> signal watch.
 * before_kvm, after_kvm and devices may be NULL.  A hook that fails leaves
 * its one-line reason in err; vm_build then frees everything. */
struct vm_source {
	void *ctx;
	int (*before_kvm)(struct vm *vm, void *ctx, char *err, size_t errlen);
	int (*after_kvm)(struct vm *vm, void *ctx, char *err, size_t errlen);
	int (*vcpus)(struct vm *vm, void *ctx, char *err, size_t errlen);
	int (*devices)(struct vm *vm, void *ctx, char *err, size_t errlen);
};

/* The build step vm_create and vm_restore share (above).  On failure *out
 * is NULL.  cfg must already be checked. */
int vm_build(struct vm **out, const struct vm_config *cfg, const struct vm_source *src, char *err,
             size_t errlen) __attribute__((warn_unused_result));

/* Starts the I/O loop and one thread per vCPU.  Call once, after vm_create(). */
int vm_start(struct vm *vm) __attribute__((warn_unused_result));

/* Waits until every vCPU thread has ended; returns the exit reason. */
enum vm_exit_reason vm_wait(struct vm *vm);

/* Stops (if running) and frees everything.  Safe on NULL. */
void vm_destroy(struct vm *vm);

/* cove-vmm's process exit status for a reason (docs/vmm.md, "Exit status of cove-vmm"). */
int vm_exit_status(enum vm_exit_reason reason);
const char *vm_exit_reason_name(enum vm_exit_reason reason);

#endif
