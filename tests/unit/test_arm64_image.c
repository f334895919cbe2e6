/* Unit tests: the arm64 Image header (vmm/arch/arm64/image.c): where an
 * Image goes and which headers are refused. */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "arch/arm64/image.h"
#include "arch/arm64/layout.h"
#include "unit.h"

#define MiB (1ULL << 20)

static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* A header as Linux writes it: "MZ" code (an EFI stub), text_offset,
 * image_size, flags and the magic at 56. */
static void make_hdr(uint8_t h[ARM64_IMAGE_HDR_SIZE], uint64_t text_offset, uint64_t image_size,
                     uint64_t flags)
{
	memset(h, 0, ARM64_IMAGE_HDR_SIZE);
	h[0] = 'M';
	h[1] = 'Z';
	put64(h + 8, text_offset);
	put64(h + 16, image_size);
	put64(h + 24, flags);
	memcpy(h + 56, "ARM\x64", 4);
}

/* Debian's 6.12 arm64 kernel says: text_offset 0, image_size 0x2b20000,
 * flags 0xa (4 KiB pages, placed anywhere); its file is 44158912 bytes. */
START_TEST(test_debian_like)
{
	uint8_t h[ARM64_IMAGE_HDR_SIZE];
	make_hdr(h, 0, 0x2b20000, 0xa);
	struct arm64_image im;
	ck_assert_int_eq(arm64_image_parse(h, sizeof(h), 44158912, 512 * MiB, &im), 0);
	ck_assert_uint_eq(im.text_offset, 0);
	ck_assert_uint_eq(im.load_addr, ARM64_RAM_BASE);
	ck_assert_uint_eq(im.image_size, 0x2b20000);
	ck_assert_uint_eq(im.end, ARM64_RAM_BASE + 0x2b20000);
	ck_assert_uint_eq(im.page_kib, 4);
	/* The initrd fits between the kernel's end and the device tree. */
	uint64_t initrd = arm64_initrd_addr(512 * MiB, im.end, 20 * MiB);
	ck_assert_uint_ge(initrd, im.end);
}
END_TEST

/* A file longer than image_size (debug sections) takes its own length; a
 * text_offset moves the load address; the page size flags are read. */
START_TEST(test_sizes_offsets_pages)
{
	uint8_t h[ARM64_IMAGE_HDR_SIZE];
	struct arm64_image im;
	make_hdr(h, 0x200000, 8 * MiB, 3 << 1);
	ck_assert_int_eq(arm64_image_parse(h, sizeof(h), 9 * MiB, 256 * MiB, &im), 0);
	ck_assert_uint_eq(im.load_addr, ARM64_RAM_BASE + 0x200000);
	ck_assert_uint_eq(im.image_size, 9 * MiB);
	ck_assert_uint_eq(im.end, ARM64_RAM_BASE + 11 * MiB);
	ck_assert_uint_eq(im.page_kib, 64);
	make_hdr(h, 0, 8 * MiB, 2 << 1);
	ck_assert_int_eq(arm64_image_parse(h, sizeof(h), 1 * MiB, 256 * MiB, &im), 0);
	ck_assert_uint_eq(im.page_kib, 16);
	ck_assert_uint_eq(im.image_size, 8 * MiB);
}
END_TEST

/* Before 3.17: image_size 0 means text_offset 0x80000 whatever the field
 * says, and the file's size. */
START_TEST(test_old_kernel)
{
	uint8_t h[ARM64_IMAGE_HDR_SIZE];
	struct arm64_image im;
	make_hdr(h, 0x1234567, 0, 0xe);
	ck_assert_int_eq(arm64_image_parse(h, sizeof(h), 5 * MiB, 128 * MiB, &im), 0);
	ck_assert_uint_eq(im.text_offset, 0x80000);
	ck_assert_uint_eq(im.load_addr, ARM64_RAM_BASE + 0x80000);
	ck_assert_uint_eq(im.image_size, 5 * MiB);
	ck_assert_uint_eq(im.page_kib, 0);
}
END_TEST

START_TEST(test_refused)
{
	uint8_t h[ARM64_IMAGE_HDR_SIZE];
	struct arm64_image im;
	make_hdr(h, 0, 8 * MiB, 0);
	/* Too short, in the buffer or the file. */
	ck_assert_int_eq(arm64_image_parse(h, sizeof(h) - 1, 8 * MiB, 256 * MiB, &im), -ENOEXEC);
	ck_assert_int_eq(arm64_image_parse(h, sizeof(h), 63, 256 * MiB, &im), -ENOEXEC);
	ck_assert_int_eq(arm64_image_parse(NULL, sizeof(h), 8 * MiB, 256 * MiB, &im), -ENOEXEC);
	/* No magic: an x86 bzImage, or a gzip-compressed Image. */
	h[59] = 0;
	ck_assert_int_eq(arm64_image_parse(h, sizeof(h), 8 * MiB, 256 * MiB, &im), -ENOEXEC);
	uint8_t gz[ARM64_IMAGE_HDR_SIZE] = { 0x1f, 0x8b, 8 };
	ck_assert_int_eq(arm64_image_parse(gz, sizeof(gz), 8 * MiB, 256 * MiB, &im), -ENOEXEC);
	/* Big-endian kernels, and a text_offset off a page or past 1 GiB. */
	make_hdr(h, 0, 8 * MiB, 1);
	ck_assert_int_eq(arm64_image_parse(h, sizeof(h), 8 * MiB, 256 * MiB, &im), -EINVAL);
	make_hdr(h, 0x1001, 8 * MiB, 0);
	ck_assert_int_eq(arm64_image_parse(h, sizeof(h), 8 * MiB, 256 * MiB, &im), -EINVAL);
	make_hdr(h, 1ULL << 30, 8 * MiB, 0);
	ck_assert_int_eq(arm64_image_parse(h, sizeof(h), 8 * MiB, 256 * MiB, &im), -EINVAL);
	/* Too big for RAM below the device tree, by a byte; a huge size
	 * does not wrap. */
	make_hdr(h, 0, 254 * MiB + 1, 0);
	ck_assert_int_eq(arm64_image_parse(h, sizeof(h), 8 * MiB, 256 * MiB, &im), -EFBIG);
	make_hdr(h, 0, 254 * MiB, 0);
	ck_assert_int_eq(arm64_image_parse(h, sizeof(h), 8 * MiB, 256 * MiB, &im), 0);
	make_hdr(h, 0, UINT64_MAX, 0);
	ck_assert_int_eq(arm64_image_parse(h, sizeof(h), 8 * MiB, 256 * MiB, &im), -EFBIG);
	make_hdr(h, 0, 1 * MiB, 0);
	ck_assert_int_eq(arm64_image_parse(h, sizeof(h), 1 * MiB, 2 * MiB, &im), -EFBIG);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("arm64_image");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_debian_like);
	tcase_add_test(tc, test_sizes_offsets_pages);
	tcase_add_test(tc, test_old_kernel);
	tcase_add_test(tc, test_refused);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN()
