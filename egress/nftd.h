/* The nft keeper (issue 26, item 5): cove-egress's privileged half.
 *
 * cove-egress forks it after applying its first table, before either half
 * confines itself.  The keeper keeps CAP_NET_ADMIN, the libnftables
 * context, the policy's source (the ctl socket, whose only client is the
 * host's libcove) and the table of pins; the parser (the process libcove
 * started: resolver, proxy, MITM, NFLOG) keeps no capability at all, so a
 * bug in a parser of guest or network bytes cannot rewrite the firewall.
 *
 * Two SOCK_SEQPACKET pairs join them:
 *   rpc:  parser -> keeper, one struct nftd_msg (pins for one DNS name);
 *         keeper -> parser, an int32 status (0 or -errno).  The keeper's
 *         first message on it is its ready line: "ok" or why it failed.
 *   push: keeper -> parser, a ctl request line the parser must answer
 *         ("proxy", "ca", or a "policy" the keeper has applied), with the
 *         client's connection as SCM_RIGHTS; the parser replies on it.
 * The keeper checks every message (nftd_msg_parse(): sizes, counts,
 * ranges, the name's characters) and then against the policy in force
 * (nftd_pins_allowed(): a NAME:PORT rule must cover each pin, and no
 * always-denied address), so the parser at worst pins an address for a
 * name and port the policy already allows.  Each half exits when the
 * other does (PR_SET_PDEATHSIG, EOF on the pair).  Here: the wire and
 * the pairs; the loops that serve them are egress/keeper.h's. */
#ifndef COVE_EGRESS_NFTD_H
#define COVE_EGRESS_NFTD_H

#include <stddef.h>
#include <stdint.h>

#include "dns.h"
#include "netrule.h"
#include "nftgen.h"

struct egress;

#define NFTD_PIN         1u /* the only request type */
#define NFTD_PINS_MAX    (2 * DNS_PINS_MAX * NETRULE_NAME_PORTS_MAX / 8)
#define NFTD_TIMEOUT_MIN DNS_PIN_MIN_TTL
#define NFTD_TIMEOUT_MAX DNS_TTL_MAX
#define NFTD_REPLY_MS    5000 /* the parser's wait for a pin's status */
#define NFTD_READY_MS    10000

/* One pin on the wire (host byte order: both ends are one binary). */
struct nftd_wire_pin {
	uint8_t family; /* AF_INET: the pinned set is IPv4 */
	uint8_t proto;  /* 6 or 17 */
	uint16_t port;  /* 1..65535 */
	uint32_t timeout_s;
	uint8_t addr[16]; /* IPv4 in the first 4, the rest zero */
};

/* The request header; npins struct nftd_wire_pin follow, nothing else. */
struct nftd_wire_hdr {
	uint32_t type;
	uint32_t seq; /* echoed in the reply */
	uint32_t npins;
	char name[NETRULE_NAME_MAX + 1]; /* NUL-terminated, zero-padded */
	uint8_t pad[2];                  /* zero */
};

#define NFTD_MSG_MAX (sizeof(struct nftd_wire_hdr) + NFTD_PINS_MAX * sizeof(struct nftd_wire_pin))

/* The keeper's answer to one request. */
struct nftd_wire_reply {
	uint32_t seq;
	int32_t status; /* 0 or -errno */
};

/* A request once checked. */
struct nftd_msg {
	uint32_t seq;
	char name[NETRULE_NAME_MAX + 1];
	size_t npins;
	struct nft_pin pins[NFTD_PINS_MAX];
};

/* nftd_msg_parse() - check @len bytes from the parser and copy them into
 * @out.  Refused: a size other than the header plus npins pins, an
 * unknown type, 0 or over NFTD_PINS_MAX pins, a name that is empty,
 * unterminated, not zero-padded or not in netname_normalize()'s form, a
 * family other than AF_INET, address bytes past the fourth, a protocol
 * other than tcp/udp, port 0, a timeout outside
 * [NFTD_TIMEOUT_MIN, NFTD_TIMEOUT_MAX], non-zero padding.
 * Return: 0 or -EINVAL (@out then undefined). */
int nftd_msg_parse(const void *buf, size_t len, struct nftd_msg *out)
    __attribute__((warn_unused_result));

/* nftd_msg_build() - the wire form of @name's @n pins into @buf (at least
 * NFTD_MSG_MAX bytes).  Return: its length, or -EINVAL if @n or @name is
 * out of range. */
long nftd_msg_build(uint32_t seq, const char *name, const struct nft_pin *pins, size_t n, void *buf,
                    size_t cap);

/* nftd_pins_allowed() - whether @policy (in force in the keeper) allows
 * every pin of @m: mode rules, an allow NAME:PORT rule covering the name
 * and the pin's port, and an address not always denied (@hosts: the
 * host's own).  Return: 0 or -EPERM. */
int nftd_pins_allowed(const struct netpolicy *policy, const struct netaddr *hosts, size_t nhosts,
                      const struct nftd_msg *m) __attribute__((warn_unused_result));

/* nftd_fork() - make both pairs and fork the keeper.  Call after the
 * first table is applied, before the parser's sockets exist.  In the
 * parser: the child's pid, with @e's keeper ends set; in the keeper: 0.
 * -errno on failure (nothing forked). */
int nftd_fork(struct egress *e) __attribute__((warn_unused_result));

/* nftd_wait_ready() - in the parser: the keeper's ready line within
 * NFTD_READY_MS.  0, or -errno with its reason in @err. */
int nftd_wait_ready(struct egress *e, char *err, size_t errlen) __attribute__((warn_unused_result));

/* nftd_gone() - in the parser: the keeper is gone (it closed its end):
 * say so, mark @e and stop the loop (main() then exits 1). */
void nftd_gone(struct egress *e);

/* nftd_pin() - in the parser: ask the keeper to pin @n pins for @name and
 * wait for its answer (the guest gets its DNS answer only once the pins
 * are in the set).  Return: 0 or -errno (-EPIPE: the keeper is gone).
 * #syscalls: sendmsg recvmsg ppoll */
int nftd_pin(struct egress *e, const char *name, const struct nft_pin *pins, size_t n)
    __attribute__((warn_unused_result));

/* nftd_forward() - in the keeper: hand ctl request @line (@len bytes) and
 * its connection @fd to the parser.  Return: 0 or -errno. */
int nftd_forward(struct egress *e, const char *line, size_t len, int fd)
    __attribute__((warn_unused_result));

#endif
