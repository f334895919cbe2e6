#include "config.h"
#include "hex.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "errf.h"

static const char *const keys[] = { "guest",       "gateway",    "tap",      "uplink", "guest_mac",
	                            "uplink_addr", "host_addrs", "upstream", "policy", "ctl_fd",
	                            "log_fd",      "publish",    "ready_fd" };

/* XX:XX:XX:XX:XX:XX, unicast (the guest's NIC). */
static int parse_mac(const char *s, uint8_t mac[6])
{
	if (!s || strlen(s) != 17)
		return -EINVAL;
	for (int i = 0; i < 6; i++) {
		int hi = hex_digit(s[3 * i]), lo = hex_digit(s[3 * i + 1]);
		if (hi < 0 || lo < 0 || (i < 5 && s[3 * i + 2] != ':'))
			return -EINVAL;
		mac[i] = (uint8_t)(hi << 4 | lo);
	}
	return mac[0] & 1 ? -EINVAL : 0;
}

static int get_v4(const json_t *o, const char *k, struct netaddr *a, char *err, size_t errlen)
{
	const json_t *v = json_object_get(o, k);
	if (!json_is_string(v) || netaddr_parse(json_string_value(v), a) || a->family != AF_INET)
		return errf(err, errlen, -EINVAL, "config: \"%s\" must be an IPv4 address", k);
	return 0;
}

static int get_ifname(const json_t *o, const char *k, char *out, char *err, size_t errlen)
{
	const json_t *v = json_object_get(o, k);
	const char *s = json_string_value(v);
	size_t n = s ? strlen(s) : 0;
	if (!s || n == 0 || n >= IFNAMSIZ)
		return errf(err, errlen, -EINVAL, "config: \"%s\" must be an interface name", k);
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == '-' || c == '.'))
			return errf(err, errlen, -EINVAL, "config: bad interface name in \"%s\"",
			            k);
	}
	memcpy(out, s, n + 1);
	return 0;
}

static int get_fd(const json_t *o, const char *k, bool required, int *fd, char *err, size_t errlen)
{
	const json_t *v = json_object_get(o, k);
	*fd = -1;
	if (!v || json_is_null(v)) {
		if (required)
			return errf(err, errlen, -EINVAL, "config: \"%s\" is required", k);
		return 0;
	}
	if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > 1 << 20)
		return errf(err, errlen, -EINVAL, "config: \"%s\" must be a file descriptor", k);
	*fd = (int)json_integer_value(v);
	return 0;
}

/* IP[:PORT] (port default 53). */
static int parse_upstream(const char *s, struct netaddr *a, uint16_t *port)
{
	char buf[64];
	size_t n = strlen(s);
	if (n >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, s, n + 1);
	char *colon = strchr(buf, ':');
	*port = 53;
	if (colon) {
		*colon = '\0';
		char *end;
		long p = strtol(colon + 1, &end, 10);
		if (*end || end == colon + 1 || p < 1 || p > 65535)
			return -EINVAL;
		*port = (uint16_t)p;
	}
	return netaddr_parse(buf, a) == 0 && a->family == AF_INET ? 0 : -EINVAL;
}

static int parse_obj(const json_t *o, struct egress_config *c, char *err, size_t errlen)
{
	if (!json_is_object(o))
		return errf(err, errlen, -EINVAL, "config: not a JSON object");
	const char *k;
	const json_t *v;
	json_object_foreach((json_t *)o, k, v)
	{
		bool known = false;
		for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
			known |= !strcmp(k, keys[i]);
		if (!known)
			return errf(err, errlen, -EINVAL, "config: unknown key \"%.40s\"", k);
	}
	int e;
	if ((e = get_v4(o, "guest", &c->guest, err, errlen)) ||
	    (e = get_v4(o, "gateway", &c->gateway, err, errlen)) ||
	    (e = get_ifname(o, "tap", c->tap, err, errlen)) ||
	    (e = get_ifname(o, "uplink", c->uplink, err, errlen)) ||
	    (e = get_fd(o, "ctl_fd", false, &c->ctl_fd, err, errlen)) ||
	    (e = get_fd(o, "log_fd", false, &c->log_fd, err, errlen)) ||
	    (e = get_fd(o, "ready_fd", false, &c->ready_fd, err, errlen)))
		return e;
	v = json_object_get(o, "guest_mac");
	if (parse_mac(v ? json_string_value(v) : EGRESS_GUEST_MAC, c->guest_mac))
		return errf(err, errlen, -EINVAL,
		            "config: \"guest_mac\" must be a unicast XX:XX:XX:XX:XX:XX");
	if (json_object_get(o, "uplink_addr") &&
	    (e = get_v4(o, "uplink_addr", &c->uplink_addr, err, errlen)))
		return e;
	size_t i;
	const json_t *it;
	v = json_object_get(o, "host_addrs");
	if (v && !json_is_array(v))
		return errf(err, errlen, -EINVAL, "config: \"host_addrs\" must be an array");
	json_array_foreach(v, i, it)
	{
		if (c->nhosts >= EGRESS_HOSTS_MAX)
			return errf(err, errlen, -EINVAL, "config: more than %d host_addrs",
			            EGRESS_HOSTS_MAX);
		if (!json_is_string(it) ||
		    netaddr_parse(json_string_value(it), &c->hosts[c->nhosts]))
			return errf(err, errlen, -EINVAL,
			            "config: host_addrs[%zu] is not an address", i);
		c->nhosts++;
	}
	v = json_object_get(o, "upstream");
	if (!json_is_array(v) || json_array_size(v) == 0)
		return errf(err, errlen, -EINVAL, "config: \"upstream\" must list 1..%d resolvers",
		            EGRESS_UPSTREAM_MAX);
	json_array_foreach(v, i, it)
	{
		if (c->nupstream >= EGRESS_UPSTREAM_MAX)
			return errf(err, errlen, -EINVAL, "config: more than %d upstream resolvers",
			            EGRESS_UPSTREAM_MAX);
		if (!json_is_string(it) ||
		    parse_upstream(json_string_value(it), &c->upstream[c->nupstream],
		                   &c->upstream_port[c->nupstream]))
			return errf(err, errlen, -EINVAL,
			            "config: upstream[%zu] is not IPv4[:PORT] (IPv6 resolvers are "
			            "not supported yet)",
			            i);
		c->nupstream++;
	}
	v = json_object_get(o, "publish");
	if (v && !json_is_array(v))
		return errf(err, errlen, -EINVAL, "config: \"publish\" must be an array");
	json_array_foreach(v, i, it)
	{
		if (c->npublish >= EGRESS_PUBLISH_MAX)
			return errf(err, errlen, -EINVAL, "config: more than %d publish entries",
			            EGRESS_PUBLISH_MAX);
		json_t *fd = json_object_get(it, "fd"), *gp = json_object_get(it, "guest_port");
		if (!json_is_object(it) || json_object_size(it) != 2 || !json_is_integer(fd) ||
		    json_integer_value(fd) < 0 || json_integer_value(fd) > 1 << 20 ||
		    !json_is_integer(gp) || json_integer_value(gp) < 1 ||
		    json_integer_value(gp) > 65535)
			return errf(err, errlen, -EINVAL,
			            "config: publish[%zu] must be {\"fd\":N,\"guest_port\":P}", i);
		c->publish[c->npublish].fd = (int)json_integer_value(fd);
		c->publish[c->npublish].guest_port = (uint16_t)json_integer_value(gp);
		c->npublish++;
	}
	v = json_object_get(o, "policy");
	if (!v)
		return errf(err, errlen, -EINVAL, "config: \"policy\" is required");
	return netpolicy_from_json(v, &c->policy, err, errlen);
}

int egress_config_parse(const char *text, size_t len, struct egress_config *c, char *err,
                        size_t errlen)
{
	memset(c, 0, sizeof(*c));
	netpolicy_init(&c->policy, NETPOLICY_NONE);
	json_error_t je;
	json_t *o = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	if (!o)
		return errf(err, errlen, -EINVAL, "config: invalid JSON at %d:%d: %s", je.line,
		            je.column, je.text);
	int e = parse_obj(o, c, err, errlen);
	json_decref(o);
	if (e)
		egress_config_free(c);
	return e;
}

void egress_config_free(struct egress_config *c)
{
	netpolicy_free(&c->policy);
}
