#include "backend/tap.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "errf.h"

_Static_assert(TAP_OFFLOAD_CSUM == TUN_F_CSUM && TAP_OFFLOAD_TSO4 == TUN_F_TSO4 &&
                   TAP_OFFLOAD_TSO6 == TUN_F_TSO6 && TAP_OFFLOAD_TSO_ECN == TUN_F_TSO_ECN,
               "offload bits are the kernel's");

#define TAP_REQUIRED_FLAGS (IFF_TAP | IFF_NO_PI | IFF_VNET_HDR)

/* The steps both ways of opening share, on a fd known to be a TAP. */
static int tap_setup(struct tap *t, char *err, size_t errlen)
{
	int hdr = TAP_VNET_HDR_LEN;
	if (ioctl(t->fd, TUNSETVNETHDRSZ, &hdr) < 0)
		return errf(err, errlen, -errno, "TAP %s: cannot set a %d-byte vnet header: %s",
		            t->name, hdr, strerror(errno));
	/* Until the guest says what it takes, frames come whole. */
	if (ioctl(t->fd, TUNSETOFFLOAD, 0UL) < 0)
		return errf(err, errlen, -errno, "TAP %s: TUNSETOFFLOAD: %s", t->name,
		            strerror(errno));
	int fl = fcntl(t->fd, F_GETFL);
	if (fl < 0 || fcntl(t->fd, F_SETFL, fl | O_NONBLOCK) < 0 ||
	    fcntl(t->fd, F_SETFD, FD_CLOEXEC) < 0)
		return errf(err, errlen, -errno, "TAP %s: cannot make it non-blocking: %s", t->name,
		            strerror(errno));
	return 0;
}

int tap_open_fd(struct tap *t, int fd, char *err, size_t errlen)
{
	memset(t, 0, sizeof(*t));
	t->fd = -1;
	struct ifreq ifr;
	memset(&ifr, 0, sizeof(ifr));
	if (ioctl(fd, TUNGETIFF, &ifr) < 0)
		return errf(err, errlen, errno == EBADF ? -EBADF : -EINVAL,
		            "--net fd=%d is not a TAP device (TUNGETIFF: %s)", fd, strerror(errno));
	if ((ifr.ifr_flags & TAP_REQUIRED_FLAGS) != TAP_REQUIRED_FLAGS || (ifr.ifr_flags & IFF_TUN))
		return errf(err, errlen, -EINVAL,
		            "--net fd=%d (%.*s) must be opened with IFF_TAP|IFF_NO_PI|IFF_VNET_HDR "
		            "(flags are 0x%x)",
		            fd, IFNAMSIZ, ifr.ifr_name, (unsigned int)(uint16_t)ifr.ifr_flags);
	t->fd = fd;
	t->is_tap = true;
	t->owned = true;
	snprintf(t->name, sizeof(t->name), "%.*s", IFNAMSIZ - 1, ifr.ifr_name);
	return tap_setup(t, err, errlen);
}

int tap_open_name(struct tap *t, const char *name, char *err, size_t errlen)
{
	memset(t, 0, sizeof(*t));
	t->fd = -1;
	if (!name || !*name || strlen(name) >= IFNAMSIZ)
		return errf(err, errlen, -EINVAL, "--net tap=NAME needs a name of 1 to %d bytes",
		            IFNAMSIZ - 1);
	int fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return errf(err, errlen, -errno, "cannot open /dev/net/tun: %s", strerror(errno));
	struct ifreq ifr;
	memset(&ifr, 0, sizeof(ifr));
	ifr.ifr_flags = TAP_REQUIRED_FLAGS;
	memcpy(ifr.ifr_name, name, strlen(name));
	if (ioctl(fd, TUNSETIFF, &ifr) < 0) {
		int e = errno;
		close(fd);
		return errf(err, errlen, -e, "cannot attach to TAP '%s': %s", name,
		            e == EPERM    ? "not permitted (CAP_NET_ADMIN, or the TAP's owner)"
		            : e == EINVAL ? "it exists but is not a TAP with a vnet header"
		                          : strerror(e));
	}
	t->fd = fd;
	t->is_tap = true;
	t->owned = true;
	snprintf(t->name, sizeof(t->name), "%s", name);
	return tap_setup(t, err, errlen);
}

int tap_set_offload(struct tap *t, unsigned int flags)
{
	if (!t->is_tap || t->fd < 0)
		return 0;
	if (!(flags & TAP_OFFLOAD_CSUM))
		flags = 0; /* the kernel refuses segmentation without checksum offload */
	if (!(flags & (TAP_OFFLOAD_TSO4 | TAP_OFFLOAD_TSO6)))
		flags &= ~(unsigned int)TAP_OFFLOAD_TSO_ECN;
	/* #syscalls: ioctl(TUNSETOFFLOAD) (I/O thread) */
	if (ioctl(t->fd, TUNSETOFFLOAD, (unsigned long)flags) < 0)
		return -errno;
	return 0;
}

void tap_close(struct tap *t)
{
	if (t->owned && t->fd >= 0)
		close(t->fd);
	t->fd = -1;
	t->owned = false;
}
