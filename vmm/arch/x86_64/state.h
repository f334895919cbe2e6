/* x86_64 VM and vCPU state for snapshots: everything KVM holds that guest
 * memory does not.  The structs are KVM's own (this host's ABI); the state
 * file's version covers their layout.
 *
 * Save with every vCPU parked outside KVM_RUN (after a KVM_RUN with
 * immediate_exit, so pending I/O is complete: see vcpu.c).  Restore into a
 * fresh VM: x86_vm_state_restore() before the vCPUs, then each vCPU's
 * x86_vcpu_state_restore(), then run. */
#ifndef COVE_ARCH_X86_64_STATE_H
#define COVE_ARCH_X86_64_STATE_H

#include <linux/kvm.h>
#include <stddef.h>
#include <stdint.h>

#define X86_MAX_SAVED_MSRS    256
#define X86_MAX_CPUID_ENTRIES 128

struct x86_vm_state {
	struct kvm_pit_state2 pit;
	struct kvm_irqchip pic_master, pic_slave, ioapic;
	struct kvm_clock_data clock;
};

struct x86_vcpu_state {
	uint32_t tsc_khz;
	uint32_t nmsrs;
	uint32_t ncpuid;
	uint32_t pad;
	struct kvm_mp_state mp_state;
	struct kvm_regs regs;
	struct kvm_sregs sregs;
	uint32_t xsave[1024]; /* struct kvm_xsave's 4 KiB region (KVM_GET_XSAVE) */
	struct kvm_xcrs xcrs;
	struct kvm_debugregs debugregs;
	struct kvm_lapic_state lapic;
	struct kvm_vcpu_events events;
	struct kvm_msr_entry msrs[X86_MAX_SAVED_MSRS];
	struct kvm_cpuid_entry2 cpuid[X86_MAX_CPUID_ENTRIES];
};

int x86_vm_state_save(int vm_fd, struct x86_vm_state *st) __attribute__((warn_unused_result));

/* Marks the vCPU's kvm-clock as stopped by the host (KVM_KVMCLOCK_CTRL),
 * after a pause; nothing when the guest has no kvm-clock. */
void x86_vcpu_clock_paused(int vcpu_fd);
int x86_vm_state_restore(int vm_fd, const struct x86_vm_state *st)
    __attribute__((warn_unused_result));

/* The MSRs worth saving: KVM_GET_MSR_INDEX_LIST filtered to those this
 * vCPU can read.  Fills idx (malloc'ed) and *n. */
int x86_saved_msr_list(int kvm_fd, int vcpu_fd, uint32_t **idx, uint32_t *n)
    __attribute__((warn_unused_result));

/* What failed is named in what (an ioctl name) on error. */
int x86_vcpu_state_save(int vcpu_fd, const uint32_t *msr_idx, uint32_t nmsrs,
                        struct x86_vcpu_state *st, const char **what)
    __attribute__((warn_unused_result));
int x86_vcpu_state_restore(int kvm_fd, int vcpu_fd, const struct x86_vcpu_state *st,
                           const char **what) __attribute__((warn_unused_result));

/* Whether this host can run a vCPU that was saved with st: every CPUID
 * feature bit it saw must be one KVM supports here.  On a mismatch fills
 * msg with the first missing leaf/register/bit and returns -ENOTSUP. */
int x86_cpuid_compatible(const struct kvm_cpuid2 *supported, const struct x86_vcpu_state *st,
                         char *msg, size_t msglen) __attribute__((warn_unused_result));

/* Sanity checks on state read from a file (counts within bounds). */
int x86_vcpu_state_check(const struct x86_vcpu_state *st) __attribute__((warn_unused_result));

#endif
