#include "arch/x86_64/state.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>

#include "x86_msrs.h"

#define MSR_IA32_TSC_DEADLINE 0x6e0

int x86_vm_state_save(int vm_fd, struct x86_vm_state *st)
{
	memset(st, 0, sizeof(*st));
	st->pic_master.chip_id = KVM_IRQCHIP_PIC_MASTER;
	st->pic_slave.chip_id = KVM_IRQCHIP_PIC_SLAVE;
	st->ioapic.chip_id = KVM_IRQCHIP_IOAPIC;
	if (ioctl(vm_fd, KVM_GET_PIT2, &st->pit) < 0 ||
	    ioctl(vm_fd, KVM_GET_IRQCHIP, &st->pic_master) < 0 ||
	    ioctl(vm_fd, KVM_GET_IRQCHIP, &st->pic_slave) < 0 ||
	    ioctl(vm_fd, KVM_GET_IRQCHIP, &st->ioapic) < 0 ||
	    ioctl(vm_fd, KVM_GET_CLOCK, &st->clock) < 0)
		return -errno;
	return 0;
}

void x86_vcpu_clock_paused(int vcpu_fd)
{
	(void)ioctl(vcpu_fd, KVM_KVMCLOCK_CTRL, 0); /* EINVAL: no kvm-clock in use */
}

int x86_vm_state_restore(int vm_fd, const struct x86_vm_state *st)
{
	if (st->pic_master.chip_id != KVM_IRQCHIP_PIC_MASTER ||
	    st->pic_slave.chip_id != KVM_IRQCHIP_PIC_SLAVE ||
	    st->ioapic.chip_id != KVM_IRQCHIP_IOAPIC)
		return -EINVAL;
	/* The guest's kvm-clock continues from where it was saved; its wall
	 * clock is corrected by the agent's restore notice. */
	struct kvm_clock_data clock = { .clock = st->clock.clock };
	if (ioctl(vm_fd, KVM_SET_PIT2, &st->pit) < 0 ||
	    ioctl(vm_fd, KVM_SET_IRQCHIP, &st->pic_master) < 0 ||
	    ioctl(vm_fd, KVM_SET_IRQCHIP, &st->pic_slave) < 0 ||
	    ioctl(vm_fd, KVM_SET_IRQCHIP, &st->ioapic) < 0 ||
	    ioctl(vm_fd, KVM_SET_CLOCK, &clock) < 0)
		return -errno;
	return 0;
}

static struct kvm_msrs *msrs_alloc(uint32_t n)
{
	struct kvm_msrs *m = calloc(1, sizeof(*m) + n * sizeof(struct kvm_msr_entry));
	if (m)
		m->nmsrs = n;
	return m;
}

static struct kvm_cpuid2 *cpuid_alloc(uint32_t n)
{
	struct kvm_cpuid2 *c = calloc(1, sizeof(*c) + n * sizeof(struct kvm_cpuid_entry2));
	if (c)
		c->nent = n;
	return c;
}

static int read_msr(int vcpu_fd, uint32_t index, uint64_t *val)
{
	union {
		struct kvm_msrs hdr;
		uint8_t bytes[sizeof(struct kvm_msrs) + sizeof(struct kvm_msr_entry)];
	} m = { 0 };
	m.hdr.nmsrs = 1;
	m.hdr.entries[0].index = index;
	if (ioctl(vcpu_fd, KVM_GET_MSRS, &m) != 1)
		return -EINVAL;
	*val = m.hdr.entries[0].data;
	return 0;
}

int x86_saved_msr_list(int kvm_fd, int vcpu_fd, uint32_t **idx, uint32_t *n)
{
	*idx = NULL;
	*n = 0;
	struct kvm_msr_list probe = { .nmsrs = 0 };
	if (ioctl(kvm_fd, KVM_GET_MSR_INDEX_LIST, &probe) < 0 && errno != E2BIG)
		return -errno;
	struct kvm_msr_list *list =
	    calloc(1, sizeof(*list) + (size_t)probe.nmsrs * sizeof(list->indices[0]));
	uint32_t *out = calloc(X86_MAX_SAVED_MSRS, sizeof(*out));
	if (!list || !out) {
		free(list);
		free(out);
		return -ENOMEM;
	}
	list->nmsrs = probe.nmsrs;
	if (ioctl(kvm_fd, KVM_GET_MSR_INDEX_LIST, list) < 0) {
		int e = -errno;
		free(list);
		free(out);
		return e;
	}
	/* The TSC first, so later time MSRs (the deadline) are relative to
	 * the restored counter; the deadline last. */
	uint32_t count = 0;
	bool has_deadline = false;
	uint64_t v;
	if (read_msr(vcpu_fd, MSR_IA32_TSC, &v) == 0)
		out[count++] = MSR_IA32_TSC;
	for (uint32_t i = 0; i < list->nmsrs && count < X86_MAX_SAVED_MSRS - 1; i++) {
		uint32_t m = list->indices[i];
		if (m == MSR_IA32_TSC)
			continue;
		if (m == MSR_IA32_TSC_DEADLINE) {
			has_deadline = read_msr(vcpu_fd, m, &v) == 0;
			continue;
		}
		if (read_msr(vcpu_fd, m, &v) == 0)
			out[count++] = m;
	}
	if (has_deadline)
		out[count++] = MSR_IA32_TSC_DEADLINE;
	free(list);
	*idx = out;
	*n = count;
	return 0;
}

int x86_vcpu_state_save(int vcpu_fd, const uint32_t *msr_idx, uint32_t nmsrs,
                        struct x86_vcpu_state *st, const char **what)
{
	memset(st, 0, sizeof(*st));
	if (nmsrs > X86_MAX_SAVED_MSRS)
		return -E2BIG;
#define GET(req, arg)                               \
	do {                                        \
		if (ioctl(vcpu_fd, req, arg) < 0) { \
			*what = #req;               \
			return -errno;              \
		}                                   \
	} while (0)
	GET(KVM_GET_MP_STATE, &st->mp_state);
	GET(KVM_GET_REGS, &st->regs);
	GET(KVM_GET_SREGS, &st->sregs);
	_Static_assert(sizeof(st->xsave) == sizeof(struct kvm_xsave), "4 KiB XSAVE region");
	GET(KVM_GET_XSAVE, st->xsave);
	GET(KVM_GET_XCRS, &st->xcrs);
	GET(KVM_GET_DEBUGREGS, &st->debugregs);
	GET(KVM_GET_LAPIC, &st->lapic);
	GET(KVM_GET_VCPU_EVENTS, &st->events);
#undef GET
	int khz = ioctl(vcpu_fd, KVM_GET_TSC_KHZ, 0);
	st->tsc_khz = khz > 0 ? (uint32_t)khz : 0;

	struct kvm_msrs *m = msrs_alloc(nmsrs);
	if (!m)
		return -ENOMEM;
	for (uint32_t i = 0; i < nmsrs; i++)
		m->entries[i].index = msr_idx[i];
	int got = ioctl(vcpu_fd, KVM_GET_MSRS, m);
	if (got != (int)nmsrs) {
		free(m);
		*what = "KVM_GET_MSRS";
		return got < 0 ? -errno : -EIO;
	}
	memcpy(st->msrs, m->entries, nmsrs * sizeof(m->entries[0]));
	st->nmsrs = nmsrs;
	free(m);

	struct kvm_cpuid2 *c = cpuid_alloc(X86_MAX_CPUID_ENTRIES);
	if (!c)
		return -ENOMEM;
	if (ioctl(vcpu_fd, KVM_GET_CPUID2, c) < 0 || c->nent > X86_MAX_CPUID_ENTRIES) {
		int e = -errno;
		free(c);
		*what = "KVM_GET_CPUID2";
		return e ? e : -E2BIG;
	}
	memcpy(st->cpuid, c->entries, c->nent * sizeof(c->entries[0]));
	st->ncpuid = c->nent;
	free(c);
	return 0;
}

int x86_vcpu_state_check(const struct x86_vcpu_state *st)
{
	if (st->nmsrs > X86_MAX_SAVED_MSRS || st->ncpuid == 0 || st->ncpuid > X86_MAX_CPUID_ENTRIES)
		return -EINVAL;
	return 0;
}

int x86_vcpu_state_restore(int kvm_fd, int vcpu_fd, const struct x86_vcpu_state *st,
                           const char **what)
{
	if (x86_vcpu_state_check(st) < 0) {
		*what = "state check";
		return -EINVAL;
	}
	struct kvm_cpuid2 *c = cpuid_alloc(st->ncpuid);
	if (!c)
		return -ENOMEM;
	memcpy(c->entries, st->cpuid, st->ncpuid * sizeof(c->entries[0]));
	int r = ioctl(vcpu_fd, KVM_SET_CPUID2, c);
	int e = errno;
	free(c);
	if (r < 0) {
		*what = "KVM_SET_CPUID2";
		return -e;
	}
	if (st->tsc_khz) {
		int khz = ioctl(vcpu_fd, KVM_GET_TSC_KHZ, 0);
		if (khz > 0 && (uint32_t)khz != st->tsc_khz &&
		    (ioctl(kvm_fd, KVM_CHECK_EXTENSION, KVM_CAP_TSC_CONTROL) <= 0 ||
		     ioctl(vcpu_fd, KVM_SET_TSC_KHZ, (unsigned long)st->tsc_khz) < 0)) {
			*what = "KVM_SET_TSC_KHZ (the TSC frequency differs)";
			return -ENOTSUP;
		}
	}
#define SET(req, arg)                               \
	do {                                        \
		if (ioctl(vcpu_fd, req, arg) < 0) { \
			*what = #req;               \
			return -errno;              \
		}                                   \
	} while (0)
	SET(KVM_SET_MP_STATE, &st->mp_state);
	SET(KVM_SET_REGS, &st->regs);
	SET(KVM_SET_SREGS, &st->sregs);
	SET(KVM_SET_XSAVE, st->xsave);
	SET(KVM_SET_XCRS, &st->xcrs);
	SET(KVM_SET_DEBUGREGS, &st->debugregs);
	SET(KVM_SET_LAPIC, &st->lapic);
#undef SET
	struct kvm_msrs *m = msrs_alloc(st->nmsrs);
	if (!m)
		return -ENOMEM;
	memcpy(m->entries, st->msrs, st->nmsrs * sizeof(m->entries[0]));
	r = ioctl(vcpu_fd, KVM_SET_MSRS, m);
	e = errno;
	free(m);
	if (r != (int)st->nmsrs) {
		*what = "KVM_SET_MSRS";
		return r < 0 ? -e : -EIO;
	}
	if (ioctl(vcpu_fd, KVM_SET_VCPU_EVENTS, &st->events) < 0) {
		*what = "KVM_SET_VCPU_EVENTS";
		return -errno;
	}
	return 0;
}

/* Feature registers compared bit by bit: (leaf, subleaf, register). */
struct feature_reg {
	uint32_t leaf, index;
	int reg;         /* 0 eax, 1 ebx, 2 ecx, 3 edx */
	uint32_t ignore; /* bits Cove or KVM set on their own */
};

static const struct feature_reg feature_regs[] = {
	/* Leaf 1 ECX: hypervisor (31) and TSC-deadline (24) are set by Cove;
	 * x2APIC (21) is emulated by KVM.  EDX: HTT (28) is Cove's topology. */
	{ 1, 0, 2, (1u << 31) | (1u << 24) | (1u << 21) },
	{ 1, 0, 3, 1u << 28 },
	{ 7, 0, 1, 0 },
	{ 7, 0, 2, 0 },
	{ 7, 0, 3, 0 },
	{ 0xd, 1, 0, 0 },
	{ 0x80000001, 0, 2, 1u << 1 }, /* CmpLegacy: Cove's topology */
	{ 0x80000001, 0, 3, 0 },
};

static const struct kvm_cpuid_entry2 *find_leaf(const struct kvm_cpuid_entry2 *e, uint32_t n,
                                                uint32_t leaf, uint32_t index)
{
	for (uint32_t i = 0; i < n; i++)
		if (e[i].function == leaf &&
		    (!(e[i].flags & KVM_CPUID_FLAG_SIGNIFCANT_INDEX) || e[i].index == index))
			return &e[i];
	return NULL;
}

static uint32_t reg_of(const struct kvm_cpuid_entry2 *e, int reg)
{
	switch (reg) {
	case 0:
		return e->eax;
	case 1:
		return e->ebx;
	case 2:
		return e->ecx;
	default:
		return e->edx;
	}
}

int x86_cpuid_compatible(const struct kvm_cpuid2 *supported, const struct x86_vcpu_state *st,
                         char *msg, size_t msglen)
{
	static const char *names[] = { "eax", "ebx", "ecx", "edx" };
	for (size_t i = 0; i < sizeof(feature_regs) / sizeof(feature_regs[0]); i++) {
		const struct feature_reg *f = &feature_regs[i];
		const struct kvm_cpuid_entry2 *saved =
		    find_leaf(st->cpuid, st->ncpuid, f->leaf, f->index);
		if (!saved)
			continue;
		const struct kvm_cpuid_entry2 *host =
		    find_leaf(supported->entries, supported->nent, f->leaf, f->index);
		uint32_t want = reg_of(saved, f->reg) & ~f->ignore;
		uint32_t have = host ? reg_of(host, f->reg) : 0;
		uint32_t missing = want & ~have;
		if (missing) {
			snprintf(
			    msg, msglen,
			    "the snapshot's CPU has features this host lacks (CPUID 0x%x.%u %s "
			    "bits 0x%08x)",
			    f->leaf, f->index, names[f->reg], missing);
			return -ENOTSUP;
		}
	}
	return 0;
}
