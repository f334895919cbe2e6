/* The pure parts of a sandbox's network: addresses from the index K, the
 * syntax of the network options, the policy's JSON (net_addr.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "errf.h"
#include "lib/base/cove_types.h"
#include "lib/base/registry.h"
#include "lib/base/sandbox_net.h"
#include "lib/net/net_addr.h"
#include "netrule.h"

#define NET_BASE 0x64640000u /* 100.100.0.0 */

uint32_t net_host_end(unsigned int k)
{
	return NET_BASE + 4 * k + 1;
}

uint32_t net_ns_end(unsigned int k)
{
	return NET_BASE + 4 * k + 2;
}

void net_ntoa(uint32_t a, char *out)
{
	snprintf(out, 16, "%u.%u.%u.%u", a >> 24, (a >> 16) & 255, (a >> 8) & 255, a & 255);
}

/* A dotted-quad IPv4 address, all of s. */
static bool parse_ip(const char *s, size_t len, uint32_t *out)
{
	char buf[16];
	struct in_addr a;
	if (len == 0 || len >= sizeof(buf))
		return false;
	memcpy(buf, s, len);
	buf[len] = 0;
	if (inet_pton(AF_INET, buf, &a) != 1)
		return false;
	*out = ntohl(a.s_addr);
	return true;
}

/* A decimal in lo..hi, all of s[0..len). */
static bool parse_dec(const char *s, size_t len, unsigned long lo, unsigned long hi,
                      unsigned long *out)
{
	unsigned long v = 0;
	if (len == 0 || len > 10)
		return false;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (unsigned long)(s[i] - '0');
	}
	if (v < lo || v > hi)
		return false;
	*out = v;
	return true;
}

int net_index_range(unsigned int *first, unsigned int *last, char *err, size_t errlen)
{
	*first = 0;
	*last = NET_INDEX_MAX;
	const char *v = getenv("COVE_NET_INDEXES");
	if (!v || !*v)
		return 0;
	const char *dash = strchr(v, '-');
	unsigned long a, b;
	if (!dash || !parse_dec(v, (size_t)(dash - v), 0, NET_INDEX_MAX, &a) ||
	    !parse_dec(dash + 1, strlen(dash + 1), 0, NET_INDEX_MAX, &b) || b < a)
		return errf(err, errlen, -EINVAL,
		            "COVE_NET_INDEXES must be FIRST-LAST, FIRST <= LAST, from 0 to %d, "
		            "got '%.64s'",
		            NET_INDEX_MAX, v);
	*first = (unsigned int)a;
	*last = (unsigned int)b;
	return 0;
}

int net_rule_check(const char *rule, bool deny, char *err, size_t errlen)
{
	/* The parser cove-egress enforces with: the same rules, the same
	 * one-line errors, before anything starts. */
	struct netrule r;
	return netrule_parse(rule ? rule : "", deny, &r, err, errlen);
}

int net_publish_parse(const char *spec, struct net_publish *out, char *err, size_t errlen)
{
	const char *c1 = spec ? strchr(spec, ':') : NULL;
	const char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
	unsigned long hp, gp;
	out->addr = 0x7f000001;
	bool ok = c1 != NULL;
	const char *ports = spec;
	if (ok && c2) {
		ok = parse_ip(spec, (size_t)(c1 - spec), &out->addr) && !strchr(c2 + 1, ':');
		ports = c1 + 1;
	}
	const char *colon = ok ? strchr(ports, ':') : NULL;
	ok = ok && parse_dec(ports, (size_t)(colon - ports), 1, 65535, &hp) &&
	     parse_dec(colon + 1, strlen(colon + 1), 1, 65535, &gp);
	if (!ok)
		return errf(err, errlen, -EINVAL,
		            "--publish needs [ADDR:]HOSTPORT:GUESTPORT (IPv4, ports 1-65535), got "
		            "'%s'",
		            spec ? spec : "");
	out->host_port = (uint16_t)hp;
	out->guest_port = (uint16_t)gp;
	return 0;
}

int net_dns_parse(const char *spec, struct net_upstream *out, char *err, size_t errlen)
{
	size_t n = spec ? strcspn(spec, ":") : 0;
	unsigned long port = 53;
	bool ok = spec && parse_ip(spec, n, &out->addr) &&
	          (!spec[n] || parse_dec(spec + n + 1, strlen(spec + n + 1), 1, 65535, &port));
	if (!ok)
		return errf(err, errlen, -EINVAL,
		            "--dns needs IP[:PORT] (an IPv4 resolver), got '%s'", spec ? spec : "");
	out->port = (uint16_t)port;
	return 0;
}

size_t net_resolv_conf(const char *text, struct net_upstream *out, size_t max)
{
	size_t n = 0;
	for (const char *line = text; line && *line && n < max;) {
		const char *end = strchr(line, '\n');
		size_t len = end ? (size_t)(end - line) : strlen(line);
		if (len > 11 && !strncmp(line, "nameserver", 10) &&
		    (line[10] == ' ' || line[10] == '\t')) {
			const char *v = line + 11;
			while (*v == ' ' || *v == '\t')
				v++;
			size_t k = strcspn(v, " \t\r\n#");
			uint32_t a;
			if (parse_ip(v, k, &a) && (a >> 24) != 127) {
				out[n].addr = a;
				out[n++].port = 53;
			}
		}
		line = end ? end + 1 : NULL;
	}
	return n;
}

int net_limits_check(const char *spec, char *err, size_t errlen)
{
	static const char *const keys[] = { "rx_bps", "rx_bps_burst", "rx_pps", "rx_pps_burst",
		                            "tx_bps", "tx_bps_burst", "tx_pps", "tx_pps_burst" };
	if (!spec || !*spec || strlen(spec) >= REGISTRY_NET_LIMITS_MAX)
		goto bad;
	for (const char *p = spec; *p;) {
		size_t len = strcspn(p, ",");
		const char *eq = memchr(p, '=', len);
		bool known = false;
		for (size_t i = 0; eq && i < sizeof(keys) / sizeof(keys[0]); i++)
			known |= strlen(keys[i]) == (size_t)(eq - p) && !memcmp(p, keys[i], eq - p);
		unsigned long long v = 0;
		size_t digits = eq ? len - (size_t)(eq - p) - 1 : 0;
		for (size_t i = 0; i < digits && digits <= 16; i++)
			v = eq[1 + i] >= '0' && eq[1 + i] <= '9' ? v * 10 + (eq[1 + i] - '0') : 0;
		if (!known || digits == 0 || digits > 16 || v == 0)
			goto bad;
		p += len;
		if (*p == ',' && !*++p)
			goto bad;
	}
	return 0;
bad:
	return errf(err, errlen, -EINVAL,
	            "--net-limit needs KEY=N[,KEY=N...] with KEY rx_bps, tx_bps, rx_pps, tx_pps "
	            "(or their _burst) and N a positive number, got '%s'",
	            spec ? spec : "");
}

static size_t list_len(const char *const *l)
{
	size_t n = 0;
	while (l && l[n])
		n++;
	return n;
}

int net_check_config(const struct cove_config *cfg, bool boot, char *err, size_t errlen)
{
	const struct cove_net_policy *p = &cfg->net;
	bool any = list_len(cfg->net_publish) || list_len(cfg->net_dns) || cfg->net_limits ||
	           list_len(p->allow) || list_len(p->deny);
	/* A restore may give --dns, --publish, --net-limit and keep the
	 * snapshot's policy. */
	if (p->mode == COVE_NET_OFF && any && boot)
		return errf(err, errlen, -EINVAL,
		            "network options given without a network mode (the mode is off)");
	if (p->mode == COVE_NET_OFF && !any)
		return 0;
	if (p->mode != COVE_NET_OFF && p->mode != COVE_NET_NONE && p->mode != COVE_NET_RULES &&
	    p->mode != COVE_NET_OPEN)
		return errf(err, errlen, -EINVAL, "unknown network mode %d", (int)p->mode);
	if (p->mode == COVE_NET_NONE && list_len(p->allow))
		return errf(err, errlen, -EINVAL,
		            "--net none denies everything: it cannot go with --allow (drop one)");
	if (list_len(p->allow) > COVE_NET_RULES_MAX || list_len(p->deny) > COVE_NET_RULES_MAX)
		return errf(err, errlen, -EINVAL, "at most %d --allow and %d --deny rules",
		            COVE_NET_RULES_MAX, COVE_NET_RULES_MAX);
	int r;
	for (size_t i = 0; p->allow && p->allow[i]; i++)
		if ((r = net_rule_check(p->allow[i], false, err, errlen)) < 0)
			return r;
	for (size_t i = 0; p->deny && p->deny[i]; i++)
		if ((r = net_rule_check(p->deny[i], true, err, errlen)) < 0)
			return r;
	if (list_len(cfg->net_publish) > NET_PUBLISH_MAX || list_len(cfg->net_dns) > NET_DNS_MAX)
		return errf(err, errlen, -EINVAL, "at most %d --publish and %d --dns",
		            NET_PUBLISH_MAX, NET_DNS_MAX);
	struct net_publish pub[NET_PUBLISH_MAX];
	for (size_t i = 0; cfg->net_publish && cfg->net_publish[i]; i++) {
		if ((r = net_publish_parse(cfg->net_publish[i], &pub[i], err, errlen)) < 0)
			return r;
		for (size_t j = 0; j < i; j++)
			if (pub[j].host_port == pub[i].host_port && pub[j].addr == pub[i].addr)
				return errf(err, errlen, -EINVAL,
				            "--publish %s: host port %u twice", cfg->net_publish[i],
				            pub[i].host_port);
	}
	struct net_upstream up;
	for (size_t i = 0; cfg->net_dns && cfg->net_dns[i]; i++)
		if ((r = net_dns_parse(cfg->net_dns[i], &up, err, errlen)) < 0)
			return r;
	if (cfg->net_limits && (r = net_limits_check(cfg->net_limits, err, errlen)) < 0)
		return r;
	return 0;
}

const char *cove_net_mode_name(enum cove_net_mode mode)
{
	switch (mode) {
	case COVE_NET_OFF:
		return "off";
	case COVE_NET_NONE:
		return "none";
	case COVE_NET_RULES:
		return "rules";
	case COVE_NET_OPEN:
		return "open";
	}
	return "unknown";
}

static json_t *string_list(const char *const *l)
{
	json_t *a = json_array();
	for (size_t i = 0; a && l && l[i]; i++)
		if (json_array_append_new(a, json_string(l[i])) < 0) {
			json_decref(a);
			return NULL;
		}
	return a;
}

json_t *net_policy_json(const struct cove_net_policy *p)
{
	if (p->mode == COVE_NET_OFF)
		return NULL;
	return json_pack("{s:s, s:o, s:o}", "mode", cove_net_mode_name(p->mode), "allow",
	                 string_list(p->allow), "deny", string_list(p->deny));
}
