/* arm64 vCPU set-up through KVM's one-reg interface.  NOT YET WIRED (see
 * vcpu.h). */
#include "arch/arm64/vcpu.h"

#include <asm/ptrace.h>
#include <errno.h>
#include <linux/kvm.h>
#include <stddef.h>
#include <string.h>
#include <sys/ioctl.h>

#include "arch/arm64/fdt.h"
#include "arch/arm64/layout.h"

/* MPIDR_EL1: op0 3, op1 0, CRn 0, CRm 0, op2 5. */
#define REG_MPIDR_EL1 ARM64_SYS_REG(3, 0, 0, 0, 5)

static uint64_t core_id(unsigned long offset)
{
	return KVM_REG_ARM64 | KVM_REG_SIZE_U64 | KVM_REG_ARM_CORE | (offset / sizeof(uint32_t));
}

static int set_reg(int vcpu_fd, uint64_t id, uint64_t val)
{
	struct kvm_one_reg r = { .id = id, .addr = (uintptr_t)&val };
	return ioctl(vcpu_fd, KVM_SET_ONE_REG, &r) < 0 ? -errno : 0;
}

static int get_reg(int vcpu_fd, uint64_t id, uint64_t *val)
{
	struct kvm_one_reg r = { .id = id, .addr = (uintptr_t)val };
	return ioctl(vcpu_fd, KVM_GET_ONE_REG, &r) < 0 ? -errno : 0;
}

int arm64_vcpu_get_core(int vcpu_fd, unsigned long offset, uint64_t *val)
{
	if (offset % sizeof(uint64_t) || offset >= sizeof(struct kvm_regs))
		return -EINVAL;
	return get_reg(vcpu_fd, core_id(offset), val);
}

int arm64_vcpu_init(int vm_fd, int vcpu_fd, unsigned int index, uint64_t *mpidr)
{
	struct kvm_vcpu_init init;
	memset(&init, 0, sizeof(init));
	/* #syscalls: ioctl(KVM_ARM_PREFERRED_TARGET, KVM_ARM_VCPU_INIT) (main thread) */
	if (ioctl(vm_fd, KVM_ARM_PREFERRED_TARGET, &init) < 0)
		return -errno;
	init.features[0] |= 1U << KVM_ARM_VCPU_PSCI_0_2;
	if (index > 0)
		init.features[0] |= 1U << KVM_ARM_VCPU_POWER_OFF;
	if (ioctl(vcpu_fd, KVM_ARM_VCPU_INIT, &init) < 0)
		return -errno;
	uint64_t v = 0;
	int err = get_reg(vcpu_fd, REG_MPIDR_EL1, &v);
	if (err)
		return err;
	*mpidr = v & ARM64_MPIDR_AFF_MASK;
	return 0;
}

int arm64_vcpu_boot_regs(int vcpu_fd, uint64_t entry, uint64_t fdt)
{
	const struct {
		unsigned long offset;
		uint64_t val;
	} regs[] = {
		{ offsetof(struct kvm_regs, regs.regs[0]), fdt },
		{ offsetof(struct kvm_regs, regs.regs[1]), 0 },
		{ offsetof(struct kvm_regs, regs.regs[2]), 0 },
		{ offsetof(struct kvm_regs, regs.regs[3]), 0 },
		{ offsetof(struct kvm_regs, regs.pstate),
		  PSR_MODE_EL1h | PSR_D_BIT | PSR_A_BIT | PSR_I_BIT | PSR_F_BIT },
		{ offsetof(struct kvm_regs, regs.pc), entry },
	};
	for (size_t i = 0; i < sizeof(regs) / sizeof(regs[0]); i++) {
		int err = set_reg(vcpu_fd, core_id(regs[i].offset), regs[i].val);
		if (err)
			return err;
	}
	return 0;
}
