/* cove-egress's configuration: one JSON object read from --config-fd
 * (net-contract.md, "cove-egress"); unknown keys are errors. */
#ifndef COVE_EGRESS_CONFIG_H
#define COVE_EGRESS_CONFIG_H

#include <net/if.h>
#include <stdint.h>

#include "netrule.h"

#define EGRESS_HOSTS_MAX    16
#define EGRESS_UPSTREAM_MAX 4
#define EGRESS_PUBLISH_MAX  16
#define EGRESS_GUEST_MAC    "06:00:ac:10:00:02" /* "guest_mac" when absent */

struct egress_publish {
	int fd;
	uint16_t guest_port;
};

struct egress_config {
	struct netaddr guest, gateway;
	/* The guest NIC's MAC: tap0 takes frames from this source only. */
	uint8_t guest_mac[6];
	/* up0's address ("uplink_addr"; family 0 when absent): the only
	 * source that may leave up0. */
	struct netaddr uplink_addr;
	char tap[IFNAMSIZ], uplink[IFNAMSIZ];
	struct netaddr hosts[EGRESS_HOSTS_MAX];
	size_t nhosts;
	struct netaddr upstream[EGRESS_UPSTREAM_MAX];
	uint16_t upstream_port[EGRESS_UPSTREAM_MAX];
	size_t nupstream;
	struct netpolicy policy; /* owned */
	int ctl_fd, log_fd, ready_fd;
	struct egress_publish publish[EGRESS_PUBLISH_MAX];
	size_t npublish;
};

/* egress_config_parse() - @text (@len bytes) into @c.  Interface names are
 * checked to [A-Za-z0-9_.-] (they go into nft text); addresses are IPv4;
 * fds must be >= 0 (ctl_fd, log_fd and ready_fd may be -1 or absent).
 * Return: 0, or -EINVAL with one line in @err (nothing to free). */
int egress_config_parse(const char *text, size_t len, struct egress_config *c, char *err,
                        size_t errlen) __attribute__((warn_unused_result));

void egress_config_free(struct egress_config *c);

#endif
