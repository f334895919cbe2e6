/* The MSRs Cove sets on every vCPU before the guest runs, and their values.
 * One table, used by cove-vmm's vCPU setup (vmm/arch/x86_64/cpu.c) and by
 * the KVM probe (lib/kvm_probe.c), which checks that a /dev/kvm accepts
 * exactly what Cove will ask of it. */
#ifndef COVE_X86_MSRS_H
#define COVE_X86_MSRS_H

#include <stdint.h>

#define MSR_IA32_TSC          0x10
#define MSR_IA32_SYSENTER_CS  0x174
#define MSR_IA32_SYSENTER_ESP 0x175
#define MSR_IA32_SYSENTER_EIP 0x176
#define MSR_IA32_MISC_ENABLE  0x1a0
#define MSR_MTRR_DEF_TYPE     0x2ff
#define MSR_STAR              0xc0000081
#define MSR_LSTAR             0xc0000082
#define MSR_CSTAR             0xc0000083
#define MSR_SYSCALL_MASK      0xc0000084
#define MSR_KERNEL_GS_BASE    0xc0000102

#define MISC_ENABLE_FAST_STRING 0x1ULL
#define MTRR_DEF_TYPE_ENABLE_WB ((1ULL << 11) | 6) /* MTRRs on, default write-back */

struct x86_msr_init {
	uint32_t index;
	uint64_t value;
};

static const struct x86_msr_init x86_boot_msrs[] = {
	{ MSR_IA32_SYSENTER_CS, 0 },
	{ MSR_IA32_SYSENTER_ESP, 0 },
	{ MSR_IA32_SYSENTER_EIP, 0 },
	{ MSR_STAR, 0 },
	{ MSR_LSTAR, 0 },
	{ MSR_CSTAR, 0 },
	{ MSR_SYSCALL_MASK, 0 },
	{ MSR_KERNEL_GS_BASE, 0 },
	{ MSR_IA32_TSC, 0 },
	{ MSR_IA32_MISC_ENABLE, MISC_ENABLE_FAST_STRING },
	{ MSR_MTRR_DEF_TYPE, MTRR_DEF_TYPE_ENABLE_WB },
};

#define X86_BOOT_MSRS_N (sizeof(x86_boot_msrs) / sizeof(x86_boot_msrs[0]))

#endif
