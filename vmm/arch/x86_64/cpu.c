#include "arch/x86_64/cpu.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>

#include "arch/x86_64/cpuid.h"
#include "arch/x86_64/layout.h"
#include "x86_msrs.h"

/* Addresses KVM needs for its own use on Intel (real-mode TSS and the EPT
 * identity map); just below the 4 GiB BIOS area, inside the MMIO hole. */
#define KVM_TSS_ADDR          0xfffbd000ULL
#define KVM_IDENTITY_MAP_ADDR 0xfffbc000ULL

#define CR0_PE   0x1ULL
#define CR0_ET   0x10ULL
#define CR0_PG   0x80000000ULL
#define CR4_PAE  0x20ULL
#define EFER_LME 0x100ULL
#define EFER_LMA 0x400ULL

#define APIC_LVT0        0x350
#define APIC_LVT1        0x360
#define APIC_MODE_NMI    0x4
#define APIC_MODE_EXTINT 0x7

/* GDT slots: null, 64-bit code, 32-bit code, data, TSS. */
#define GDT_CODE64 1
#define GDT_CODE32 2
#define GDT_DATA   3
#define GDT_TSS    4

static uint64_t gdt_entry(uint16_t flags, uint32_t base, uint32_t limit)
{
	return ((uint64_t)(base & 0xff000000u) << 32) | ((uint64_t)(flags & 0xf0ffu) << 40) |
	       ((uint64_t)(limit & 0x000f0000u) << 32) | ((uint64_t)(base & 0x00ffffffu) << 16) |
	       (limit & 0x0000ffffu);
}

#define GDT_ENTRIES 5

static void gdt_fill(uint64_t *g)
{
	g[0] = 0;
	g[GDT_CODE64] = gdt_entry(0xa09b, 0, 0xfffff);
	g[GDT_CODE32] = gdt_entry(0xc09b, 0, 0xfffff);
	g[GDT_DATA] = gdt_entry(0xc093, 0, 0xfffff);
	g[GDT_TSS] = gdt_entry(0x008b, 0, 0x67);
}

/* The kvm_segment that a descriptor describes. */
static struct kvm_segment segment(uint64_t desc, unsigned int index)
{
	uint32_t limit = (uint32_t)((desc & 0xffff) | ((desc >> 32) & 0xf0000));
	bool granular = (desc >> 55) & 1;
	return (struct kvm_segment){
		.base = (uint32_t)(((desc >> 16) & 0xffffff) | ((desc >> 32) & 0xff000000)),
		/* KVM wants the limit in bytes: scale 4 KiB granularity. */
		.limit = granular ? (limit << 12) | 0xfff : limit,
		.selector = (uint16_t)(index * 8),
		.type = (desc >> 40) & 0xf,
		.present = (desc >> 47) & 1,
		.dpl = (desc >> 45) & 3,
		.db = (desc >> 54) & 1,
		.s = (desc >> 44) & 1,
		.l = (desc >> 53) & 1,
		.g = (desc >> 55) & 1,
		.avl = (desc >> 52) & 1,
	};
}

struct kvm_cpuid2 *x86_supported_cpuid(int kvm_fd)
{
	for (unsigned int n = 128; n <= 4096; n *= 2) {
		struct kvm_cpuid2 *c = calloc(1, sizeof(*c) + n * sizeof(struct kvm_cpuid_entry2));
		if (!c)
			return NULL;
		c->nent = n;
		if (ioctl(kvm_fd, KVM_GET_SUPPORTED_CPUID, c) == 0) {
			/* KVM emulates the TSC-deadline timer with its in-kernel
			 * LAPIC but leaves the bit for the VMM to advertise. */
			struct kvm_cpuid_entry2 *leaf1 = x86_cpuid_find(c, 1, 0);
			if (leaf1 &&
			    ioctl(kvm_fd, KVM_CHECK_EXTENSION, KVM_CAP_TSC_DEADLINE_TIMER) > 0)
				leaf1->ecx |= X86_CPUID_1_ECX_TSC_DEADLINE;
			return c;
		}
		free(c);
		if (errno != E2BIG)
			return NULL;
	}
	return NULL;
}

int x86_vm_setup(int vm_fd)
{
	if (ioctl(vm_fd, KVM_SET_TSS_ADDR, (unsigned long)KVM_TSS_ADDR) < 0)
		return -errno;
	uint64_t map = KVM_IDENTITY_MAP_ADDR;
	if (ioctl(vm_fd, KVM_SET_IDENTITY_MAP_ADDR, &map) < 0)
		return -errno;
	if (ioctl(vm_fd, KVM_CREATE_IRQCHIP, 0) < 0)
		return -errno;
	/* The PC speaker port is a dummy so guests probing it cost no exits. */
	struct kvm_pit_config pit = { .flags = KVM_PIT_SPEAKER_DUMMY };
	if (ioctl(vm_fd, KVM_CREATE_PIT2, &pit) < 0)
		return -errno;
	return 0;
}

int x86_write_page_tables(const struct guest_mem *m)
{
	/* PML4[0] -> PDPT; PDPT[i] -> PD i; each PD maps 1 GiB in 2 MiB pages. */
	uint64_t *pml4 = gmem_ptr(m, X86_PML4, X86_PAGE_SIZE);
	uint64_t *pdpt = gmem_ptr(m, X86_PDPT, X86_PAGE_SIZE);
	uint64_t *pd = gmem_ptr(m, X86_PD, X86_PD_MAX * X86_PAGE_SIZE);
	uint64_t *g = gmem_ptr(m, X86_GDT_ADDR, GDT_ENTRIES * sizeof(uint64_t));
	if (!pml4 || !pdpt || !pd || !g)
		return -EFAULT;
	memset(pml4, 0, X86_PAGE_SIZE);
	memset(pdpt, 0, X86_PAGE_SIZE);
	pml4[0] = X86_PDPT | 0x3; /* present, writable */
	for (uint64_t i = 0; i < X86_PD_MAX; i++)
		pdpt[i] = (X86_PD + i * X86_PAGE_SIZE) | 0x3;
	for (uint64_t i = 0; i < X86_PD_MAX * 512; i++)
		pd[i] = (i << 21) | 0x83; /* present, writable, 2 MiB page */
	gdt_fill(g);
	return 0;
}

static int set_msrs(int fd)
{
	struct kvm_msrs *msrs =
	    calloc(1, sizeof(*msrs) + X86_BOOT_MSRS_N * sizeof(struct kvm_msr_entry));
	if (!msrs)
		return -ENOMEM;
	for (size_t i = 0; i < X86_BOOT_MSRS_N; i++) {
		msrs->entries[i].index = x86_boot_msrs[i].index;
		msrs->entries[i].data = x86_boot_msrs[i].value;
	}
	msrs->nmsrs = X86_BOOT_MSRS_N;
	int r = ioctl(fd, KVM_SET_MSRS, msrs);
	int err = r < 0 ? -errno : (r == (int)X86_BOOT_MSRS_N ? 0 : -EIO);
	free(msrs);
	return err;
}

static int set_lapic(int fd)
{
	struct kvm_lapic_state lapic;
	if (ioctl(fd, KVM_GET_LAPIC, &lapic) < 0)
		return -errno;
	uint32_t lvt0, lvt1;
	memcpy(&lvt0, &lapic.regs[APIC_LVT0], 4);
	memcpy(&lvt1, &lapic.regs[APIC_LVT1], 4);
	lvt0 = (lvt0 & ~0x700u) | (APIC_MODE_EXTINT << 8);
	lvt1 = (lvt1 & ~0x700u) | (APIC_MODE_NMI << 8);
	memcpy(&lapic.regs[APIC_LVT0], &lvt0, 4);
	memcpy(&lapic.regs[APIC_LVT1], &lvt1, 4);
	if (ioctl(fd, KVM_SET_LAPIC, &lapic) < 0)
		return -errno;
	return 0;
}

static int set_cpuid(int fd, const struct kvm_cpuid2 *supported, unsigned int index,
                     unsigned int ncpus)
{
	size_t size = sizeof(*supported) + supported->nent * sizeof(supported->entries[0]);
	struct kvm_cpuid2 *c = malloc(size);
	if (!c)
		return -ENOMEM;
	memcpy(c, supported, size);
	int r = x86_cpuid_patch(c, index, ncpus);
	if (r == 0 && ioctl(fd, KVM_SET_CPUID2, c) < 0)
		r = -errno;
	free(c);
	return r;
}

static int set_boot_regs(int fd, const struct x86_kernel *k)
{
	struct kvm_sregs sregs;
	if (ioctl(fd, KVM_GET_SREGS, &sregs) < 0)
		return -errno;
	uint64_t g[GDT_ENTRIES];
	gdt_fill(g);
	bool long_mode = k->mode == X86_BOOT_LINUX64;
	struct kvm_segment code =
	    segment(g[long_mode ? GDT_CODE64 : GDT_CODE32], long_mode ? GDT_CODE64 : GDT_CODE32);
	struct kvm_segment data = segment(g[GDT_DATA], GDT_DATA);
	sregs.cs = code;
	sregs.ds = sregs.es = sregs.fs = sregs.gs = sregs.ss = data;
	sregs.tr = segment(g[GDT_TSS], GDT_TSS);
	sregs.gdt.base = X86_GDT_ADDR;
	sregs.gdt.limit = sizeof(g) - 1;
	sregs.idt.base = 0;
	sregs.idt.limit = 0;
	struct kvm_regs regs = { .rflags = 0x2, .rip = k->entry };
	if (long_mode) {
		sregs.cr3 = X86_PML4;
		sregs.cr4 = CR4_PAE;
		sregs.cr0 = CR0_PE | CR0_ET | CR0_PG;
		sregs.efer = EFER_LME | EFER_LMA;
		regs.rsi = X86_ZERO_PAGE;
		regs.rsp = X86_BOOT_STACK;
		regs.rbp = X86_BOOT_STACK;
	} else {
		/* PVH: 32-bit protected mode, paging off, %ebx = start_info. */
		sregs.cr0 = CR0_PE | CR0_ET;
		sregs.cr4 = 0;
		sregs.efer = 0;
		regs.rbx = X86_PVH_START_INFO;
	}
	if (ioctl(fd, KVM_SET_SREGS, &sregs) < 0)
		return -errno;
	if (ioctl(fd, KVM_SET_REGS, &regs) < 0)
		return -errno;
	return 0;
}

int x86_vcpu_setup(int vcpu_fd, const struct kvm_cpuid2 *supported, unsigned int index,
                   unsigned int ncpus, const struct x86_kernel *k)
{
	int r = set_cpuid(vcpu_fd, supported, index, ncpus);
	if (r < 0)
		return r;
	if ((r = set_msrs(vcpu_fd)) < 0)
		return r;
	struct kvm_fpu fpu = { .fcw = 0x37f, .mxcsr = 0x1f80 };
	if (ioctl(vcpu_fd, KVM_SET_FPU, &fpu) < 0)
		return -errno;
	if ((r = set_lapic(vcpu_fd)) < 0)
		return r;
	if (index == 0)
		return set_boot_regs(vcpu_fd, k);
	return 0;
}
