/* Guest CPUID: patches what KVM_GET_SUPPORTED_CPUID reports so each vCPU
 * sees its own APIC id and one package of ncpus single-threaded cores. */
#ifndef COVE_ARCH_X86_64_CPUID_H
#define COVE_ARCH_X86_64_CPUID_H

#include <linux/kvm.h>
#include <stdint.h>

/* Leaf 1 ECX bit 24.  KVM_GET_SUPPORTED_CPUID never reports it; set it in
 * the input when KVM_CHECK_EXTENSION(KVM_CAP_TSC_DEADLINE_TIMER) says the
 * in-kernel LAPIC supports it.  x86_cpuid_patch() leaves it as given. */
#define X86_CPUID_1_ECX_TSC_DEADLINE (1u << 24)

/* Most vCPUs the topology can describe (xAPIC ids, one taken by the IOAPIC). */
#define X86_CPUID_MAX_CPUS 254

/* The entry for (function, index), or NULL.  index only matters for
 * entries flagged KVM_CPUID_FLAG_SIGNIFCANT_INDEX; others match any index. */
struct kvm_cpuid_entry2 *x86_cpuid_find(struct kvm_cpuid2 *c, uint32_t function, uint32_t index);

/* Rewrites c in place for vCPU vcpu_index of ncpus, c being a private copy
 * of KVM_GET_SUPPORTED_CPUID's answer (one copy per vCPU, before
 * KVM_SET_CPUID2).  Only entries already present are changed; none are
 * added or removed.
 *   leaf 1: initial APIC id, logical processor count, HTT, hypervisor bit;
 *   leaf 4: cores per package, threads sharing each cache;
 *   leaves 0xB / 0x1F: SMT level (1 thread), core level (ncpus), x2APIC id;
 *   leaf 0xA and AMD 0x80000022: zeroed, the VMM exposes no PMU;
 *   AMD 0x80000001 CmpLegacy, 0x80000008 NC / ApicIdCoreIdSize,
 *   0x8000001E extended APIC id and core id.
 * KVM's paravirtual leaves (0x40000000..) are left alone.  Returns 0, or
 * -EINVAL when ncpus is 0 or above X86_CPUID_MAX_CPUS or vcpu_index >= ncpus. */
int x86_cpuid_patch(struct kvm_cpuid2 *c, uint32_t vcpu_index, uint32_t ncpus)
    __attribute__((warn_unused_result));

#endif
