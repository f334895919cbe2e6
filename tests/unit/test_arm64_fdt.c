/* Unit tests: the arm64 guest's device tree (vmm/arch/arm64/fdt.c) and
 * memory map helpers (layout.h).  Each tree is read back with libfdt, node
 * by node, and every node it holds must be one the test expects. */
#include <errno.h>
#include <libfdt.h>
#include <stdint.h>
#include <string.h>

#include "arch/arm64/fdt.h"
#include "arch/arm64/layout.h"
#include "unit.h"

#define MiB (1ULL << 20)

static uint8_t tree[ARM64_FDT_MAX];

static const uint8_t seed[32] = { 1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13, 14, 15, 16,
	                          17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32 };

static const struct arm64_fdt_virtio three_devs[3] = {
	{ ARM64_VIRTIO_BASE, ARM64_VIRTIO_SPI_FIRST },
	{ ARM64_VIRTIO_BASE + ARM64_VIRTIO_SLOT_SIZE, ARM64_VIRTIO_SPI_FIRST + 1 },
	{ ARM64_VIRTIO_BASE + 5 * ARM64_VIRTIO_SLOT_SIZE, ARM64_VIRTIO_SPI_FIRST + 5 },
};

static uint64_t mpidrs[ARM64_GICV3_MAX_CPUS];

static struct arm64_fdt_config base_config(unsigned int ncpus, enum arm64_gic_version gic)
{
	for (unsigned int i = 0; i < ARM64_GICV3_MAX_CPUS; i++)
		mpidrs[i] = arm64_kvm_mpidr(i);
	return (struct arm64_fdt_config){
		.ram_size = 512 * MiB,
		.ncpus = ncpus,
		.mpidr = mpidrs,
		.gic = gic,
		.virtio = three_devs,
		.nvirtio = 3,
		.bootargs = "console=ttyS0 reboot=k panic=1",
		.rng_seed = seed,
		.rng_seed_len = sizeof(seed),
		.initrd_start = ARM64_RAM_BASE + 256 * MiB,
		.initrd_size = 3 * MiB + 123,
	};
}

/* ---- reading back --------------------------------------------------------- */

static int node(const char *path)
{
	int off = fdt_path_offset(tree, path);
	ck_assert_msg(off >= 0, "node %s: %s", path, fdt_strerror(off));
	return off;
}

static const void *getprop(const char *path, const char *name, int want_len)
{
	int len = -1;
	const void *p = fdt_getprop(tree, node(path), name, &len);
	ck_assert_msg(p != NULL, "%s: no property %s", path, name);
	if (want_len >= 0)
		ck_assert_msg(len == want_len, "%s/%s: length %d, not %d", path, name, len,
		              want_len);
	return p;
}

static void assert_str(const char *path, const char *name, const char *want)
{
	const char *s = getprop(path, name, (int)strlen(want) + 1);
	ck_assert_str_eq(s, want);
}

static uint32_t cell(const char *path, const char *name, unsigned int i, int ncells)
{
	const fdt32_t *p = getprop(path, name, ncells * 4);
	return fdt32_to_cpu(p[i]);
}

static uint64_t u64_at(const char *path, const char *name, unsigned int i, int n)
{
	const fdt64_t *p = getprop(path, name, n * 8);
	fdt64_t v;
	memcpy(&v, p + i, sizeof(v));
	return fdt64_to_cpu(v);
}

static void assert_absent(const char *path, const char *name)
{
	ck_assert_msg(fdt_getprop(tree, node(path), name, NULL) == NULL, "%s has %s", path, name);
}

/* Every node of the tree, by full path, must be in @want (NULL-ended), and
 * every one of @want in the tree. */
static void assert_nodes(const char *const *want)
{
	unsigned int nwant = 0, seen = 0;
	while (want[nwant])
		nwant++;
	for (int off = 0, depth = 0; off >= 0 && depth >= 0;
	     off = fdt_next_node(tree, off, &depth)) {
		char path[128];
		ck_assert_int_eq(fdt_get_path(tree, off, path, sizeof(path)), 0);
		unsigned int i = 0;
		while (want[i] && strcmp(want[i], path) != 0)
			i++;
		ck_assert_msg(want[i] != NULL, "unexpected node %s", path);
		seen++;
	}
	ck_assert_uint_eq(seen, nwant);
}

static void assert_irq(const char *path, uint32_t type, uint32_t num, uint32_t flags)
{
	ck_assert_uint_eq(cell(path, "interrupts", 0, 3), type);
	ck_assert_uint_eq(cell(path, "interrupts", 1, 3), num);
	ck_assert_uint_eq(cell(path, "interrupts", 2, 3), flags);
}

/* The nodes both GIC versions share; @timer_flags differ. */
static void assert_common(const struct arm64_fdt_config *c, uint32_t timer_flags)
{
	ck_assert_int_eq(fdt_check_header(tree), 0);
	ck_assert_uint_le(fdt_totalsize(tree), ARM64_FDT_MAX);
	ck_assert_int_eq(fdt_num_mem_rsv(tree), 0);

	/* The root, its interrupt-parent the GIC. */
	assert_str("/", "compatible", "linux,dummy-virt");
	ck_assert_uint_eq(cell("/", "#address-cells", 0, 1), 2);
	ck_assert_uint_eq(cell("/", "#size-cells", 0, 1), 2);
	uint32_t parent = cell("/", "interrupt-parent", 0, 1);
	ck_assert_uint_eq(parent, ARM64_FDT_PHANDLE_GIC);
	ck_assert_int_eq(fdt_node_offset_by_phandle(tree, parent), node("/intc@8000000"));

	/* /chosen: stdout-path names the UART node, which exists. */
	if (c->bootargs)
		assert_str("/chosen", "bootargs", c->bootargs);
	assert_str("/chosen", "stdout-path", "/uart@9000000");
	node(getprop("/chosen", "stdout-path", -1));
	assert_str("/aliases", "serial0", "/uart@9000000");

	assert_str("/memory@80000000", "device_type", "memory");
	ck_assert_uint_eq(u64_at("/memory@80000000", "reg", 0, 2), ARM64_RAM_BASE);
	ck_assert_uint_eq(u64_at("/memory@80000000", "reg", 1, 2), c->ram_size);

	/* One cpu node per vCPU, reg its MPIDR, brought up through PSCI. */
	ck_assert_uint_eq(cell("/cpus", "#address-cells", 0, 1), 2);
	ck_assert_uint_eq(cell("/cpus", "#size-cells", 0, 1), 0);
	unsigned int ncpu = 0;
	int sub;
	fdt_for_each_subnode(sub, tree, node("/cpus"))
	{
		char path[64];
		ck_assert_int_eq(fdt_get_path(tree, sub, path, sizeof(path)), 0);
		ck_assert_uint_lt(ncpu, c->ncpus);
		char want[64];
		snprintf(want, sizeof(want), "/cpus/cpu@%llx", (unsigned long long)c->mpidr[ncpu]);
		ck_assert_str_eq(path, want);
		ck_assert_uint_eq(u64_at(path, "reg", 0, 1), c->mpidr[ncpu]);
		assert_str(path, "device_type", "cpu");
		assert_str(path, "compatible", "arm,arm-v8");
		assert_str(path, "enable-method", "psci");
		ncpu++;
	}
	ck_assert_uint_eq(ncpu, c->ncpus);

	assert_str("/psci", "compatible", "arm,psci-0.2");
	assert_str("/psci", "method", "hvc");

	ck_assert_uint_eq(cell("/intc@8000000", "#interrupt-cells", 0, 1), 3);
	ck_assert_uint_eq(cell("/intc@8000000", "#address-cells", 0, 1), 0);
	getprop("/intc@8000000", "interrupt-controller", 0);
	ck_assert_uint_eq(cell("/intc@8000000", "phandle", 0, 1), ARM64_FDT_PHANDLE_GIC);

	/* The architected timer: four PPIs in the binding's order. */
	assert_str("/timer", "compatible", "arm,armv8-timer");
	getprop("/timer", "always-on", 0);
	static const uint32_t ppis[4] = { 13, 14, 11, 10 };
	for (unsigned int i = 0; i < 4; i++) {
		ck_assert_uint_eq(cell("/timer", "interrupts", 3 * i, 12), 1);
		ck_assert_uint_eq(cell("/timer", "interrupts", 3 * i + 1, 12), ppis[i]);
		ck_assert_uint_eq(cell("/timer", "interrupts", 3 * i + 2, 12), timer_flags);
	}

	assert_str("/uart@9000000", "compatible", "ns16550a");
	ck_assert_uint_eq(u64_at("/uart@9000000", "reg", 0, 2), ARM64_UART_BASE);
	ck_assert_uint_eq(u64_at("/uart@9000000", "reg", 1, 2), ARM64_UART_SIZE);
	assert_irq("/uart@9000000", 0, ARM64_UART_SPI, 4);
	ck_assert_uint_eq(cell("/uart@9000000", "clock-frequency", 0, 1), 1843200);

	/* A node per virtio device: its window, its SPI, edge rising. */
	for (unsigned int i = 0; i < c->nvirtio; i++) {
		char path[64];
		snprintf(path, sizeof(path), "/virtio_mmio@%llx",
		         (unsigned long long)c->virtio[i].base);
		assert_str(path, "compatible", "virtio,mmio");
		ck_assert_uint_eq(u64_at(path, "reg", 0, 2), c->virtio[i].base);
		ck_assert_uint_eq(u64_at(path, "reg", 1, 2), 0x1000);
		assert_irq(path, 0, c->virtio[i].spi, 1);
		getprop(path, "dma-coherent", 0);
	}
}

/* ---- the trees ------------------------------------------------------------ */

START_TEST(test_gicv3_tree)
{
	struct arm64_fdt_config c = base_config(2, ARM64_GIC_V3);
	ck_assert_int_eq(arm64_fdt_build(&c, tree, sizeof(tree)), 0);
	static const char *const nodes[] = { "/",
		                             "/chosen",
		                             "/aliases",
		                             "/memory@80000000",
		                             "/cpus",
		                             "/cpus/cpu@0",
		                             "/cpus/cpu@1",
		                             "/psci",
		                             "/intc@8000000",
		                             "/timer",
		                             "/uart@9000000",
		                             "/virtio_mmio@a000000",
		                             "/virtio_mmio@a001000",
		                             "/virtio_mmio@a005000",
		                             NULL };
	assert_nodes(nodes);
	assert_common(&c, 4);

	assert_str("/intc@8000000", "compatible", "arm,gic-v3");
	ck_assert_uint_eq(u64_at("/intc@8000000", "reg", 0, 4), 0x08000000);
	ck_assert_uint_eq(u64_at("/intc@8000000", "reg", 1, 4), 0x10000);
	ck_assert_uint_eq(u64_at("/intc@8000000", "reg", 2, 4), 0x080a0000);
	ck_assert_uint_eq(u64_at("/intc@8000000", "reg", 3, 4), 2 * 0x20000);

	const uint8_t *s = getprop("/chosen", "rng-seed", sizeof(seed));
	ck_assert_mem_eq(s, seed, sizeof(seed));
	ck_assert_uint_eq(u64_at("/chosen", "linux,initrd-start", 0, 1),
	                  ARM64_RAM_BASE + 256 * MiB);
	ck_assert_uint_eq(u64_at("/chosen", "linux,initrd-end", 0, 1),
	                  ARM64_RAM_BASE + 259 * MiB + 123);
}
END_TEST

START_TEST(test_gicv2_tree)
{
	struct arm64_fdt_config c = base_config(4, ARM64_GIC_V2);
	ck_assert_int_eq(arm64_fdt_build(&c, tree, sizeof(tree)), 0);
	/* GICv2 PPIs name their CPUs: 4 CPUs, mask 0xf in bits 8..15. */
	assert_common(&c, 0xf04);
	assert_str("/intc@8000000", "compatible", "arm,cortex-a15-gic");
	ck_assert_uint_eq(u64_at("/intc@8000000", "reg", 0, 4), 0x08000000);
	ck_assert_uint_eq(u64_at("/intc@8000000", "reg", 1, 4), 0x1000);
	ck_assert_uint_eq(u64_at("/intc@8000000", "reg", 2, 4), 0x08010000);
	ck_assert_uint_eq(u64_at("/intc@8000000", "reg", 3, 4), 0x2000);
}
END_TEST

/* 20 vCPUs: KVM's MPIDR puts vCPU 16 and up in Aff1, and the cpu nodes'
 * names and regs follow; the redistributor region grows with them. */
START_TEST(test_many_cpus_mpidr)
{
	ck_assert_uint_eq(arm64_kvm_mpidr(0), 0);
	ck_assert_uint_eq(arm64_kvm_mpidr(15), 0xf);
	ck_assert_uint_eq(arm64_kvm_mpidr(17), 0x101);
	ck_assert_uint_eq(arm64_kvm_mpidr(4096 + 3), 0x10003);
	struct arm64_fdt_config c = base_config(20, ARM64_GIC_V3);
	ck_assert_int_eq(arm64_fdt_build(&c, tree, sizeof(tree)), 0);
	assert_common(&c, 4);
	node("/cpus/cpu@101");
	ck_assert_uint_eq(u64_at("/intc@8000000", "reg", 3, 4), 20 * 0x20000);
	ck_assert_uint_eq(ARM64_GICV3_MAX_CPUS, 123);
	c = base_config(ARM64_GICV3_MAX_CPUS, ARM64_GIC_V3);
	ck_assert_int_eq(arm64_fdt_build(&c, tree, sizeof(tree)), 0);
	ck_assert_uint_le(ARM64_GICV3_REDIST_BASE + 123 * ARM64_GICV3_REDIST_SIZE, ARM64_UART_BASE);
}
END_TEST

/* Without bootargs, seed, initrd or devices: those properties and nodes are
 * simply not there. */
START_TEST(test_minimal_tree)
{
	struct arm64_fdt_config c = base_config(1, ARM64_GIC_V3);
	c.bootargs = NULL;
	c.rng_seed_len = 0;
	c.initrd_size = 0;
	c.nvirtio = 0;
	ck_assert_int_eq(arm64_fdt_build(&c, tree, sizeof(tree)), 0);
	static const char *const nodes[] = {
		"/",     "/chosen",       "/aliases", "/memory@80000000", "/cpus", "/cpus/cpu@0",
		"/psci", "/intc@8000000", "/timer",   "/uart@9000000",    NULL
	};
	assert_nodes(nodes);
	assert_common(&c, 4);
	assert_absent("/chosen", "bootargs");
	assert_absent("/chosen", "rng-seed");
	assert_absent("/chosen", "linux,initrd-start");
}
END_TEST

START_TEST(test_small_buffer)
{
	struct arm64_fdt_config c = base_config(2, ARM64_GIC_V3);
	ck_assert_int_eq(arm64_fdt_build(&c, tree, 256), -ENOSPC);
	ck_assert_int_eq(arm64_fdt_build(&c, tree, 0), -ENOSPC);
	ck_assert_int_eq(arm64_fdt_build(&c, tree, sizeof(tree)), 0);
	/* The tree is small: a page holds it with three devices. */
	ck_assert_uint_lt(fdt_totalsize(tree), 4096);
}
END_TEST

/* Each out-of-range config is refused, and the tree untouched. */
START_TEST(test_rejects)
{
	struct arm64_fdt_config c;
	static char long_args[ARM64_CMDLINE_MAX + 1];
	memset(long_args, 'a', ARM64_CMDLINE_MAX);
	struct arm64_fdt_virtio devs[2];
	uint64_t bad_mpidr[2] = { 0, 0x80000000ULL };
	uint64_t dup_mpidr[2] = { 1, 1 };

#define REJECT(stmt)                                                                      \
	do {                                                                              \
		c = base_config(2, ARM64_GIC_V3);                                         \
		stmt;                                                                     \
		ck_assert_msg(arm64_fdt_build(&c, tree, sizeof(tree)) == -EINVAL, #stmt); \
	} while (0)
	REJECT(c.ncpus = 0);
	REJECT(c.ncpus = ARM64_GICV3_MAX_CPUS + 1);
	REJECT((c.gic = ARM64_GIC_V2, c.ncpus = 9));
	REJECT(c.gic = (enum arm64_gic_version)4);
	REJECT(c.mpidr = NULL);
	REJECT(c.mpidr = bad_mpidr);
	REJECT(c.mpidr = dup_mpidr);
	REJECT(c.ram_size = 2 * MiB);
	REJECT(c.ram_size = 512 * MiB + 4096);
	REJECT(c.ram_size = ARM64_RAM_MAX + 2 * MiB);
	REJECT(c.nvirtio = ARM64_VIRTIO_SLOTS + 1);
	REJECT(c.virtio = NULL);
	REJECT((devs[0] = three_devs[0], devs[1] = three_devs[0], devs[1].spi = 30, c.virtio = devs,
	        c.nvirtio = 2));
	REJECT((devs[0] = three_devs[0], devs[1] = three_devs[1], devs[1].spi = devs[0].spi,
	        c.virtio = devs, c.nvirtio = 2));
	REJECT((devs[0] = three_devs[0], devs[0].base += 0x200, c.virtio = devs, c.nvirtio = 1));
	REJECT((devs[0] = three_devs[0], devs[0].base = ARM64_UART_BASE, c.virtio = devs,
	        c.nvirtio = 1));
	REJECT((devs[0] = three_devs[0],
	        devs[0].base = ARM64_VIRTIO_BASE + ARM64_VIRTIO_SLOTS * ARM64_VIRTIO_SLOT_SIZE,
	        c.virtio = devs, c.nvirtio = 1));
	REJECT((devs[0] = three_devs[0], devs[0].spi = ARM64_UART_SPI, c.virtio = devs,
	        c.nvirtio = 1));
	REJECT((devs[0] = three_devs[0], devs[0].spi = ARM64_SPI_COUNT, c.virtio = devs,
	        c.nvirtio = 1));
	REJECT(c.bootargs = long_args);
	REJECT(c.rng_seed_len = ARM64_FDT_RNG_SEED_MAX + 1);
	REJECT(c.rng_seed = NULL);
	REJECT(c.initrd_start = ARM64_RAM_BASE - 4096);
	REJECT(c.initrd_start = ARM64_RAM_BASE + 511 * MiB);
	REJECT((c.initrd_start = ARM64_RAM_BASE, c.initrd_size = UINT64_MAX));
#undef REJECT
	ck_assert_int_eq(arm64_fdt_build(NULL, tree, sizeof(tree)), -EINVAL);

	/* The longest bootargs that fit, and the largest seed, are taken. */
	c = base_config(2, ARM64_GIC_V3);
	long_args[ARM64_CMDLINE_MAX - 1] = '\0';
	c.bootargs = long_args;
	static const uint8_t big_seed[ARM64_FDT_RNG_SEED_MAX] = { 7 };
	c.rng_seed = big_seed;
	c.rng_seed_len = sizeof(big_seed);
	ck_assert_int_eq(arm64_fdt_build(&c, tree, sizeof(tree)), 0);
	assert_str("/chosen", "bootargs", long_args);
	getprop("/chosen", "rng-seed", ARM64_FDT_RNG_SEED_MAX);
}
END_TEST

/* Where the device tree and an initrd go: the last 2 MiB of RAM, and below
 * it, page aligned; an initrd that would reach the kernel has no place. */
START_TEST(test_layout_places)
{
	ck_assert_uint_eq(arm64_fdt_addr(512 * MiB), ARM64_RAM_BASE + 510 * MiB);
	ck_assert_uint_eq(arm64_fdt_addr(512 * MiB) % ARM64_2M, 0);
	uint64_t kernel_end = ARM64_RAM_BASE + 40 * MiB;
	uint64_t at = arm64_initrd_addr(512 * MiB, kernel_end, 10 * MiB + 1);
	ck_assert_uint_eq(at % ARM64_PAGE_SIZE, 0);
	ck_assert_uint_le(at + 10 * MiB + 1, arm64_fdt_addr(512 * MiB));
	ck_assert_uint_ge(at, kernel_end);
	ck_assert_uint_eq(arm64_initrd_addr(64 * MiB, kernel_end, 30 * MiB), 0);
	ck_assert_uint_eq(arm64_initrd_addr(64 * MiB, kernel_end, UINT64_MAX), 0);
	/* The map's regions do not overlap, and devices stay below RAM. */
	ck_assert_uint_le(ARM64_GIC_DIST_BASE + ARM64_GICV3_DIST_SIZE, ARM64_GICV2_CPU_BASE);
	ck_assert_uint_le(ARM64_GICV2_CPU_BASE + ARM64_GICV2_CPU_SIZE, ARM64_GICV3_REDIST_BASE);
	ck_assert_uint_le(ARM64_UART_BASE + ARM64_UART_SIZE, ARM64_VIRTIO_BASE);
	ck_assert_uint_le(ARM64_VIRTIO_BASE + ARM64_VIRTIO_SLOTS * ARM64_VIRTIO_SLOT_SIZE,
	                  ARM64_RAM_BASE);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("arm64_fdt");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_gicv3_tree);
	tcase_add_test(tc, test_gicv2_tree);
	tcase_add_test(tc, test_many_cpus_mpidr);
	tcase_add_test(tc, test_minimal_tree);
	tcase_add_test(tc, test_small_buffer);
	tcase_add_test(tc, test_rejects);
	tcase_add_test(tc, test_layout_places);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN()
