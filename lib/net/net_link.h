/* rtnetlink requests (net_link.c, libmnl): links, addresses, routes, the
 * veth. */
#ifndef COVE_NET_LINK_H
#define COVE_NET_LINK_H

#include <stdint.h>

struct mnl_socket;

/* A NETLINK_ROUTE socket in the calling thread's network namespace, with
 * a receive deadline. */
struct mnl_socket *nl_open(void);

/* Sets link ifname up (and its MAC when mac is not NULL). */
int nl_link_up(struct mnl_socket *nl, const char *ifname, const unsigned char *mac);
/* Adds an IPv4 address addr/prefix (host order) to ifname. */
int nl_addr_add(struct mnl_socket *nl, const char *ifname, uint32_t addr, unsigned int prefix);
/* Adds the default route via gw (host order). */
int nl_route_default(struct mnl_socket *nl, uint32_t gw);
/* Creates the veth pair host (here) / peer (moved into the namespace
 * nsfd). */
int nl_veth_add(struct mnl_socket *nl, const char *host, const char *peer, int nsfd);
/* Deletes link ifname; 0 also when there is none. */
int nl_link_del(struct mnl_socket *nl, const char *ifname);

#endif
