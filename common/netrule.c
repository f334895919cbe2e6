/* Egress rules: parsing, canonical text, matching and the policy's JSON.
 * Every input here comes from a user (the CLI) or a ctl client; errors are
 * one line naming the rule. */
#include "netrule.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "errf.h"

#define SHOWN 80 /* how much of a bad rule an error quotes */

static int addr_len(int family)
{
	return family == AF_INET ? 4 : 16;
}

/* Are the bits of @a past @prefix all zero? */
static bool host_bits_zero(const struct netaddr *a, unsigned prefix)
{
	int n = addr_len(a->family);
	for (int i = 0; i < n; i++) {
		unsigned lo = (unsigned)i * 8;
		uint8_t mask;
		if (prefix >= lo + 8)
			mask = 0;
		else if (prefix <= lo)
			mask = 0xff;
		else
			mask = (uint8_t)(0xffu >> (prefix - lo));
		if (a->a[i] & mask)
			return false;
	}
	return true;
}

static bool prefix_covers(const struct netaddr *net, unsigned prefix, const struct netaddr *a)
{
	if (net->family != a->family)
		return false;
	unsigned full = prefix / 8, rest = prefix % 8;
	if (memcmp(net->a, a->a, full) != 0)
		return false;
	if (rest == 0)
		return true;
	uint8_t mask = (uint8_t)(0xffu << (8 - rest));
	return (net->a[full] & mask) == (a->a[full] & mask);
}

int netaddr_parse(const char *s, struct netaddr *a)
{
	memset(a, 0, sizeof(*a));
	if (inet_pton(AF_INET, s, a->a) == 1) {
		a->family = AF_INET;
		return 0;
	}
	if (inet_pton(AF_INET6, s, a->a) == 1) {
		a->family = AF_INET6;
		return 0;
	}
	return -EINVAL;
}

const char *netaddr_format(const struct netaddr *a, char *buf, size_t len)
{
	if (!inet_ntop(a->family, a->a, buf, (socklen_t)len))
		snprintf(buf, len, "?");
	return buf;
}

/* A decimal number 0..max of at most 5 digits, the whole of [s, e). */
static int parse_num(const char *s, const char *e, unsigned max, unsigned *out)
{
	if (s == e || e - s > 5)
		return -EINVAL;
	unsigned v = 0;
	for (const char *p = s; p < e; p++) {
		if (*p < '0' || *p > '9')
			return -EINVAL;
		v = v * 10 + (unsigned)(*p - '0');
	}
	if (v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

/* PORT or LO-HI (1..65535, LO <= HI) into @r. */
static int parse_ports(const char *s, struct netrule *r)
{
	const char *dash = strchr(s, '-');
	const char *end = s + strlen(s);
	unsigned lo, hi;
	if (dash) {
		if (parse_num(s, dash, 65535, &lo) || parse_num(dash + 1, end, 65535, &hi))
			return -EINVAL;
	} else {
		if (parse_num(s, end, 65535, &lo))
			return -EINVAL;
		hi = lo;
	}
	if (lo == 0 || hi < lo)
		return -EINVAL;
	r->has_port = true;
	r->port_lo = (uint16_t)lo;
	r->port_hi = (uint16_t)hi;
	return 0;
}

int netname_normalize(const char *in, char *out, size_t outlen)
{
	size_t n = strlen(in);
	if (n > 0 && in[n - 1] == '.')
		n--;
	if (n == 0 || n > NETRULE_NAME_MAX || n + 1 > outlen)
		return -EINVAL;
	size_t label = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)in[i];
		if (c == '.') {
			if (label == 0 || out[i - 1] == '-')
				return -EINVAL;
			label = 0;
			out[i] = '.';
			continue;
		}
		c = (unsigned char)tolower(c);
		if (!(isalnum(c) || c == '-' || c == '_') || c > 127)
			return -EINVAL;
		if (c == '-' && label == 0)
			return -EINVAL;
		if (++label > 63)
			return -EINVAL;
		out[i] = (char)c;
	}
	if (label == 0 || out[n - 1] == '-')
		return -EINVAL; /* an empty last label ("a.."), or one ending in '-' */
	out[n] = '\0';
	return 0;
}

/* Only digits, dots, slashes and dashes: meant as an IPv4 address. */
static bool looks_numeric(const char *s, const char *e)
{
	bool digit = false;
	for (const char *p = s; p < e; p++) {
		if (*p >= '0' && *p <= '9')
			digit = true;
		else if (*p != '.' && *p != '/')
			return false;
	}
	return digit;
}

static int bad(char *err, size_t errlen, const char *what, const char *s, const char *why)
{
	return errf(err, errlen, -EINVAL, "bad %s rule '%.*s'%s: %s", what, SHOWN, s,
	            strlen(s) > SHOWN ? "..." : "", why);
}

/* ADDR[/PREFIX] (the address part, already split from any port). */
static int parse_cidr(const char *s, const char *e, struct netrule *r, const char **why)
{
	char buf[64];
	if ((size_t)(e - s) >= sizeof(buf)) {
		*why = "not an address";
		return -EINVAL;
	}
	memcpy(buf, s, (size_t)(e - s));
	buf[e - s] = '\0';
	char *slash = strchr(buf, '/');
	if (slash)
		*slash = '\0';
	if (netaddr_parse(buf, &r->addr)) {
		*why = "not an IPv4 or IPv6 address";
		return -EINVAL;
	}
	unsigned max = r->addr.family == AF_INET ? 32 : 128, prefix = max;
	if (slash && parse_num(slash + 1, slash + 1 + strlen(slash + 1), max, &prefix)) {
		*why = max == 32 ? "the prefix must be 0..32" : "the prefix must be 0..128";
		return -EINVAL;
	}
	if (!host_bits_zero(&r->addr, prefix)) {
		*why = "host bits are set past the prefix";
		return -EINVAL;
	}
	r->kind = NETRULE_CIDR;
	r->prefix = (uint8_t)prefix;
	return 0;
}

int netrule_parse(const char *s, bool deny, struct netrule *r, char *err, size_t errlen)
{
	const char *what = deny ? "deny" : "allow";
	memset(r, 0, sizeof(*r));
	r->port_lo = 0;
	r->port_hi = 65535;
	size_t n = strlen(s);
	if (n == 0)
		return errf(err, errlen, -EINVAL, "empty %s rule", what);
	if (n > NETRULE_TEXT_MAX)
		return bad(err, errlen, what, s, "too long");
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] <= ' ' || (unsigned char)s[i] >= 127)
			return bad(err, errlen, what, s, "spaces or control characters");

	const char *why = "";
	const char *addr_end = NULL, *port = NULL;
	if (s[0] == '[') {
		/* [IPv6]:PORT */
		const char *close = strchr(s, ']');
		if (!close)
			return bad(err, errlen, what, s, "missing ']'");
		if (close[1] != '\0' && close[1] != ':')
			return bad(err, errlen, what, s, "expected ':PORT' after ']'");
		if (parse_cidr(s + 1, close, r, &why) || r->addr.family != AF_INET6)
			return bad(err, errlen, what, s, *why ? why : "brackets are for IPv6 only");
		port = close[1] ? close + 2 : NULL;
	} else {
		const char *slash = strchr(s, '/');
		const char *colon;
		if (slash) {
			/* CIDR[:PORT]: a port follows the prefix. */
			colon = strchr(slash, ':');
		} else {
			struct netaddr probe;
			colon = netaddr_parse(s, &probe) == 0 ? NULL : strrchr(s, ':');
			if (colon && memchr(s, ':', (size_t)(colon - s)))
				return bad(
				    err, errlen, what, s,
				    "an IPv6 address with a port takes brackets: [ADDR]:PORT");
		}
		addr_end = colon ? colon : s + n;
		port = colon ? colon + 1 : NULL;
		struct netaddr probe;
		char head[64];
		size_t hl = (size_t)(addr_end - s);
		bool is_addr = slash || looks_numeric(s, addr_end);
		if (!is_addr && hl < sizeof(head)) {
			memcpy(head, s, hl);
			head[hl] = '\0';
			is_addr = netaddr_parse(head, &probe) == 0;
		}
		if (is_addr) {
			if (parse_cidr(s, addr_end, r, &why))
				return bad(err, errlen, what, s, why);
		} else {
			if (deny)
				return bad(err, errlen, what, s,
				           "deny rules take addresses only (IP, CIDR, CIDR:PORT); "
				           "a domain deny is easy to bypass");
			char name[NETRULE_TEXT_MAX + 1];
			memcpy(name, s, hl);
			name[hl] = '\0';
			const char *base = name;
			r->kind = NETRULE_NAME;
			if (name[0] == '*') {
				if (name[1] != '.')
					return bad(
					    err, errlen, what, s,
					    "a wildcard is '*.NAME' ('*' alone: use --net open)");
				base = name + 2;
				r->kind = NETRULE_WILDCARD;
			}
			if (strchr(base, '*'))
				return bad(err, errlen, what, s, "'*' only as the first label");
			if (netname_normalize(base, r->name, sizeof(r->name)))
				return bad(err, errlen, what, s,
				           "not an address or a DNS name (labels of 1-63 letters, "
				           "digits, '-' or '_')");
		}
	}
	if (port && parse_ports(port, r))
		return bad(err, errlen, what, s,
		           "the port must be 1..65535 or LO-HI with LO <= HI");
	if (r->kind != NETRULE_CIDR && r->has_port &&
	    r->port_hi - r->port_lo >= NETRULE_NAME_PORTS_MAX)
		return bad(err, errlen, what, s, "a name's port range spans at most 64 ports");
	return 0;
}

int netrule_format(const struct netrule *r, char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN], host[NETRULE_NAME_MAX + 8], ports[16] = "";
	if (r->kind == NETRULE_CIDR) {
		netaddr_format(&r->addr, a, sizeof(a));
		unsigned full = r->addr.family == AF_INET ? 32 : 128;
		bool v6port = r->has_port && r->addr.family == AF_INET6 && r->prefix == full;
		if (v6port)
			snprintf(host, sizeof(host), "[%s]", a);
		else if (r->prefix == full)
			snprintf(host, sizeof(host), "%s", a);
		else
			snprintf(host, sizeof(host), "%s/%u", a, r->prefix);
	} else {
		snprintf(host, sizeof(host), "%s%s", r->kind == NETRULE_WILDCARD ? "*." : "",
		         r->name);
	}
	if (r->has_port && r->port_lo == r->port_hi)
		snprintf(ports, sizeof(ports), ":%u", r->port_lo);
	else if (r->has_port)
		snprintf(ports, sizeof(ports), ":%u-%u", r->port_lo, r->port_hi);
	int w = snprintf(buf, len, "%s%s", host, ports);
	if (w < 0 || (size_t)w >= len)
		return -ENOSPC;
	return w;
}

bool netrule_match_name(const struct netrule *r, const char *name, uint16_t port)
{
	if (r->kind == NETRULE_CIDR)
		return false;
	if (port && r->has_port && (port < r->port_lo || port > r->port_hi))
		return false;
	if (r->kind == NETRULE_NAME)
		return strcmp(r->name, name) == 0;
	size_t nl = strlen(name), bl = strlen(r->name);
	return nl > bl + 1 && name[nl - bl - 1] == '.' && strcmp(name + nl - bl, r->name) == 0;
}

bool netrule_match_addr(const struct netrule *r, const struct netaddr *a, int port)
{
	if (r->kind != NETRULE_CIDR)
		return false;
	if (r->has_port && (port < r->port_lo || port > r->port_hi))
		return false;
	return prefix_covers(&r->addr, r->prefix, a);
}

#define V4(a, b, c, d, p)                                                               \
	{                                                                               \
		.kind = NETRULE_CIDR, .addr = { AF_INET, { a, b, c, d } }, .prefix = p, \
		.port_hi = 65535                                                        \
	}
#define V6(b0, b1, p)                                                                \
	{                                                                            \
		.kind = NETRULE_CIDR, .addr = { AF_INET6, { b0, b1 } }, .prefix = p, \
		.port_hi = 65535                                                     \
	}

static const struct netrule always_v4[] = {
	V4(0, 0, 0, 0, 8),
	V4(10, 0, 0, 0, 8),
	V4(100, 64, 0, 0, 10),
	V4(127, 0, 0, 0, 8),
	V4(169, 254, 0, 0, 16),
	V4(172, 16, 0, 0, 12),
	V4(192, 168, 0, 0, 16),
	V4(224, 0, 0, 0, 4),
	V4(240, 0, 0, 0, 4), /* 255.255.255.255 is inside 240/4 */
	/* IETF protocol assignments (RFC 6890: DS-Lite, NAT64 discovery),
	 * the benchmarking range some clouds use inside, and Azure's
	 * WireServer (instance metadata and agent keys on 168.63.129.16). */
	V4(192, 0, 0, 0, 24),
	V4(198, 18, 0, 0, 15),
	V4(168, 63, 129, 16, 32),
};
static const struct netrule always_v6[] = {
	{ .kind = NETRULE_CIDR, .addr = { AF_INET6, { 0 } }, .prefix = 128, .port_hi = 65535 },
	{ .kind = NETRULE_CIDR,
	  .addr = { AF_INET6, { [15] = 1 } },
	  .prefix = 128,
	  .port_hi = 65535 },
	{ .kind = NETRULE_CIDR,
	  .addr = { AF_INET6, { [10] = 0xff, [11] = 0xff } },
	  .prefix = 96,
	  .port_hi = 65535 },
	V6(0xfc, 0, 7),
	V6(0xfe, 0x80, 10),
	V6(0xff, 0, 8),
};

size_t net_always_denied_ranges(int family, const struct netrule **out)
{
	if (family == AF_INET) {
		*out = always_v4;
		return sizeof(always_v4) / sizeof(always_v4[0]);
	}
	*out = always_v6;
	return sizeof(always_v6) / sizeof(always_v6[0]);
}

bool net_always_denied(const struct netaddr *a, const struct netaddr *hosts, size_t nhosts)
{
	for (size_t i = 0; i < nhosts; i++)
		if (hosts[i].family == a->family &&
		    memcmp(hosts[i].a, a->a, (size_t)addr_len(a->family)) == 0)
			return true;
	const struct netrule *t;
	size_t n = net_always_denied_ranges(a->family, &t);
	for (size_t i = 0; i < n; i++)
		if (prefix_covers(&t[i].addr, t[i].prefix, a))
			return true;
	return false;
}

void netpolicy_init(struct netpolicy *p, enum netpolicy_mode mode)
{
	memset(p, 0, sizeof(*p));
	p->mode = mode;
}

void netpolicy_free(struct netpolicy *p)
{
	free(p->allow);
	free(p->deny);
	p->allow = p->deny = NULL;
	p->nallow = p->ndeny = 0;
}

int netpolicy_add(struct netpolicy *p, const char *s, bool deny, char *err, size_t errlen)
{
	struct netrule r;
	int e = netrule_parse(s, deny, &r, err, errlen);
	if (e)
		return e;
	struct netrule **list = deny ? &p->deny : &p->allow;
	size_t *n = deny ? &p->ndeny : &p->nallow;
	if (*n >= NETPOLICY_RULES_MAX)
		return errf(err, errlen, -E2BIG, "too many %s rules (at most %d)",
		            deny ? "deny" : "allow", NETPOLICY_RULES_MAX);
	struct netrule *g = realloc(*list, (*n + 1) * sizeof(**list));
	if (!g)
		return errf(err, errlen, -ENOMEM, "out of memory");
	g[(*n)++] = r;
	*list = g;
	if (!deny && p->mode == NETPOLICY_NONE)
		p->mode = NETPOLICY_RULES;
	return 0;
}

static int dup_list(struct netrule **dst, const struct netrule *src, size_t n)
{
	*dst = NULL;
	if (!n)
		return 0;
	*dst = malloc(n * sizeof(*src));
	if (!*dst)
		return -ENOMEM;
	memcpy(*dst, src, n * sizeof(*src));
	return 0;
}

int netpolicy_copy(struct netpolicy *dst, const struct netpolicy *src)
{
	netpolicy_init(dst, src->mode);
	if (dup_list(&dst->allow, src->allow, src->nallow) ||
	    dup_list(&dst->deny, src->deny, src->ndeny)) {
		netpolicy_free(dst);
		return -ENOMEM;
	}
	dst->nallow = src->nallow;
	dst->ndeny = src->ndeny;
	return 0;
}

const char *netpolicy_mode_name(enum netpolicy_mode m)
{
	return m == NETPOLICY_OPEN ? "open" : m == NETPOLICY_RULES ? "rules" : "none";
}

static int parse_list(const json_t *v, const char *key, bool deny, struct netpolicy *p, char *err,
                      size_t errlen)
{
	if (!v)
		return 0;
	if (!json_is_array(v))
		return errf(err, errlen, -EINVAL, "policy: \"%s\" must be an array of strings",
		            key);
	size_t i;
	const json_t *it;
	json_array_foreach(v, i, it)
	{
		if (!json_is_string(it))
			return errf(err, errlen, -EINVAL, "policy: \"%s\"[%zu] is not a string",
			            key, i);
		int e = netpolicy_add(p, json_string_value(it), deny, err, errlen);
		if (e)
			return e;
	}
	return 0;
}

int netpolicy_from_json(const json_t *j, struct netpolicy *p, char *err, size_t errlen)
{
	netpolicy_init(p, NETPOLICY_NONE);
	if (!json_is_object(j))
		return errf(err, errlen, -EINVAL, "policy: not a JSON object");
	const char *k;
	const json_t *v;
	json_object_foreach((json_t *)j, k, v)
	{
		if (strcmp(k, "mode") && strcmp(k, "allow") && strcmp(k, "deny"))
			return errf(err, errlen, -EINVAL, "policy: unknown key \"%.40s\"", k);
	}
	const json_t *m = json_object_get(j, "mode");
	if (!json_is_string(m))
		return errf(err, errlen, -EINVAL,
		            "policy: \"mode\" (none, rules or open) is required");
	const char *ms = json_string_value(m);
	enum netpolicy_mode mode;
	if (!strcmp(ms, "none"))
		mode = NETPOLICY_NONE;
	else if (!strcmp(ms, "rules"))
		mode = NETPOLICY_RULES;
	else if (!strcmp(ms, "open"))
		mode = NETPOLICY_OPEN;
	else
		return errf(err, errlen, -EINVAL,
		            "policy: bad mode \"%.20s\" (none, rules or open)", ms);
	p->mode = mode;
	int e = parse_list(json_object_get(j, "allow"), "allow", false, p, err, errlen);
	if (!e)
		e = parse_list(json_object_get(j, "deny"), "deny", true, p, err, errlen);
	if (!e && mode == NETPOLICY_NONE && p->nallow)
		e = errf(err, errlen, -EINVAL, "policy: mode none takes no allow rules");
	if (e) {
		netpolicy_free(p);
		return e;
	}
	p->mode = mode;
	return 0;
}

static json_t *list_json(const struct netrule *r, size_t n)
{
	json_t *a = json_array();
	for (size_t i = 0; a && i < n; i++) {
		char t[NETRULE_TEXT_MAX + 8];
		if (netrule_format(&r[i], t, sizeof(t)) < 0 ||
		    json_array_append_new(a, json_string(t))) {
			json_decref(a);
			return NULL;
		}
	}
	return a;
}

json_t *netpolicy_to_json(const struct netpolicy *p)
{
	json_t *a = list_json(p->allow, p->nallow), *d = list_json(p->deny, p->ndeny);
	if (!a || !d) {
		json_decref(a);
		json_decref(d);
		return NULL;
	}
	return json_pack("{s:s, s:o, s:o}", "mode", netpolicy_mode_name(p->mode), "allow", a,
	                 "deny", d);
}

const struct netrule *netpolicy_match_name(const struct netpolicy *p, const char *name,
                                           uint16_t port)
{
	if (p->mode == NETPOLICY_NONE)
		return NULL;
	for (size_t i = 0; i < p->nallow; i++)
		if (netrule_match_name(&p->allow[i], name, port))
			return &p->allow[i];
	return NULL;
}

const struct netrule *netpolicy_denied_addr(const struct netpolicy *p, const struct netaddr *a,
                                            int port)
{
	for (size_t i = 0; i < p->ndeny; i++)
		if (netrule_match_addr(&p->deny[i], a, port))
			return &p->deny[i];
	return NULL;
}

const struct netrule *netpolicy_allowed_addr(const struct netpolicy *p, const struct netaddr *a,
                                             int port)
{
	if (p->mode == NETPOLICY_NONE)
		return NULL;
	for (size_t i = 0; i < p->nallow; i++)
		if (netrule_match_addr(&p->allow[i], a, port))
			return &p->allow[i];
	return NULL;
}
