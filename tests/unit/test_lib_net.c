/* Unit tests (test_lib_net): the pure parts of libcove's networking (lib/net_addr.c):
 * addresses from the index K, the option syntaxes and their one-line
 * errors, the resolv.conf reader, the policy's JSON, the network checks
 * of a configuration, the net record's meta.json round trip, and the
 * range of K ($COVE_NET_INDEXES) that claims stay in. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cove.h"
#include "lib/base/registry.h"
#include "lib/base/sandbox_net.h"
#include "lib/net/net.h"
#include "lib/net/net_addr.h"
#include "lib/net/net_nft.h"
#include "unit.h"

static char err[512];

START_TEST(index_addresses)
{
	char a[16];
	net_ntoa(net_host_end(0), a);
	ck_assert_str_eq(a, "100.100.0.1");
	net_ntoa(net_ns_end(0), a);
	ck_assert_str_eq(a, "100.100.0.2");
	net_ntoa(net_host_end(1), a);
	ck_assert_str_eq(a, "100.100.0.5");
	net_ntoa(net_ns_end(64), a);
	ck_assert_str_eq(a, "100.100.1.2");
	net_ntoa(net_host_end(NET_INDEX_MAX), a);
	ck_assert_str_eq(a, "100.100.255.253");
	net_ntoa(net_ns_end(NET_INDEX_MAX), a);
	ck_assert_str_eq(a, "100.100.255.254");
	/* Every /30 stays inside 100.100.0.0/16 and apart from the next. */
	for (unsigned int k = 0; k <= NET_INDEX_MAX; k++) {
		ck_assert_uint_eq(net_host_end(k) >> 16, 0x6464);
		ck_assert_uint_eq(net_ns_end(k) & 3, 2);
		ck_assert_uint_eq(net_host_end(k) & ~3u, net_ns_end(k) & ~3u);
	}
}
END_TEST

START_TEST(rules)
{
	const char *good[] = { "198.51.100.7",         "198.51.100.0/24",
		               "198.51.100.0/24:8000", "198.51.100.0/24:8000-8100",
		               "allowed.test",         "*.allowed.test",
		               "allowed.test:22" };
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		ck_assert_msg(net_rule_check(good[i], false, err, sizeof(err)) == 0, "%s: %s",
		              good[i], err);
	ck_assert_int_eq(net_rule_check("198.51.100.0/24:443", true, err, sizeof(err)), 0);
	ck_assert_int_eq(net_rule_check("allowed.test", true, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "allowed.test"));
	ck_assert_ptr_null(strchr(err, '\n'));
	ck_assert_int_eq(net_rule_check("not a rule!", false, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "not a rule!"));
	ck_assert_int_eq(net_rule_check("198.51.100.0/33", false, err, sizeof(err)), -EINVAL);
	ck_assert_int_eq(net_rule_check("", false, err, sizeof(err)), -EINVAL);
}
END_TEST

START_TEST(publish)
{
	struct net_publish p;
	ck_assert_int_eq(net_publish_parse("8080:80", &p, err, sizeof(err)), 0);
	ck_assert_uint_eq(p.addr, 0x7f000001);
	ck_assert_uint_eq(p.host_port, 8080);
	ck_assert_uint_eq(p.guest_port, 80);
	ck_assert_int_eq(net_publish_parse("0.0.0.0:8443:443", &p, err, sizeof(err)), 0);
	ck_assert_uint_eq(p.addr, 0);
	ck_assert_uint_eq(p.guest_port, 443);
	const char *bad[] = { "80",         "0:80", "80:65536", "x:1:2",
		              "1.2.3.4:80", ":80",  "80:",      "1.2.3.4:1:2:3" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_msg(net_publish_parse(bad[i], &p, err, sizeof(err)) == -EINVAL, "%s",
		              bad[i]);
		ck_assert_ptr_nonnull(strstr(err, "--publish"));
	}
}
END_TEST

START_TEST(dns_and_resolv_conf)
{
	struct net_upstream u;
	ck_assert_int_eq(net_dns_parse("198.51.100.53", &u, err, sizeof(err)), 0);
	ck_assert_uint_eq(u.port, 53);
	ck_assert_int_eq(net_dns_parse("198.51.100.53:5353", &u, err, sizeof(err)), 0);
	ck_assert_uint_eq(u.port, 5353);
	ck_assert_int_eq(net_dns_parse("resolver.test", &u, err, sizeof(err)), -EINVAL);
	ck_assert_int_eq(net_dns_parse("1.2.3.4:0", &u, err, sizeof(err)), -EINVAL);
	struct net_upstream up[4];
	size_t n = net_resolv_conf("# comment\nnameserver 127.0.0.53\nsearch x\n"
	                           "nameserver\t192.0.2.1\nnameserver ::1\n"
	                           "nameserver 198.51.100.9 # trailing\n",
	                           up, 4);
	ck_assert_uint_eq(n, 2);
	ck_assert_uint_eq(up[0].addr, 0xc0000201);
	ck_assert_uint_eq(up[1].addr, 0xc6336409);
	ck_assert_uint_eq(net_resolv_conf("", up, 4), 0);
}
END_TEST

START_TEST(limits)
{
	ck_assert_int_eq(net_limits_check("rx_bps=1000000,tx_pps=500", err, sizeof(err)), 0);
	ck_assert_int_eq(net_limits_check("tx_bps_burst=10", err, sizeof(err)), 0);
	const char *bad[] = { "",     "rx_bps",    "rx_bps=",   "rx_bps=0",
		              "up=1", "rx_bps=1,", "rx_bps=1k", "rx_bps=99999999999999999" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(net_limits_check(bad[i], err, sizeof(err)) == -EINVAL, "%s", bad[i]);
}
END_TEST

START_TEST(config_checks)
{
	struct cove_config c;
	memset(&c, 0, sizeof(c));
	ck_assert_int_eq(net_check_config(&c, true, err, sizeof(err)), 0);
	const char *allow[] = { "allowed.test", NULL }, *deny[] = { "*.x.test", NULL };
	const char *pub[] = { "8080:80", "8080:81", NULL };
	c.net.allow = allow;
	ck_assert_int_eq(net_check_config(&c, true, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "without a network mode"));
	c.net.mode = COVE_NET_NONE;
	ck_assert_int_eq(net_check_config(&c, true, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "--net none"));
	c.net.mode = COVE_NET_RULES;
	ck_assert_int_eq(net_check_config(&c, true, err, sizeof(err)), 0);
	c.net.deny = deny;
	ck_assert_int_eq(net_check_config(&c, true, err, sizeof(err)), -EINVAL);
	c.net.deny = NULL;
	c.net_publish = pub;
	ck_assert_int_eq(net_check_config(&c, true, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "twice"));
	c.net_publish = NULL;
	c.net_limits = "rx_bps=x";
	ck_assert_int_eq(net_check_config(&c, true, err, sizeof(err)), -EINVAL);
	/* A restore may bring --net-limit alone (the snapshot has the mode). */
	c.net_limits = "rx_bps=1000";
	c.net.mode = COVE_NET_OFF;
	c.net.allow = NULL;
	ck_assert_int_eq(net_check_config(&c, false, err, sizeof(err)), 0);
	ck_assert_int_eq(net_check_config(&c, true, err, sizeof(err)), -EINVAL);
}
END_TEST

START_TEST(policy_json)
{
	const char *allow[] = { "allowed.test", "198.51.100.0/24:80", NULL };
	struct cove_net_policy p = { .mode = COVE_NET_RULES, .allow = allow };
	json_t *j = net_policy_json(&p);
	ck_assert_ptr_nonnull(j);
	char *t = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
	ck_assert_str_eq(t, "{\"allow\":[\"allowed.test\",\"198.51.100.0/24:80\"],\"deny\":[],"
	                    "\"mode\":\"rules\"}");
	free(t);
	json_decref(j);
	p.mode = COVE_NET_OFF;
	ck_assert_ptr_null(net_policy_json(&p));
	ck_assert_str_eq(cove_net_mode_name(COVE_NET_OPEN), "open");
}
END_TEST

START_TEST(meta_net_round_trip)
{
	char dir[] = "/tmp/cove-ut-net-XXXXXX";
	ck_assert_ptr_nonnull(mkdtemp(dir));
	struct registry_meta *a = calloc(1, sizeof(*a)), *b = calloc(1, sizeof(*b));
	snprintf(a->name, sizeof(a->name), "n1");
	a->pid = getpid();
	a->cpus = 1;
	a->net.on = true;
	a->net.index = 16383;
	a->net.egress_pid = 1234;
	a->net.egress_start = 987654321;
	snprintf(a->net.policy, sizeof(a->net.policy),
	         "{\"mode\":\"open\",\"allow\":[],\"deny\":[\"198.51.100.0/24\"]}");
	snprintf(a->net.limits, sizeof(a->net.limits), "rx_bps=1000");
	ck_assert_int_eq(registry_meta_write(dir, a), 0);
	ck_assert_int_eq(registry_meta_read(dir, b), 0);
	ck_assert(b->net.on);
	ck_assert_uint_eq(b->net.index, 16383);
	ck_assert_int_eq(b->net.egress_pid, 1234);
	ck_assert_uint_eq(b->net.egress_start, 987654321);
	ck_assert_str_eq(b->net.limits, "rx_bps=1000");
	json_t *pa = json_loads(a->net.policy, 0, NULL), *pb = json_loads(b->net.policy, 0, NULL);
	ck_assert(json_equal(pa, pb));
	json_decref(pa);
	json_decref(pb);
	/* Without a network, no "net" at all. */
	a->net.on = false;
	ck_assert_int_eq(registry_meta_write(dir, a), 0);
	ck_assert_int_eq(registry_meta_read(dir, b), 0);
	ck_assert(!b->net.on);
	ck_assert_int_eq(b->net.egress_pid, 0);
	registry_remove_tree(dir);
	free(a);
	free(b);
}
END_TEST

/* The host's table: anti-spoofing on the sandbox links, the always-denied
 * ranges again, the upstreams excepted. */
START_TEST(host_table)
{
	struct net_upstream up[2] = { { .addr = 0xc6336435, .port = 53 },
		                      { .addr = 0x0a000035, .port = 5353 } };
	char *s = net_host_rules_text(up, 2);
	ck_assert_ptr_nonnull(s);
#define HAS(sub) ck_assert_msg(strstr(s, sub), "missing: %s\n%s", sub, s)
	HAS("flush set inet cove always4\n");
	HAS("add rule inet cove forward iifname \"cv*\" meta nfproto != ipv4 drop\n"
	    "add rule inet cove forward iifname \"cv*\" ip saddr != 100.100.0.0/16 drop\n"
	    "add rule inet cove forward iifname \"cv*\" fib saddr . iif oif missing drop\n"
	    "add rule inet cove forward iifname \"cv*\" oifname \"cv*\" drop\n"
	    "add rule inet cove forward iifname \"cv*\" meta l4proto { tcp, udp } ip daddr . th "
	    "dport @dns accept\n"
	    "add rule inet cove forward iifname \"cv*\" ip daddr @always4 drop\n");
	HAS("add rule inet cove input iifname \"cv*\" fib saddr . iif oif missing drop\n"
	    "add rule inet cove input iifname \"cv*\" ct state established,related accept\n");
	HAS("add element inet cove always4 { 0.0.0.0/8, 10.0.0.0/8, 100.64.0.0/10, ");
	HAS("169.254.0.0/16, 172.16.0.0/12, 192.168.0.0/16, 224.0.0.0/4, 240.0.0.0/4, "
	    "192.0.0.0/24, 198.18.0.0/15, 168.63.129.16/32 }\n");
	HAS("add element inet cove dns { 198.51.100.53 . 53, 10.0.0.53 . 5353 }\n");
#undef HAS
	/* Anti-spoofing before the first accept. */
	ck_assert(strstr(s, "saddr != 100.100.0.0/16 drop") < strstr(s, "accept\n"));
	/* As root with nft: the kernel takes it (check mode changes nothing). */
	if (geteuid() == 0 && system("nft --version >/dev/null 2>&1") == 0) {
		char path[] = "/tmp/cove-host-nft-XXXXXX", cmd[128];
		int fd = mkstemp(path);
		ck_assert_int_ge(fd, 0);
		ck_assert_int_eq(write(fd, s, strlen(s)), (ssize_t)strlen(s));
		close(fd);
		snprintf(cmd, sizeof(cmd), "nft -c -f %s", path);
		int r = system(cmd);
		unlink(path);
		ck_assert_int_eq(r, 0);
	}
	free(s);
}
END_TEST

/* $COVE_NET_INDEXES: its syntax and bounds, one line when bad. */
START_TEST(index_range)
{
	unsigned int first, last;
	unsetenv("COVE_NET_INDEXES");
	ck_assert_int_eq(net_index_range(&first, &last, err, sizeof(err)), 0);
	ck_assert(first == 0 && last == NET_INDEX_MAX);
	setenv("COVE_NET_INDEXES", "", 1);
	ck_assert_int_eq(net_index_range(&first, &last, err, sizeof(err)), 0);
	ck_assert(first == 0 && last == NET_INDEX_MAX);
	setenv("COVE_NET_INDEXES", "10-12", 1);
	ck_assert_int_eq(net_index_range(&first, &last, err, sizeof(err)), 0);
	ck_assert(first == 10 && last == 12);
	setenv("COVE_NET_INDEXES", "16383-16383", 1);
	ck_assert_int_eq(net_index_range(&first, &last, err, sizeof(err)), 0);
	ck_assert(first == NET_INDEX_MAX && last == NET_INDEX_MAX);
	static const char *const bad[] = {
		"12-10", "5",  "-5",   "0-16384", "a-b", "1-2-3",
		" 1-2",  "1-", "+1-2", "1-2 ",    "-",   "99999999999-1"
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		setenv("COVE_NET_INDEXES", bad[i], 1);
		ck_assert_msg(net_index_range(&first, &last, err, sizeof(err)) == -EINVAL,
		              "accepted '%s'", bad[i]);
		ck_assert_msg(strstr(err, "COVE_NET_INDEXES must be FIRST-LAST") &&
		                  strstr(err, bad[i]) && !strchr(err, '\n'),
		              "'%s' gave '%s'", bad[i], err);
	}
	unsetenv("COVE_NET_INDEXES");
}
END_TEST

/* Claims of K stay in $COVE_NET_INDEXES: a full range says so, a stale
 * claim (its sandbox directory gone) is taken over, a bad range claims
 * nothing. */
START_TEST(index_claims_in_range)
{
	char base[] = "/tmp/cove-unit-net.XXXXXX", dir[5][128], name[5][8];
	ck_assert_ptr_nonnull(mkdtemp(base));
	struct sandbox_net n[5];
	setenv("COVE_NET_INDEXES", "100-103", 1);
	for (int i = 0; i < 5; i++) {
		snprintf(name[i], sizeof(name[i]), "s%d", i);
		snprintf(dir[i], sizeof(dir[i]), "%s/%s", base, name[i]);
		ck_assert_int_eq(mkdir(dir[i], 0700), 0);
		memset(&n[i], 0, sizeof(n[i]));
	}
	for (int i = 0; i < 4; i++) {
		ck_assert_msg(net_claim_index(&n[i], dir[i], name[i], err, sizeof(err)) == 0, "%s",
		              err);
		ck_assert(n[i].index >= 100 && n[i].index <= 103);
		for (int j = 0; j < i; j++)
			ck_assert_uint_ne(n[i].index, n[j].index);
	}
	ck_assert_int_eq(net_claim_index(&n[4], dir[4], name[4], err, sizeof(err)), -EUSERS);
	ck_assert_msg(strstr(err, "no free network index (100-103)"), "%s", err);
	/* s0 is gone: its claim is stale, and the only free one. */
	ck_assert_int_eq(rmdir(dir[0]), 0);
	ck_assert_msg(net_claim_index(&n[4], dir[4], name[4], err, sizeof(err)) == 0, "%s", err);
	ck_assert_uint_eq(n[4].index, n[0].index);
	setenv("COVE_NET_INDEXES", "7", 1);
	ck_assert_int_eq(net_claim_index(&n[0], dir[4], name[4], err, sizeof(err)), -EINVAL);
	unsetenv("COVE_NET_INDEXES");
	for (int i = 1; i < 5; i++) {
		ck_assert_int_eq(unlink(n[i].claim), 0);
		ck_assert_int_eq(rmdir(dir[i]), 0);
	}
	char nd[sizeof(base) + 8];
	snprintf(nd, sizeof(nd), "%s/.net", base);
	ck_assert_int_eq(rmdir(nd), 0);
	ck_assert_int_eq(rmdir(base), 0);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("lib_net");
	TCase *tc = tcase_create("net");
	tcase_add_test(tc, index_addresses);
	tcase_add_test(tc, rules);
	tcase_add_test(tc, publish);
	tcase_add_test(tc, dns_and_resolv_conf);
	tcase_add_test(tc, limits);
	tcase_add_test(tc, config_checks);
	tcase_add_test(tc, policy_json);
	tcase_add_test(tc, meta_net_round_trip);
	tcase_add_test(tc, host_table);
	tcase_add_test(tc, index_range);
	tcase_add_test(tc, index_claims_in_range);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN()
