/* Unit tests: egress/dns.c, the resolver's decisions: which queries are
 * answered, the fresh upstream query, refusals, and the answer filter
 * (question checked, always-denied addresses stripped, pins, TTL clamp,
 * truncation). */
#include <arpa/inet.h>
#include <errno.h>
#include <ldns/ldns.h>
#include <string.h>

#include "egress/dns.h"
#include "unit.h"

static char err[256];

static struct netpolicy policy(const char *mode, const char *allow0, const char *allow1)
{
	struct netpolicy p;
	netpolicy_init(&p, NETPOLICY_NONE);
	if (allow0)
		ck_assert_int_eq(netpolicy_add(&p, allow0, false, err, sizeof(err)), 0);
	if (allow1)
		ck_assert_int_eq(netpolicy_add(&p, allow1, false, err, sizeof(err)), 0);
	p.mode = !strcmp(mode, "open")   ? NETPOLICY_OPEN
	         : !strcmp(mode, "none") ? NETPOLICY_NONE
	                                 : NETPOLICY_RULES;
	return p;
}

/* A query for @name/@type as a stub would send it. */
static size_t query(uint8_t *out, const char *name, ldns_rr_type type, uint16_t id, bool edns)
{
	ldns_pkt *p =
	    ldns_pkt_query_new(ldns_dname_new_frm_str(name), type, LDNS_RR_CLASS_IN, LDNS_RD);
	ck_assert_ptr_nonnull(p);
	ldns_pkt_set_id(p, id);
	if (edns)
		ldns_pkt_set_edns_udp_size(p, 4096);
	uint8_t *w;
	size_t n;
	ck_assert_int_eq(ldns_pkt2wire(&w, p, &n), LDNS_STATUS_OK);
	memcpy(out, w, n);
	free(w);
	ldns_pkt_free(p);
	return n;
}

/* An upstream answer to @name with the given RRs in text. */
static size_t answer(uint8_t *out, const char *name, ldns_rr_type type, uint16_t id,
                     const char **rrs, size_t nrr)
{
	ldns_pkt *p =
	    ldns_pkt_query_new(ldns_dname_new_frm_str(name), type, LDNS_RR_CLASS_IN, LDNS_RD);
	ldns_pkt_set_id(p, id);
	ldns_pkt_set_qr(p, true);
	for (size_t i = 0; i < nrr; i++) {
		ldns_rr *rr;
		ck_assert_int_eq(ldns_rr_new_frm_str(&rr, rrs[i], 0, NULL, NULL), LDNS_STATUS_OK);
		ldns_pkt_push_rr(p, LDNS_SECTION_ANSWER, rr);
	}
	ldns_rr *ns;
	ck_assert_int_eq(ldns_rr_new_frm_str(&ns, "test. 60 IN NS evil.example.", 0, NULL, NULL),
	                 LDNS_STATUS_OK);
	ldns_pkt_push_rr(p, LDNS_SECTION_AUTHORITY, ns);
	uint8_t *w;
	size_t n;
	ck_assert_int_eq(ldns_pkt2wire(&w, p, &n), LDNS_STATUS_OK);
	memcpy(out, w, n);
	free(w);
	ldns_pkt_free(p);
	return n;
}

START_TEST(decide)
{
	uint8_t m[512];
	struct dns_question q;
	struct netpolicy p = policy("rules", "allowed.test", "*.cdn.test");
	const struct netrule *r;
	ck_assert_int_eq(dns_parse_query(m, query(m, "Allowed.Test.", LDNS_RR_TYPE_A, 7, 0), &q),
	                 0);
	ck_assert(q.name_ok);
	ck_assert_str_eq(q.name, "allowed.test");
	ck_assert_int_eq(q.id, 7);
	ck_assert_int_eq(q.udp_max, 512);
	ck_assert(dns_allowed(&p, &q, &r));
	ck_assert_ptr_nonnull(r);
	ck_assert_int_eq(dns_parse_query(m, query(m, "x.cdn.test.", LDNS_RR_TYPE_AAAA, 7, 1), &q),
	                 0);
	ck_assert_int_eq(q.udp_max, DNS_UDP_MAX);
	ck_assert(dns_allowed(&p, &q, &r));
	ck_assert_int_eq(dns_parse_query(m, query(m, "cdn.test.", LDNS_RR_TYPE_A, 7, 0), &q), 0);
	ck_assert(!dns_allowed(&p, &q, &r));
	/* Tunnels through random labels of a denied name never match. */
	ck_assert_int_eq(
	    dns_parse_query(m, query(m, "aGVsbG8.other.test.", LDNS_RR_TYPE_TXT, 7, 0), &q), 0);
	ck_assert(!dns_allowed(&p, &q, &r));
	ck_assert_int_eq(dns_parse_query(m, query(m, "allowed.test.", LDNS_RR_TYPE_ANY, 7, 0), &q),
	                 0);
	ck_assert(!dns_allowed(&p, &q, &r));
	struct netpolicy o = policy("open", NULL, NULL), n = policy("none", NULL, NULL);
	ck_assert_int_eq(dns_parse_query(m, query(m, "any.where.", LDNS_RR_TYPE_A, 7, 0), &q), 0);
	ck_assert(dns_allowed(&o, &q, &r));
	ck_assert(!dns_allowed(&n, &q, &r));
	/* Malformed: short, a response, two questions. */
	ck_assert_int_eq(dns_parse_query(m, 5, &q), -EINVAL);
	size_t len = query(m, "a.test.", LDNS_RR_TYPE_A, 9, 0);
	m[2] |= 0x80;
	ck_assert_int_eq(dns_parse_query(m, len, &q), -EINVAL);
	ck_assert_int_eq(q.id, 9);
	len = query(m, "a.test.", LDNS_RR_TYPE_A, 9, 0);
	m[5] = 2;
	ck_assert_int_eq(dns_parse_query(m, len, &q), -EINVAL);
	netpolicy_free(&p);
}
END_TEST

START_TEST(replies)
{
	uint8_t m[512], out[512];
	struct dns_question q;
	ck_assert_int_eq(dns_parse_query(m, query(m, "other.test.", LDNS_RR_TYPE_A, 0x1234, 1), &q),
	                 0);
	long n = dns_error_reply(&q, DNS_RCODE_REFUSED, out, sizeof(out));
	ck_assert_int_gt(n, 12);
	ldns_pkt *p;
	ck_assert_int_eq(ldns_wire2pkt(&p, out, (size_t)n), LDNS_STATUS_OK);
	ck_assert_int_eq(ldns_pkt_id(p), 0x1234);
	ck_assert(ldns_pkt_qr(p));
	ck_assert_int_eq(ldns_pkt_get_rcode(p), LDNS_RCODE_REFUSED);
	ck_assert_int_eq(ldns_pkt_qdcount(p), 1);
	ldns_pkt_free(p);
	/* The upstream query is built afresh: RD, EDNS, our id. */
	n = dns_build_query(&q, 0xbeef, out, sizeof(out));
	ck_assert_int_gt(n, 0);
	ck_assert_int_eq(ldns_wire2pkt(&p, out, (size_t)n), LDNS_STATUS_OK);
	ck_assert_int_eq(ldns_pkt_id(p), 0xbeef);
	ck_assert(ldns_pkt_rd(p));
	ck_assert_int_eq(ldns_pkt_edns_udp_size(p), DNS_UDP_MAX);
	char *s = ldns_rdf2str(ldns_rr_owner(ldns_rr_list_rr(ldns_pkt_question(p), 0)));
	ck_assert_str_eq(s, "other.test.");
	free(s);
	ldns_pkt_free(p);
}
END_TEST

START_TEST(filter)
{
	uint8_t m[512], a[2048], out[2048];
	struct dns_question q;
	ck_assert_int_eq(dns_parse_query(m, query(m, "allowed.test.", LDNS_RR_TYPE_A, 77, 0), &q),
	                 0);
	struct netaddr host;
	ck_assert_int_eq(netaddr_parse("192.0.2.5", &host), 0);
	const char *rrs[] = {
		"allowed.test. 10 IN CNAME edge.cdn.test.",
		"edge.cdn.test. 99999 IN A 198.51.100.7",
		"edge.cdn.test. 60 IN A 10.0.0.5",
		"edge.cdn.test. 60 IN A 192.0.2.5",
		"edge.cdn.test. 60 IN A 169.254.169.254",
		"edge.cdn.test. 60 IN TXT \"x\"",
	};
	size_t n = answer(a, "allowed.test.", LDNS_RR_TYPE_A, 500, rrs, 6);
	struct dns_filter f = { .hosts = &host, .nhosts = 1, .max = 512 };
	long r = dns_filter_answer(a, n, 500, &q, &f, out, sizeof(out));
	ck_assert_int_gt(r, 0);
	ck_assert_uint_eq(f.npins, 1);
	ck_assert_uint_eq(f.stripped, 3);
	ck_assert_uint_eq(f.pins[0].ttl, DNS_TTL_MAX);
	ldns_pkt *p;
	ck_assert_int_eq(ldns_wire2pkt(&p, out, (size_t)r), LDNS_STATUS_OK);
	ck_assert_int_eq(ldns_pkt_id(p), 77);
	ck_assert_int_eq(ldns_pkt_ancount(p), 2); /* CNAME + one A */
	ck_assert_int_eq(ldns_pkt_nscount(p), 0);
	ck_assert_int_eq(ldns_pkt_arcount(p), 0);
	ldns_pkt_free(p);
	/* Wrong id, wrong question: not an answer to us. */
	ck_assert_int_eq(dns_filter_answer(a, n, 501, &q, &f, out, sizeof(out)), -1);
	n = answer(a, "other.test.", LDNS_RR_TYPE_A, 500, rrs + 1, 1);
	ck_assert_int_eq(dns_filter_answer(a, n, 500, &q, &f, out, sizeof(out)), -1);
	/* Only private answers: NOERROR with none. */
	n = answer(a, "allowed.test.", LDNS_RR_TYPE_A, 500, rrs + 2, 1);
	r = dns_filter_answer(a, n, 500, &q, &f, out, sizeof(out));
	ck_assert_int_gt(r, 0);
	ck_assert_int_eq(out[3] & 15, 0);
	ck_assert_int_eq(out[6] << 8 | out[7], 0);
	/* Too big for the client's UDP limit: TC, question only, no pins. */
	const char *many[40];
	char buf[40][64];
	for (int i = 0; i < 40; i++) {
		snprintf(buf[i], sizeof(buf[i]), "allowed.test. 60 IN A 198.51.100.%d", i + 1);
		many[i] = buf[i];
	}
	n = answer(a, "allowed.test.", LDNS_RR_TYPE_A, 500, many, 40);
	f.max = 512;
	r = dns_filter_answer(a, n, 500, &q, &f, out, sizeof(out));
	ck_assert_int_gt(r, 0);
	ck_assert(out[2] & 0x02);
	ck_assert_uint_eq(f.npins, 0);
	/* A SERVFAIL upstream is passed on as our failure. */
	n = answer(a, "allowed.test.", LDNS_RR_TYPE_A, 500, NULL, 0);
	a[3] = (uint8_t)((a[3] & 0xf0) | 2);
	ck_assert_int_eq(dns_filter_answer(a, n, 500, &q, &f, out, sizeof(out)), -1);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("egress_dns");
	TCase *t = tcase_create("dns");
	tcase_add_test(t, decide);
	tcase_add_test(t, replies);
	tcase_add_test(t, filter);
	suite_add_tcase(s, t);
	return s;
}

UNIT_MAIN()
