/* A sandbox's network as its handle keeps it while libcove sets it up or
 * tears it down (lib/net/net.c): the index K, the egress process, the fds
 * between the set-up's two halves.  The handle (handle.h) holds one; the
 * net room takes it without the handle. */
#ifndef COVE_BASE_SANDBOX_NET_H
#define COVE_BASE_SANDBOX_NET_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define NET_TAP_FD  3 /* cove-vmm's --net fd=3 */
#define NET_DNS_MAX 8

struct net_upstream {
	uint32_t addr; /* host order */
	uint16_t port; /* 53 by default */
};

/* A sandbox's network while libcove sets it up or tears it down. */
struct sandbox_net {
	bool on;
	unsigned int index;
	char claim[PATH_MAX];     /* <base>/.net/<K> */
	uid_t uid;                /* cove-egress's jail uid */
	char uid_claim[PATH_MAX]; /* its claim in <base>/.ids */
	int tap_fd;               /* for cove-vmm (fd 3); -1 once handed over */
	pid_t egress_pid;
	int egress_pidfd;
	uint64_t egress_start;
	bool egress_child; /* our child: reaped by us */
	char limits[256];
	/* Between net_setup and net_finish (cove-vmm boots meanwhile): */
	bool pending;              /* the three fds below are ours */
	int ready_fd, nsfd, go_fd; /* cove-egress's ready pipe, its netns, its go */
	struct net_upstream up[NET_DNS_MAX];
	size_t nup;
	char errlog[PATH_MAX]; /* <entry>/egress.err */
	/* Taken from a pool: its policy request sent, the answer for net_finish. */
	bool policy_pending;
	int policy_fd;
};

#endif
