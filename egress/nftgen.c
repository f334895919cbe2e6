#include "nftgen.h"

#include <arpa/inet.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

typedef unsigned __int128 u128;

struct sb {
	char *p;
	size_t len, cap;
	bool oom;
};

__attribute__((format(printf, 2, 3))) static void sb_printf(struct sb *b, const char *fmt, ...)
{
	if (b->oom)
		return;
	for (;;) {
		va_list ap;
		va_start(ap, fmt);
		int n = vsnprintf(b->p ? b->p + b->len : NULL, b->p ? b->cap - b->len : 0, fmt, ap);
		va_end(ap);
		if (n < 0) {
			b->oom = true;
			return;
		}
		if (b->p && (size_t)n < b->cap - b->len) {
			b->len += (size_t)n;
			return;
		}
		size_t want = b->cap ? b->cap * 2 : 4096;
		while (want < b->len + (size_t)n + 1)
			want *= 2;
		char *g = realloc(b->p, want);
		if (!g) {
			b->oom = true;
			return;
		}
		b->p = g;
		b->cap = want;
	}
}

static char *sb_done(struct sb *b)
{
	if (b->oom) {
		free(b->p);
		return NULL;
	}
	return b->p;
}

static int alen(int family)
{
	return family == AF_INET ? 4 : 16;
}

static u128 to_u(const struct netaddr *a)
{
	u128 v = 0;
	for (int i = 0; i < alen(a->family); i++)
		v = v << 8 | a->a[i];
	return v;
}

static u128 umax(int family)
{
	return family == AF_INET ? (u128)0xffffffffu : ~(u128)0;
}

static void put_addr(struct sb *b, int family, u128 v)
{
	struct netaddr a = { .family = family };
	for (int i = alen(family) - 1; i >= 0; i--) {
		a.a[i] = (uint8_t)v;
		v >>= 8;
	}
	char t[INET6_ADDRSTRLEN];
	sb_printf(b, "%s", netaddr_format(&a, t, sizeof(t)));
}

static void put_range(struct sb *b, int family, u128 lo, u128 hi)
{
	put_addr(b, family, lo);
	if (hi != lo) {
		sb_printf(b, "-");
		put_addr(b, family, hi);
	}
}

struct ivl {
	u128 lo, hi;
	uint16_t plo, phi;
};

static void rule_ivl(const struct netrule *r, struct ivl *v)
{
	unsigned bits = (unsigned)alen(r->addr.family) * 8;
	u128 host = r->prefix >= bits ? 0
	                              : (r->prefix == 0 ? umax(r->addr.family)
	                                                : (((u128)1 << (bits - r->prefix)) - 1));
	v->lo = to_u(&r->addr);
	v->hi = v->lo | host;
	v->plo = r->port_lo;
	v->phi = r->port_hi;
}

static int cmp_ivl(const void *a, const void *b)
{
	const struct ivl *x = a, *y = b;
	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	return x->plo < y->plo ? -1 : x->plo > y->plo;
}

static int cmp_u(const void *a, const void *b)
{
	u128 x = *(const u128 *)a, y = *(const u128 *)b;
	return x < y ? -1 : x > y;
}

/* Collect the @family address rules of @list with (@ported) or without a port. */
static size_t collect(const struct netrule *list, size_t n, int family, bool ported,
                      struct ivl *out)
{
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (list[i].kind == NETRULE_CIDR && list[i].addr.family == family &&
		    list[i].has_port == ported)
			rule_ivl(&list[i], &out[k++]);
	return k;
}

/* Elements of an address-only interval set: sorted, merged. */
static void put_addr_elems(struct sb *b, int family, struct ivl *v, size_t n)
{
	if (!n)
		return;
	qsort(v, n, sizeof(*v), cmp_ivl);
	sb_printf(b, " elements = { ");
	u128 lo = v[0].lo, hi = v[0].hi;
	bool first = true;
	for (size_t i = 1; i <= n; i++) {
		if (i < n && (v[i].lo <= hi || (hi != umax(family) && v[i].lo == hi + 1))) {
			if (v[i].hi > hi)
				hi = v[i].hi;
			continue;
		}
		sb_printf(b, "%s", first ? "" : ", ");
		put_range(b, family, lo, hi);
		first = false;
		if (i < n) {
			lo = v[i].lo;
			hi = v[i].hi;
		}
	}
	sb_printf(b, " };");
}

/* Elements of an addr . port interval set: the plane cut into address
 * segments (every rule's start and end+1), each with its merged ports. */
static void put_port_elems(struct sb *b, int family, struct ivl *v, size_t n)
{
	if (!n)
		return;
	u128 *st = malloc(2 * n * sizeof(*st));
	struct ivl *ports = malloc(n * sizeof(*ports));
	if (!st || !ports) {
		free(st);
		free(ports);
		b->oom = true;
		return;
	}
	size_t ns = 0;
	for (size_t i = 0; i < n; i++) {
		st[ns++] = v[i].lo;
		if (v[i].hi != umax(family))
			st[ns++] = v[i].hi + 1;
	}
	qsort(st, ns, sizeof(*st), cmp_u);
	bool first = true;
	sb_printf(b, " elements = { ");
	for (size_t i = 0; i < ns; i++) {
		if (i && st[i] == st[i - 1])
			continue;
		u128 lo = st[i], hi = umax(family);
		for (size_t j = i + 1; j < ns; j++)
			if (st[j] != lo) {
				hi = st[j] - 1;
				break;
			}
		size_t np = 0;
		for (size_t j = 0; j < n; j++)
			if (v[j].lo <= lo && v[j].hi >= hi) {
				ports[np] = v[j];
				ports[np].lo = ports[np].plo; /* sort by port */
				np++;
			}
		if (!np)
			continue;
		qsort(ports, np, sizeof(*ports), cmp_ivl);
		unsigned plo = ports[0].plo, phi = ports[0].phi;
		for (size_t j = 1; j <= np; j++) {
			if (j < np && ports[j].plo <= phi + 1u) {
				if (ports[j].phi > phi)
					phi = ports[j].phi;
				continue;
			}
			sb_printf(b, "%s", first ? "" : ", ");
			put_range(b, family, lo, hi);
			if (plo == phi)
				sb_printf(b, " . %u", plo);
			else
				sb_printf(b, " . %u-%u", plo, phi);
			first = false;
			if (j < np) {
				plo = ports[j].plo;
				phi = ports[j].phi;
			}
		}
	}
	sb_printf(b, " };");
	free(st);
	free(ports);
}

static void put_set(struct sb *b, const char *name, int family, bool ported,
                    const struct netrule *list, size_t n)
{
	struct ivl *v = n ? malloc(n * sizeof(*v)) : NULL;
	if (n && !v) {
		b->oom = true;
		return;
	}
	size_t k = collect(list, n, family, ported, v);
	const char *t = family == AF_INET ? "ipv4_addr" : "ipv6_addr";
	sb_printf(b, "\tset %s { type %s%s; flags interval;", name, t,
	          ported ? " . inet_service" : "");
	if (ported)
		put_port_elems(b, family, v, k);
	else
		put_addr_elems(b, family, v, k);
	sb_printf(b, " }\n");
	free(v);
}

static void put_always(struct sb *b, const char *name, int family, const struct egress_config *c)
{
	const struct netrule *t;
	size_t n = net_always_denied_ranges(family, &t);
	struct ivl v[64];
	size_t k = 0;
	for (size_t i = 0; i < n && k < 64; i++)
		rule_ivl(&t[i], &v[k++]);
	for (size_t i = 0; i < c->nhosts && k < 64; i++)
		if (c->hosts[i].family == family) {
			v[k].lo = v[k].hi = to_u(&c->hosts[i]);
			k++;
		}
	sb_printf(b, "\tset %s { type %s; flags interval;", name,
	          family == AF_INET ? "ipv4_addr" : "ipv6_addr");
	put_addr_elems(b, family, v, k);
	sb_printf(b, " }\n");
}

static void put_pin_elem(struct sb *b, const struct nft_pin *p, bool timeout)
{
	char t[INET6_ADDRSTRLEN];
	sb_printf(b, "%s . %u . %u", netaddr_format(&p->addr, t, sizeof(t)), p->proto, p->port);
	if (timeout)
		sb_printf(b, " timeout %us", p->timeout_s);
}

/* The NIC's guard, table netdev NFT_NIC_TABLE: its ingress hook on tap0
 * runs before anything else sees a frame (conntrack, routing, the inet
 * table), so a frame the guest forged never creates a conntrack entry or
 * reaches a socket.  Only the guest's MAC, ARP naming the guest's MAC and
 * address, and IPv4 from the guest's address pass; IPv6 (the sandbox has
 * none), VLAN tags and other ethertypes are dropped.  Drops are counted,
 * and logged to NFLOG at most 10 a second (a flood cannot fill the log). */
static void put_nic(struct sb *b, const struct egress_config *c)
{
	char mac[18], guest[INET6_ADDRSTRLEN];
	const uint8_t *m = c->guest_mac;
	snprintf(mac, sizeof(mac), "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4],
	         m[5]);
	netaddr_format(&c->guest, guest, sizeof(guest));
	sb_printf(b, "table netdev " NFT_NIC_TABLE "\ndelete table netdev " NFT_NIC_TABLE "\n");
	sb_printf(b,
	          "table netdev " NFT_NIC_TABLE " {\n"
	          "\tchain spoofed {\n"
	          "\t\tcounter\n"
	          "\t\tlimit rate 10/second burst 20 packets log prefix \"cove:deny:spoofed\" "
	          "group %d\n"
	          "\t\tdrop\n"
	          "\t}\n"
	          "\tchain ipv6 {\n"
	          "\t\tcounter\n"
	          "\t\tlimit rate 10/second burst 20 packets log prefix \"cove:deny:ipv6\" "
	          "group %d\n"
	          "\t\tdrop\n"
	          "\t}\n",
	          NFT_LOG_GROUP, NFT_LOG_GROUP);
	sb_printf(b,
	          "\tchain ingress {\n"
	          "\t\ttype filter hook ingress device \"%s\" priority -500; policy drop;\n"
	          "\t\tether saddr != %s jump spoofed\n"
	          "\t\tether type arp arp htype 1 arp ptype 0x0800 arp hlen 6 arp plen 4 "
	          "arp saddr ether %s arp saddr ip %s accept\n"
	          "\t\tether type arp jump spoofed\n"
	          "\t\tether type ip ip saddr %s accept\n"
	          "\t\tether type ip jump spoofed\n"
	          "\t\tether type ip6 jump ipv6\n"
	          "\t\tcounter drop\n"
	          "\t}\n"
	          "}\n",
	          c->tap, mac, mac, guest, guest);
}

char *nftgen_ruleset(const struct egress_config *c, const struct netpolicy *p,
                     const struct nft_pin *pins, size_t npins)
{
	struct sb b = { 0 };
	char gw[INET6_ADDRSTRLEN], up[INET6_ADDRSTRLEN], guest[INET6_ADDRSTRLEN];
	netaddr_format(&c->gateway, gw, sizeof(gw));
	netaddr_format(&c->guest, guest, sizeof(guest));
	const char *tap = c->tap, *upl = c->uplink;
	/* The allow lists apply only in rules and open mode. */
	size_t nallow = p->mode == NETPOLICY_NONE ? 0 : p->nallow;

	sb_printf(&b, "table inet " NFT_TABLE "\ndelete table inet " NFT_TABLE "\n");
	sb_printf(&b, "table inet " NFT_TABLE " {\n");
	put_always(&b, "always4", AF_INET, c);
	put_always(&b, "always6", AF_INET6, c);
	put_set(&b, "deny4", AF_INET, false, p->deny, p->ndeny);
	put_set(&b, "deny4p", AF_INET, true, p->deny, p->ndeny);
	put_set(&b, "deny6", AF_INET6, false, p->deny, p->ndeny);
	put_set(&b, "deny6p", AF_INET6, true, p->deny, p->ndeny);
	put_set(&b, "allow4", AF_INET, false, p->allow, nallow);
	put_set(&b, "allow4p", AF_INET, true, p->allow, nallow);
	put_set(&b, "allow6", AF_INET6, false, p->allow, nallow);
	put_set(&b, "allow6p", AF_INET6, true, p->allow, nallow);
	sb_printf(&b, "\tset pinned { type ipv4_addr . inet_proto . inet_service; flags timeout;");
	bool any = false;
	for (size_t i = 0; i < npins; i++) {
		if (pins[i].addr.family != AF_INET || !pins[i].timeout_s)
			continue;
		sb_printf(&b, "%s", any ? ", " : " elements = { ");
		put_pin_elem(&b, &pins[i], true);
		any = true;
	}
	sb_printf(&b, "%s }\n", any ? " }" : "");
	sb_printf(&b, "\tset upstream { type ipv4_addr . inet_proto . inet_service; elements = { ");
	for (size_t i = 0; i < c->nupstream; i++) {
		netaddr_format(&c->upstream[i], up, sizeof(up));
		sb_printf(&b, "%s%s . 17 . %u, %s . 6 . %u", i ? ", " : "", up, c->upstream_port[i],
		          up, c->upstream_port[i]);
	}
	sb_printf(&b, " } }\n");

	/* A second guard behind the NIC's (put_nic), before conntrack. */
	sb_printf(&b,
	          "\tchain guard {\n"
	          "\t\ttype filter hook prerouting priority raw; policy accept;\n"
	          "\t\tiifname != \"%s\" return\n"
	          "\t\tip saddr != %s drop\n"
	          "\t\tmeta nfproto != ipv4 drop\n"
	          "\t}\n",
	          tap, guest);
	/* Guest TCP 80/443 goes to the proxy unless it is a direct path. */
	sb_printf(&b,
	          "\tchain to_proxy {\n"
	          "\t\ttcp dport 80 redirect to :%d\n"
	          "\t\ttcp dport 443 redirect to :%d\n"
	          "\t}\n",
	          NFT_PROXY_HTTP, NFT_PROXY_TLS);
	sb_printf(&b,
	          "\tchain prerouting {\n"
	          "\t\ttype nat hook prerouting priority dstnat; policy accept;\n"
	          "\t\tiifname != \"%s\" return\n"
	          "\t\tmeta nfproto != ipv4 return\n"
	          "\t\tmeta l4proto != 6 return\n"
	          "\t\ttcp dport != { 80, 443 } return\n",
	          tap);
	if (p->mode == NETPOLICY_OPEN)
		sb_printf(&b, "\t\treturn\n");
	sb_printf(&b, "\t\tip daddr @always4 jump to_proxy\n"
	              "\t\tip daddr @deny4 jump to_proxy\n"
	              "\t\tip daddr . tcp dport @deny4p jump to_proxy\n"
	              "\t\tip daddr @allow4 return\n"
	              "\t\tip daddr . tcp dport @allow4p return\n"
	              "\t\tjump to_proxy\n"
	              "\t}\n");
	/* Fast refusals: a reset for TCP, admin-prohibited for the rest. */
	sb_printf(&b, "\tchain refuse {\n"
	              "\t\tmeta l4proto 6 reject with tcp reset\n"
	              "\t\treject with icmpx type admin-prohibited\n"
	              "\t}\n");
	sb_printf(&b,
	          "\tchain input {\n"
	          "\t\ttype filter hook input priority filter; policy drop;\n"
	          "\t\tct state established,related accept\n"
	          "\t\tiifname \"lo\" accept\n"
	          "\t\tiifname != \"%s\" drop\n"
	          "\t\tip saddr %s ip daddr %s udp dport 53 accept\n"
	          "\t\tip saddr %s ip daddr %s tcp dport { 53, %d, %d } accept\n"
	          "\t\tjump refuse\n"
	          "\t}\n",
	          tap, guest, gw, guest, gw, NFT_PROXY_HTTP, NFT_PROXY_TLS);
	sb_printf(&b,
	          "\tchain forward {\n"
	          "\t\ttype filter hook forward priority filter; policy drop;\n"
	          "\t\tct state established,related accept\n"
	          "\t\tiifname != \"%s\" drop\n"
	          "\t\tct state invalid drop\n",
	          tap);
	/* Each verdict logs to NFLOG (egress/nflog.c writes the line). */
	static const char *const rules[][2] = {
		{ "ip daddr @always4", "deny:always" },
		{ "ip6 daddr @always6", "deny:always" },
		{ "ip daddr @deny4", "deny:deny" },
		{ "ip6 daddr @deny6", "deny:deny" },
		{ "meta l4proto { 6, 17 } ip daddr . th dport @deny4p", "deny:deny" },
		{ "meta l4proto { 6, 17 } ip6 daddr . th dport @deny6p", "deny:deny" },
		{ "ip daddr @allow4", "allow:cidr" },
		{ "ip6 daddr @allow6", "allow:cidr" },
		{ "meta l4proto { 6, 17 } ip daddr . th dport @allow4p", "allow:cidr" },
		{ "meta l4proto { 6, 17 } ip6 daddr . th dport @allow6p", "allow:cidr" },
		{ "meta l4proto { 6, 17 } ip daddr . meta l4proto . th dport @pinned",
		  "allow:pin" },
	};
	for (size_t i = 0; i < sizeof(rules) / sizeof(rules[0]); i++)
		sb_printf(&b, "\t\t%s log prefix \"cove:%s\" group %d %s\n", rules[i][0],
		          rules[i][1], NFT_LOG_GROUP,
		          !strncmp(rules[i][1], "allow", 5) ? "accept" : "jump refuse");
	if (p->mode == NETPOLICY_OPEN)
		sb_printf(&b,
		          "\t\tmeta nfproto ipv4 log prefix \"cove:allow:open\" group %d accept\n",
		          NFT_LOG_GROUP);
	sb_printf(&b, "\t\tlog prefix \"cove:deny:default\" group %d jump refuse\n\t}\n",
	          NFT_LOG_GROUP);
	/* cove-egress's own traffic: the guest (publish), the upstream
	 * resolvers, and nothing always denied.  Only up0's address leaves
	 * up0: a reply to a query that claimed a foreign source (were one to
	 * get past the NIC's chain) would leave with the gateway's. */
	sb_printf(&b, "\tchain output {\n"
	              "\t\ttype filter hook output priority filter; policy accept;\n"
	              "\t\toifname \"lo\" accept\n");
	if (c->uplink_addr.family)
		sb_printf(&b, "\t\toifname \"%s\" ip saddr != %s drop\n", upl,
		          netaddr_format(&c->uplink_addr, up, sizeof(up)));
	else /* an older launcher: at least never the gateway's */
		sb_printf(&b, "\t\toifname \"%s\" ip saddr %s drop\n", upl, gw);
	sb_printf(&b,
	          "\t\toifname \"%s\" accept\n"
	          "\t\tmeta l4proto { 6, 17 } ip daddr . meta l4proto . th dport @upstream accept\n"
	          "\t\tip daddr @always4 jump refuse\n"
	          "\t\tmeta nfproto ipv6 jump refuse\n"
	          "\t}\n"
	          "\tchain postrouting {\n"
	          "\t\ttype nat hook postrouting priority srcnat; policy accept;\n"
	          "\t\toifname \"%s\" masquerade\n"
	          "\t}\n"
	          "}\n",
	          tap, upl);
	put_nic(&b, c);
	return sb_done(&b);
}

char *nftgen_pins(const struct nft_pin *pins, size_t npins, int replace)
{
	struct sb b = { 0 };
	for (size_t i = 0; i < npins; i++) {
		if (pins[i].addr.family != AF_INET)
			continue;
		if (replace) {
			sb_printf(&b, "delete element inet " NFT_TABLE " pinned { ");
			put_pin_elem(&b, &pins[i], false);
			sb_printf(&b, " }\n");
		}
		sb_printf(&b, "add element inet " NFT_TABLE " pinned { ");
		put_pin_elem(&b, &pins[i], true);
		sb_printf(&b, " }\n");
	}
	if (!b.p)
		sb_printf(&b, "%s", "");
	return sb_done(&b);
}
