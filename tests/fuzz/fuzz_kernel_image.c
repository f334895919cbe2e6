/* Fuzz target: x86_load_kernel() over arbitrary bytes into 4 MiB of guest RAM,
 * then initrd placement and boot setup with whatever the image claimed. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "arch/x86_64/boot.h"
#include "arch/x86_64/layout.h"
#include "arch/x86_64/loader.h"
#include "base/guest_mem.h"

#define FUZZ_RAM (4u << 20)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct guest_mem m;
	static int ready;
	if (!ready) {
		if (gmem_create(&m, FUZZ_RAM, X86_MMIO_HOLE) < 0)
			abort();
		ready = 1;
	}

	struct x86_kernel k;
	char err[128];
	int rc = x86_load_kernel(&m, data, size, &k, err, sizeof(err));
	if (rc < 0) {
		if (!memchr(err, 0, sizeof(err)) || err[0] == 0)
			abort(); /* every failure explains itself */
		return 0;
	}
	if (k.load_end < k.load_addr || !gmem_ptr(&m, k.entry, 1))
		abort();

	struct x86_boot_cfg c = { .cmdline = "console=ttyS0 reboot=k panic=1", .ncpus = 2 };
	uint64_t gpa;
	if (x86_place_initrd(&m, &k, 64 * 1024, &gpa) == 0) {
		if (gpa < k.load_end || gpa + 64 * 1024 > FUZZ_RAM)
			abort();
		c.initrd_gpa = gpa;
		c.initrd_size = 64 * 1024;
	}
	(void)!x86_setup_boot(&m, &k, &c, err, sizeof(err));
	return 0;
}
