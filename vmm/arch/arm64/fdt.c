/* The arm64 guest's device tree, written with libfdt's sequential-write
 * API (fdt_create ... fdt_finish): the nodes go out in order, so the tree
 * is compact and needs no fdt_pack. */
#include "arch/arm64/fdt.h"

#include <errno.h>
#include <libfdt.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "arch/arm64/layout.h"

/* Interrupt specifiers (dt-bindings/interrupt-controller/arm-gic.h and
 * irq.h): <type number flags>. */
#define GIC_SPI             0U
#define GIC_PPI             1U
#define IRQ_EDGE_RISING     1U
#define IRQ_LEVEL_HIGH      4U
#define GICV2_PPI_CPU_SHIFT 8 /* GICv2: which CPUs a PPI goes to */

/* A writer that remembers the first libfdt error, so the nodes below read
 * as the tree they make; every call after an error does nothing. */
struct fdtw {
	void *fdt;
	int err;
};

static void begin(struct fdtw *w, const char *name)
{
	if (!w->err)
		w->err = fdt_begin_node(w->fdt, name);
}

static void end(struct fdtw *w)
{
	if (!w->err)
		w->err = fdt_end_node(w->fdt);
}

static void prop(struct fdtw *w, const char *name, const void *val, size_t len)
{
	if (!w->err)
		w->err = fdt_property(w->fdt, name, val, (int)len);
}

static void prop_str(struct fdtw *w, const char *name, const char *s)
{
	prop(w, name, s, strlen(s) + 1);
}

static void prop_u32(struct fdtw *w, const char *name, uint32_t v)
{
	fdt32_t be = cpu_to_fdt32(v);
	prop(w, name, &be, sizeof(be));
}

static void prop_u64(struct fdtw *w, const char *name, uint64_t v)
{
	fdt64_t be = cpu_to_fdt64(v);
	prop(w, name, &be, sizeof(be));
}

/* reg = <@n address/size pairs>, two cells each. */
static void prop_reg(struct fdtw *w, const uint64_t *pairs, unsigned int n)
{
	fdt64_t be[4];
	for (unsigned int i = 0; i < 2 * n && i < 4; i++)
		be[i] = cpu_to_fdt64(pairs[i]);
	prop(w, "reg", be, 2 * n * sizeof(be[0]));
}

/* interrupts = <type number flags>. */
static void prop_irq(struct fdtw *w, uint32_t type, uint32_t num, uint32_t flags)
{
	fdt32_t be[3] = { cpu_to_fdt32(type), cpu_to_fdt32(num), cpu_to_fdt32(flags) };
	prop(w, "interrupts", be, sizeof(be));
}

static bool config_ok(const struct arm64_fdt_config *c)
{
	unsigned int max_cpus = c->gic == ARM64_GIC_V3   ? ARM64_GICV3_MAX_CPUS
	                        : c->gic == ARM64_GIC_V2 ? ARM64_GICV2_MAX_CPUS
	                                                 : 0;
	if (c->ncpus == 0 || c->ncpus > max_cpus || !c->mpidr)
		return false;
	for (unsigned int i = 0; i < c->ncpus; i++) {
		if (c->mpidr[i] & ~ARM64_MPIDR_AFF_MASK)
			return false;
		for (unsigned int j = 0; j < i; j++)
			if (c->mpidr[j] == c->mpidr[i])
				return false;
	}
	if (c->ram_size < 2 * ARM64_FDT_MAX || c->ram_size > ARM64_RAM_MAX ||
	    c->ram_size % ARM64_2M)
		return false;
	if (c->nvirtio > ARM64_VIRTIO_SLOTS || (c->nvirtio && !c->virtio))
		return false;
	const uint64_t vend = ARM64_VIRTIO_BASE + ARM64_VIRTIO_SLOTS * ARM64_VIRTIO_SLOT_SIZE;
	for (unsigned int i = 0; i < c->nvirtio; i++) {
		const struct arm64_fdt_virtio *d = &c->virtio[i];
		if (d->base < ARM64_VIRTIO_BASE || d->base >= vend ||
		    d->base % ARM64_VIRTIO_SLOT_SIZE || d->spi >= ARM64_SPI_COUNT ||
		    d->spi == ARM64_UART_SPI)
			return false;
		for (unsigned int j = 0; j < i; j++)
			if (c->virtio[j].base == d->base || c->virtio[j].spi == d->spi)
				return false;
	}
	if (c->bootargs && strnlen(c->bootargs, ARM64_CMDLINE_MAX) >= ARM64_CMDLINE_MAX)
		return false;
	if (c->rng_seed_len > ARM64_FDT_RNG_SEED_MAX || (c->rng_seed_len && !c->rng_seed))
		return false;
	if (c->initrd_size) {
		uint64_t ram_end = ARM64_RAM_BASE + c->ram_size;
		if (c->initrd_start < ARM64_RAM_BASE || c->initrd_start >= ram_end ||
		    c->initrd_size > ram_end - c->initrd_start)
			return false;
	}
	return true;
}

static void node_chosen(struct fdtw *w, const struct arm64_fdt_config *c, const char *uart)
{
	begin(w, "chosen");
	if (c->bootargs)
		prop_str(w, "bootargs", c->bootargs);
	prop_str(w, "stdout-path", uart);
	if (c->rng_seed_len)
		prop(w, "rng-seed", c->rng_seed, c->rng_seed_len);
	if (c->initrd_size) {
		prop_u64(w, "linux,initrd-start", c->initrd_start);
		prop_u64(w, "linux,initrd-end", c->initrd_start + c->initrd_size);
	}
	end(w);
}

static void node_cpus(struct fdtw *w, const struct arm64_fdt_config *c)
{
	begin(w, "cpus");
	prop_u32(w, "#address-cells", 2);
	prop_u32(w, "#size-cells", 0);
	for (unsigned int i = 0; i < c->ncpus; i++) {
		char name[32];
		snprintf(name, sizeof(name), "cpu@%llx", (unsigned long long)c->mpidr[i]);
		begin(w, name);
		prop_str(w, "device_type", "cpu");
		prop_str(w, "compatible", "arm,arm-v8");
		prop_str(w, "enable-method", "psci");
		prop_u64(w, "reg", c->mpidr[i]);
		end(w);
	}
	end(w);
}

static void node_gic(struct fdtw *w, const struct arm64_fdt_config *c)
{
	char name[32];
	snprintf(name, sizeof(name), "intc@%llx", ARM64_GIC_DIST_BASE);
	begin(w, name);
	if (c->gic == ARM64_GIC_V3) {
		static const char compat[] = "arm,gic-v3";
		const uint64_t reg[4] = { ARM64_GIC_DIST_BASE, ARM64_GICV3_DIST_SIZE,
			                  ARM64_GICV3_REDIST_BASE,
			                  c->ncpus * ARM64_GICV3_REDIST_SIZE };
		prop(w, "compatible", compat, sizeof(compat));
		prop_reg(w, reg, 2);
	} else {
		static const char compat[] = "arm,cortex-a15-gic";
		const uint64_t reg[4] = { ARM64_GIC_DIST_BASE, ARM64_GICV2_DIST_SIZE,
			                  ARM64_GICV2_CPU_BASE, ARM64_GICV2_CPU_SIZE };
		prop(w, "compatible", compat, sizeof(compat));
		prop_reg(w, reg, 2);
	}
	prop_u32(w, "#interrupt-cells", 3);
	/* No children (no ITS); dtc wants the cells said for interrupt-map. */
	prop_u32(w, "#address-cells", 0);
	prop(w, "interrupt-controller", NULL, 0);
	prop_u32(w, "phandle", ARM64_FDT_PHANDLE_GIC);
	end(w);
}

static void node_timer(struct fdtw *w, const struct arm64_fdt_config *c)
{
	static const uint32_t ppis[4] = { ARM64_TIMER_PPI_SEC_PHYS, ARM64_TIMER_PPI_PHYS,
		                          ARM64_TIMER_PPI_VIRT, ARM64_TIMER_PPI_HYP };
	uint32_t flags = IRQ_LEVEL_HIGH;
	if (c->gic == ARM64_GIC_V2) /* ncpus <= 8 here */
		flags |= ((1U << c->ncpus) - 1) << GICV2_PPI_CPU_SHIFT;
	fdt32_t irqs[12];
	for (unsigned int i = 0; i < 4; i++) {
		irqs[3 * i] = cpu_to_fdt32(GIC_PPI);
		irqs[3 * i + 1] = cpu_to_fdt32(ppis[i]);
		irqs[3 * i + 2] = cpu_to_fdt32(flags);
	}
	begin(w, "timer");
	prop_str(w, "compatible", "arm,armv8-timer");
	prop(w, "interrupts", irqs, sizeof(irqs));
	prop(w, "always-on", NULL, 0);
	end(w);
}

static void node_uart(struct fdtw *w, const char *path)
{
	const uint64_t reg[2] = { ARM64_UART_BASE, ARM64_UART_SIZE };
	begin(w, path + 1);
	prop_str(w, "compatible", "ns16550a");
	prop_reg(w, reg, 1);
	prop_irq(w, GIC_SPI, ARM64_UART_SPI, IRQ_LEVEL_HIGH);
	prop_u32(w, "clock-frequency", ARM64_UART_CLOCK);
	end(w);
}

static void node_virtio(struct fdtw *w, const struct arm64_fdt_virtio *d)
{
	char name[40];
	const uint64_t reg[2] = { d->base, ARM64_VIRTIO_SLOT_SIZE };
	snprintf(name, sizeof(name), "virtio_mmio@%llx", (unsigned long long)d->base);
	begin(w, name);
	prop_str(w, "compatible", "virtio,mmio");
	prop_reg(w, reg, 1);
	prop_irq(w, GIC_SPI, d->spi, IRQ_EDGE_RISING);
	prop(w, "dma-coherent", NULL, 0);
	end(w);
}

int arm64_fdt_build(const struct arm64_fdt_config *c, void *buf, size_t size)
{
	if (!c || !buf || !config_ok(c))
		return -EINVAL;
	if (size > ARM64_FDT_MAX)
		size = ARM64_FDT_MAX;
	struct fdtw w = { .fdt = buf, .err = fdt_create(buf, (int)size) };
	if (!w.err)
		w.err = fdt_finish_reservemap(buf);

	char uart[32];
	snprintf(uart, sizeof(uart), "/uart@%llx", ARM64_UART_BASE);
	const uint64_t mem[2] = { ARM64_RAM_BASE, c->ram_size };
	char mem_name[32];
	snprintf(mem_name, sizeof(mem_name), "memory@%llx", ARM64_RAM_BASE);

	begin(&w, "");
	prop_str(&w, "compatible", "linux,dummy-virt");
	prop_str(&w, "model", "Cove microVM");
	prop_u32(&w, "#address-cells", 2);
	prop_u32(&w, "#size-cells", 2);
	prop_u32(&w, "interrupt-parent", ARM64_FDT_PHANDLE_GIC);

	node_chosen(&w, c, uart);
	begin(&w, "aliases");
	prop_str(&w, "serial0", uart);
	end(&w);
	begin(&w, mem_name);
	prop_str(&w, "device_type", "memory");
	prop_reg(&w, mem, 1);
	end(&w);
	node_cpus(&w, c);
	begin(&w, "psci");
	prop_str(&w, "compatible", "arm,psci-0.2");
	prop_str(&w, "method", "hvc");
	end(&w);
	node_gic(&w, c);
	node_timer(&w, c);
	node_uart(&w, uart);
	for (unsigned int i = 0; i < c->nvirtio; i++)
		node_virtio(&w, &c->virtio[i]);
	end(&w);

	if (!w.err)
		w.err = fdt_finish(buf);
	if (w.err == -FDT_ERR_NOSPACE)
		return -ENOSPC;
	return w.err ? -EINVAL : 0;
}
