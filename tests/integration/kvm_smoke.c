/*
 * kvm_smoke: the smallest real use of the KVM API.  Creates a VM with one
 * page of guest memory, loads real-mode code that writes "Cove\n" to I/O
 * port 0x3f8 one byte at a time and halts, then checks the bytes seen in
 * KVM_EXIT_IO exits and that the run ends with KVM_EXIT_HLT.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#define GUEST_ADDR 0x1000
#define PORT       0x3f8

static int fail(const char *what)
{
	fprintf(stderr, "kvm_smoke: %s: %s\n", what, strerror(errno));
	return 1;
}

int main(void)
{
	/* Writes the NUL-terminated message after hlt to port 0x3f8, then halts.
	 * The mov si immediate is patched below to the message address. */
	static const uint8_t code[] = {
		0xba, 0xf8, 0x03, /* mov dx, 0x3f8 */
		0xbe, 0x0e, 0x10, /* mov si, msg */
		0xac,             /* lodsb */
		0x84, 0xc0,       /* test al, al */
		0x74, 0x03,       /* jz +3 */
		0xee,             /* out dx, al */
		0xeb, 0xf8,       /* jmp lodsb */
		0xf4,             /* hlt; the message follows */
		'C',  'o',  'v',  'e', '\n', 0,
	};
	int kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (kvm < 0)
		return fail("open /dev/kvm");
	if (ioctl(kvm, KVM_GET_API_VERSION, 0) != KVM_API_VERSION)
		return fail("KVM_GET_API_VERSION");
	int vmfd = ioctl(kvm, KVM_CREATE_VM, 0);
	if (vmfd < 0)
		return fail("KVM_CREATE_VM");
	uint8_t *mem =
	    mmap(NULL, 0x1000, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED)
		return fail("mmap");
	/* The message starts right after hlt; patch its address in. */
	memcpy(mem, code, sizeof(code));
	const uint16_t msg = GUEST_ADDR + 15;
	mem[4] = msg & 0xff;
	mem[5] = msg >> 8;
	struct kvm_userspace_memory_region region = {
		.slot = 0,
		.guest_phys_addr = GUEST_ADDR,
		.memory_size = 0x1000,
		.userspace_addr = (uint64_t)(uintptr_t)mem,
	};
	if (ioctl(vmfd, KVM_SET_USER_MEMORY_REGION, &region) < 0)
		return fail("KVM_SET_USER_MEMORY_REGION");
	int vcpufd = ioctl(vmfd, KVM_CREATE_VCPU, 0);
	if (vcpufd < 0)
		return fail("KVM_CREATE_VCPU");
	int run_size = ioctl(kvm, KVM_GET_VCPU_MMAP_SIZE, 0);
	if (run_size < (int)sizeof(struct kvm_run))
		return fail("KVM_GET_VCPU_MMAP_SIZE");
	struct kvm_run *run =
	    mmap(NULL, (size_t)run_size, PROT_READ | PROT_WRITE, MAP_SHARED, vcpufd, 0);
	if (run == MAP_FAILED)
		return fail("mmap kvm_run");

	struct kvm_sregs sregs;
	if (ioctl(vcpufd, KVM_GET_SREGS, &sregs) < 0)
		return fail("KVM_GET_SREGS");
	sregs.cs.base = 0;
	sregs.cs.selector = 0;
	sregs.ds.base = 0;
	sregs.ds.selector = 0;
	if (ioctl(vcpufd, KVM_SET_SREGS, &sregs) < 0)
		return fail("KVM_SET_SREGS");
	struct kvm_regs regs = { .rip = GUEST_ADDR, .rflags = 0x2 };
	if (ioctl(vcpufd, KVM_SET_REGS, &regs) < 0)
		return fail("KVM_SET_REGS");

	char seen[16] = { 0 };
	size_t n = 0, exits = 0;
	for (;;) {
		if (ioctl(vcpufd, KVM_RUN, 0) < 0)
			return fail("KVM_RUN");
		exits++;
		if (run->exit_reason == KVM_EXIT_HLT)
			break;
		if (run->exit_reason != KVM_EXIT_IO || run->io.direction != KVM_EXIT_IO_OUT ||
		    run->io.port != PORT || run->io.size != 1 || n + 1 >= sizeof(seen)) {
			fprintf(stderr, "kvm_smoke: unexpected exit %u (port 0x%x)\n",
			        run->exit_reason, run->io.port);
			return 1;
		}
		seen[n++] = *((char *)run + run->io.data_offset);
	}
	if (strcmp(seen, "Cove\n") != 0) {
		fprintf(stderr, "kvm_smoke: guest wrote '%s', expected 'Cove\\n'\n", seen);
		return 1;
	}
	printf("kvm_smoke: guest wrote %zu bytes in %zu exits and halted\n", n, exits);
	return 0;
}
