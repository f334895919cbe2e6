#include "dns.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ldns/ldns.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#define HDR 12

/* The normalized text of a dname rdf, or false. */
static bool dname_text(const ldns_rdf *d, char *out, size_t outlen)
{
	if (!d || ldns_rdf_get_type(d) != LDNS_RDF_TYPE_DNAME)
		return false;
	char *s = ldns_rdf2str(d);
	if (!s)
		return false;
	bool ok = netname_normalize(s, out, outlen) == 0;
	free(s);
	return ok;
}

int dns_parse_query(const uint8_t *pkt, size_t len, struct dns_question *q)
{
	memset(q, 0, sizeof(*q));
	if (len < HDR)
		return -EINVAL;
	q->id = (uint16_t)(pkt[0] << 8 | pkt[1]);
	q->rd = pkt[2] & 1;
	q->udp_max = 512;
	ldns_pkt *p = NULL;
	if (ldns_wire2pkt(&p, pkt, len) != LDNS_STATUS_OK)
		return -EINVAL;
	int e = -EINVAL;
	if (ldns_pkt_qr(p) || ldns_pkt_get_opcode(p) != LDNS_PACKET_QUERY ||
	    ldns_pkt_qdcount(p) != 1 || ldns_pkt_ancount(p) || ldns_pkt_nscount(p))
		goto out;
	ldns_rr *rr = ldns_rr_list_rr(ldns_pkt_question(p), 0);
	if (!rr)
		goto out;
	q->qtype = (uint16_t)ldns_rr_get_type(rr);
	q->qclass = (uint16_t)ldns_rr_get_class(rr);
	q->name_ok = dname_text(ldns_rr_owner(rr), q->name, sizeof(q->name));
	if (ldns_pkt_edns(p)) {
		q->edns = true;
		uint16_t s = ldns_pkt_edns_udp_size(p);
		q->udp_max = s < 512 ? 512 : s > DNS_UDP_MAX ? DNS_UDP_MAX : s;
	}
	e = 0;
out:
	ldns_pkt_free(p);
	return e;
}

bool dns_allowed(const struct netpolicy *p, const struct dns_question *q,
                 const struct netrule **rule)
{
	*rule = NULL;
	if (!q->name_ok || q->qclass != LDNS_RR_CLASS_IN || q->qtype == LDNS_RR_TYPE_ANY ||
	    q->qtype == LDNS_RR_TYPE_AXFR || q->qtype == LDNS_RR_TYPE_IXFR ||
	    q->qtype == LDNS_RR_TYPE_OPT)
		return false;
	if (p->mode == NETPOLICY_OPEN)
		return true;
	*rule = netpolicy_match_name(p, q->name, 0);
	return *rule != NULL;
}

/* The question section for @q: a wire name from its normalized text. */
static long put_question(const struct dns_question *q, uint8_t *out, size_t outlen)
{
	size_t o = 0;
	const char *s = q->name;
	while (*s) {
		const char *dot = strchr(s, '.');
		size_t l = dot ? (size_t)(dot - s) : strlen(s);
		if (l == 0 || l > 63 || o + 1 + l > outlen)
			return -1;
		out[o++] = (uint8_t)l;
		memcpy(out + o, s, l);
		o += l;
		s += l + (dot ? 1 : 0);
	}
	if (o + 5 > outlen)
		return -1;
	out[o++] = 0;
	out[o++] = (uint8_t)(q->qtype >> 8);
	out[o++] = (uint8_t)q->qtype;
	out[o++] = (uint8_t)(q->qclass >> 8);
	out[o++] = (uint8_t)q->qclass;
	return (long)o;
}

static long header_reply(const struct dns_question *q, uint8_t flags2, uint8_t rcode, uint8_t *out,
                         size_t outlen)
{
	if (outlen < HDR)
		return -1;
	memset(out, 0, HDR);
	out[0] = (uint8_t)(q->id >> 8);
	out[1] = (uint8_t)q->id;
	out[2] = (uint8_t)(0x80 | flags2 | (q->rd ? 1 : 0)); /* QR, opcode 0 */
	out[3] = (uint8_t)(0x80 | (rcode & 15));             /* RA */
	if (!q->name_ok)
		return HDR;
	long n = put_question(q, out + HDR, outlen - HDR);
	if (n < 0)
		return HDR;
	out[5] = 1; /* qdcount */
	return HDR + n;
}

long dns_error_reply(const struct dns_question *q, uint8_t rcode, uint8_t *out, size_t outlen)
{
	return header_reply(q, 0, rcode, out, outlen);
}

long dns_build_query(const struct dns_question *q, uint16_t id, uint8_t *out, size_t outlen)
{
	if (!q->name_ok || outlen < HDR + 11)
		return -1;
	memset(out, 0, HDR);
	out[0] = (uint8_t)(id >> 8);
	out[1] = (uint8_t)id;
	out[2] = 1;  /* RD */
	out[5] = 1;  /* qdcount */
	out[11] = 1; /* arcount: OPT */
	long n = put_question(q, out + HDR, outlen - HDR - 11);
	if (n < 0)
		return -1;
	uint8_t *o = out + HDR + n;
	/* OPT: root name, type 41, class = udp size, ttl 0, rdlen 0 */
	const uint8_t opt[11] = {
		0, 0, 41, DNS_UDP_MAX >> 8, DNS_UDP_MAX & 0xff, 0, 0, 0, 0, 0, 0
	};
	memcpy(o, opt, sizeof(opt));
	return HDR + n + (long)sizeof(opt);
}

/* Keep this answer record?  Strips always-denied and wholly denied addresses. */
static bool keep_rr(ldns_rr *rr, const struct dns_question *q, struct dns_filter *f)
{
	ldns_rr_type t = ldns_rr_get_type(rr);
	if (ldns_rr_get_class(rr) != LDNS_RR_CLASS_IN)
		return false;
	if (t == LDNS_RR_TYPE_CNAME)
		return ldns_rr_rd_count(rr) == 1;
	if (t != q->qtype)
		return false;
	if (t != LDNS_RR_TYPE_A && t != LDNS_RR_TYPE_AAAA)
		return true;
	ldns_rdf *rd = ldns_rr_rdf(rr, 0);
	size_t want = t == LDNS_RR_TYPE_A ? 4 : 16;
	if (ldns_rr_rd_count(rr) != 1 || !rd || ldns_rdf_size(rd) != want)
		return false;
	struct netaddr a = { .family = t == LDNS_RR_TYPE_A ? AF_INET : AF_INET6 };
	memcpy(a.a, ldns_rdf_data(rd), want);
	if (net_always_denied(&a, f->hosts, f->nhosts) ||
	    (f->policy && netpolicy_denied_addr(f->policy, &a, -1))) {
		f->stripped++;
		return false;
	}
	if (t == LDNS_RR_TYPE_A && f->npins < DNS_PINS_MAX) {
		f->pins[f->npins].addr = a;
		f->pins[f->npins].ttl = ldns_rr_ttl(rr);
		f->npins++;
	}
	return true;
}

long dns_filter_answer(const uint8_t *resp, size_t len, uint16_t up_id,
                       const struct dns_question *q, struct dns_filter *f, uint8_t *out,
                       size_t outlen)
{
	f->npins = 0;
	f->stripped = 0;
	if (len < HDR || (uint16_t)(resp[0] << 8 | resp[1]) != up_id || !q->name_ok)
		return -1;
	ldns_pkt *p = NULL, *r = NULL;
	uint8_t *wire = NULL;
	long ret = -1;
	if (ldns_wire2pkt(&p, resp, len) != LDNS_STATUS_OK)
		return -1;
	if (!ldns_pkt_qr(p) || ldns_pkt_get_opcode(p) != LDNS_PACKET_QUERY ||
	    ldns_pkt_qdcount(p) != 1)
		goto out;
	ldns_rr *qr = ldns_rr_list_rr(ldns_pkt_question(p), 0);
	char name[NETRULE_NAME_MAX + 1];
	if (!qr || !dname_text(ldns_rr_owner(qr), name, sizeof(name)) || strcmp(name, q->name) ||
	    ldns_rr_get_type(qr) != q->qtype || ldns_rr_get_class(qr) != q->qclass)
		goto out;
	ldns_pkt_rcode rc = ldns_pkt_get_rcode(p);
	if (rc != LDNS_RCODE_NOERROR && rc != LDNS_RCODE_NXDOMAIN)
		goto out;
	if (ldns_pkt_tc(p))
		goto out; /* no TCP upstream yet: a truncated answer fails closed */
	r = ldns_pkt_new();
	if (!r)
		goto out;
	ldns_pkt_set_id(r, q->id);
	ldns_pkt_set_qr(r, true);
	ldns_pkt_set_rd(r, q->rd);
	ldns_pkt_set_ra(r, true);
	ldns_pkt_set_rcode(r, (uint8_t)rc);
	ldns_rr *qc = ldns_rr_clone(qr);
	if (!qc || !ldns_pkt_push_rr(r, LDNS_SECTION_QUESTION, qc)) {
		ldns_rr_free(qc);
		goto out;
	}
	ldns_rr_list *an = ldns_pkt_answer(p);
	size_t n = an ? ldns_rr_list_rr_count(an) : 0;
	for (size_t i = 0; i < n; i++) {
		ldns_rr *rr = ldns_rr_list_rr(an, i);
		if (!keep_rr(rr, q, f))
			continue;
		ldns_rr *c = ldns_rr_clone(rr);
		if (!c)
			goto out;
		if (ldns_rr_ttl(c) > DNS_TTL_MAX)
			ldns_rr_set_ttl(c, DNS_TTL_MAX);
		if (!ldns_pkt_push_rr(r, LDNS_SECTION_ANSWER, c)) {
			ldns_rr_free(c);
			goto out;
		}
	}
	for (size_t i = 0; i < f->npins; i++)
		if (f->pins[i].ttl > DNS_TTL_MAX)
			f->pins[i].ttl = DNS_TTL_MAX;
	if (q->edns)
		ldns_pkt_set_edns_udp_size(r, DNS_UDP_MAX);
	size_t wl = 0;
	if (ldns_pkt2wire(&wire, r, &wl) != LDNS_STATUS_OK)
		goto out;
	if (wl > f->max || wl > outlen) {
		f->npins = 0; /* the guest gets no addresses from this one */
		ret = header_reply(q, 0x02, (uint8_t)rc, out, outlen); /* TC */
		goto out;
	}
	memcpy(out, wire, wl);
	ret = (long)wl;
out:
	free(wire);
	ldns_pkt_free(r);
	ldns_pkt_free(p);
	return ret;
}
