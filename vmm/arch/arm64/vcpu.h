/* arm64 vCPUs on KVM (issue 35; docs/arm64.md).  NOT YET WIRED: built only by
 * `make ARCH=arm64` (with aarch64-linux-gnu-gcc) and exercised by
 * tests/arm64/vcpu_smoke.c in the emulated arm64 host; cove-vmm does not
 * call it. */
#ifndef COVE_ARCH_ARM64_VCPU_H
#define COVE_ARCH_ARM64_VCPU_H

#include <stdint.h>

/**
 * arm64_vcpu_init() - KVM_ARM_VCPU_INIT on a new vCPU
 * @vm_fd:   the VM (for KVM_ARM_PREFERRED_TARGET)
 * @vcpu_fd: the vCPU, fresh from KVM_CREATE_VCPU
 * @index:   its index: 0 boots, the others start powered off and wait for
 *           PSCI CPU_ON from the guest
 * @mpidr:   out: its MPIDR_EL1 affinity bits, for its cpu node in the
 *           device tree
 *
 * Every vCPU gets the host's preferred target and PSCI 0.2 (KVM then
 * serves PSCI 0.2+ calls: CPU_ON/OFF, SYSTEM_OFF, SYSTEM_RESET).
 * Return: 0 or -errno of the ioctl that failed.
 */
int arm64_vcpu_init(int vm_fd, int vcpu_fd, unsigned int index, uint64_t *mpidr)
    __attribute__((warn_unused_result));

/**
 * arm64_vcpu_boot_regs() - the arm64 Linux boot protocol's registers
 * @vcpu_fd: the boot vCPU, after arm64_vcpu_init()
 * @entry:   where the kernel Image was loaded (PC)
 * @fdt:     the device tree's guest physical address (x0)
 *
 * x0 = @fdt, x1..x3 = 0, PC = @entry, PSTATE = EL1h with D, A, I and F
 * masked.  The MMU and caches are off after KVM_ARM_VCPU_INIT.
 * Return: 0 or -errno.
 */
int arm64_vcpu_boot_regs(int vcpu_fd, uint64_t entry, uint64_t fdt)
    __attribute__((warn_unused_result));

/* arm64_vcpu_get_core() - reads core register @offset (offsetof(struct
 * kvm_regs, ...)) of @vcpu_fd into @val.  Return: 0 or -errno. */
int arm64_vcpu_get_core(int vcpu_fd, unsigned long offset, uint64_t *val)
    __attribute__((warn_unused_result));

#endif
