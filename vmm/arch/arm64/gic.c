/* The in-kernel vGIC through KVM's device API.  NOT YET WIRED (see gic.h). */
#include "arch/arm64/gic.h"

#include <errno.h>
#include <linux/kvm.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "arch/arm64/layout.h"

static int set_attr(int dev_fd, uint32_t group, uint64_t attr, const void *val)
{
	struct kvm_device_attr a = { .group = group, .attr = attr, .addr = (uintptr_t)val };
	/* #syscalls: ioctl(KVM_SET_DEVICE_ATTR) (main thread) */
	return ioctl(dev_fd, KVM_SET_DEVICE_ATTR, &a) < 0 ? -errno : 0;
}

static int set_addr(int dev_fd, uint64_t type, uint64_t addr)
{
	return set_attr(dev_fd, KVM_DEV_ARM_VGIC_GRP_ADDR, type, &addr);
}

int arm64_gic_create(int vm_fd, unsigned int ncpus, enum arm64_gic_version *version)
{
	if (ncpus == 0 || ncpus > ARM64_GICV3_MAX_CPUS)
		return -EINVAL;
	struct kvm_create_device d = { .type = KVM_DEV_TYPE_ARM_VGIC_V3 };
	enum arm64_gic_version v = ARM64_GIC_V3;
	/* #syscalls: ioctl(KVM_CREATE_DEVICE) (main thread) */
	if (ioctl(vm_fd, KVM_CREATE_DEVICE, &d) < 0) {
		if (ncpus > ARM64_GICV2_MAX_CPUS)
			return -errno;
		d = (struct kvm_create_device){ .type = KVM_DEV_TYPE_ARM_VGIC_V2 };
		v = ARM64_GIC_V2;
		if (ioctl(vm_fd, KVM_CREATE_DEVICE, &d) < 0)
			return -errno;
	}
	int fd = (int)d.fd;
	int err;
	if (v == ARM64_GIC_V3) {
		err = set_addr(fd, KVM_VGIC_V3_ADDR_TYPE_DIST, ARM64_GIC_DIST_BASE);
		if (!err)
			err = set_addr(fd, KVM_VGIC_V3_ADDR_TYPE_REDIST, ARM64_GICV3_REDIST_BASE);
	} else {
		err = set_addr(fd, KVM_VGIC_V2_ADDR_TYPE_DIST, ARM64_GIC_DIST_BASE);
		if (!err)
			err = set_addr(fd, KVM_VGIC_V2_ADDR_TYPE_CPU, ARM64_GICV2_CPU_BASE);
	}
	/* Interrupt ids 0..31 are private; the SPIs come after them. */
	uint32_t nr_irqs = ARM64_SPI_BASE + ARM64_SPI_COUNT;
	if (!err)
		err = set_attr(fd, KVM_DEV_ARM_VGIC_GRP_NR_IRQS, 0, &nr_irqs);
	if (err) {
		close(fd);
		return err;
	}
	*version = v;
	return fd;
}

int arm64_gic_finalize(int gic_fd)
{
	return set_attr(gic_fd, KVM_DEV_ARM_VGIC_GRP_CTRL, KVM_DEV_ARM_VGIC_CTRL_INIT, NULL);
}
