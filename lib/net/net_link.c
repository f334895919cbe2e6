/* rtnetlink requests through libmnl (net_link.h): each builds one message,
 * sends it with NLM_F_ACK and reads the kernel's answer within the
 * socket's receive deadline.  A socket works in the network namespace its
 * creating thread was in. */
#include <arpa/inet.h>
#include <errno.h>
#include <libmnl/libmnl.h>
#include <linux/if_link.h>
#include <linux/rtnetlink.h>
#include <linux/veth.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>

#include "lib/net/net_link.h"

#define NL_DEADLINE_S 2

struct mnl_socket *nl_open(void)
{
	struct mnl_socket *nl = mnl_socket_open2(NETLINK_ROUTE, SOCK_CLOEXEC);
	if (!nl)
		return NULL;
	struct timeval tv = { .tv_sec = NL_DEADLINE_S };
	if (setsockopt(mnl_socket_get_fd(nl), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0 ||
	    mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) < 0) {
		int e = errno;
		mnl_socket_close(nl);
		errno = e;
		return NULL;
	}
	return nl;
}

/* Sends nlh and waits for its acknowledgement: 0 or -errno. */
static int nl_talk(struct mnl_socket *nl, struct nlmsghdr *nlh)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	unsigned int seq = (unsigned int)time(NULL) ^ (unsigned int)nlh->nlmsg_type;
	nlh->nlmsg_flags |= NLM_F_REQUEST | NLM_F_ACK;
	nlh->nlmsg_seq = seq;
	if (mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) < 0)
		return -errno;
	unsigned int portid = mnl_socket_get_portid(nl);
	for (;;) {
		ssize_t n = mnl_socket_recvfrom(nl, buf, sizeof(buf));
		if (n < 0)
			return errno == EAGAIN ? -ETIMEDOUT : -errno;
		int r = mnl_cb_run(buf, (size_t)n, seq, portid, NULL, NULL);
		if (r < 0)
			return -errno;
		if (r == MNL_CB_STOP)
			return 0;
	}
}

static struct ifinfomsg *link_msg(char *buf, uint16_t type, uint16_t flags)
{
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = type;
	nlh->nlmsg_flags = flags;
	struct ifinfomsg *ifi = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifi));
	ifi->ifi_family = AF_UNSPEC;
	return ifi;
}

int nl_link_up(struct mnl_socket *nl, const char *ifname, const unsigned char *mac)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct ifinfomsg *ifi = link_msg(buf, RTM_NEWLINK, 0);
	struct nlmsghdr *nlh = (struct nlmsghdr *)buf;
	ifi->ifi_change = IFF_UP;
	ifi->ifi_flags = IFF_UP;
	mnl_attr_put_strz(nlh, IFLA_IFNAME, ifname);
	if (mac)
		mnl_attr_put(nlh, IFLA_ADDRESS, 6, mac);
	return nl_talk(nl, nlh);
}

int nl_addr_add(struct mnl_socket *nl, const char *ifname, uint32_t addr, unsigned int prefix)
{
	unsigned int index = if_nametoindex(ifname);
	if (!index)
		return -errno;
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = RTM_NEWADDR;
	nlh->nlmsg_flags = NLM_F_CREATE | NLM_F_REPLACE;
	struct ifaddrmsg *ifa = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifa));
	ifa->ifa_family = AF_INET;
	ifa->ifa_prefixlen = (unsigned char)prefix;
	ifa->ifa_scope = RT_SCOPE_UNIVERSE;
	ifa->ifa_index = index;
	uint32_t be = htonl(addr);
	mnl_attr_put_u32(nlh, IFA_LOCAL, be);
	mnl_attr_put_u32(nlh, IFA_ADDRESS, be);
	return nl_talk(nl, nlh);
}

int nl_route_default(struct mnl_socket *nl, uint32_t gw)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = RTM_NEWROUTE;
	nlh->nlmsg_flags = NLM_F_CREATE | NLM_F_REPLACE;
	struct rtmsg *rtm = mnl_nlmsg_put_extra_header(nlh, sizeof(*rtm));
	rtm->rtm_family = AF_INET;
	rtm->rtm_dst_len = 0;
	rtm->rtm_table = RT_TABLE_MAIN;
	rtm->rtm_protocol = RTPROT_STATIC;
	rtm->rtm_scope = RT_SCOPE_UNIVERSE;
	rtm->rtm_type = RTN_UNICAST;
	mnl_attr_put_u32(nlh, RTA_GATEWAY, htonl(gw));
	return nl_talk(nl, nlh);
}

int nl_veth_add(struct mnl_socket *nl, const char *host, const char *peer, int nsfd)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	link_msg(buf, RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL);
	struct nlmsghdr *nlh = (struct nlmsghdr *)buf;
	mnl_attr_put_strz(nlh, IFLA_IFNAME, host);
	struct nlattr *info = mnl_attr_nest_start(nlh, IFLA_LINKINFO);
	mnl_attr_put_strz(nlh, IFLA_INFO_KIND, "veth");
	struct nlattr *data = mnl_attr_nest_start(nlh, IFLA_INFO_DATA);
	struct nlattr *p = mnl_attr_nest_start(nlh, VETH_INFO_PEER);
	/* The peer's own ifinfomsg, then its attributes. */
	struct ifinfomsg *pi = mnl_nlmsg_put_extra_header(nlh, sizeof(*pi));
	pi->ifi_family = AF_UNSPEC;
	mnl_attr_put_strz(nlh, IFLA_IFNAME, peer);
	mnl_attr_put_u32(nlh, IFLA_NET_NS_FD, (uint32_t)nsfd);
	mnl_attr_nest_end(nlh, p);
	mnl_attr_nest_end(nlh, data);
	mnl_attr_nest_end(nlh, info);
	return nl_talk(nl, nlh);
}

int nl_link_del(struct mnl_socket *nl, const char *ifname)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	link_msg(buf, RTM_DELLINK, 0);
	struct nlmsghdr *nlh = (struct nlmsghdr *)buf;
	mnl_attr_put_strz(nlh, IFLA_IFNAME, ifname);
	int r = nl_talk(nl, nlh);
	return r == -ENODEV ? 0 : r;
}
