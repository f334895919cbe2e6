/* What Cove needs of KVM, and names for what KVM reports.  Header-only:
 * shared by cove-vmm (vmm/core/vm.c, vmm/core/vcpu.c), the KVM probe
 * (lib/kvm_probe.c, also built alone by scripts/kvm-probe) and
 * `cove doctor`. */
#ifndef COVE_KVM_CAPS_H
#define COVE_KVM_CAPS_H

#include <linux/kvm.h>
#include <stdint.h>

struct kvm_cap_name {
	int cap;
	const char *name;
};

/* The capabilities cove-vmm refuses to start without. */
static const struct kvm_cap_name kvm_required_caps[] = {
	{ KVM_CAP_IRQCHIP, "KVM_CAP_IRQCHIP" },
	{ KVM_CAP_IRQFD, "KVM_CAP_IRQFD" },
	{ KVM_CAP_IOEVENTFD, "KVM_CAP_IOEVENTFD" },
	{ KVM_CAP_IMMEDIATE_EXIT, "KVM_CAP_IMMEDIATE_EXIT" },
	{ KVM_CAP_PIT2, "KVM_CAP_PIT2" },
	{ KVM_CAP_EXT_CPUID, "KVM_CAP_EXT_CPUID" },
};
#define KVM_REQUIRED_CAPS_N (sizeof(kvm_required_caps) / sizeof(kvm_required_caps[0]))

/* Used when present; Cove works without them, with less (snapshots keep
 * the TSC rate only with TSC_CONTROL, stats need BINARY_STATS_FD). */
static const struct kvm_cap_name kvm_optional_caps[] = {
	{ KVM_CAP_TSC_DEADLINE_TIMER, "KVM_CAP_TSC_DEADLINE_TIMER" },
	{ KVM_CAP_TSC_CONTROL, "KVM_CAP_TSC_CONTROL" },
	{ KVM_CAP_BINARY_STATS_FD, "KVM_CAP_BINARY_STATS_FD" },
};
#define KVM_OPTIONAL_CAPS_N (sizeof(kvm_optional_caps) / sizeof(kvm_optional_caps[0]))

/* The name of a KVM_EXIT_INTERNAL_ERROR suberror. */
static inline const char *kvm_suberror_name(uint32_t suberror)
{
	switch (suberror) {
	case KVM_INTERNAL_ERROR_EMULATION:
		return "instruction emulation failed";
	case KVM_INTERNAL_ERROR_SIMUL_EX:
		return "exception while delivering an exception";
	case KVM_INTERNAL_ERROR_DELIVERY_EV:
		return "event delivery failed";
	case KVM_INTERNAL_ERROR_UNEXPECTED_EXIT_REASON:
		return "unexpected hardware exit";
	default:
		return "unknown suberror";
	}
}

#endif
