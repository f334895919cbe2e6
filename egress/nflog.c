#include "nflog.h"

#include <errno.h>
#include <fcntl.h>
#include <libnetfilter_log/libnetfilter_log.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

#include "elog.h"
#include "nftgen.h"

int nflog_parse_ip(const uint8_t *p, size_t len, struct nflog_pkt *out)
{
	memset(out, 0, sizeof(*out));
	out->port = -1;
	size_t l4;
	if (len >= 20 && p[0] >> 4 == 4) {
		size_t ihl = (size_t)(p[0] & 15) * 4;
		if (ihl < 20 || ihl > len)
			return -EINVAL;
		out->dst.family = out->src.family = AF_INET;
		memcpy(out->src.a, p + 12, 4);
		memcpy(out->dst.a, p + 16, 4);
		out->proto = p[9];
		/* A later fragment has no ports. */
		if ((p[6] & 0x1f) || p[7])
			return 0;
		l4 = ihl;
	} else if (len >= 40 && p[0] >> 4 == 6) {
		out->dst.family = out->src.family = AF_INET6;
		memcpy(out->src.a, p + 8, 16);
		memcpy(out->dst.a, p + 24, 16);
		out->proto = p[6]; /* extension headers: reported as they are */
		l4 = 40;
	} else {
		return -EINVAL;
	}
	if ((out->proto == IPPROTO_TCP || out->proto == IPPROTO_UDP) && len - l4 >= 4)
		out->port = p[l4 + 2] << 8 | p[l4 + 3];
	return 0;
}

static const char *proto_name(uint8_t p)
{
	switch (p) {
	case IPPROTO_TCP:
		return "tcp";
	case IPPROTO_UDP:
		return "udp";
	case IPPROTO_ICMP:
		return "icmp";
	case IPPROTO_ICMPV6:
		return "icmpv6";
	default:
		return "ip";
	}
}

static int on_packet(struct nflog_g_handle *gh, struct nfgenmsg *m, struct nflog_data *d,
                     void *data)
{
	(void)gh;
	(void)m;
	struct egress *e = data;
	const char *prefix = nflog_get_prefix(d);
	char *payload = NULL;
	int n = nflog_get_payload(d, &payload);
	struct nflog_pkt pk;
	if (!prefix || strncmp(prefix, "cove:", 5) || n <= 0 ||
	    nflog_parse_ip((const uint8_t *)payload, (size_t)n, &pk))
		return 0;
	bool allow = !strncmp(prefix + 5, "allow:", 6);
	const char *why = strchr(prefix + 5, ':');
	why = why ? why + 1 : "";
	/* tap0's ingress guard (table netdev cove_nic): a frame it dropped. */
	bool nic = !allow && (!strcmp(why, "spoofed") || !strcmp(why, "ipv6"));
	char rule[NETRULE_TEXT_MAX + 8];
	const char *rt = NULL, *name = NULL;
	struct pin_entry *pin = NULL;
	if (!strcmp(why, "cidr"))
		rt = elog_rule_text(netpolicy_allowed_addr(&e->policy, &pk.dst, pk.port), rule,
		                    sizeof(rule));
	else if (!strcmp(why, "deny"))
		rt = elog_rule_text(netpolicy_denied_addr(&e->policy, &pk.dst, pk.port), rule,
		                    sizeof(rule));
	else if (!strcmp(why, "always"))
		rt = "always-denied";
	else if (!strcmp(why, "open"))
		rt = "open";
	else if (nic)
		rt = why[0] == 's' ? "spoofed-source" : "no-ipv6";
	else if (!strcmp(why, "pin") && pk.port > 0 &&
	         (pin = pins_find(&e->pins, &pk.dst, pk.proto, (uint16_t)pk.port))) {
		name = pin->name;
		rt = elog_rule_text(netpolicy_match_name(&e->policy, pin->name, pin->pin.port),
		                    rule, sizeof(rule));
	}
	struct elog_rec r = { .proto = proto_name(pk.proto),
		              .dst = &pk.dst,
		              .port = pk.port,
		              .name = name,
		              .rule = rt,
		              .allow = allow,
		              .via = nic ? "nic" : "direct",
		              .src = nic ? &pk.src : NULL,
		              .bytes_out = -1,
		              .bytes_in = -1 };
	elog_write(e->cfg.log_fd, &r);
	return 0;
}

static void on_readable(struct ev *ev, uint32_t events)
{
	(void)events;
	struct egress *e = (struct egress *)((char *)ev - offsetof(struct egress, nflog_ev));
	char buf[8192];
	for (int i = 0; i < 64; i++) {
		ssize_t n = recv(ev->fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n <= 0)
			return; /* ENOBUFS: lines lost under a flood; traffic is unaffected */
		nflog_handle_packet(e->nflog, buf, (int)n);
	}
}

int egress_nflog_open(struct egress *e)
{
	e->nflog = nflog_open();
	if (!e->nflog)
		return errno ? -errno : -EIO;
	struct nflog_g_handle *g = nflog_bind_group(e->nflog, NFT_LOG_GROUP);
	if (!g)
		return errno ? -errno : -EIO;
	if (nflog_set_mode(g, NFULNL_COPY_PACKET, 64) < 0)
		return errno ? -errno : -EIO;
	nflog_set_timeout(g, 0);
	nflog_set_qthresh(g, 1); /* each packet at once: the log is for people */
	nflog_callback_register(g, on_packet, e);
	e->nflog_ev.fd = nflog_fd(e->nflog);
	e->nflog_ev.fn = on_readable;
	int fl = fcntl(e->nflog_ev.fd, F_GETFL);
	if (fl < 0 || fcntl(e->nflog_ev.fd, F_SETFL, fl | O_NONBLOCK))
		return -errno;
	return loop_add(&e->loop, &e->nflog_ev, EPOLLIN);
}
