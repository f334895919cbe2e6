/* MP table writer (Intel MultiProcessor Specification 1.4, chapter 4). */
#include "arch/x86_64/mptable.h"

#include <assert.h>
#include <errno.h>
#include <string.h>

#include "arch/x86_64/layout.h"

#define MP_SPEC_REV 4 /* 1.4 */

#define MP_ENTRY_PROCESSOR 0
#define MP_ENTRY_BUS       1
#define MP_ENTRY_IOAPIC    2
#define MP_ENTRY_IOINT     3
#define MP_ENTRY_LOCALINT  4

#define MP_CPU_ENABLED 0x01
#define MP_CPU_BSP     0x02
#define MP_IOAPIC_EN   0x01

#define MP_INT_INT    0
#define MP_INT_NMI    1
#define MP_INT_EXTINT 3

/* I/O interrupt flags: polarity in bits 1:0, trigger mode in bits 3:2. */
#define MP_IRQ_CONFORMING  0x0
#define MP_IRQ_ACTIVE_HIGH 0x1
#define MP_IRQ_EDGE        (0x1 << 2)

#define MP_LAPIC_VERSION  0x14
#define MP_IOAPIC_VERSION 0x11
#define MP_LINT_ALL       0xff
#define MP_ISA_IRQS       16
#define MP_ISA_BUS_ID     0

/* Family 6 in the CPU signature and FPU + APIC in the feature flags: only
 * informational, Linux reads the real values from CPUID. */
#define MP_CPU_SIGNATURE (6u << 8)
#define MP_CPU_FEATURES  ((1u << 0) | (1u << 9))

struct mpf_intel {
	char signature[4]; /* "_MP_" */
	uint32_t physptr;  /* configuration table */
	uint8_t length;    /* in 16-byte units */
	uint8_t spec_rev;
	uint8_t checksum;
	uint8_t feature1; /* 0: a configuration table is present */
	uint8_t feature2; /* bit 7 clear: virtual wire mode, no IMCR */
	uint8_t feature3[3];
} __attribute__((packed));

struct mpc_table {
	char signature[4]; /* "PCMP" */
	uint16_t length;   /* base table, header included */
	uint8_t spec_rev;
	uint8_t checksum;
	char oem[8];
	char product[12];
	uint32_t oemptr;
	uint16_t oemsize;
	uint16_t count; /* entries after the header */
	uint32_t lapic;
	uint16_t ext_length;
	uint8_t ext_checksum;
	uint8_t reserved;
} __attribute__((packed));

struct mpc_cpu {
	uint8_t type;
	uint8_t apicid;
	uint8_t apicver;
	uint8_t cpuflag;
	uint32_t signature;
	uint32_t featureflag;
	uint32_t reserved[2];
} __attribute__((packed));

struct mpc_bus {
	uint8_t type;
	uint8_t busid;
	char bustype[6];
} __attribute__((packed));

struct mpc_ioapic {
	uint8_t type;
	uint8_t apicid;
	uint8_t apicver;
	uint8_t flags;
	uint32_t apicaddr;
} __attribute__((packed));

/* I/O and local interrupt entries share one layout. */
struct mpc_int {
	uint8_t type;
	uint8_t irqtype;
	uint16_t irqflag;
	uint8_t srcbus;
	uint8_t srcbusirq;
	uint8_t dstapic;
	uint8_t dstirq;
} __attribute__((packed));

static_assert(sizeof(struct mpf_intel) == 16, "MP floating pointer");
static_assert(sizeof(struct mpc_table) == 44, "MP config header");
static_assert(sizeof(struct mpc_cpu) == 20, "MP processor entry");
static_assert(sizeof(struct mpc_bus) == 8, "MP bus entry");
static_assert(sizeof(struct mpc_ioapic) == 8, "MP IOAPIC entry");
static_assert(sizeof(struct mpc_int) == 8, "MP interrupt entry");

#define MP_NR_LINTS 2

static uint64_t config_size(unsigned int ncpus)
{
	return sizeof(struct mpc_table) + (uint64_t)ncpus * sizeof(struct mpc_cpu) +
	       sizeof(struct mpc_bus) + sizeof(struct mpc_ioapic) +
	       (X86_IOAPIC_PINS + MP_NR_LINTS) * sizeof(struct mpc_int);
}

uint64_t mptable_size(unsigned int ncpus)
{
	return sizeof(struct mpf_intel) + config_size(ncpus);
}

static_assert(X86_MPTABLE + sizeof(struct mpf_intel) + sizeof(struct mpc_table) +
                      MPTABLE_MAX_CPUS * sizeof(struct mpc_cpu) + sizeof(struct mpc_bus) +
                      sizeof(struct mpc_ioapic) +
                      (X86_IOAPIC_PINS + MP_NR_LINTS) * sizeof(struct mpc_int) <=
                  X86_MPTABLE_END,
              "MP table for the largest guest fits its area");

/* The byte that makes p[0, n) sum to zero once stored in the checksum slot
 * (which must hold 0 while summing). */
static uint8_t checksum(const uint8_t *p, uint64_t n)
{
	uint8_t sum = 0;
	for (uint64_t i = 0; i < n; i++)
		sum += p[i];
	return (uint8_t)-sum;
}

static uint8_t *put(uint8_t *p, const void *entry, size_t n)
{
	memcpy(p, entry, n);
	return p + n;
}

int mptable_write(const struct guest_mem *m, unsigned int ncpus)
{
	if (ncpus == 0 || ncpus > MPTABLE_MAX_CPUS)
		return -EINVAL;
	uint64_t total = mptable_size(ncpus);
	if (total > X86_MPTABLE_END - X86_MPTABLE)
		return -ENOSPC;
	uint8_t *base = gmem_ptr(m, X86_MPTABLE, total);
	if (!base)
		return -EFAULT;
	memset(base, 0, total);

	uint64_t cfg_gpa = X86_MPTABLE + sizeof(struct mpf_intel);
	uint8_t *cfg = base + sizeof(struct mpf_intel);
	uint8_t *p = cfg + sizeof(struct mpc_table);
	uint8_t ioapic_id = (uint8_t)ncpus;
	uint16_t count = 0;

	for (unsigned int i = 0; i < ncpus; i++, count++) {
		struct mpc_cpu cpu = {
			.type = MP_ENTRY_PROCESSOR,
			.apicid = (uint8_t)i,
			.apicver = MP_LAPIC_VERSION,
			.cpuflag = MP_CPU_ENABLED | (i == 0 ? MP_CPU_BSP : 0),
			.signature = MP_CPU_SIGNATURE,
			.featureflag = MP_CPU_FEATURES,
		};
		p = put(p, &cpu, sizeof(cpu));
	}

	struct mpc_bus bus = { .type = MP_ENTRY_BUS, .busid = MP_ISA_BUS_ID };
	memcpy(bus.bustype, "ISA   ", sizeof(bus.bustype));
	p = put(p, &bus, sizeof(bus));
	count++;

	struct mpc_ioapic ioapic = {
		.type = MP_ENTRY_IOAPIC,
		.apicid = ioapic_id,
		.apicver = MP_IOAPIC_VERSION,
		.flags = MP_IOAPIC_EN,
		.apicaddr = (uint32_t)X86_IOAPIC_ADDR,
	};
	p = put(p, &ioapic, sizeof(ioapic));
	count++;

	for (unsigned int irq = 0; irq < X86_IOAPIC_PINS; irq++, count++) {
		/* ISA IRQs are edge/high by bus convention; past 15 there is
		 * no convention, so say so. */
		uint16_t flags =
		    irq < MP_ISA_IRQS ? MP_IRQ_CONFORMING : (MP_IRQ_EDGE | MP_IRQ_ACTIVE_HIGH);
		struct mpc_int in = {
			.type = MP_ENTRY_IOINT,
			.irqtype = MP_INT_INT,
			.irqflag = flags,
			.srcbus = MP_ISA_BUS_ID,
			.srcbusirq = (uint8_t)irq,
			.dstapic = ioapic_id,
			.dstirq = (uint8_t)irq,
		};
		p = put(p, &in, sizeof(in));
	}

	const uint8_t lint_type[MP_NR_LINTS] = { MP_INT_EXTINT, MP_INT_NMI };
	for (unsigned int lint = 0; lint < MP_NR_LINTS; lint++, count++) {
		struct mpc_int in = {
			.type = MP_ENTRY_LOCALINT,
			.irqtype = lint_type[lint],
			.irqflag = MP_IRQ_CONFORMING,
			.srcbus = MP_ISA_BUS_ID,
			.srcbusirq = 0,
			.dstapic = MP_LINT_ALL,
			.dstirq = (uint8_t)lint,
		};
		p = put(p, &in, sizeof(in));
	}

	uint64_t cfg_len = (uint64_t)(p - cfg);
	assert(cfg_len == config_size(ncpus));
	struct mpc_table hdr = {
		.length = (uint16_t)cfg_len,
		.spec_rev = MP_SPEC_REV,
		.count = count,
		.lapic = (uint32_t)X86_LAPIC_ADDR,
	};
	memcpy(hdr.signature, "PCMP", sizeof(hdr.signature));
	memcpy(hdr.oem, "COVE    ", sizeof(hdr.oem));
	memcpy(hdr.product, "MICROVM     ", sizeof(hdr.product));
	memcpy(cfg, &hdr, sizeof(hdr));
	cfg[offsetof(struct mpc_table, checksum)] = checksum(cfg, cfg_len);

	struct mpf_intel mpf = {
		.physptr = (uint32_t)cfg_gpa,
		.length = sizeof(struct mpf_intel) / 16,
		.spec_rev = MP_SPEC_REV,
	};
	memcpy(mpf.signature, "_MP_", sizeof(mpf.signature));
	memcpy(base, &mpf, sizeof(mpf));
	base[offsetof(struct mpf_intel, checksum)] = checksum(base, sizeof(mpf));
	return 0;
}
