/* x86_64 boot information: e820, command line, zero page, PVH start_info. */
#include "arch/x86_64/boot.h"

#include <assert.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "arch/x86_64/layout.h"
#include "arch/x86_64/mptable.h"
#include "errf.h"

/* Kernels before protocol 2.06 did not state a limit; 255 was it. */
#define X86_OLD_CMDLINE_SIZE 255

static_assert(sizeof(struct boot_params) == X86_PAGE_SIZE, "zero page is one page");
static_assert(offsetof(struct boot_params, hdr) == 0x1f1, "boot_params.hdr");
static_assert(offsetof(struct boot_params, e820_table) == 0x2d0, "boot_params.e820_table");
static_assert(offsetof(struct boot_params, e820_entries) == 0x1e8, "boot_params.e820_entries");
static_assert(sizeof(struct boot_e820_entry) == 20, "e820 entry");
static_assert(sizeof(struct pvh_start_info) == 56, "hvm_start_info");
static_assert(offsetof(struct pvh_start_info, memmap_paddr) == 40, "hvm_start_info v1");
static_assert(sizeof(struct pvh_modlist_entry) == 32, "hvm_modlist_entry");
static_assert(sizeof(struct pvh_memmap_entry) == 24, "hvm_memmap_table_entry");
static_assert(X86_PVH_MODLIST >= X86_PVH_START_INFO + sizeof(struct pvh_start_info),
              "PVH module list after start_info");
static_assert(X86_PVH_MEMMAP >= X86_PVH_MODLIST + sizeof(struct pvh_modlist_entry),
              "PVH memmap after the module list");
static_assert(X86_PVH_MEMMAP + X86_E820_MAX * sizeof(struct pvh_memmap_entry) <= X86_PVH_END,
              "PVH memmap fits its page");
static_assert(X86_E820_MAX <= E820_MAX_ENTRIES_ZEROPAGE, "e820 fits the zero page");
static_assert(X86_CMDLINE_MAX >= X86_PVH_CMDLINE_MAX, "command line area");

/* End of the RAM region that starts at 0 (it never reaches the MMIO hole). */
static uint64_t low_ram_end(const struct guest_mem *m)
{
	for (unsigned int i = 0; i < m->nregions; i++)
		if (m->regions[i].gpa == 0)
			return m->regions[i].size;
	return 0;
}

static int e820_add(struct boot_e820_entry *out, unsigned int max, unsigned int *n, uint64_t start,
                    uint64_t end, uint32_t type)
{
	if (start >= end)
		return 0;
	if (*n >= max)
		return -ENOSPC;
	out[*n] = (struct boot_e820_entry){ .addr = start, .size = end - start, .type = type };
	(*n)++;
	return 0;
}

int x86_build_e820(const struct guest_mem *m, struct boot_e820_entry *out, unsigned int max)
{
	unsigned int n = 0;
	bool reserved_done = false;
	int rc = 0;

	/* Regions come sorted by address; the reserved legacy range goes in
	 * between the RAM below it and the RAM above it. */
	for (unsigned int i = 0; i < m->nregions && rc == 0; i++) {
		uint64_t s = m->regions[i].gpa;
		uint64_t e = s + m->regions[i].size;
		if (s < X86_RESERVED_START)
			rc =
			    e820_add(out, max, &n, s,
			             e < X86_RESERVED_START ? e : X86_RESERVED_START, X86_E820_RAM);
		if (rc == 0 && e > X86_RESERVED_END) {
			if (!reserved_done)
				rc = e820_add(out, max, &n, X86_RESERVED_START, X86_RESERVED_END,
				              X86_E820_RESERVED);
			reserved_done = true;
			if (rc == 0)
				rc = e820_add(out, max, &n,
				              s > X86_RESERVED_END ? s : X86_RESERVED_END, e,
				              X86_E820_RAM);
		}
	}
	if (rc == 0 && !reserved_done)
		rc =
		    e820_add(out, max, &n, X86_RESERVED_START, X86_RESERVED_END, X86_E820_RESERVED);
	return rc < 0 ? rc : (int)n;
}

/* The highest address + 1 the kernel lets an initrd reach. */
static uint64_t initrd_limit(const struct guest_mem *m, const struct x86_kernel *k)
{
	uint64_t top = low_ram_end(m);
	if (k->mode == X86_BOOT_LINUX64 && (uint64_t)k->hdr.initrd_addr_max + 1 < top)
		top = (uint64_t)k->hdr.initrd_addr_max + 1;
	return top;
}

int x86_place_initrd(const struct guest_mem *m, const struct x86_kernel *k, uint64_t size,
                     uint64_t *gpa)
{
	if (size == 0)
		return -EINVAL;
	uint64_t top = initrd_limit(m, k);
	uint64_t floor = k->load_end > X86_KERNEL_LOAD ? k->load_end : X86_KERNEL_LOAD;
	floor = (floor + X86_PAGE_SIZE - 1) & ~(X86_PAGE_SIZE - 1);
	if (size > top)
		return -ENOSPC;
	uint64_t g = (top - size) & ~(X86_PAGE_SIZE - 1);
	if (g < floor)
		return -ENOSPC;
	*gpa = g;
	return 0;
}

/* The initrd must be RAM, above the boot area, clear of the kernel and
 * within what the kernel can address. */
static int check_initrd(const struct guest_mem *m, const struct x86_kernel *k,
                        const struct x86_boot_cfg *c, char *err, size_t errlen)
{
	uint64_t g = c->initrd_gpa, n = c->initrd_size;
	if (!gmem_ptr(m, g, n) || g < X86_KERNEL_LOAD || g + n > initrd_limit(m, k))
		return errf(err, errlen, -EINVAL,
		            "initrd [0x%llx, +0x%llx) is not in usable low RAM",
		            (unsigned long long)g, (unsigned long long)n);
	if (g < k->load_end && k->load_addr < g + n)
		return errf(err, errlen, -EINVAL,
		            "initrd [0x%llx, +0x%llx) overlaps the kernel [0x%llx, 0x%llx)",
		            (unsigned long long)g, (unsigned long long)n,
		            (unsigned long long)k->load_addr, (unsigned long long)k->load_end);
	return 0;
}

static int write_cmdline(const struct guest_mem *m, const struct x86_kernel *k, const char *cmdline,
                         char *err, size_t errlen)
{
	/* max counts characters, not the NUL. */
	uint64_t max = X86_PVH_CMDLINE_MAX - 1;
	if (k->mode == X86_BOOT_LINUX64)
		max = k->hdr.cmdline_size ? k->hdr.cmdline_size : X86_OLD_CMDLINE_SIZE;
	if (max > X86_CMDLINE_MAX - 1)
		max = X86_CMDLINE_MAX - 1;
	if (!cmdline)
		cmdline = "";
	size_t len = strnlen(cmdline, max + 1);
	if (len > max)
		return errf(
		    err, errlen, -E2BIG,
		    "kernel command line too long (%zu bytes or more, the kernel takes %llu)", len,
		    (unsigned long long)max);
	if (gmem_write(m, X86_CMDLINE, cmdline, len + 1) < 0)
		return errf(err, errlen, -EFAULT, "no RAM for the command line at 0x%llx",
		            (unsigned long long)X86_CMDLINE);
	return 0;
}

static int write_zero_page(const struct guest_mem *m, const struct x86_kernel *k,
                           const struct x86_boot_cfg *c, const struct boot_e820_entry *e820,
                           unsigned int n, char *err, size_t errlen)
{
	struct boot_params bp;
	memset(&bp, 0, sizeof(bp));
	bp.hdr = k->hdr;
	bp.hdr.type_of_loader = X86_LOADER_TYPE_UNDEFINED;
	bp.hdr.loadflags |= CAN_USE_HEAP;
	bp.hdr.heap_end_ptr = X86_SETUP_HEAP_END - 0x200;
	bp.hdr.cmd_line_ptr = (uint32_t)X86_CMDLINE;
	bp.ext_cmd_line_ptr = (uint32_t)(X86_CMDLINE >> 32);
	bp.hdr.ramdisk_image = (uint32_t)c->initrd_gpa;
	bp.ext_ramdisk_image = (uint32_t)(c->initrd_gpa >> 32);
	bp.hdr.ramdisk_size = (uint32_t)c->initrd_size;
	bp.ext_ramdisk_size = (uint32_t)(c->initrd_size >> 32);
	bp.hdr.setup_data = 0; /* no setup_data list, whatever the image said */
	memcpy(bp.e820_table, e820, n * sizeof(*e820));
	bp.e820_entries = (uint8_t)n;
	if (gmem_write(m, X86_ZERO_PAGE, &bp, sizeof(bp)) < 0)
		return errf(err, errlen, -EFAULT, "no RAM for the zero page");
	return 0;
}

static int write_pvh(const struct guest_mem *m, const struct x86_boot_cfg *c,
                     const struct boot_e820_entry *e820, unsigned int n, char *err, size_t errlen)
{
	struct pvh_start_info si = {
		.magic = PVH_START_MAGIC,
		.version = 1,
		.cmdline_paddr = X86_CMDLINE,
		.rsdp_paddr = 0, /* no ACPI: Linux falls back to the MP table */
		.memmap_paddr = X86_PVH_MEMMAP,
		.memmap_entries = n,
	};
	struct pvh_modlist_entry mod = { .paddr = c->initrd_gpa, .size = c->initrd_size };
	struct pvh_memmap_entry mm[X86_E820_MAX];

	if (c->initrd_size) {
		si.nr_modules = 1;
		si.modlist_paddr = X86_PVH_MODLIST;
	}
	for (unsigned int i = 0; i < n; i++)
		mm[i] = (struct pvh_memmap_entry){ .addr = e820[i].addr,
			                           .size = e820[i].size,
			                           .type = e820[i].type };
	if (gmem_write(m, X86_PVH_START_INFO, &si, sizeof(si)) < 0 ||
	    gmem_write(m, X86_PVH_MODLIST, &mod, sizeof(mod)) < 0 ||
	    gmem_write(m, X86_PVH_MEMMAP, mm, n * sizeof(mm[0])) < 0)
		return errf(err, errlen, -EFAULT, "no RAM for the PVH start_info");
	return 0;
}

int x86_setup_boot(const struct guest_mem *m, const struct x86_kernel *k,
                   const struct x86_boot_cfg *c, char *err, size_t errlen)
{
	if (!m || !k || !c || (k->mode != X86_BOOT_PVH && k->mode != X86_BOOT_LINUX64))
		return errf(err, errlen, -EINVAL, "boot setup: bad arguments");
	if (c->ncpus == 0 || c->ncpus > MPTABLE_MAX_CPUS)
		return errf(err, errlen, -EINVAL, "boot setup: %u vCPUs (1..%u supported)",
		            c->ncpus, MPTABLE_MAX_CPUS);
	int rc;
	if (c->initrd_size) {
		rc = check_initrd(m, k, c, err, errlen);
		if (rc < 0)
			return rc;
	}
	rc = write_cmdline(m, k, c->cmdline, err, errlen);
	if (rc < 0)
		return rc;

	rc = mptable_write(m, c->ncpus);
	if (rc < 0)
		return errf(err, errlen, rc, "cannot write the MP table: %s", strerror(-rc));

	struct boot_e820_entry e820[X86_E820_MAX];
	int n = x86_build_e820(m, e820, X86_E820_MAX);
	if (n < 0)
		return errf(err, errlen, n, "e820 map does not fit");

	if (k->mode == X86_BOOT_LINUX64)
		return write_zero_page(m, k, c, e820, (unsigned int)n, err, errlen);
	return write_pvh(m, c, e820, (unsigned int)n, err, errlen);
}
