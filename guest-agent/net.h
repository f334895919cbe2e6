/* The guest's network, from the kernel command line: libcove adds
 * cove.net=ADDRESS/PREFIX,GATEWAY,RESOLVER for a sandbox with a NIC. */
#ifndef COVE_AGENT_NET_H
#define COVE_AGENT_NET_H

#include <netinet/in.h>
#include <stdint.h>

#define AGENT_NET_IF      "eth0"
#define AGENT_RESOLV_CONF "/etc/resolv.conf"

struct agent_net {
	struct in_addr addr, gateway, resolver;
	unsigned int prefix; /* 1-32 */
};

/* Parses a cove.net= value.  0, or -EINVAL for anything but three IPv4
 * addresses in that shape with the gateway inside the address's subnet. */
int agent_net_parse(const char *value, struct agent_net *n) __attribute__((warn_unused_result));

/* Writes resolv.conf (nameserver RESOLVER only) at path through a temp file
 * and rename, so that a symlink there (systemd-resolved's) is replaced, not
 * followed.  0 or -errno. */
int agent_net_write_resolv(const char *path, const struct agent_net *n)
    __attribute__((warn_unused_result));

#define AGENT_NET_VALUE_MAX 64 /* the longest cove.net= value */

/* With a cove.net= value: brings AGENT_NET_IF up with the address, adds the
 * default route through the gateway and writes AGENT_RESOLV_CONF.
 * Failures are logged to stderr and skipped. */
void agent_net_setup(const char *value);

#endif
