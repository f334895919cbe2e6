/* A VM's run state, which every thread may change: pausing and resuming
 * the vCPUs, and the stop request that the vCPU threads, the devices and
 * the host raise.  Below the vCPU threads and the device set, which call
 * it, and the build step (core/vm.h), which starts them. */
#ifndef COVE_VM_STATE_H
#define COVE_VM_STATE_H

#include <signal.h>

#include "core/machine.h"

/* Interrupts KVM_RUN; blocked in every thread but the vCPU threads. */
#define VCPU_KICK_SIGNAL SIGUSR1

/* Parks every vCPU outside KVM_RUN and returns when all are parked (state
 * VM_PAUSED); vm_resume() lets them run again.  Both are no-ops in the
 * target state and return -EINVAL once the VM has stopped. */
int vm_pause(struct vm *vm) __attribute__((warn_unused_result));
int vm_resume(struct vm *vm) __attribute__((warn_unused_result));

/* Asks the VM to stop for reason; callable from any thread, including a
 * vCPU thread or a device callback.  The first reason wins. */
void vm_request_stop(struct vm *vm, enum vm_exit_reason reason, const char *detail);

/* The guest reset itself (i8042, triple fault handled separately): stops
 * the VM with VM_EXIT_RESET, or VM_EXIT_PANIC if it panicked before. */
void vm_guest_reset(struct vm *vm, const char *detail);

/* Makes the vCPU leave KVM_RUN soon (it then re-reads the VM's requests). */
void vcpu_kick(struct vcpu *v);

#endif
