/* Guest physical memory map of an x86_64 Cove guest: where the VMM puts the
 * boot structures, page tables, command line, MP table and kernel.  All of
 * it lives in the first 1 MiB, except the kernel (1 MiB up) and the initrd
 * (top of low RAM).  The MMIO hole [X86_MMIO_HOLE_START, 4 GiB) is never
 * RAM; e820 simply leaves it out.
 *
 *   0x00000 - 0x004ff  real-mode IVT and BIOS data area, left zero
 *   0x00500 - 0x0057f  GDT (X86_GDT_ADDR), IDT right after (X86_IDT_ADDR)
 *   0x06000 - 0x06fff  PVH hvm_start_info, module list, memory map
 *   0x07000 - 0x07fff  Linux zero page (struct boot_params)
 *   0x08000 - 0x08fff  boot stack, growing down from X86_BOOT_STACK
 *   0x09000 - 0x0efff  identity page tables: PML4, PDPT, four PDs
 *   0x20000 - 0x20fff  kernel command line
 *   0x9fc00 - 0xfffff  reserved in e820: MP floating pointer + config table
 *                      at the start (the last KiB of base memory is one of
 *                      the places Linux scans), legacy VGA/BIOS hole after
 *   0x100000 -         kernel image (bzImage protected-mode part, or the
 *                      PT_LOAD segments of a vmlinux at their p_paddr)
 *   top of low RAM     initrd, placed by x86_place_initrd()
 *   0xd0000000 -       virtio-mmio devices (inside the MMIO hole)
 *   0xfec00000         IOAPIC
 *   0xfee00000         LAPIC
 */
#ifndef COVE_ARCH_X86_64_LAYOUT_H
#define COVE_ARCH_X86_64_LAYOUT_H

#include "base/guest_mem.h"

#define X86_PAGE_SIZE 0x1000ULL

/* RAM runs from 0 up to the 32-bit MMIO hole and continues above 4 GiB. */
#define X86_MMIO_HOLE_START 0xc0000000ULL
#define X86_MMIO_HOLE_END   0x100000000ULL
#define X86_MMIO_HOLE       ((struct gmem_hole){ X86_MMIO_HOLE_START, X86_MMIO_HOLE_END })

/* Descriptor tables for the 64-bit (and PVH 32-bit) entry; the lead's vCPU
 * setup writes them.  128 bytes leaves room for 16 GDT entries. */
#define X86_GDT_ADDR 0x500ULL
#define X86_GDT_MAX  0x80ULL
#define X86_IDT_ADDR (X86_GDT_ADDR + X86_GDT_MAX)

/* PVH: struct hvm_start_info (56 bytes), one module entry, then the memory
 * map up to the end of the page (165 entries of 24 bytes). */
#define X86_PVH_START_INFO 0x6000ULL
#define X86_PVH_MODLIST    0x6040ULL
#define X86_PVH_MEMMAP     0x6080ULL
#define X86_PVH_END        0x7000ULL

/* Linux 64-bit boot protocol: the zero page (struct boot_params, 4 KiB). */
#define X86_ZERO_PAGE 0x7000ULL

/* Initial stack pointer for the boot vCPU: top of the page below the page
 * tables, 16-byte aligned. */
#define X86_BOOT_STACK 0x8ff0ULL

/* Identity page tables for the Linux 64-bit entry.  The range holds one PML4,
 * one PDPT and up to four page directories, so with 2 MiB pages it can
 * identity-map the whole first 4 GiB; mapping just the first 1 GiB (one PD)
 * covers the kernel, zero page and command line as the protocol requires. */
#define X86_PML4   0x9000ULL
#define X86_PDPT   0xa000ULL
#define X86_PD     0xb000ULL
#define X86_PD_MAX 4
#define X86_PT_END (X86_PD + X86_PD_MAX * X86_PAGE_SIZE)

/* Kernel command line.  X86_CMDLINE_MAX counts the terminating NUL.  A
 * bzImage states its own limit (setup_header.cmdline_size); a PVH vmlinux
 * copies into COMMAND_LINE_SIZE (2048 on x86), so that is its limit. */
#define X86_CMDLINE         0x20000ULL
#define X86_CMDLINE_MAX     4096U
#define X86_PVH_CMDLINE_MAX 2048U

/* [0x9fc00, 1 MiB) is reserved in e820: the MP table starts at 0x9fc00 and
 * may run into the legacy hole above 0xa0000 (254 CPUs need about 5 KiB). */
#define X86_EBDA_START     0x9fc00ULL
#define X86_RESERVED_START X86_EBDA_START
#define X86_RESERVED_END   0x100000ULL
#define X86_MPTABLE        X86_EBDA_START
#define X86_MPTABLE_END    X86_RESERVED_END

/* Where the kernel goes: the traditional 1 MiB for bzImage; the lowest
 * address a vmlinux PT_LOAD segment may use. */
#define X86_KERNEL_LOAD 0x100000ULL

/* Platform devices in the 32-bit MMIO hole. */
#define X86_MMIO_DEVICES_START 0xd0000000ULL
#define X86_IOAPIC_ADDR        0xfec00000ULL
#define X86_LAPIC_ADDR         0xfee00000ULL

/* GSIs the IOAPIC routes (pins 0..23); virtio-mmio devices use 5..23. */
#define X86_IOAPIC_PINS 24

#endif
