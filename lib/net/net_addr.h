/* The pure parts of a sandbox's network (net_addr.c): the topology, the
 * addresses of index K, the option syntaxes (rules, publish, dns, limits)
 * and the policy's JSON. */
#ifndef COVE_NET_ADDR_H
#define COVE_NET_ADDR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/base/cove_types.h"
#include "lib/base/sandbox_net.h"

/* The topology every sandbox (and every fork of one snapshot) has. */
#define NET_GUEST_ADDR "172.16.0.2"
#define NET_GUEST_MAC  "06:00:ac:10:00:02" /* cove-vmm's default; tap0 takes no other */
#define NET_GW_ADDR    "172.16.0.1"
#define NET_TAP_PREFIX 30
#define NET_TAP_NAME   "tap0"
#define NET_TAP_MAC    "06:00:ac:10:00:01"
#define NET_UPLINK     "up0"
#define NET_HOST_LINK  "cv" /* + K */
#define NET_CMDLINE    "cove.net=" NET_GUEST_ADDR "/30," NET_GW_ADDR "," NET_GW_ADDR
#define NET_INDEX_MAX  16383 /* K in 0..16383: 100.100.0.0/16 in /30s */

#define NET_PUBLISH_MAX 32

struct json_t;

/* The host end (100.100.0.0 + 4K + 1) and the namespace end (+ 2) of
 * sandbox K's /30, as host-order IPv4 addresses. */
uint32_t net_host_end(unsigned int k);
uint32_t net_ns_end(unsigned int k);
/* The indexes K this process may claim: $COVE_NET_INDEXES "FIRST-LAST"
 * (0 <= FIRST <= LAST <= NET_INDEX_MAX), so that several launchers on one
 * host keep apart; unset or empty: all.  0, or -EINVAL with one line. */
int net_index_range(unsigned int *first, unsigned int *last, char *err, size_t errlen)
    __attribute__((warn_unused_result));
/* Dotted quad of a host-order address into out (16 bytes). */
void net_ntoa(uint32_t addr, char *out);

/* One rule's syntax (allow: IP, CIDR, CIDR:PORT, CIDR:LO-HI, NAME,
 * *.NAME, NAME:PORT; deny: the CIDR forms only).  0, or -EINVAL with a
 * line naming the rule and what is wrong with it. */
int net_rule_check(const char *rule, bool deny, char *err, size_t errlen)
    __attribute__((warn_unused_result));

struct net_publish {
	uint32_t addr; /* host order; 127.0.0.1 by default */
	uint16_t host_port, guest_port;
};
/* "[ADDR:]HOSTPORT:GUESTPORT" (ports 1-65535, ADDR an IPv4 address). */
int net_publish_parse(const char *spec, struct net_publish *out, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* "IP[:PORT]" (IPv4). */
int net_dns_parse(const char *spec, struct net_upstream *out, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* The nameservers of a resolv.conf text, loopback ones (127/8) and IPv6
 * skipped; at most max.  Returns how many. */
size_t net_resolv_conf(const char *text, struct net_upstream *out, size_t max);

/* cove-vmm's --net limits: comma-separated KEY=N with KEY one of rx_bps,
 * tx_bps, rx_pps, tx_pps and their _burst forms, N a positive decimal. */
int net_limits_check(const char *spec, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* The whole of a configuration's network options: the mode, every rule,
 * publish, dns and limits spec (boot: options without a mode are an
 * error; a restore takes the snapshot's mode).  0 or -EINVAL with one
 * line. */
int net_check_config(const struct cove_config *cfg, bool boot, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* {"mode": ..., "allow": [...], "deny": [...]} of a policy (NULL when out
 * of memory or mode is COVE_NET_OFF). */
struct json_t *net_policy_json(const struct cove_net_policy *p);

/* ---- part of cove.h's API ---- */

/* "off", "none", "rules", "open". */
const char *cove_net_mode_name(enum cove_net_mode mode);

#endif
