/* The vCPU threads: each runs KVM_RUN and acts on its exits. */
#ifndef COVE_VCPU_H
#define COVE_VCPU_H

#include <stddef.h>

#include "core/machine.h"

/* Installs the (empty) kick handler; once per process, before vcpu_start(). */
int vcpu_install_kick_handler(void) __attribute__((warn_unused_result));

/* Starts the vCPU's thread.  The vCPU is fully set up (registers, CPUID). */
int vcpu_start(struct vcpu *v) __attribute__((warn_unused_result));

/* Which KVM the host has (kvm_backend.h), for the hint a failed KVM_RUN
 * gives: read from /proc and /sys, so before the jail hides them (and in
 * a pooled VMM before its start request). */
void vcpu_host_detect(void);

/* Acts on one KVM exit of a vCPU of vm: vcpu_decide() (core/vcpu_exit.h)
 * says what it means; I/O goes to the buses, the rest becomes a stop
 * request.  Called by the vCPU threads; tests feed it fabricated kvm_run
 * structs.  run_size bounds the I/O data area. */
enum vcpu_action { VCPU_CONTINUE, VCPU_STOP };
enum vcpu_action vcpu_handle_exit(struct vm *vm, struct kvm_run *run, size_t run_size,
                                  struct exit_hist *hist);

#endif
