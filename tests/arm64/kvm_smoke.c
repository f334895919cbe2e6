/* kvm_smoke: proves that a /dev/kvm on an aarch64 host runs a guest the way
 * Cove's arm64 VMM will (issue 35, docs/arm64.md).  Built static with
 * aarch64-linux-gnu-gcc (`make build/arm64/kvm_smoke`) and run in the
 * emulated arm64 host (tests/arm64/smoke.sh).
 *
 * It creates a VM with 64 KiB of RAM at ARM64 RAM base, a vCPU of the
 * host's preferred target with PSCI 0.2, sets PC with KVM_SET_ONE_REG and
 * runs a guest that stores 42 and 43 to an address outside RAM, then asks
 * PSCI for SYSTEM_OFF.  It expects exactly: two MMIO-write exits with those
 * values, then a shutdown system event.  It also asks whether the in-kernel
 * GICv3 (and GICv2) can be created.  Exit status 0 when all is as
 * expected, 1 (with one line on stderr naming what differed) otherwise.
 * Every KVM_RUN has a deadline (SIGALRM), so a guest that spins fails. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "smoke_vm.h"

#define RAM_SIZE       0x10000ULL
#define MMIO_GPA       0x1000ULL
#define RUN_DEADLINE_S 20

/* The guest: AArch64 instructions, little-endian words. */
static const uint32_t guest_code[] = {
	0xd2820000, /* movz x0, #0x1000       the MMIO address */
	0xd2800541, /* movz x1, #42 */
	0xf9000001, /* str  x1, [x0]          exit 1: write 42 at 0x1000 */
	0xd2800561, /* movz x1, #43 */
	0xf9000401, /* str  x1, [x0, #8]      exit 2: write 43 at 0x1008 */
	0x52800100, /* movz w0, #0x0008 */
	0x72b08000, /* movk w0, #0x8400, lsl #16: PSCI 0.2 SYSTEM_OFF */
	0xd4000002, /* hvc  #0                exit 3: system event */
	0x14000000, /* b    .                 never reached */
};

static int fail(const char *what)
{
	fprintf(stderr, "kvm_smoke: %s: %s\n", what, errno ? strerror(errno) : "unexpected");
	return 1;
}

static double now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static uint64_t core_reg(size_t offset)
{
	return KVM_REG_ARM64 | KVM_REG_SIZE_U64 | KVM_REG_ARM_CORE | (offset / sizeof(uint32_t));
}

/* Whether the vGIC of @type could be created (KVM_CREATE_DEVICE_TEST makes
 * none). */
static const char *vgic_probe(int vm, uint32_t type)
{
	struct kvm_create_device d = { .type = type, .flags = KVM_CREATE_DEVICE_TEST };
	return ioctl(vm, KVM_CREATE_DEVICE, &d) == 0 ? "yes" : "no";
}

int main(void)
{
	smoke_signals();
	double t0 = now_ms();

	struct smoke_vm v;
	const char *step = smoke_vm_create(&v, RAM_SIZE);
	if (step)
		return fail(step);
	memcpy(v.ram, guest_code, sizeof(guest_code));
	int kvm = v.kvm, vm = v.vm;
	int ipa = ioctl(kvm, KVM_CHECK_EXTENSION, KVM_CAP_ARM_VM_IPA_SIZE);
	int psci = ioctl(vm, KVM_CHECK_EXTENSION, KVM_CAP_ARM_PSCI_0_2);
	printf("kvm_smoke: api %d, IPA bits %d, PSCI 0.2 %s, vGICv3 %s, vGICv2 %s\n",
	       KVM_API_VERSION, ipa, psci > 0 ? "yes" : "no",
	       vgic_probe(vm, KVM_DEV_TYPE_ARM_VGIC_V3), vgic_probe(vm, KVM_DEV_TYPE_ARM_VGIC_V2));

	int vcpu = ioctl(vm, KVM_CREATE_VCPU, 0);
	if (vcpu < 0)
		return fail("KVM_CREATE_VCPU");
	struct kvm_vcpu_init init;
	memset(&init, 0, sizeof(init));
	if (ioctl(vm, KVM_ARM_PREFERRED_TARGET, &init) < 0)
		return fail("KVM_ARM_PREFERRED_TARGET");
	init.features[0] |= 1u << KVM_ARM_VCPU_PSCI_0_2;
	if (ioctl(vcpu, KVM_ARM_VCPU_INIT, &init) < 0)
		return fail("KVM_ARM_VCPU_INIT");
	uint64_t pc = ARM64_RAM_BASE;
	struct kvm_one_reg reg = { .id = core_reg(offsetof(struct kvm_regs, regs.pc)),
		                   .addr = (uintptr_t)&pc };
	if (ioctl(vcpu, KVM_SET_ONE_REG, &reg) < 0)
		return fail("KVM_SET_ONE_REG pc");
	uint64_t back = 0;
	reg.addr = (uintptr_t)&back;
	if (ioctl(vcpu, KVM_GET_ONE_REG, &reg) < 0 || back != ARM64_RAM_BASE)
		return fail("KVM_GET_ONE_REG pc does not read back");
	printf("kvm_smoke: vCPU target %u with PSCI 0.2, pc 0x%llx\n", init.target,
	       (unsigned long long)back);

	struct kvm_run *run = smoke_vcpu_run(&v, vcpu);
	if (!run)
		return fail("mmap kvm_run");

	double t1 = now_ms();
	for (unsigned i = 0; i < 2; i++) {
		errno = 0;
		if (smoke_run(vcpu, run, RUN_DEADLINE_S) != KVM_EXIT_MMIO)
			return fail(errno == EINTR ? "KVM_RUN past its deadline"
			                           : "expected an MMIO exit");
		uint64_t data = 0;
		memcpy(&data, run->mmio.data, sizeof(data));
		printf("kvm_smoke: exit %u: MMIO %s 0x%llx len %u data %llu\n", i + 1,
		       run->mmio.is_write ? "write" : "read",
		       (unsigned long long)run->mmio.phys_addr, run->mmio.len,
		       (unsigned long long)data);
		if (!run->mmio.is_write || run->mmio.phys_addr != MMIO_GPA + 8 * i ||
		    run->mmio.len != 8 || data != 42 + i) {
			errno = 0;
			return fail("the MMIO exit is not the guest's store");
		}
	}
	errno = 0;
	if (smoke_run(vcpu, run, RUN_DEADLINE_S) != KVM_EXIT_SYSTEM_EVENT)
		return fail("expected PSCI SYSTEM_OFF's system event");
	if (run->system_event.type != KVM_SYSTEM_EVENT_SHUTDOWN) {
		errno = 0;
		return fail("the system event is not a shutdown");
	}
	printf("kvm_smoke: exit 3: PSCI SYSTEM_OFF (system event shutdown)\n");
	printf("kvm_smoke: ok (set-up %.1f ms, guest run %.1f ms)\n", t1 - t0, now_ms() - t1);
	return 0;
}
