/* The in-kernel vGIC of an arm64 guest (issue 35; docs/arm64.md).  NOT YET
 * WIRED: built only by `make ARCH=arm64` and exercised by
 * tests/arm64/vcpu_smoke.c; cove-vmm does not call it. */
#ifndef COVE_ARCH_ARM64_GIC_H
#define COVE_ARCH_ARM64_GIC_H

#include "arch/arm64/fdt.h"

/**
 * arm64_gic_create() - the vGIC at the addresses of layout.h
 * @vm_fd:   the VM, after its vCPUs were created (a GICv3 sizes its
 *           redistributor region by them) and before any KVM_RUN
 * @ncpus:   how many vCPUs
 * @version: out: ARM64_GIC_V3, or ARM64_GIC_V2 where the host has no v3
 *
 * Creates KVM_DEV_TYPE_ARM_VGIC_V3 (distributor and redistributors), or
 * KVM_DEV_TYPE_ARM_VGIC_V2 (distributor and CPU interface) when v3 cannot
 * be created and ncpus <= 8, and gives it ARM64_SPI_COUNT SPIs.  Call
 * arm64_gic_finalize() after every vCPU's arm64_vcpu_init().
 * Return: the device fd (the caller closes it), or -errno.
 */
int arm64_gic_create(int vm_fd, unsigned int ncpus, enum arm64_gic_version *version)
    __attribute__((warn_unused_result));

/* arm64_gic_finalize() - KVM_DEV_ARM_VGIC_CTRL_INIT on @gic_fd, once every
 * vCPU is initialised and before the first KVM_RUN.  Return: 0 or -errno. */
int arm64_gic_finalize(int gic_fd) __attribute__((warn_unused_result));

#endif
