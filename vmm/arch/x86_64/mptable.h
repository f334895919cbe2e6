/* Intel MultiProcessor Specification 1.4 tables: how a guest without ACPI
 * learns its CPUs, its IOAPIC and how ISA/GSI interrupts reach it. */
#ifndef COVE_ARCH_X86_64_MPTABLE_H
#define COVE_ARCH_X86_64_MPTABLE_H

#include <stdint.h>

#include "base/guest_mem.h"

/* APIC ids 0..ncpus-1 go to the CPUs and ncpus to the IOAPIC; 0xff is the
 * broadcast id, so 254 CPUs is the most one xAPIC table can name. */
#define MPTABLE_MAX_CPUS 254

/* Bytes mptable_write() writes for ncpus CPUs (floating pointer plus
 * configuration table). */
uint64_t mptable_size(unsigned int ncpus);

/* Writes the MP floating pointer at X86_MPTABLE with the configuration table
 * right after it: ncpus processors (APIC id = index, CPU 0 the BSP), one ISA
 * bus, one IOAPIC at X86_IOAPIC_ADDR (id ncpus), an I/O interrupt entry
 * routing IRQ n to IOAPIC pin n for n in 0..23 (edge-triggered, active
 * high: 0..15 as ISA "conforming", 16..23 stated explicitly, which is what
 * virtio-mmio irqfd interrupts need), ExtINT on LINT0 and NMI on LINT1 of
 * every local APIC.  Returns 0, -EINVAL for ncpus outside
 * 1..MPTABLE_MAX_CPUS, -ENOSPC if the table would pass X86_MPTABLE_END, or
 * -EFAULT if that range is not guest RAM. */
int mptable_write(const struct guest_mem *m, unsigned int ncpus)
    __attribute__((warn_unused_result));

#endif
