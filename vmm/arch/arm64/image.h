/* The arm64 Linux Image header (Documentation/arch/arm64/booting.rst) and
 * where the Image goes in an arm64 Cove guest (issue 35; docs/arm64.md).
 * Portable C, unit-tested on x86 (tests/unit/test_arm64_image.c).  Not wired
 * into cove-vmm yet. */
#ifndef COVE_ARCH_ARM64_IMAGE_H
#define COVE_ARCH_ARM64_IMAGE_H

#include <stddef.h>
#include <stdint.h>

/* The header's size and its magic, "ARM\x64" at offset 56. */
#define ARM64_IMAGE_HDR_SIZE 64U
#define ARM64_IMAGE_MAGIC    0x644d5241U
/* text_offset of kernels before 3.17, whose image_size is 0. */
#define ARM64_IMAGE_OLD_TEXT_OFFSET 0x80000ULL

struct arm64_image {
	uint64_t text_offset;  /* from the 2 MiB aligned base */
	uint64_t image_size;   /* bytes from the load address, BSS included */
	uint64_t load_addr;    /* guest physical: ARM64_KERNEL_LOAD + text_offset */
	uint64_t end;          /* first byte past the kernel: arm64_initrd_addr()'s floor */
	unsigned int page_kib; /* the kernel's page size: 4, 16, 64, or 0 unsaid */
};

/**
 * arm64_image_parse() - reads an Image's header and places it
 * @hdr:       the file's first bytes (hostile input: only @len are read)
 * @len:       bytes at @hdr
 * @file_size: the whole file's size
 * @ram_size:  bytes of guest RAM from ARM64_RAM_BASE
 * @out:       filled on success
 *
 * The Image goes at ARM64_KERNEL_LOAD + text_offset and takes image_size
 * bytes from there (at least the file); a kernel from before 3.17
 * (image_size 0) takes text_offset 0x80000 and the file's size.  The
 * kernel, the device tree's 2 MiB (arm64_fdt_addr()) and room for nothing
 * else must fit in RAM.
 *
 * Return: 0; -ENOEXEC when it is not an arm64 Image (too short, no magic;
 * a gzip-compressed one says so on the caller's side by its 1f 8b bytes);
 * -EINVAL for a big-endian kernel or a text_offset not a multiple of 4 KiB;
 * -EFBIG when it does not fit below the device tree.
 */
int arm64_image_parse(const void *hdr, size_t len, uint64_t file_size, uint64_t ram_size,
                      struct arm64_image *out) __attribute__((warn_unused_result));

#endif
