/* Guest physical memory map of an arm64 Cove guest (issue 35; docs/arm64.md).
 * Not wired into cove-vmm yet: the device tree builder (fdt.h) and its unit
 * test use it.  Devices live in the first 2 GiB, RAM starts at 2 GiB (as in
 * Firecracker and kvmtool), so a 32-bit device address never meets RAM.
 *
 *   0x00000000 - 0x07ffffff  nothing: an access there is a guest bug
 *   0x08000000 - 0x0800ffff  GIC distributor (GICv3: 64 KiB; GICv2: 4 KiB)
 *   0x08010000 - 0x08011fff  GICv2 CPU interface (GICv2 only)
 *   0x080a0000 - 0x08ffffff  GICv3 redistributors, 128 KiB a vCPU (up to 123)
 *   0x09000000 - 0x09000fff  console UART, ns16550a (the 8250 of x86)
 *   0x0a000000 - 0x0a02ffff  virtio-mmio devices, 4 KiB each (48 slots)
 *   0x80000000 -             RAM: the kernel Image at its start (+ text_offset)
 *   top of RAM - 2 MiB       device tree (ARM64_FDT_MAX), 2 MiB aligned
 *   below the device tree    initrd, placed by arm64_initrd_addr()
 */
#ifndef COVE_ARCH_ARM64_LAYOUT_H
#define COVE_ARCH_ARM64_LAYOUT_H

#include <stdint.h>

#define ARM64_PAGE_SIZE 0x1000ULL
#define ARM64_2M        0x200000ULL

/* GIC.  The sizes are the KVM ABI's (KVM_VGIC_V3_DIST_SIZE and friends in
 * arm64's asm/kvm.h), restated so an x86 build can use them. */
#define ARM64_GIC_DIST_BASE     0x08000000ULL
#define ARM64_GICV3_DIST_SIZE   0x10000ULL
#define ARM64_GICV2_DIST_SIZE   0x1000ULL
#define ARM64_GICV2_CPU_BASE    0x08010000ULL
#define ARM64_GICV2_CPU_SIZE    0x2000ULL
#define ARM64_GICV3_REDIST_BASE 0x080a0000ULL
#define ARM64_GICV3_REDIST_SIZE 0x20000ULL /* per vCPU: RD and SGI frames */
#define ARM64_GICV3_REDIST_END  0x09000000ULL
#define ARM64_GICV3_MAX_CPUS \
	((ARM64_GICV3_REDIST_END - ARM64_GICV3_REDIST_BASE) / ARM64_GICV3_REDIST_SIZE)
#define ARM64_GICV2_MAX_CPUS 8
/* Interrupt ids: SPIs (shared, device interrupts) start at 32; the device
 * tree, irqfd's GSI and KVM_IRQ_LINE name an SPI by its number from there.
 * Cove uses SPIs 0..63 (ids 32..95): the VMM will set the vGIC's
 * KVM_DEV_ARM_VGIC_GRP_NR_IRQS to ARM64_SPI_BASE + ARM64_SPI_COUNT. */
#define ARM64_SPI_BASE  32U
#define ARM64_SPI_COUNT 64U

/* The architected timer's PPIs (interrupt id - 16): secure physical,
 * non-secure physical, virtual, hypervisor; the order the binding wants. */
#define ARM64_TIMER_PPI_SEC_PHYS 13U
#define ARM64_TIMER_PPI_PHYS     14U
#define ARM64_TIMER_PPI_VIRT     11U
#define ARM64_TIMER_PPI_HYP      10U

/* The console: an ns16550a, registers one byte apart, like x86's 8250. */
#define ARM64_UART_BASE  0x09000000ULL
#define ARM64_UART_SIZE  0x1000ULL
#define ARM64_UART_SPI   1U
#define ARM64_UART_CLOCK 1843200U

/* virtio-mmio slots: slot n at ARM64_VIRTIO_BASE + n * 4 KiB with SPI
 * ARM64_VIRTIO_SPI_FIRST + n. */
#define ARM64_VIRTIO_BASE      0x0a000000ULL
#define ARM64_VIRTIO_SLOT_SIZE 0x1000ULL
#define ARM64_VIRTIO_SLOTS     (ARM64_SPI_COUNT - ARM64_VIRTIO_SPI_FIRST)
#define ARM64_VIRTIO_SPI_FIRST 16U

/* RAM, and where the kernel Image goes: the arm64 boot protocol wants it
 * 2 MiB aligned at text_offset from there (0 for Linux 3.17 and later). */
#define ARM64_RAM_BASE    0x80000000ULL
#define ARM64_KERNEL_LOAD ARM64_RAM_BASE

/* The device tree: at most 2 MiB (the boot protocol's limit), 8-byte
 * aligned, in a 2 MiB block of its own so the kernel can map it with one
 * block entry. */
#define ARM64_FDT_MAX ARM64_2M

/* Linux's COMMAND_LINE_SIZE on arm64, the NUL counted. */
#define ARM64_CMDLINE_MAX 2048U

/* arm64_fdt_addr() - where the device tree goes: the last 2 MiB of RAM.
 * @ram_size: bytes of RAM from ARM64_RAM_BASE, at least 2 * ARM64_FDT_MAX. */
static inline uint64_t arm64_fdt_addr(uint64_t ram_size)
{
	return (ARM64_RAM_BASE + ram_size - ARM64_FDT_MAX) & ~(ARM64_2M - 1);
}

/* arm64_initrd_addr() - where an initrd of @size bytes goes: right below
 * the device tree, page aligned; 0 when it does not fit above @kernel_end
 * (the first byte past the kernel Image's image_size). */
static inline uint64_t arm64_initrd_addr(uint64_t ram_size, uint64_t kernel_end, uint64_t size)
{
	uint64_t top = arm64_fdt_addr(ram_size);
	if (size > top || top - size < kernel_end)
		return 0;
	return (top - size) & ~(ARM64_PAGE_SIZE - 1);
}

/* arm64_kvm_mpidr() - the MPIDR_EL1 affinity KVM gives vCPU @index (reset
 * value, kvm's reset_mpidr(): Aff0 = index bits 0-3, Aff1 bits 4-11, Aff2
 * bits 12-19).  The VMM should read MPIDR_EL1 back with KVM_GET_ONE_REG;
 * this is what it will find. */
static inline uint64_t arm64_kvm_mpidr(unsigned int index)
{
	return (uint64_t)(index & 0xf) | (uint64_t)((index >> 4) & 0xff) << 8 |
	       (uint64_t)((index >> 12) & 0xff) << 16;
}

#endif
