/* Unit tests: egress/nftgen.c, the table text for a policy (golden
 * substrings: sets, disjoint intervals, chains, verdicts per mode), the pin
 * commands, and egress/pins.c. */
#include <errno.h>
#include <string.h>

#include "egress/config.h"
#include "egress/nftgen.h"
#include "egress/pins.h"
#include "unit.h"

static char err[256];

static char *ruleset(const char *pol, struct egress_config *c)
{
	char cfg[1024];
	snprintf(cfg, sizeof(cfg),
	         "{\"guest\":\"172.16.0.2\",\"gateway\":\"172.16.0.1\",\"tap\":\"tap0\","
	         "\"uplink\":\"up0\",\"uplink_addr\":\"100.100.0.2\",\"host_addrs\":[\"192.0.2.5\","
	         "\"100.100.0.1\"],"
	         "\"upstream\":[\"198.51.100.53\"],\"policy\":%s}",
	         pol);
	int r = egress_config_parse(cfg, strlen(cfg), c, err, sizeof(err));
	ck_assert_msg(r == 0, "%s", err);
	struct nft_pin pin = { .proto = 6, .port = 22, .timeout_s = 45 };
	ck_assert_int_eq(netaddr_parse("198.51.100.8", &pin.addr), 0);
	char *s = nftgen_ruleset(c, &c->policy, &pin, 1);
	ck_assert_ptr_nonnull(s);
	return s;
}

#define HAS(s, sub)   ck_assert_msg(strstr((s), (sub)), "missing: %s\n%s", (sub), (s))
#define LACKS(s, sub) ck_assert_msg(!strstr((s), (sub)), "unexpected: %s", (sub))

START_TEST(rules_mode)
{
	struct egress_config c;
	char *s =
	    ruleset("{\"mode\":\"rules\",\"allow\":[\"allowed.test\",\"198.51.100.0/24:9000\","
	            "\"198.51.100.7/32:8000-9000\",\"203.0.113.0/25\",\"203.0.113.64/26\"],"
	            "\"deny\":[\"198.51.100.9:9000\",\"203.0.113.7\"]}",
	            &c);
	/* One transaction that cannot fail on a missing table. */
	ck_assert(
	    !strncmp(s, "table inet cove_sb\ndelete table inet cove_sb\ntable inet cove_sb {", 62));
	HAS(s, "set always4 { type ipv4_addr; flags interval; elements = { 0.0.0.0-0.255.255.255, "
	       "10.0.0.0-10.255.255.255, 100.64.0.0-100.127.255.255, ");
	HAS(s, "127.0.0.0-127.255.255.255, 168.63.129.16, 169.254.0.0-169.254.255.255, ");
	HAS(s, "192.0.0.0-192.0.0.255, 192.0.2.5, 192.168.0.0-192.168.255.255, "
	       "198.18.0.0-198.19.255.255, 224.0.0.0-255.255.255.255 }");
	HAS(s, "fc00::-fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff");
	/* Overlapping allows cut into disjoint pieces; nested portless ones merged. */
	HAS(s, "set allow4p { type ipv4_addr . inet_service; flags interval; elements = { "
	       "198.51.100.0-198.51.100.6 . 9000, 198.51.100.7 . 8000-9000, "
	       "198.51.100.8-198.51.100.255 . 9000 }; }");
	HAS(s,
	    "set allow4 { type ipv4_addr; flags interval; elements = { 203.0.113.0-203.0.113.127 "
	    "}; }");
	HAS(s, "set deny4 { type ipv4_addr; flags interval; elements = { 203.0.113.7 }; }");
	HAS(s, "set deny4p { type ipv4_addr . inet_service; flags interval; elements = { "
	       "198.51.100.9 . 9000 }; }");
	HAS(s, "set pinned { type ipv4_addr . inet_proto . inet_service; flags timeout; elements = "
	       "{ 198.51.100.8 . 6 . 22 timeout 45s } }");
	HAS(s, "elements = { 198.51.100.53 . 17 . 53, 198.51.100.53 . 6 . 53 }");
	HAS(s, "\t\tiifname != \"tap0\" return\n");
	HAS(s, "\t\tip daddr @deny4 jump to_proxy\n");
	HAS(s, "\t\tip daddr . tcp dport @allow4p return\n\t\tjump to_proxy\n");
	HAS(s, "tcp dport 443 redirect to :15443");
	HAS(s, "ip saddr 172.16.0.2 ip daddr 172.16.0.1 udp dport 53 accept");
	HAS(s, "ip saddr 172.16.0.2 ip daddr 172.16.0.1 tcp dport { 53, 15080, 15443 } accept");
	HAS(s, "meta l4proto 6 reject with tcp reset\n\t\treject with icmpx type admin-prohibited");
	HAS(s, "ip daddr @always4 log prefix \"cove:deny:always\" group 14 jump refuse");
	HAS(s, "ip daddr . meta l4proto . th dport @pinned log prefix \"cove:allow:pin\" group 14 "
	       "accept");
	HAS(s, "log prefix \"cove:deny:default\" group 14 jump refuse\n\t}");
	HAS(s, "oifname \"up0\" masquerade");
	LACKS(s, "allow:open");
	/* Anti-spoofing: tap0's ingress (netdev, before conntrack) takes the
	 * guest's MAC, its ARP and its IPv4 source only, IPv6 not at all. */
	HAS(s, "}\ntable netdev cove_nic\ndelete table netdev cove_nic\ntable netdev cove_nic {\n");
	HAS(s, "\tchain spoofed {\n\t\tcounter\n\t\tlimit rate 10/second burst 20 packets log "
	       "prefix \"cove:deny:spoofed\" group 14\n\t\tdrop\n\t}\n");
	HAS(s, "\tchain ingress {\n"
	       "\t\ttype filter hook ingress device \"tap0\" priority -500; policy drop;\n"
	       "\t\tether saddr != 06:00:ac:10:00:02 jump spoofed\n"
	       "\t\tether type arp arp htype 1 arp ptype 0x0800 arp hlen 6 arp plen 4 arp saddr "
	       "ether 06:00:ac:10:00:02 arp saddr ip 172.16.0.2 accept\n"
	       "\t\tether type arp jump spoofed\n"
	       "\t\tether type ip ip saddr 172.16.0.2 accept\n"
	       "\t\tether type ip jump spoofed\n"
	       "\t\tether type ip6 jump ipv6\n"
	       "\t\tcounter drop\n");
	/* ... and again in the inet table, before conntrack (priority raw). */
	HAS(s, "\tchain guard {\n\t\ttype filter hook prerouting priority raw; policy accept;\n"
	       "\t\tiifname != \"tap0\" return\n\t\tip saddr != 172.16.0.2 drop\n"
	       "\t\tmeta nfproto != ipv4 drop\n\t}\n");
	/* Nothing leaves up0 but from up0's address. */
	HAS(s, "\t\toifname \"lo\" accept\n\t\toifname \"up0\" ip saddr != 100.100.0.2 drop\n"
	       "\t\toifname \"tap0\" accept\n");
	/* Deny before allow in the forward chain. */
	ck_assert(strstr(s, "@deny4p log") < strstr(s, "@allow4 log"));
	free(s);
	egress_config_free(&c);
}
END_TEST

START_TEST(other_modes)
{
	struct egress_config c;
	char *s = ruleset("{\"mode\":\"open\",\"deny\":[\"198.51.100.9\"]}", &c);
	HAS(s, "meta nfproto ipv4 log prefix \"cove:allow:open\" group 14 accept");
	HAS(s, "tcp dport != { 80, 443 } return\n\t\treturn\n");
	free(s);
	egress_config_free(&c);
	s = ruleset("{\"mode\":\"none\"}", &c);
	LACKS(s, "allow:open");
	HAS(s, "set allow4 { type ipv4_addr; flags interval; }");
	free(s);
	egress_config_free(&c);
	/* Interface names are checked before they reach nft text. */
	const char *bad = "{\"guest\":\"172.16.0.2\",\"gateway\":\"172.16.0.1\",\"tap\":\"t\\\" "
	                  "accept\",\"uplink\":\"up0\",\"upstream\":[\"198.51.100.53\"],"
	                  "\"policy\":{\"mode\":\"none\"}}";
	ck_assert_int_eq(egress_config_parse(bad, strlen(bad), &c, err, sizeof(err)), -EINVAL);
	ck_assert(strstr(err, "interface name"));
	/* A given MAC goes into the NIC's chain; a multicast one is refused;
	 * without uplink_addr at least the gateway's address never leaves up0. */
	const char *mac = "{\"guest\":\"172.16.0.2\",\"gateway\":\"172.16.0.1\",\"tap\":\"tap0\","
	                  "\"guest_mac\":\"02:AB:cd:00:00:09\",\"uplink\":\"up0\",\"upstream\":"
	                  "[\"198.51.100.53\"],\"policy\":{\"mode\":\"none\"}}";
	ck_assert_int_eq(egress_config_parse(mac, strlen(mac), &c, err, sizeof(err)), 0);
	s = nftgen_ruleset(&c, &c.policy, NULL, 0);
	HAS(s, "ether saddr != 02:ab:cd:00:00:09 jump spoofed");
	HAS(s, "oifname \"up0\" ip saddr 172.16.0.1 drop\n");
	free(s);
	egress_config_free(&c);
	const char *badmac[] = { "03:00:00:00:00:01", "06:00:ac:10:00", "06:00:ac:10:00:0g",
		                 "06-00-ac-10-00-02", " 6:00:ac:10:00:02" };
	for (size_t i = 0; i < sizeof(badmac) / sizeof(badmac[0]); i++) {
		char t[512];
		snprintf(t, sizeof(t),
		         "{\"guest\":\"172.16.0.2\",\"gateway\":\"172.16.0.1\",\"tap\":\"tap0\","
		         "\"guest_mac\":\"%s\",\"uplink\":\"up0\",\"upstream\":[\"198.51.100.53\"],"
		         "\"policy\":{\"mode\":\"none\"}}",
		         badmac[i]);
		ck_assert_int_eq(egress_config_parse(t, strlen(t), &c, err, sizeof(err)), -EINVAL);
		ck_assert_msg(strstr(err, "guest_mac"), "%s: %s", badmac[i], err);
	}
	const char *unk = "{\"guest\":\"172.16.0.2\",\"x\":1}";
	ck_assert_int_eq(egress_config_parse(unk, strlen(unk), &c, err, sizeof(err)), -EINVAL);
	ck_assert(strstr(err, "unknown key \"x\""));
}
END_TEST

START_TEST(pin_cmds_and_table)
{
	struct nft_pin p = { .proto = 17, .port = 53000, .timeout_s = 30 };
	ck_assert_int_eq(netaddr_parse("198.51.100.8", &p.addr), 0);
	char *s = nftgen_pins(&p, 1, 1);
	ck_assert_str_eq(s, "delete element inet cove_sb pinned { 198.51.100.8 . 17 . 53000 }\n"
	                    "add element inet cove_sb pinned { 198.51.100.8 . 17 . 53000 timeout "
	                    "30s }\n");
	free(s);

	static struct pins t;
	memset(&t, 0, sizeof(t));
	ck_assert_int_eq(pins_note(&t, &p, "git.test", 1000), 1);
	ck_assert_int_eq(pins_note(&t, &p, "git.test", 1500), 0);
	p.timeout_s = 60;
	ck_assert_int_eq(pins_note(&t, &p, "git.test", 2000), 2);
	ck_assert_ptr_nonnull(pins_find(&t, &p.addr, 17, 53000));
	ck_assert_ptr_null(pins_find(&t, &p.addr, 6, 53000));
	struct netpolicy keep, drop;
	netpolicy_init(&keep, NETPOLICY_NONE);
	netpolicy_init(&drop, NETPOLICY_NONE);
	ck_assert_int_eq(netpolicy_add(&keep, "git.test:53000", false, err, sizeof(err)), 0);
	ck_assert_int_eq(netpolicy_add(&drop, "git.test", false, err, sizeof(err)), 0);
	struct nft_pin out[4];
	ck_assert_uint_eq(pins_keep(&t, &keep, 12000, out, 4), 1);
	ck_assert_uint_eq(out[0].timeout_s, 50);
	ck_assert_uint_eq(pins_keep(&t, &drop, 12000, out, 4), 0);
	pins_prune(&t, &drop);
	ck_assert_uint_eq(t.n, 0);
	/* Full: the entry nearest its end makes room. */
	for (unsigned i = 0; i < PINS_MAX + 5; i++) {
		p.port = (uint16_t)(1 + i);
		pins_note(&t, &p, "git.test", 1000 + i);
	}
	ck_assert_uint_eq(t.n, PINS_MAX);
	pins_expire(&t, 1000000);
	ck_assert_uint_eq(t.n, 0);
	netpolicy_free(&keep);
	netpolicy_free(&drop);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("egress_nft");
	TCase *t = tcase_create("nft");
	tcase_add_test(t, rules_mode);
	tcase_add_test(t, other_modes);
	tcase_add_test(t, pin_cmds_and_table);
	suite_add_tcase(s, t);
	return s;
}

UNIT_MAIN()
