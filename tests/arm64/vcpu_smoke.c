/* vcpu_smoke: the arm64 vCPU and vGIC set-up of vmm/arch/arm64 (vcpu.c,
 * gic.c; not yet wired into cove-vmm) on a real /dev/kvm.  Built by
 * `make ARCH=arm64` (build/arm64/vcpu_smoke, static) and run in the
 * emulated arm64 host by tests/arm64/smoke.sh.
 *
 * Two vCPUs through arm64_vcpu_init() (the second must be powered off and
 * both MPIDRs KVM's), the vGIC through arm64_gic_create() and
 * arm64_gic_finalize(), the boot registers through arm64_vcpu_boot_regs();
 * then the boot vCPU runs a guest that stores x0, CurrentEL and DAIF to an
 * address outside RAM and calls PSCI SYSTEM_OFF.  Expected: x0 the device
 * tree's address, EL1, D/A/I/F all masked, then a shutdown.  Exit status 0
 * when all hold, 1 with one line naming what did not. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "arch/arm64/gic.h"
#include "arch/arm64/vcpu.h"
#include "smoke_vm.h"

#define RAM_SIZE       0x400000ULL
#define FDT_GPA        (ARM64_RAM_BASE + 0x200000ULL)
#define MMIO_GPA       0x1000ULL
#define RUN_DEADLINE_S 20
#define NCPUS          2

static const uint32_t guest_code[] = {
	0xd2820001, /* movz x1, #0x1000 */
	0xf9000020, /* str  x0, [x1]           x0 as the boot protocol set it */
	0xd5384242, /* mrs  x2, CurrentEL */
	0xf9000422, /* str  x2, [x1, #8] */
	0xd53b4223, /* mrs  x3, DAIF */
	0xf9000823, /* str  x3, [x1, #16] */
	0x52800100, /* movz w0, #0x0008 */
	0x72b08000, /* movk w0, #0x8400, lsl #16: PSCI 0.2 SYSTEM_OFF */
	0xd4000002, /* hvc  #0 */
	0x14000000, /* b    . */
};

static int fail(const char *what, int err)
{
	fprintf(stderr, "vcpu_smoke: %s: %s\n", what, err ? strerror(err) : "unexpected");
	return 1;
}

int main(void)
{
	smoke_signals();
	struct smoke_vm v;
	const char *step = smoke_vm_create(&v, RAM_SIZE);
	if (step)
		return fail(step, errno);
	memcpy(v.ram, guest_code, sizeof(guest_code));
	int vm = v.vm;

	int vcpus[NCPUS];
	for (unsigned int i = 0; i < NCPUS; i++) {
		vcpus[i] = ioctl(vm, KVM_CREATE_VCPU, i);
		if (vcpus[i] < 0)
			return fail("KVM_CREATE_VCPU", errno);
	}
	enum arm64_gic_version gic_version;
	int gic = arm64_gic_create(vm, NCPUS, &gic_version);
	if (gic < 0)
		return fail("arm64_gic_create", -gic);
	for (unsigned int i = 0; i < NCPUS; i++) {
		uint64_t mpidr = 0;
		int err = arm64_vcpu_init(vm, vcpus[i], i, &mpidr);
		if (err)
			return fail("arm64_vcpu_init", -err);
		struct kvm_mp_state mp;
		if (ioctl(vcpus[i], KVM_GET_MP_STATE, &mp) < 0)
			return fail("KVM_GET_MP_STATE", errno);
		printf("vcpu_smoke: vCPU %u: MPIDR 0x%llx, %s\n", i, (unsigned long long)mpidr,
		       mp.mp_state == KVM_MP_STATE_STOPPED ? "powered off" : "runnable");
		if (mpidr != arm64_kvm_mpidr(i))
			return fail("the MPIDR is not KVM's reset value", 0);
		if ((i > 0) != (mp.mp_state == KVM_MP_STATE_STOPPED))
			return fail("only the secondary vCPUs start powered off", 0);
	}
	int err = arm64_gic_finalize(gic);
	if (err)
		return fail("arm64_gic_finalize", -err);
	printf("vcpu_smoke: vGIC v%d at 0x%llx, %u SPIs, initialised\n", (int)gic_version,
	       ARM64_GIC_DIST_BASE, ARM64_SPI_COUNT);

	err = arm64_vcpu_boot_regs(vcpus[0], ARM64_RAM_BASE, FDT_GPA);
	if (err)
		return fail("arm64_vcpu_boot_regs", -err);
	uint64_t pc = 0;
	err = arm64_vcpu_get_core(vcpus[0], offsetof(struct kvm_regs, regs.pc), &pc);
	if (err || pc != ARM64_RAM_BASE)
		return fail("PC does not read back", -err);

	struct kvm_run *run = smoke_vcpu_run(&v, vcpus[0]);
	if (!run)
		return fail("mmap kvm_run", errno);

	/* x0, CurrentEL (EL1 is 1 << 2), DAIF (D, A, I, F: bits 9..6). */
	static const struct {
		const char *name;
		uint64_t want;
	} stores[] = { { "x0", FDT_GPA }, { "CurrentEL", 0x4 }, { "DAIF", 0x3c0 } };
	for (unsigned int i = 0; i < 3; i++) {
		if (smoke_run(vcpus[0], run, RUN_DEADLINE_S) != KVM_EXIT_MMIO)
			return fail("expected an MMIO exit", errno == EINTR ? ETIMEDOUT : 0);
		uint64_t data = 0;
		memcpy(&data, run->mmio.data, sizeof(data));
		printf("vcpu_smoke: guest %s = 0x%llx (MMIO write at 0x%llx)\n", stores[i].name,
		       (unsigned long long)data, (unsigned long long)run->mmio.phys_addr);
		if (!run->mmio.is_write || run->mmio.phys_addr != MMIO_GPA + 8 * i ||
		    data != stores[i].want)
			return fail(stores[i].name, 0);
	}
	if (smoke_run(vcpus[0], run, RUN_DEADLINE_S) != KVM_EXIT_SYSTEM_EVENT ||
	    run->system_event.type != KVM_SYSTEM_EVENT_SHUTDOWN)
		return fail("expected PSCI SYSTEM_OFF", errno == EINTR ? ETIMEDOUT : 0);
	printf("vcpu_smoke: PSCI SYSTEM_OFF; ok\n");
	return 0;
}
