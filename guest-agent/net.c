/* The guest's one NIC: address, default route and resolver (net.h). */
#include "net.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <net/route.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "file.h"

static int parse_addr(const char *s, size_t len, struct in_addr *a)
{
	char buf[INET_ADDRSTRLEN];
	if (len == 0 || len >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, s, len);
	buf[len] = 0;
	return inet_pton(AF_INET, buf, a) == 1 ? 0 : -EINVAL;
}

int agent_net_parse(const char *value, struct agent_net *n)
{
	memset(n, 0, sizeof(*n));
	const char *slash = strchr(value, '/');
	const char *c1 = slash ? strchr(slash, ',') : NULL;
	const char *c2 = c1 ? strchr(c1 + 1, ',') : NULL;
	if (!c2 || strchr(c2 + 1, ','))
		return -EINVAL;
	if (parse_addr(value, (size_t)(slash - value), &n->addr) < 0 ||
	    parse_addr(c1 + 1, (size_t)(c2 - c1 - 1), &n->gateway) < 0 ||
	    parse_addr(c2 + 1, strlen(c2 + 1), &n->resolver) < 0)
		return -EINVAL;
	unsigned int prefix = 0;
	const char *p = slash + 1;
	if (p == c1 || c1 - p > 2)
		return -EINVAL;
	for (; p < c1; p++) {
		if (*p < '0' || *p > '9')
			return -EINVAL;
		prefix = prefix * 10 + (unsigned int)(*p - '0');
	}
	if (prefix < 1 || prefix > 32)
		return -EINVAL;
	n->prefix = prefix;
	uint32_t mask = prefix == 32 ? 0xffffffffu : ~(0xffffffffu >> prefix);
	if ((ntohl(n->addr.s_addr) & mask) != (ntohl(n->gateway.s_addr) & mask) ||
	    n->addr.s_addr == n->gateway.s_addr)
		return -EINVAL;
	return 0;
}

int agent_net_write_resolv(const char *path, const struct agent_net *n)
{
	char ip[INET_ADDRSTRLEN], text[96];
	if (!inet_ntop(AF_INET, &n->resolver, ip, sizeof(ip)))
		return -EINVAL;
	int len = snprintf(text, sizeof(text), "# written by cove-agent\nnameserver %s\n", ip);
	const char *parts[] = { text };
	const size_t lens[] = { (size_t)len };
	return agent_write_file(path, parts, lens, 1);
}

static void sin_set(struct sockaddr *sa, struct in_addr a)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_addr = a };
	memcpy(sa, &sin, sizeof(sin));
}

static void fail(const char *what)
{
	dprintf(2, "cove-agent: network: %s: %s\n", what, strerror(errno));
}

/* The sandbox's network is IPv4 only, and the host drops every IPv6 frame
 * of the guest as a deny line in egress.log: a stack that sent router
 * solicitations, DAD and MLD on link-up would fill that log with noise.
 * Before the link comes up, so not one is sent.  No IPv6 in the kernel
 * (ENOENT) is as good. */
static void ipv6_off(void)
{
	int fd =
	    open("/proc/sys/net/ipv6/conf/" AGENT_NET_IF "/disable_ipv6", O_WRONLY | O_CLOEXEC);
	if (fd < 0) {
		if (errno != ENOENT)
			fail("disable IPv6 on " AGENT_NET_IF);
		return;
	}
	if (write(fd, "1", 1) != 1)
		fail("disable IPv6 on " AGENT_NET_IF);
	close(fd);
}

void agent_net_setup(const char *value)
{
	struct agent_net n;
	if (agent_net_parse(value, &n) < 0) {
		dprintf(2, "cove-agent: network: bad cove.net='%s'\n", value);
		return;
	}
	ipv6_off();
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0) {
		fail("socket");
		return;
	}
	struct ifreq ifr = { 0 };
	strcpy(ifr.ifr_name, AGENT_NET_IF);
	sin_set(&ifr.ifr_addr, n.addr);
	if (ioctl(s, SIOCSIFADDR, &ifr) < 0)
		fail("set address of " AGENT_NET_IF);
	struct in_addr mask = { htonl(n.prefix == 32 ? 0xffffffffu : ~(0xffffffffu >> n.prefix)) };
	sin_set(&ifr.ifr_netmask, mask);
	if (ioctl(s, SIOCSIFNETMASK, &ifr) < 0)
		fail("set netmask of " AGENT_NET_IF);
	if (ioctl(s, SIOCGIFFLAGS, &ifr) == 0) {
		ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
		if (ioctl(s, SIOCSIFFLAGS, &ifr) < 0)
			fail("bring up " AGENT_NET_IF);
	} else {
		fail("flags of " AGENT_NET_IF);
	}
	struct rtentry rt = { 0 };
	sin_set(&rt.rt_dst, (struct in_addr){ 0 });
	sin_set(&rt.rt_genmask, (struct in_addr){ 0 });
	sin_set(&rt.rt_gateway, n.gateway);
	rt.rt_flags = RTF_UP | RTF_GATEWAY;
	rt.rt_dev = ifr.ifr_name;
	if (ioctl(s, SIOCADDRT, &rt) < 0 && errno != EEXIST)
		fail("default route");
	close(s);
	int r = agent_net_write_resolv(AGENT_RESOLV_CONF, &n);
	if (r < 0) {
		errno = -r;
		fail("write " AGENT_RESOLV_CONF);
	}
}
