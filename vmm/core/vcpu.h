/* vCPU threads.  The decision function vcpu_handle_exit() is declared in
 * vm.h beside the struct it works on. */
#ifndef COVE_VCPU_H
#define COVE_VCPU_H

#include <signal.h>

#include "core/vm.h"

/* Interrupts KVM_RUN; blocked in every thread but the vCPU threads. */
#define VCPU_KICK_SIGNAL SIGUSR1

/* Installs the (empty) kick handler; once per process, before vcpu_start(). */
int vcpu_install_kick_handler(void) __attribute__((warn_unused_result));

/* Starts the vCPU's thread.  The vCPU is fully set up (registers, CPUID). */
int vcpu_start(struct vcpu *v) __attribute__((warn_unused_result));

/* Makes the vCPU leave KVM_RUN soon (it then re-reads the VM's requests). */
void vcpu_kick(struct vcpu *v);

#endif
