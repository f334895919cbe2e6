/* x86_64 VM and vCPU setup through KVM: the in-kernel irqchip and PIT,
 * CPUID, MSRs, the LAPIC's LINT pins, FPU, and the boot processor's
 * registers for the kernel's entry mode (PVH or 64-bit Linux boot). */
#ifndef COVE_ARCH_X86_64_CPU_H
#define COVE_ARCH_X86_64_CPU_H

#include <linux/kvm.h>

#include "arch/x86_64/loader.h"
#include "base/guest_mem.h"

/* What KVM_GET_SUPPORTED_CPUID reports (malloc'ed), or NULL. */
struct kvm_cpuid2 *x86_supported_cpuid(int kvm_fd);

/* VM-wide setup; call after KVM_CREATE_VM and before creating vCPUs:
 * TSS and identity-map addresses, in-kernel irqchip, PIT. */
int x86_vm_setup(int vm_fd) __attribute__((warn_unused_result));

/* Identity page tables for the 64-bit entry (first 4 GiB, 2 MiB pages)
 * and a flat GDT, written into guest memory. */
int x86_write_page_tables(const struct guest_mem *m) __attribute__((warn_unused_result));

/* Sets up vCPU index of ncpus: CPUID (topology patched from supported),
 * MSRs, FPU, LAPIC LINT0 = ExtINT and LINT1 = NMI; vCPU 0 also gets the
 * boot registers for k.  The others wait for the guest's INIT/SIPI. */
int x86_vcpu_setup(int vcpu_fd, const struct kvm_cpuid2 *supported, unsigned int index,
                   unsigned int ncpus, const struct x86_kernel *k)
    __attribute__((warn_unused_result));

#endif
