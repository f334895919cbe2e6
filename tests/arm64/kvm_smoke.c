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
#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define RAM_BASE       0x80000000ULL
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

static void on_alarm(int sig)
{
	(void)sig; /* only interrupts KVM_RUN */
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

/* run_until_exit() - one KVM_RUN under the deadline; its exit reason, or -1. */
static int run_until_exit(int vcpu, struct kvm_run *run)
{
	alarm(RUN_DEADLINE_S);
	int r = ioctl(vcpu, KVM_RUN, 0);
	int e = errno;
	alarm(0);
	errno = e;
	return r < 0 ? -1 : (int)run->exit_reason;
}

int main(void)
{
	struct sigaction sa = { .sa_handler = on_alarm }; /* no SA_RESTART */
	sigaction(SIGALRM, &sa, NULL);
	double t0 = now_ms();

	int kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (kvm < 0)
		return fail("open /dev/kvm");
	int api = ioctl(kvm, KVM_GET_API_VERSION, 0);
	if (api != KVM_API_VERSION)
		return fail("KVM_GET_API_VERSION is not 12");
	int vm = ioctl(kvm, KVM_CREATE_VM, 0);
	if (vm < 0)
		return fail("KVM_CREATE_VM");
	int ipa = ioctl(kvm, KVM_CHECK_EXTENSION, KVM_CAP_ARM_VM_IPA_SIZE);
	int psci = ioctl(vm, KVM_CHECK_EXTENSION, KVM_CAP_ARM_PSCI_0_2);
	printf("kvm_smoke: api %d, IPA bits %d, PSCI 0.2 %s, vGICv3 %s, vGICv2 %s\n", api, ipa,
	       psci > 0 ? "yes" : "no", vgic_probe(vm, KVM_DEV_TYPE_ARM_VGIC_V3),
	       vgic_probe(vm, KVM_DEV_TYPE_ARM_VGIC_V2));

	void *ram =
	    mmap(NULL, RAM_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (ram == MAP_FAILED)
		return fail("mmap guest RAM");
	memcpy(ram, guest_code, sizeof(guest_code));
	struct kvm_userspace_memory_region region = {
		.slot = 0,
		.guest_phys_addr = RAM_BASE,
		.memory_size = RAM_SIZE,
		.userspace_addr = (uintptr_t)ram,
	};
	if (ioctl(vm, KVM_SET_USER_MEMORY_REGION, &region) < 0)
		return fail("KVM_SET_USER_MEMORY_REGION");

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
	uint64_t pc = RAM_BASE;
	struct kvm_one_reg reg = { .id = core_reg(offsetof(struct kvm_regs, regs.pc)),
		                   .addr = (uintptr_t)&pc };
	if (ioctl(vcpu, KVM_SET_ONE_REG, &reg) < 0)
		return fail("KVM_SET_ONE_REG pc");
	uint64_t back = 0;
	reg.addr = (uintptr_t)&back;
	if (ioctl(vcpu, KVM_GET_ONE_REG, &reg) < 0 || back != RAM_BASE)
		return fail("KVM_GET_ONE_REG pc does not read back");
	printf("kvm_smoke: vCPU target %u with PSCI 0.2, pc 0x%llx\n", init.target,
	       (unsigned long long)back);

	int mmap_size = ioctl(kvm, KVM_GET_VCPU_MMAP_SIZE, 0);
	if (mmap_size < (int)sizeof(struct kvm_run))
		return fail("KVM_GET_VCPU_MMAP_SIZE");
	struct kvm_run *run = mmap(NULL, mmap_size, PROT_READ | PROT_WRITE, MAP_SHARED, vcpu, 0);
	if (run == MAP_FAILED)
		return fail("mmap kvm_run");

	double t1 = now_ms();
	for (unsigned i = 0; i < 2; i++) {
		errno = 0;
		if (run_until_exit(vcpu, run) != KVM_EXIT_MMIO)
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
	if (run_until_exit(vcpu, run) != KVM_EXIT_SYSTEM_EVENT)
		return fail("expected PSCI SYSTEM_OFF's system event");
	if (run->system_event.type != KVM_SYSTEM_EVENT_SHUTDOWN) {
		errno = 0;
		return fail("the system event is not a shutdown");
	}
	printf("kvm_smoke: exit 3: PSCI SYSTEM_OFF (system event shutdown)\n");
	printf("kvm_smoke: ok (set-up %.1f ms, guest run %.1f ms)\n", t1 - t0, now_ms() - t1);
	return 0;
}
