/* The arm64 Image header: fields copied out once, little-endian, then
 * decided on. */
#include "arch/arm64/image.h"

#include <errno.h>
#include <string.h>

#include "arch/arm64/layout.h"

#define FLAG_BE         (1ULL << 0)
#define FLAG_PAGE_SHIFT 1
#define FLAG_PAGE_MASK  3ULL

static uint64_t le64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

int arm64_image_parse(const void *hdr, size_t len, uint64_t file_size, uint64_t ram_size,
                      struct arm64_image *out)
{
	uint8_t h[ARM64_IMAGE_HDR_SIZE];
	if (!hdr || !out || len < sizeof(h) || file_size < sizeof(h))
		return -ENOEXEC;
	memcpy(h, hdr, sizeof(h));
	uint32_t magic =
	    (uint32_t)h[56] | (uint32_t)h[57] << 8 | (uint32_t)h[58] << 16 | (uint32_t)h[59] << 24;
	if (magic != ARM64_IMAGE_MAGIC)
		return -ENOEXEC;
	uint64_t text_offset = le64(h + 8);
	uint64_t image_size = le64(h + 16);
	uint64_t flags = le64(h + 24);
	if (flags & FLAG_BE)
		return -EINVAL;
	if (image_size == 0) {
		text_offset = ARM64_IMAGE_OLD_TEXT_OFFSET;
		flags = 0;
	}
	if (text_offset % ARM64_PAGE_SIZE || text_offset >= ARM64_2M * 512)
		return -EINVAL;
	uint64_t size = image_size > file_size ? image_size : file_size;
	uint64_t fdt = arm64_fdt_addr(ram_size);
	uint64_t load = ARM64_KERNEL_LOAD + text_offset;
	if (ram_size < 2 * ARM64_FDT_MAX || load >= fdt || size > fdt - load)
		return -EFBIG;
	static const unsigned int kib[4] = { 0, 4, 16, 64 };
	*out = (struct arm64_image){
		.text_offset = text_offset,
		.image_size = size,
		.load_addr = load,
		.end = load + size,
		.page_kib = kib[(flags >> FLAG_PAGE_SHIFT) & FLAG_PAGE_MASK],
	};
	return 0;
}
