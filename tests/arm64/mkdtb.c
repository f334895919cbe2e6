/* mkdtb: writes the device tree of a boot_smoke guest (tests/arm64) with
 * vmm/arch/arm64/fdt.c.  A host tool: built natively with libfdt by `make
 * ARCH=arm64`.  Usage: mkdtb OUT RAM_MIB NCPUS BOOTARGS.  The MPIDRs are
 * KVM's reset values (arm64_kvm_mpidr), which vcpu_smoke checks KVM gives.
 * Exit status 0, or 1 with one line saying why. */
#include <errno.h>
#include <libfdt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch/arm64/fdt.h"
#include "arch/arm64/layout.h"

static uint8_t tree[ARM64_FDT_MAX];

int main(int argc, char **argv)
{
	if (argc != 5) {
		fprintf(stderr, "usage: mkdtb OUT RAM_MIB NCPUS BOOTARGS\n");
		return 1;
	}
	char *end;
	unsigned long ram_mib = strtoul(argv[2], &end, 10);
	unsigned long ncpus = strtoul(argv[3], &end, 10);
	if (ram_mib == 0 || ram_mib > 65536 || ncpus == 0 || ncpus > 8) {
		fprintf(stderr, "mkdtb: RAM_MIB must be 1..65536 and NCPUS 1..8\n");
		return 1;
	}
	uint64_t mpidr[8];
	for (unsigned int i = 0; i < ncpus; i++)
		mpidr[i] = arm64_kvm_mpidr(i);
	static const uint8_t seed[32] = { 0x43, 0x6f, 0x76, 0x65 };
	struct arm64_fdt_config c = {
		.ram_size = (uint64_t)ram_mib << 20,
		.ncpus = (unsigned int)ncpus,
		.mpidr = mpidr,
		.gic = ARM64_GIC_V3,
		.bootargs = argv[4],
		.rng_seed = seed,
		.rng_seed_len = sizeof(seed),
	};
	int err = arm64_fdt_build(&c, tree, sizeof(tree));
	if (err) {
		fprintf(stderr, "mkdtb: arm64_fdt_build: %s\n", strerror(-err));
		return 1;
	}
	FILE *f = fopen(argv[1], "wb");
	if (!f || fwrite(tree, 1, fdt_totalsize(tree), f) != fdt_totalsize(tree) || fclose(f)) {
		fprintf(stderr, "mkdtb: cannot write %s\n", argv[1]);
		return 1;
	}
	return 0;
}
