/* Kernel image loader: puts an x86_64 Linux kernel into guest RAM.
 *
 * Two formats are recognised:
 *   - an ELF64 vmlinux with a Xen PVH entry note (CONFIG_PVH), booted in
 *     32-bit protected mode through the PVH start_info protocol;
 *   - a bzImage (boot protocol 2.12 or later, XLF_KERNEL_64), booted through
 *     its 64-bit entry with a zero page.
 * The image is untrusted input: every offset and size in it is checked
 * against the file length and against guest RAM before use. */
#ifndef COVE_ARCH_X86_64_LOADER_H
#define COVE_ARCH_X86_64_LOADER_H

#include <asm/bootparam.h>
#include <stddef.h>
#include <stdint.h>

#include "base/guest_mem.h"

enum x86_boot_mode {
	X86_BOOT_PVH = 1,     /* 32-bit protected mode, %ebx = X86_PVH_START_INFO */
	X86_BOOT_LINUX64 = 2, /* 64-bit long mode, %rsi = X86_ZERO_PAGE */
};

struct x86_kernel {
	enum x86_boot_mode mode;
	uint64_t entry;     /* guest physical address of the first instruction */
	uint64_t load_addr; /* lowest guest byte the kernel occupies */
	uint64_t load_end;  /* one past the highest guest byte the kernel may use,
	                     * including a bzImage's decompression space */
	/* X86_BOOT_LINUX64 only: the setup header as found in the image (the
	 * bytes past its real end are zero), copied into the zero page. */
	struct setup_header hdr;
};

/* Loads the kernel file img[0, len) into guest RAM and describes it in *k.
 * m must be mapped (gmem_create()).  Call before x86_place_initrd() and
 * x86_setup_boot().  Returns 0, or:
 *   -ENOEXEC  not a kernel this loader can boot (bad magic, truncated or
 *             inconsistent headers, no PVH note, protocol too old);
 *   -EFBIG    a segment or the kernel's working space does not fit in RAM;
 *   -EINVAL   bad arguments.
 * On error a one-line reason is written to err (errlen bytes, may be 0) and
 * guest memory may have been partly written. */
int x86_load_kernel(const struct guest_mem *m, const uint8_t *img, size_t len, struct x86_kernel *k,
                    char *err, size_t errlen) __attribute__((warn_unused_result));

#endif
