/* The resolver's decisions on DNS messages, pure and fuzzed
 * (tests/fuzz/fuzz_dns.c): a guest's query is parsed once into a struct
 * dns_question, judged against the policy, and only a fresh query built
 * from that copy goes upstream (never the guest's bytes: EDNS options and
 * extra records could carry data out).  The upstream's answer is parsed,
 * checked against the question, filtered (rebinding: no always-denied
 * addresses) and rebuilt for the guest.  DNS parsing is ldns's. */
#ifndef COVE_EGRESS_DNS_H
#define COVE_EGRESS_DNS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "netrule.h"

#define DNS_MSG_MAX     65535
#define DNS_UDP_MAX     1232 /* what we offer and accept over UDP (EDNS) */
#define DNS_TTL_MAX     3600 /* answers' TTLs are clamped to this */
#define DNS_PIN_MIN_TTL 30
#define DNS_PINS_MAX    32 /* addresses pinned from one answer */

#define DNS_RCODE_NOERROR  0
#define DNS_RCODE_FORMERR  1
#define DNS_RCODE_SERVFAIL 2
#define DNS_RCODE_NXDOMAIN 3
#define DNS_RCODE_REFUSED  5

struct dns_question {
	uint16_t id;
	bool rd;
	bool edns;
	bool name_ok; /* name holds a normalized name */
	char name[NETRULE_NAME_MAX + 1];
	uint16_t qtype, qclass;
	uint16_t udp_max; /* the client's UDP reply limit */
};

/* dns_parse_query() - a guest's query: QR clear, opcode QUERY, exactly one
 * question, no answer or authority records.  @q->id is set whenever the
 * message has a header (for a FORMERR reply).  A name that is no valid
 * host name leaves @q->name_ok false (REFUSED, not FORMERR).
 * Return: 0, or -EINVAL (malformed: FORMERR if @len >= 12, else drop). */
int dns_parse_query(const uint8_t *pkt, size_t len, struct dns_question *q)
    __attribute__((warn_unused_result));

/* dns_allowed() - may @q be answered?  Class IN, a name an allow rule
 * matches (any valid name in open mode), and not ANY/AXFR/IXFR.  @rule is
 * set to the matching rule (NULL in open mode). */
bool dns_allowed(const struct netpolicy *p, const struct dns_question *q,
                 const struct netrule **rule);

/* dns_build_query() - a fresh query for @q's question with @id, RD set
 * and EDNS (udp size DNS_UDP_MAX).  Return: its length, or -1. */
long dns_build_query(const struct dns_question *q, uint16_t id, uint8_t *out, size_t outlen);

/* dns_error_reply() - header (@q's id, RD, RA, @rcode) and @q's question
 * when it has a valid name.  Return: length, or -1. */
long dns_error_reply(const struct dns_question *q, uint8_t rcode, uint8_t *out, size_t outlen);

struct dns_pin {
	struct netaddr addr;
	uint32_t ttl; /* the answer's TTL (already clamped to DNS_TTL_MAX) */
};

struct dns_filter {
	const struct netaddr *hosts; /* the host's own addresses */
	size_t nhosts;
	const struct netpolicy *policy;    /* portless deny rules strip too */
	size_t max;                        /* reply size limit (UDP: q->udp_max) */
	struct dns_pin pins[DNS_PINS_MAX]; /* out: the A records kept */
	size_t npins;
	unsigned stripped; /* out: addresses removed */
};

/* dns_filter_answer() - check upstream's @resp (id @up_id) against @q and
 * build the guest's reply: @q's id and question, the answer section's
 * CNAMEs and records of the asked type only (A and AAAA minus always-denied
 * addresses), TTLs clamped, no authority or additional records.  If every
 * address was stripped the reply is NOERROR with no addresses.  A reply
 * over @f->max is sent truncated (TC, question only).
 * Return: the reply's length, or -1 for a response that does not answer
 * @q (the caller answers SERVFAIL). */
long dns_filter_answer(const uint8_t *resp, size_t len, uint16_t up_id,
                       const struct dns_question *q, struct dns_filter *f, uint8_t *out,
                       size_t outlen);

#endif
