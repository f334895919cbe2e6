/* The device tree of an arm64 Cove guest, built with libfdt (issue 35;
 * docs/arm64.md lists its nodes).  Portable C: built and unit-tested on x86
 * too (tests/unit/test_arm64_fdt.c).  Not wired into cove-vmm yet. */
#ifndef COVE_ARCH_ARM64_FDT_H
#define COVE_ARCH_ARM64_FDT_H

#include <stddef.h>
#include <stdint.h>

/* The GIC's phandle: the root's interrupt-parent. */
#define ARM64_FDT_PHANDLE_GIC 1U
/* The most bytes of /chosen/rng-seed (Linux reads any length; 64 is
 * plenty for its CRNG and keeps the tree small). */
#define ARM64_FDT_RNG_SEED_MAX 64U
/* MPIDR_EL1's affinity fields (Aff3 at 39:32, Aff2..Aff0 at 23:0), the
 * only bits a cpu node's reg may hold. */
#define ARM64_MPIDR_AFF_MASK 0xff00ffffffULL
/* Most RAM the tree may describe: what a 40-bit IPA space (KVM's default)
 * holds above ARM64_RAM_BASE. */
#define ARM64_RAM_MAX ((1ULL << 40) - 0x80000000ULL)

enum arm64_gic_version {
	ARM64_GIC_V2 = 2,
	ARM64_GIC_V3 = 3,
};

/* One virtio-mmio device: its 4 KiB window and its SPI (interrupt id - 32). */
struct arm64_fdt_virtio {
	uint64_t base;
	uint32_t spi;
};

struct arm64_fdt_config {
	uint64_t ram_size;     /* bytes at ARM64_RAM_BASE; 2 MiB multiple */
	unsigned int ncpus;    /* 1..ARM64_GICV3_MAX_CPUS (GICv2: ..8) */
	const uint64_t *mpidr; /* ncpus MPIDR_EL1 values, as KVM reports them */
	enum arm64_gic_version gic;
	const struct arm64_fdt_virtio *virtio;
	unsigned int nvirtio; /* up to ARM64_VIRTIO_SLOTS */
	const char *bootargs; /* NULL: none; under ARM64_CMDLINE_MAX bytes */
	const uint8_t *rng_seed;
	size_t rng_seed_len;   /* 0: no rng-seed; at most ARM64_FDT_RNG_SEED_MAX */
	uint64_t initrd_start; /* guest physical; with initrd_size 0, no initrd */
	uint64_t initrd_size;
};

/**
 * arm64_fdt_build() - writes the guest's flattened device tree into @buf
 * @c:    what the guest has; read only, copied into the tree
 * @buf:  where the tree goes (ARM64_FDT_MAX bytes is always enough)
 * @size: bytes of @buf
 *
 * The tree has: the root (compatible "linux,dummy-virt", 2 address and 2
 * size cells, the GIC as interrupt-parent), /chosen (bootargs, stdout-path
 * to the UART, rng-seed, linux,initrd-start/end), /aliases (serial0),
 * /memory@80000000, /cpus with a cpu@MPIDR per vCPU (enable-method "psci"),
 * /psci (PSCI 0.2, hvc), the GIC (/intc@8000000: "arm,gic-v3" with its
 * distributor and the redistributors of ncpus vCPUs, or
 * "arm,cortex-a15-gic"), /timer (the architected timer's four PPIs),
 * /uart@9000000 (ns16550a) and a /virtio_mmio@ADDR per device, edge-rising
 * on its SPI.  fdt_totalsize(@buf) is then its size.
 *
 * Return: 0; -EINVAL when @c is out of its ranges above (two devices on
 * one window or SPI, an SPI that is the UART's, a device outside the
 * virtio window, an initrd outside RAM, an MPIDR with other bits or twice);
 * -ENOSPC when @size is too small.
 */
int arm64_fdt_build(const struct arm64_fdt_config *c, void *buf, size_t size)
    __attribute__((warn_unused_result));

#endif
