/* The host's side of every sandbox's network (net.h): the nftables table
 * `inet cove`, made or refreshed in one libnftables transaction, and
 * IPv4 forwarding.  The chains are flushed and filled again in the same
 * transaction (a start never adds duplicates, and never leaves a moment
 * without the rules); the set of upstream resolvers only grows, since
 * other sandboxes may use the ones this one does not. */
#include <errno.h>
#include <fcntl.h>
#include <nftables/libnftables.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "errf.h"
#include "io.h"
#include "net.h"

static const char host_table[] =
    "table inet cove {\n"
    "  set dns { type ipv4_addr . inet_service; }\n"
    "  chain postrouting { type nat hook postrouting priority srcnat; policy accept; }\n"
    "  chain forward { type filter hook forward priority filter; policy accept; }\n"
    "  chain input { type filter hook input priority filter; policy accept; }\n"
    "}\n"
    "flush chain inet cove postrouting\n"
    "flush chain inet cove forward\n"
    "flush chain inet cove input\n"
    /* The sandboxes' /30s leave the host as the host. */
    "add rule inet cove postrouting ip saddr 100.100.0.0/16 oifname != \"cv*\" masquerade\n"
    /* One sandbox never reaches another. */
    "add rule inet cove forward iifname \"cv*\" oifname \"cv*\" drop\n"
    /* Nor the host itself: replies, and DNS to the upstreams, only. */
    "add rule inet cove input iifname \"cv*\" ct state established,related accept\n"
    "add rule inet cove input iifname \"cv*\" meta l4proto { tcp, udp } "
    "ip daddr . th dport @dns accept\n"
    "add rule inet cove input iifname \"cv*\" drop\n";

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

int net_host_rules(const struct net_upstream *up, size_t nup, char *err, size_t errlen)
{
	size_t cap = sizeof(host_table) + 64 + nup * 32;
	char *text = malloc(cap);
	if (!text)
		return errf(err, errlen, -ENOMEM, "out of memory");
	size_t n = (size_t)snprintf(text, cap, "%s", host_table);
	for (size_t i = 0; i < nup; i++) {
		char a[16];
		net_ntoa(up[i].addr, a);
		n += (size_t)snprintf(text + n, cap - n, "%s%s . %u",
		                      i ? ", " : "add element inet cove dns { ", a, up[i].port);
	}
	if (nup)
		snprintf(text + n, cap - n, " }\n");
	int r = nft_run(text, false, "the host's nftables table inet cove", err, errlen);
	free(text);
	if (r < 0)
		return r;
	int fd = open("/proc/sys/net/ipv4/ip_forward", O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write_all(fd, "1\n", 2) < 0) {
		r = errf(err, errlen, -errno, "cannot turn IPv4 forwarding on: %s",
		         strerror(errno));
	}
	if (fd >= 0)
		close(fd);
	return r;
}

int net_nft_probe(char *err, size_t errlen)
{
	return nft_run("add table inet cove_probe\n", true, "nf_tables", err, errlen);
}
