/* Network egress rules and policies (issue 14): one parser shared by the
 * CLI (so a bad --allow fails before anything starts) and cove-egress (which
 * enforces them).  Pure functions over caller-owned structs; no I/O.
 *
 * Rule syntax (allow):  IP  IP:PORT  CIDR  CIDR:PORT  CIDR:LO-HI
 *                       NAME  *.NAME  NAME:PORT  *.NAME:PORT  NAME:LO-HI
 * Rule syntax (deny):   the address forms only (a domain deny is easy to
 *                       bypass, so there is none).
 * IPv6 addresses with a port take brackets ([2001:db8::1]:443) or a
 * prefix (2001:db8::/32:443).
 *
 * Domain matching: names are compared case-insensitively with one trailing
 * dot ignored.  `NAME` matches exactly NAME; `*.NAME` matches every name
 * below NAME (a.NAME, a.b.NAME) but not NAME itself, as a TLS wildcard
 * would not; allow both when both are wanted. */
#ifndef COVE_NETRULE_H
#define COVE_NETRULE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define NETRULE_NAME_MAX       253 /* a DNS name in text, without the trailing dot */
#define NETRULE_TEXT_MAX       300 /* a rule's canonical text */
#define NETPOLICY_RULES_MAX    256 /* per list (allow, deny) */
#define NETRULE_NAME_PORTS_MAX 64  /* a NAME:LO-HI rule pins each port: a bound */

enum netrule_kind {
	NETRULE_CIDR,     /* addr/prefix, optional port range */
	NETRULE_NAME,     /* exactly name */
	NETRULE_WILDCARD, /* strictly below name */
};

/* An address: family AF_INET (the first 4 bytes of a) or AF_INET6. */
struct netaddr {
	int family;
	uint8_t a[16];
};

struct netrule {
	enum netrule_kind kind;
	struct netaddr addr; /* NETRULE_CIDR: the network (host bits zero) */
	uint8_t prefix;
	bool has_port;
	uint16_t port_lo, port_hi;       /* 0..65535 when !has_port */
	char name[NETRULE_NAME_MAX + 1]; /* names: lower case, no trailing dot */
};

enum netpolicy_mode {
	NETPOLICY_NONE,  /* nothing leaves, DNS included */
	NETPOLICY_RULES, /* the allow list, minus the deny list */
	NETPOLICY_OPEN,  /* everything not denied or always denied */
};

struct netpolicy {
	enum netpolicy_mode mode;
	struct netrule *allow;
	size_t nallow;
	struct netrule *deny;
	size_t ndeny;
};

/* netrule_parse() - parse one rule.
 * @s: the rule's text
 * @deny: true for a deny rule (address forms only)
 * @r: filled on success
 * @err: one line naming the rule on failure
 * Return: 0, or -EINVAL with @err set. */
int netrule_parse(const char *s, bool deny, struct netrule *r, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* netrule_format() - the canonical text of @r (what netrule_parse reads
 * back to an equal rule).  Return: the length, or -ENOSPC. */
int netrule_format(const struct netrule *r, char *buf, size_t len)
    __attribute__((warn_unused_result));

/* netname_normalize() - a name as rules store it: lower case, one trailing
 * dot dropped, each label 1..63 of [a-z0-9_-], at most 253 in all.
 * Return: 0, or -EINVAL for a name no rule could match. */
int netname_normalize(const char *in, char *out, size_t outlen) __attribute__((warn_unused_result));

/* netrule_match_name() - does name rule @r cover @name (normalized) and
 * @port (0: any port, for DNS)?  False for address rules. */
bool netrule_match_name(const struct netrule *r, const char *name, uint16_t port);

/* netrule_match_addr() - does address rule @r cover @a and @port
 * (-1: a packet without ports, which only a portless rule covers)? */
bool netrule_match_addr(const struct netrule *r, const struct netaddr *a, int port);

/* net_always_denied() - one of the ranges no rule can open: @hosts (the
 * host's own addresses), 0/8, 10/8, 100.64/10, 127/8, 169.254/16, 172.16/12,
 * 192.168/16, 224/4, 240/4 (with 255.255.255.255); ::/128, ::1, fc00::/7,
 * fe80::/10, ff00::/8 and ::ffff:0:0/96 (mapped IPv4, judged as IPv4). */
bool net_always_denied(const struct netaddr *a, const struct netaddr *hosts, size_t nhosts);

/* The always-denied ranges as rules (for the nft set), @family's only. */
size_t net_always_denied_ranges(int family, const struct netrule **out);

/* netpolicy_init() - an empty policy of @mode.  netpolicy_free() releases
 * the lists (the struct itself is the caller's). */
void netpolicy_init(struct netpolicy *p, enum netpolicy_mode mode);
void netpolicy_free(struct netpolicy *p);

/* netpolicy_add() - parse @s and append it to the allow (@deny false) or
 * deny list.  An allow rule turns mode none into rules.  Return: 0,
 * -EINVAL (@err names the rule), -E2BIG or -ENOMEM. */
int netpolicy_add(struct netpolicy *p, const char *s, bool deny, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* netpolicy_copy() - deep copy; 0 or -ENOMEM. */
int netpolicy_copy(struct netpolicy *dst, const struct netpolicy *src)
    __attribute__((warn_unused_result));

/* netpolicy_from_json() - {"mode":"none|rules|open","allow":[...],
 * "deny":[...]}; unknown keys are errors, mode is required, the lists are
 * optional.  Mode none with allow rules is an error.  On failure @p is
 * left empty (nothing to free).  Return: 0 or -EINVAL with @err. */
int netpolicy_from_json(const json_t *j, struct netpolicy *p, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* netpolicy_to_json() - the policy with canonical rule texts; NULL on
 * allocation failure. */
json_t *netpolicy_to_json(const struct netpolicy *p);

const char *netpolicy_mode_name(enum netpolicy_mode m);

/* netpolicy_match_name() - the first allow rule covering @name and @port
 * (0: any) in rules mode; NULL when none (always NULL in mode none).  In
 * open mode the caller allows every name. */
const struct netrule *netpolicy_match_name(const struct netpolicy *p, const char *name,
                                           uint16_t port);

/* netpolicy_denied_addr() - the deny rule covering @a and @port (-1:
 * portless), or NULL. */
const struct netrule *netpolicy_denied_addr(const struct netpolicy *p, const struct netaddr *a,
                                            int port);

/* netpolicy_allowed_addr() - the address allow rule covering @a and @port
 * (-1: portless), or NULL.  Deny rules are not consulted. */
const struct netrule *netpolicy_allowed_addr(const struct netpolicy *p, const struct netaddr *a,
                                             int port);

/* netaddr_parse() - a bare IPv4 or IPv6 address.  0 or -EINVAL. */
int netaddr_parse(const char *s, struct netaddr *a) __attribute__((warn_unused_result));

/* netaddr_format() - text of @a into @buf (INET6_ADDRSTRLEN fits). */
const char *netaddr_format(const struct netaddr *a, char *buf, size_t len);

#endif
