/* Unit tests: common/netrule.c, the egress rule syntax, its errors, domain
 * matching, the always-denied ranges and the policy's JSON. */
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>

#include "netrule.h"
#include "unit.h"

static char err[256];

static struct netrule parse_ok(const char *s, bool deny)
{
	struct netrule r;
	int e = netrule_parse(s, deny, &r, err, sizeof(err));
	ck_assert_msg(e == 0, "%s: %s", s, err);
	return r;
}

static void round_trip(const char *s, const char *canon)
{
	struct netrule r = parse_ok(s, false);
	char t[NETRULE_TEXT_MAX + 8];
	ck_assert_int_gt(netrule_format(&r, t, sizeof(t)), 0);
	ck_assert_str_eq(t, canon);
	struct netrule r2 = parse_ok(t, false);
	ck_assert_mem_eq(&r, &r2, sizeof(r));
}

START_TEST(rule_forms)
{
	round_trip("198.51.100.7", "198.51.100.7");
	round_trip("198.51.100.7/32", "198.51.100.7");
	round_trip("198.51.100.0/24", "198.51.100.0/24");
	round_trip("198.51.100.7/32:9000", "198.51.100.7:9000");
	round_trip("198.51.100.0/24:8000-8100", "198.51.100.0/24:8000-8100");
	round_trip("198.51.100.7:22", "198.51.100.7:22");
	round_trip("Allowed.TEST.", "allowed.test");
	round_trip("*.example.com", "*.example.com");
	round_trip("git.test:22", "git.test:22");
	round_trip("*.x.test:443", "*.x.test:443");
	round_trip("2001:db8::/32", "2001:db8::/32");
	round_trip("2001:db8::/32:443", "2001:db8::/32:443");
	round_trip("[2001:db8::1]:443", "[2001:db8::1]:443");
	round_trip("2001:db8::1", "2001:db8::1");
	struct netrule r = parse_ok("198.51.100.0/24:8000-8100", false);
	ck_assert_int_eq(r.kind, NETRULE_CIDR);
	ck_assert_int_eq(r.prefix, 24);
	ck_assert_int_eq(r.port_lo, 8000);
	ck_assert_int_eq(r.port_hi, 8100);
	r = parse_ok("10.0.0.0/8", true);
	ck_assert(!r.has_port);
	ck_assert_int_eq(r.port_lo, 0);
	ck_assert_int_eq(r.port_hi, 65535);
}
END_TEST

static void parse_bad(const char *s, bool deny, const char *needle)
{
	struct netrule r;
	err[0] = '\0';
	ck_assert_int_eq(netrule_parse(s, deny, &r, err, sizeof(err)), -EINVAL);
	ck_assert_msg(strstr(err, needle), "%s: '%s' lacks '%s'", s, err, needle);
	ck_assert_ptr_null(strchr(err, '\n'));
}

START_TEST(rule_errors)
{
	parse_bad("", false, "empty allow rule");
	parse_bad("198.51.100.7/24", false, "host bits");
	parse_bad("198.51.100.0/33", false, "prefix must be 0..32");
	parse_bad("300.1.1.1", false, "'300.1.1.1'");
	parse_bad("198.51.100.7:0", false, "port must be");
	parse_bad("198.51.100.7:65536", false, "port must be");
	parse_bad("198.51.100.7:90-80", false, "LO <= HI");
	parse_bad("a.test:x", false, "port");
	parse_bad("allowed.test", true, "deny rules take addresses only");
	parse_bad("*", false, "--net open");
	parse_bad("a.*.test", false, "'*' only as the first label");
	parse_bad("bad_-.test", false, "not an address or a DNS name");
	parse_bad("-a.test", false, "DNS name");
	parse_bad("a..test", false, "DNS name");
	parse_bad("a b", false, "spaces");
	parse_bad("a.test:1000-2000", false, "at most 64 ports");
	parse_bad("2001:db8::1:x", false, "brackets");
	parse_bad("[198.51.100.7]:80", false, "IPv6");
	parse_bad("[2001:db8::1]x", false, "':PORT'");
	char big[400];
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	parse_bad(big, false, "too long");
	char lab[80];
	memset(lab, 'a', 64);
	strcpy(lab + 64, ".test");
	parse_bad(lab, false, "DNS name");
}
END_TEST

START_TEST(domain_match)
{
	struct netrule ex = parse_ok("allowed.test", false);
	struct netrule wc = parse_ok("*.cdn.test", false);
	struct netrule pt = parse_ok("git.test:22", false);
	char n[NETRULE_NAME_MAX + 1];
	ck_assert_int_eq(netname_normalize("ALLOWED.Test.", n, sizeof(n)), 0);
	ck_assert(netrule_match_name(&ex, n, 0));
	ck_assert(netrule_match_name(&ex, n, 443));
	ck_assert(!netrule_match_name(&ex, "a.allowed.test", 0));
	ck_assert(!netrule_match_name(&ex, "xallowed.test", 0));
	ck_assert(netrule_match_name(&wc, "a.cdn.test", 0));
	ck_assert(netrule_match_name(&wc, "a.b.cdn.test", 0));
	ck_assert(!netrule_match_name(&wc, "cdn.test", 0));
	ck_assert(!netrule_match_name(&wc, "xcdn.test", 0));
	ck_assert(netrule_match_name(&pt, "git.test", 0));
	ck_assert(netrule_match_name(&pt, "git.test", 22));
	ck_assert(!netrule_match_name(&pt, "git.test", 443));
	ck_assert_int_eq(netname_normalize(".", n, sizeof(n)), -EINVAL);
	ck_assert_int_eq(netname_normalize("a.test..", n, sizeof(n)),
	                 -EINVAL); /* found by fuzz_clienthello */
	ck_assert_int_eq(netname_normalize("a\x80.test", n, sizeof(n)), -EINVAL);
}
END_TEST

static struct netaddr A(const char *s) {
	struct netaddr a;
	ck_assert_int_eq(netaddr_parse(s, &a), 0);
	return a;
}

START_TEST(always_denied)
{
	struct netaddr host = A("192.0.2.5");
	const char *denied[] = { "0.1.2.3",
		                 "10.1.1.1",
		                 "100.64.0.1",
		                 "100.127.255.255",
		                 "127.0.0.1",
		                 "169.254.169.254",
		                 "172.16.0.1",
		                 "172.31.255.255",
		                 "192.168.1.1",
		                 "224.0.0.1",
		                 "239.255.255.250",
		                 "240.0.0.1",
		                 "255.255.255.255",
		                 "192.0.2.5",
		                 "192.0.0.9",
		                 "198.18.0.1",
		                 "198.19.255.255",
		                 "168.63.129.16",
		                 "::1",
		                 "::",
		                 "fc00::1",
		                 "fdff::1",
		                 "fe80::1",
		                 "ff02::1",
		                 "::ffff:198.51.100.7" };
	for (size_t i = 0; i < sizeof(denied) / sizeof(denied[0]); i++) {
		struct netaddr a = A(denied[i]);
		ck_assert_msg(net_always_denied(&a, &host, 1), "%s", denied[i]);
	}
	const char *open[] = { "198.51.100.7",  "203.0.113.1", "100.128.0.1", "172.32.0.1",
		               "192.0.2.6",     "2001:db8::1", "11.0.0.1",    "198.20.0.1",
		               "168.63.129.17", "192.0.1.255" };
	for (size_t i = 0; i < sizeof(open) / sizeof(open[0]); i++) {
		struct netaddr a = A(open[i]);
		ck_assert_msg(!net_always_denied(&a, &host, 1), "%s", open[i]);
	}
}
END_TEST

START_TEST(policy_json)
{
	json_error_t je;
	json_t *j = json_loads("{\"mode\":\"rules\",\"allow\":[\"allowed.test\",\"198.51.100.0/24:"
	                       "9000\"],\"deny\":[\"198.51.100.9\"]}",
	                       0, &je);
	struct netpolicy p;
	ck_assert_int_eq(netpolicy_from_json(j, &p, err, sizeof(err)), 0);
	json_decref(j);
	ck_assert_int_eq(p.mode, NETPOLICY_RULES);
	ck_assert_uint_eq(p.nallow, 2);
	ck_assert_uint_eq(p.ndeny, 1);
	ck_assert_ptr_nonnull(netpolicy_match_name(&p, "allowed.test", 80));
	ck_assert_ptr_null(netpolicy_match_name(&p, "other.test", 80));
	struct netaddr a = A("198.51.100.9"), b = A("198.51.100.8");
	ck_assert_ptr_nonnull(netpolicy_denied_addr(&p, &a, 9000));
	ck_assert_ptr_null(netpolicy_denied_addr(&p, &b, 9000));
	ck_assert_ptr_nonnull(netpolicy_allowed_addr(&p, &b, 9000));
	ck_assert_ptr_null(netpolicy_allowed_addr(&p, &b, 9001));
	ck_assert_ptr_null(netpolicy_allowed_addr(&p, &b, -1));
	json_t *o = netpolicy_to_json(&p);
	char *s = json_dumps(o, JSON_COMPACT);
	ck_assert_str_eq(s, "{\"mode\":\"rules\",\"allow\":[\"allowed.test\",\"198.51.100.0/24:"
	                    "9000\"],\"deny\":[\"198.51.100.9\"]}");
	free(s);
	json_decref(o);
	struct netpolicy c;
	ck_assert_int_eq(netpolicy_copy(&c, &p), 0);
	ck_assert_uint_eq(c.nallow, 2);
	netpolicy_free(&c);
	netpolicy_free(&p);

	const char *badj[][2] = {
		{ "{\"mode\":\"rules\",\"extra\":1}", "unknown key \"extra\"" },
		{ "{\"allow\":[]}", "\"mode\"" },
		{ "{\"mode\":\"shut\"}", "bad mode" },
		{ "{\"mode\":\"none\",\"allow\":[\"a.test\"]}", "mode none takes no allow" },
		{ "{\"mode\":\"rules\",\"allow\":[1]}", "\"allow\"[0]" },
		{ "{\"mode\":\"rules\",\"deny\":[\"a.test\"]}", "bad deny rule 'a.test'" },
		{ "{\"mode\":\"rules\",\"allow\":\"a.test\"}", "must be an array" },
		{ "[]", "not a JSON object" },
	};
	for (size_t i = 0; i < sizeof(badj) / sizeof(badj[0]); i++) {
		j = json_loads(badj[i][0], 0, &je);
		ck_assert_ptr_nonnull(j);
		ck_assert_int_eq(netpolicy_from_json(j, &p, err, sizeof(err)), -EINVAL);
		ck_assert_msg(strstr(err, badj[i][1]), "%s: %s", badj[i][0], err);
		ck_assert_ptr_null(p.allow);
		json_decref(j);
	}
}
END_TEST

START_TEST(policy_add_limits)
{
	struct netpolicy p;
	netpolicy_init(&p, NETPOLICY_NONE);
	ck_assert_int_eq(netpolicy_add(&p, "a.test", false, err, sizeof(err)), 0);
	ck_assert_int_eq(p.mode, NETPOLICY_RULES);
	for (int i = 1; i < NETPOLICY_RULES_MAX; i++)
		ck_assert_int_eq(netpolicy_add(&p, "198.51.100.1", false, err, sizeof(err)), 0);
	ck_assert_int_eq(netpolicy_add(&p, "198.51.100.1", false, err, sizeof(err)), -E2BIG);
	netpolicy_free(&p);
	/* mode none never matches, even with a rule injected. */
	netpolicy_init(&p, NETPOLICY_NONE);
	ck_assert_ptr_null(netpolicy_match_name(&p, "a.test", 0));
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("netrule");
	TCase *t = tcase_create("netrule");
	tcase_add_test(t, rule_forms);
	tcase_add_test(t, rule_errors);
	tcase_add_test(t, domain_match);
	tcase_add_test(t, always_denied);
	tcase_add_test(t, policy_json);
	tcase_add_test(t, policy_add_limits);
	suite_add_tcase(s, t);
	return s;
}

UNIT_MAIN()
