/* The host's side of every sandbox's network (net_nft.h): the nftables table
 * `inet cove`, made or refreshed in one libnftables transaction, and
 * IPv4 forwarding.  The chains are flushed and filled again in the same
 * transaction (a start never adds duplicates, and never leaves a moment
 * without the rules); the set of upstream resolvers only grows, since
 * other sandboxes may use the ones this one does not.
 *
 * That transaction is the dearest step of a sandbox's network set-up
 * (libnftables reads the host's whole ruleset first: 100-340 ms in the
 * emulated host), and every start but the first would make the same
 * table again.  So the table's identity is recorded beside the claims:
 * <base>/.net.host holds the boot id, the table's handle (a table
 * made again, after `nft flush ruleset` say, gets a new one) and the
 * upstreams added to it.  A start whose upstreams are all there, on a
 * table with that handle, only asks the kernel for the handle (one
 * nfnetlink round trip) and skips the transaction. */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <libmnl/libmnl.h>
#include <limits.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <nftables/libnftables.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "errf.h"
#include "io.h"
#include "lib/base/sandbox_net.h"
#include "lib/net/net_addr.h"
#include "lib/net/net_nft.h"
#include "netrule.h"

/* Bumped whenever host_table's rules change: a record of an older
 * version makes the table again (the handle alone would not notice). */
#define HOST_RULES_VERSION "r2"

static const char host_table[] =
    "table inet cove {\n"
    "  set dns { type ipv4_addr . inet_service; }\n"
    "  set always4 { type ipv4_addr; flags interval; }\n"
    "  chain postrouting { type nat hook postrouting priority srcnat; policy accept; }\n"
    "  chain forward { type filter hook forward priority filter; policy accept; }\n"
    "  chain input { type filter hook input priority filter; policy accept; }\n"
    "}\n"
    "flush chain inet cove postrouting\n"
    "flush chain inet cove forward\n"
    "flush chain inet cove input\n"
    "flush set inet cove always4\n"
    /* The sandboxes' /30s leave the host as the host. */
    "add rule inet cove postrouting ip saddr 100.100.0.0/16 oifname != \"cv*\" masquerade\n"
    /* From a sandbox's link only IPv4 from that link's own /30 (the
     * strict reverse-path lookup: the route back to the source must be
     * the link it came in on), whatever cove-egress let through. */
    "add rule inet cove forward iifname \"cv*\" meta nfproto != ipv4 drop\n"
    "add rule inet cove forward iifname \"cv*\" ip saddr != 100.100.0.0/16 drop\n"
    "add rule inet cove forward iifname \"cv*\" fib saddr . iif oif missing drop\n"
    /* One sandbox never reaches another. */
    "add rule inet cove forward iifname \"cv*\" oifname \"cv*\" drop\n"
    /* The always-denied ranges again (the sandbox's table has them too),
     * but the upstream resolvers, which may be private. */
    "add rule inet cove forward iifname \"cv*\" meta l4proto { tcp, udp } "
    "ip daddr . th dport @dns accept\n"
    "add rule inet cove forward iifname \"cv*\" ip daddr @always4 drop\n"
    /* Nor the host itself: replies, and DNS to the upstreams, only. */
    "add rule inet cove input iifname \"cv*\" meta nfproto != ipv4 drop\n"
    "add rule inet cove input iifname \"cv*\" ip saddr != 100.100.0.0/16 drop\n"
    "add rule inet cove input iifname \"cv*\" fib saddr . iif oif missing drop\n"
    "add rule inet cove input iifname \"cv*\" ct state established,related accept\n"
    "add rule inet cove input iifname \"cv*\" meta l4proto { tcp, udp } "
    "ip daddr . th dport @dns accept\n"
    "add rule inet cove input iifname \"cv*\" drop\n";

char *net_host_rules_text(const struct net_upstream *up, size_t nup)
{
	const struct netrule *t;
	size_t nal = net_always_denied_ranges(AF_INET, &t);
	size_t cap = sizeof(host_table) + 64 + nup * 32 + nal * 24;
	char *text = malloc(cap);
	if (!text)
		return NULL;
	size_t n = (size_t)snprintf(text, cap, "%s", host_table);
	for (size_t i = 0; i < nal; i++) {
		const uint8_t *a = t[i].addr.a;
		n += (size_t)snprintf(text + n, cap - n, "%s%u.%u.%u.%u/%u",
		                      i ? ", " : "add element inet cove always4 { ", a[0], a[1],
		                      a[2], a[3], t[i].prefix);
	}
	if (nal)
		n += (size_t)snprintf(text + n, cap - n, " }\n");
	for (size_t i = 0; i < nup; i++) {
		char a[16];
		net_ntoa(up[i].addr, a);
		n += (size_t)snprintf(text + n, cap - n, "%s%s . %u",
		                      i ? ", " : "add element inet cove dns { ", a, up[i].port);
	}
	if (nup)
		snprintf(text + n, cap - n, " }\n");
	return text;
}

/* Runs one transaction; the first line of nft's complaint into err. */
static int nft_run(const char *text, bool dry, const char *what, char *err, size_t errlen)
{
	struct nft_ctx *ctx = nft_ctx_new(NFT_CTX_DEFAULT);
	if (!ctx)
		return errf(err, errlen, -ENOMEM, "%s: cannot create an nftables context", what);
	nft_ctx_buffer_output(ctx);
	nft_ctx_buffer_error(ctx);
	if (dry)
		nft_ctx_set_dry_run(ctx, true);
	int r = nft_run_cmd_from_buffer(ctx, text);
	if (r != 0) {
		const char *e = nft_ctx_get_error_buffer(ctx);
		char line[240];
		snprintf(line, sizeof(line), "%s", e && *e ? e : "failed");
		line[strcspn(line, "\n")] = 0;
		r = errf(err, errlen, -EIO, "%s: %s", what, line);
	}
	nft_ctx_free(ctx);
	return r;
}

static int host_rules_make(const struct net_upstream *up, size_t nup, char *err, size_t errlen);

static int table_attr(const struct nlattr *a, void *data)
{
	if (mnl_attr_get_type(a) == NFTA_TABLE_HANDLE && mnl_attr_validate(a, MNL_TYPE_U64) == 0)
		*(uint64_t *)data = be64toh(mnl_attr_get_u64(a));
	return MNL_CB_OK;
}

static int table_msg(const struct nlmsghdr *nlh, void *data)
{
	if (mnl_attr_parse(nlh, sizeof(struct nfgenmsg), table_attr, data) < 0)
		return MNL_CB_ERROR;
	return MNL_CB_OK;
}

/* The handle of the host's table inet cove, 0 when it has none (or the
 * kernel did not answer within a second: the caller then makes it). */
static uint64_t host_table_handle(void)
{
	struct mnl_socket *nl = mnl_socket_open2(NETLINK_NETFILTER, SOCK_CLOEXEC);
	if (!nl)
		return 0;
	uint64_t handle = 0;
	struct timeval tv = { .tv_sec = 1 };
	char buf[MNL_SOCKET_BUFFER_SIZE];
	if (setsockopt(mnl_socket_get_fd(nl), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0 ||
	    mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) < 0)
		goto out;
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = (NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_GETTABLE;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
	nlh->nlmsg_seq = (unsigned int)time(NULL);
	struct nfgenmsg *g = mnl_nlmsg_put_extra_header(nlh, sizeof(*g));
	g->nfgen_family = NFPROTO_INET;
	g->version = NFNETLINK_V0;
	g->res_id = 0;
	mnl_attr_put_strz(nlh, NFTA_TABLE_NAME, "cove");
	unsigned int seq = nlh->nlmsg_seq, portid = mnl_socket_get_portid(nl);
	if (mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) < 0)
		goto out;
	for (;;) {
		ssize_t n = mnl_socket_recvfrom(nl, buf, sizeof(buf));
		if (n <= 0)
			break;
		uint64_t h = 0;
		int r = mnl_cb_run(buf, (size_t)n, seq, portid, table_msg, &h);
		if (h)
			handle = h;
		if (r <= MNL_CB_STOP) /* the ack, or an error (ENOENT: no table) */
			break;
	}
out:
	mnl_socket_close(nl);
	return handle;
}

static void boot_id(char out[40])
{
	out[0] = 0;
	int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	ssize_t n = read(fd, out, 39);
	close(fd);
	out[n > 0 ? n : 0] = 0;
	out[strcspn(out, "\n")] = 0;
}

/* The record's upstreams, when it names this boot and handle: how many
 * (at most cap, into rec), or -1 when it does not. */
static int record_read(const char *path, const char *boot, uint64_t handle,
                       struct net_upstream *rec, size_t cap)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return -1;
	char b[48];
	unsigned long long h;
	int n = -1;
	if (fscanf(f, "%47s %llu", b, &h) == 2 && strcmp(b, boot) == 0 && h == handle) {
		unsigned int a, port;
		n = 0;
		while ((size_t)n < cap && fscanf(f, "%u %u", &a, &port) == 2 && port <= 65535)
			rec[n++] = (struct net_upstream){ .addr = a, .port = (uint16_t)port };
	}
	fclose(f);
	return n;
}

static bool upstream_in(const struct net_upstream *u, const struct net_upstream *set, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (set[i].addr == u->addr && set[i].port == u->port)
			return true;
	return false;
}

/* Writes the record (a temporary file renamed over it); best effort: without
 * one the next start makes the table again. */
static void record_write(const char *path, const char *boot, uint64_t handle,
                         const struct net_upstream *up, size_t nup)
{
	char tmp[PATH_MAX];
	if (snprintf(tmp, sizeof(tmp), "%s.%d", path, (int)getpid()) >= (int)sizeof(tmp))
		return;
	FILE *f = fopen(tmp, "wxe");
	if (!f)
		return;
	fprintf(f, "%s %llu\n", boot, (unsigned long long)handle);
	for (size_t i = 0; i < nup; i++)
		fprintf(f, "%u %u\n", (unsigned int)up[i].addr, (unsigned int)up[i].port);
	if (fclose(f) != 0 || rename(tmp, path) < 0)
		unlink(tmp);
}

static int ip_forward_on(char *err, size_t errlen)
{
	int r = 0, fd = open("/proc/sys/net/ipv4/ip_forward", O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write_all(fd, "1\n", 2) < 0)
		r = errf(err, errlen, -errno, "cannot turn IPv4 forwarding on: %s",
		         strerror(errno));
	if (fd >= 0)
		close(fd);
	return r;
}

int net_host_rules(const char *path, const struct net_upstream *up, size_t nup, char *err,
                   size_t errlen)
{
	char boot[48];
	struct net_upstream rec[2 * NET_DNS_MAX];
	boot_id(boot);
	/* The record names the boot and the rules' version ("BOOTID/r2"). */
	if (boot[0])
		snprintf(boot + strlen(boot), sizeof(boot) - strlen(boot), "/" HOST_RULES_VERSION);
	uint64_t handle = boot[0] ? host_table_handle() : 0;
	int nrec = handle ? record_read(path, boot, handle, rec, sizeof(rec) / sizeof(rec[0])) : -1;
	bool known = nrec >= 0;
	for (size_t i = 0; known && i < nup; i++)
		known = upstream_in(&up[i], rec, (size_t)nrec);
	if (known)
		return ip_forward_on(err, errlen);
	int r = host_rules_make(up, nup, err, errlen);
	if (r < 0)
		return r;
	uint64_t now = boot[0] ? host_table_handle() : 0;
	if (now) {
		size_t n = now == handle && nrec > 0 ? (size_t)nrec : 0;
		for (size_t i = 0; i < nup && n < sizeof(rec) / sizeof(rec[0]); i++)
			if (!upstream_in(&up[i], rec, n))
				rec[n++] = up[i];
		record_write(path, boot, now, rec, n);
	}
	return ip_forward_on(err, errlen);
}

static int host_rules_make(const struct net_upstream *up, size_t nup, char *err, size_t errlen)
{
	char *text = net_host_rules_text(up, nup);
	if (!text)
		return errf(err, errlen, -ENOMEM, "out of memory");
	int r = nft_run(text, false, "the host's nftables table inet cove", err, errlen);
	free(text);
	return r;
}

int net_nft_probe(char *err, size_t errlen)
{
	return nft_run("add table inet cove_probe\n", true, "nf_tables", err, errlen);
}
