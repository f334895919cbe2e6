/* mkdtb: writes the device tree of a boot_smoke guest (tests/arm64) with
 * vmm/arch/arm64/fdt.c.  A host tool: built natively with libfdt by `make
 * ARCH=arm64`.  Usage: mkdtb OUT RAM_MIB NCPUS BOOTARGS [IMAGE INITRD].
 * The MPIDRs are KVM's reset values (arm64_kvm_mpidr), which vcpu_smoke
 * checks KVM gives; two virtio-mmio nodes (slots 0 and 1) name devices
 * boot_smoke does not have.  With IMAGE and INITRD, the initrd goes where
 * arm64_initrd_addr() puts it above that Image, as boot_smoke loads it.
 * Exit status 0, or 1 with one line saying why. */
#include <errno.h>
#include <libfdt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "arch/arm64/fdt.h"
#include "arch/arm64/image.h"
#include "arch/arm64/layout.h"

static uint8_t tree[ARM64_FDT_MAX];

int main(int argc, char **argv)
{
	if (argc != 5 && argc != 7) {
		fprintf(stderr, "usage: mkdtb OUT RAM_MIB NCPUS BOOTARGS [IMAGE INITRD]\n");
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
	static const struct arm64_fdt_virtio devs[2] = {
		{ ARM64_VIRTIO_BASE, ARM64_VIRTIO_SPI_FIRST },
		{ ARM64_VIRTIO_BASE + ARM64_VIRTIO_SLOT_SIZE, ARM64_VIRTIO_SPI_FIRST + 1 },
	};
	struct arm64_fdt_config c = {
		.ram_size = (uint64_t)ram_mib << 20,
		.ncpus = (unsigned int)ncpus,
		.mpidr = mpidr,
		.gic = ARM64_GIC_V3,
		.bootargs = argv[4],
		.rng_seed = seed,
		.rng_seed_len = sizeof(seed),
		.virtio = devs,
		.nvirtio = 2,
	};
	if (argc == 7) {
		uint8_t hdr[ARM64_IMAGE_HDR_SIZE];
		struct stat ist, rst;
		FILE *img = fopen(argv[5], "rb");
		if (!img || fread(hdr, 1, sizeof(hdr), img) != sizeof(hdr) ||
		    fstat(fileno(img), &ist) || stat(argv[6], &rst)) {
			fprintf(stderr, "mkdtb: cannot read %s or %s\n", argv[5], argv[6]);
			return 1;
		}
		fclose(img);
		struct arm64_image im;
		int e = arm64_image_parse(hdr, sizeof(hdr), (uint64_t)ist.st_size, c.ram_size, &im);
		c.initrd_size = (uint64_t)rst.st_size;
		c.initrd_start = e ? 0 : arm64_initrd_addr(c.ram_size, im.end, c.initrd_size);
		if (!c.initrd_start) {
			fprintf(stderr, "mkdtb: %s and %s do not fit in %lu MiB\n", argv[5],
			        argv[6], ram_mib);
			return 1;
		}
	}
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
