/* The TAP backend of virtio-net: a Linux TAP device with a 12-byte vnet
 * header (struct virtio_net_hdr_v1) in front of every frame, so checksum
 * and segmentation offloads pass between the guest and the host kernel
 * without any per-packet work here.
 *
 * The fd is either inherited (the launcher opened it in the sandbox's
 * network namespace with IFF_TAP|IFF_NO_PI|IFF_VNET_HDR; checked with
 * TUNGETIFF) or opened here by interface name (tests, benchmarks).  Either
 * way it is made non-blocking and close-on-exec and its vnet header size
 * set to 12.  Set-up runs on the main thread before any seccomp filter;
 * only tap_set_offload() runs later, on the I/O thread. */
#ifndef COVE_TAP_H
#define COVE_TAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The vnet header every frame carries (virtio 1.x: always with num_buffers). */
#define TAP_VNET_HDR_LEN 12

/* Offload bits for tap_set_offload() (linux/if_tun.h TUN_F_*). */
#define TAP_OFFLOAD_CSUM    0x01
#define TAP_OFFLOAD_TSO4    0x02
#define TAP_OFFLOAD_TSO6    0x04
#define TAP_OFFLOAD_TSO_ECN 0x08

struct tap {
	int fd;        /* non-blocking; -1: none */
	bool is_tap;   /* false: a plain datagram fd standing in (tests): no TUN ioctls */
	bool owned;    /* close fd in tap_close() */
	char name[16]; /* the interface's name, for messages */
};

/**
 * tap_open_fd() - adopt an inherited TAP fd
 * @t:		filled on success
 * @fd:		the launcher's fd (stays open on failure; closed by tap_close)
 * @err, @errlen: a one-line reason on failure
 *
 * Checks with TUNGETIFF that fd is a TAP with IFF_NO_PI and IFF_VNET_HDR,
 * sets its vnet header size to 12 and O_NONBLOCK.  Main thread, at set-up.
 * #syscalls: ioctl(TUNGETIFF, TUNSETVNETHDRSZ, TUNSETOFFLOAD), fcntl (main, before filters)
 * Return: 0 or -errno.
 */
int tap_open_fd(struct tap *t, int fd, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/**
 * tap_open_name() - open (or create) the TAP interface @name
 * @t:		filled on success
 * @name:	interface name (at most 15 bytes)
 * @err, @errlen: a one-line reason on failure
 *
 * Opens /dev/net/tun with TUNSETIFF IFF_TAP|IFF_NO_PI|IFF_VNET_HDR in
 * cove-vmm's network namespace, then as tap_open_fd().
 * #syscalls: openat, ioctl(TUNSETIFF) (main, before filters)
 * Return: 0 or -errno.
 */
int tap_open_name(struct tap *t, const char *name, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/**
 * tap_set_offload() - tell the TAP which offloads the guest accepts
 * @t:		an open TAP (a no-op for a stand-in fd)
 * @flags:	TAP_OFFLOAD_* bits; TSO bits need CSUM and are dropped without it
 *
 * Frames the host kernel hands the guest may then be partially
 * checksummed or up to 64 KiB large (GSO); without it they come whole.
 * I/O thread (after the guest's feature negotiation), or main at set-up.
 * #syscalls: ioctl(TUNSETOFFLOAD) (I/O thread)
 * Return: 0 or -errno.
 */
int tap_set_offload(struct tap *t, unsigned int flags) __attribute__((warn_unused_result));

/* Closes the fd if owned (an adopted fd is owned too); safe on a zeroed
 * struct with fd -1. */
void tap_close(struct tap *t);

#endif
