/* What the arm64 smoke programs (kvm_smoke, vcpu_smoke, boot_smoke) share:
 * a VM with anonymous RAM at ARM64_RAM_BASE, a vCPU's kvm_run, and KVM_RUN
 * under a deadline.  Header-only: each program is one static binary. */
#ifndef COVE_TESTS_ARM64_SMOKE_VM_H
#define COVE_TESTS_ARM64_SMOKE_VM_H

#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <signal.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "arch/arm64/layout.h"

struct smoke_vm {
	int kvm;
	int vm;
	uint8_t *ram; /* guest physical ARM64_RAM_BASE */
	uint64_t ram_size;
	size_t run_size; /* of each vCPU's kvm_run mapping */
};

static void smoke_on_signal(int sig)
{
	(void)sig; /* only interrupts KVM_RUN */
}

/* smoke_signals() - SIGALRM (the deadline) and SIGUSR1 (a stop) interrupt
 * KVM_RUN: handlers without SA_RESTART. */
static inline void smoke_signals(void)
{
	struct sigaction sa = { .sa_handler = smoke_on_signal };
	sigaction(SIGALRM, &sa, NULL);
	sigaction(SIGUSR1, &sa, NULL);
}

/**
 * smoke_vm_create() - /dev/kvm, a VM, and @ram_size bytes of zeroed RAM
 * mapped at ARM64_RAM_BASE
 * @v: filled on success
 *
 * Return: NULL, or the step that failed (errno says why).
 */
static inline const char *smoke_vm_create(struct smoke_vm *v, uint64_t ram_size)
{
	v->ram_size = ram_size;
	v->kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (v->kvm < 0)
		return "open /dev/kvm";
	if (ioctl(v->kvm, KVM_GET_API_VERSION, 0) != KVM_API_VERSION)
		return "KVM_GET_API_VERSION is not 12";
	v->vm = ioctl(v->kvm, KVM_CREATE_VM, 0);
	if (v->vm < 0)
		return "KVM_CREATE_VM";
	int n = ioctl(v->kvm, KVM_GET_VCPU_MMAP_SIZE, 0);
	if (n < (int)sizeof(struct kvm_run))
		return "KVM_GET_VCPU_MMAP_SIZE";
	v->run_size = (size_t)n;
	v->ram = mmap(NULL, ram_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (v->ram == MAP_FAILED)
		return "mmap guest RAM";
	struct kvm_userspace_memory_region region = {
		.guest_phys_addr = ARM64_RAM_BASE,
		.memory_size = ram_size,
		.userspace_addr = (uintptr_t)v->ram,
	};
	if (ioctl(v->vm, KVM_SET_USER_MEMORY_REGION, &region) < 0)
		return "KVM_SET_USER_MEMORY_REGION";
	return NULL;
}

/* smoke_vcpu_run() - @vcpu_fd's kvm_run, mapped; NULL (errno set) if not. */
static inline struct kvm_run *smoke_vcpu_run(const struct smoke_vm *v, int vcpu_fd)
{
	void *p = mmap(NULL, v->run_size, PROT_READ | PROT_WRITE, MAP_SHARED, vcpu_fd, 0);
	return p == MAP_FAILED ? NULL : p;
}

/* smoke_run() - one KVM_RUN that @deadline_s seconds end (errno EINTR);
 * its exit reason, or -1 with errno.  Needs smoke_signals(). */
static inline int smoke_run(int vcpu_fd, const struct kvm_run *run, unsigned int deadline_s)
{
	alarm(deadline_s);
	int r = ioctl(vcpu_fd, KVM_RUN, 0);
	int e = errno;
	alarm(0);
	errno = e;
	return r < 0 ? -1 : (int)run->exit_reason;
}

#endif
