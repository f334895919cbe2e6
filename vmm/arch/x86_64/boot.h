/* x86_64 boot information: the e820 memory map, the kernel command line, the
 * Linux zero page (64-bit boot protocol) or the PVH start_info, and the MP
 * table.  Pure logic over guest memory; the lead's vCPU code then points the
 * boot vCPU at k->entry with %rsi = X86_ZERO_PAGE (X86_BOOT_LINUX64) or
 * %ebx = X86_PVH_START_INFO (X86_BOOT_PVH). */
#ifndef COVE_ARCH_X86_64_BOOT_H
#define COVE_ARCH_X86_64_BOOT_H

#include <asm/bootparam.h>
#include <stdint.h>

#include "arch/x86_64/loader.h"
#include "base/guest_mem.h"

/* e820 entry types (boot.rst); PVH memmap entries use the same numbers. */
#define X86_E820_RAM      1
#define X86_E820_RESERVED 2

/* The map has at most four entries today (low RAM, the reserved legacy
 * range, RAM above 1 MiB, RAM above 4 GiB); room for a few more. */
#define X86_E820_MAX 8

/* Linux's loader type for "boot loader without an assigned id". */
#define X86_LOADER_TYPE_UNDEFINED 0xff

/* End of the real-mode setup heap, as an offset from the setup code; only
 * meaningful for the 16-bit entry, but the protocol asks for it anyway. */
#define X86_SETUP_HEAP_END 0xe000

/* PVH boot ABI (xen/include/public/arch-x86/hvm/start_info.h, version 1). */
#define PVH_START_MAGIC 0x336ec578U /* "xEn3" */

struct pvh_start_info {
	uint32_t magic;
	uint32_t version;
	uint32_t flags;
	uint32_t nr_modules;
	uint64_t modlist_paddr;
	uint64_t cmdline_paddr;
	uint64_t rsdp_paddr;
	uint64_t memmap_paddr; /* version 1 */
	uint32_t memmap_entries;
	uint32_t reserved;
};

struct pvh_modlist_entry {
	uint64_t paddr;
	uint64_t size;
	uint64_t cmdline_paddr;
	uint64_t reserved;
};

struct pvh_memmap_entry {
	uint64_t addr;
	uint64_t size;
	uint32_t type; /* X86_E820_* */
	uint32_t reserved;
};

struct x86_boot_cfg {
	const char *cmdline;  /* NULL means empty */
	uint64_t initrd_gpa;  /* already copied into guest RAM by the caller */
	uint64_t initrd_size; /* 0: no initrd */
	unsigned int ncpus;   /* 1..MPTABLE_MAX_CPUS */
};

/* Fills out[0, max) with the e820 map of m's RAM, sorted by address: usable
 * RAM everywhere except [X86_RESERVED_START, X86_RESERVED_END), which is
 * reported reserved; the MMIO hole is left out.  Returns the number of
 * entries, or -ENOSPC when max is too small.  Pure: m need not be mapped. */
int x86_build_e820(const struct guest_mem *m, struct boot_e820_entry *out, unsigned int max)
    __attribute__((warn_unused_result));

/* Chooses where an initrd of size bytes goes: the highest 4 KiB-aligned
 * address in RAM below 4 GiB (and, for a bzImage, within its
 * initrd_addr_max) that stays above k->load_end.  Call after
 * x86_load_kernel(), then copy the initrd to *gpa.  Returns 0, -EINVAL for
 * size 0, or -ENOSPC when it does not fit. */
int x86_place_initrd(const struct guest_mem *m, const struct x86_kernel *k, uint64_t size,
                     uint64_t *gpa) __attribute__((warn_unused_result));

/* Writes the command line at X86_CMDLINE, the MP table (mptable_write()) and
 * then, as k->mode says, the zero page at X86_ZERO_PAGE or the PVH
 * start_info, module list and memory map at X86_PVH_*.  Call after
 * x86_load_kernel() (and after copying the initrd, if any), before the
 * first KVM_RUN.  Returns 0, or -E2BIG (command line too long for the
 * kernel), -EINVAL (bad cfg, initrd outside RAM or overlapping the kernel),
 * -EFAULT (boot area not in RAM), with a one-line reason in err. */
int x86_setup_boot(const struct guest_mem *m, const struct x86_kernel *k,
                   const struct x86_boot_cfg *c, char *err, size_t errlen)
    __attribute__((warn_unused_result));

#endif
