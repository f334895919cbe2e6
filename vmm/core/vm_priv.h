/* Internals of the VM layer, shared by the files that implement core/vm.h:
 * vm.c (lifecycle, the build step), vcpu.c (the vCPU threads) and
 * vm_devices.c (the machine's device set, core/vm_devices.h).  Nothing
 * outside core/ includes it. */
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

#endif
