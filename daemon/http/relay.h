/* The HTTP framing of a request relayed to a TCP port in a sandbox
 * (relay.c; daemon/ports uses it): which port and sandbox a request names
 * (E2b-Sandbox-Port, or a Host of <port>-<id>.<domain>), the request head
 * the sandbox's server gets, and the parser of the head and body it
 * answers with (hostile input: bounded, fuzzed by
 * tests/fuzz/fuzz_relay.c).  Pure: no I/O, no libmicrohttpd. */
#ifndef COVED_HTTP_RELAY_H
#define COVED_HTTP_RELAY_H

#include <http_parser.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RELAY_ENVD_PORT   49983       /* E2B's envd: coved's own envd surface */
#define RELAY_ID_MAX      64          /* bytes of a sandbox id in a host name */
#define RELAY_HEAD_MAX    (64 * 1024) /* bytes of the server's response head */
#define RELAY_HEADERS_MAX 128         /* header lines of that head */
#define RELAY_TARGET_MAX  8192        /* bytes of a request target */

/* relay_port_value() - an E2b-Sandbox-Port value: 1-65535 in decimal, no
 * sign, spaces or leading zeros.  Return: the port, or -EINVAL. */
int relay_port_value(const char *s);

/* relay_host_route() - whether a Host header names a sandbox's port under
 * domain (the config's: a lower-case DNS name): "<port>-<id>.<domain>", any case, with an optional ":<port>" of
 * the listener.  id: [a-z0-9], 1-RELAY_ID_MAX, lower-cased into id.
 * Return: 1 with *port and id; 0 when host is another name (the domain
 * itself, "api.<domain>", any name outside it; host may be NULL); -EINVAL
 * when its first label under domain looks like "<port>-<id>" but is not
 * one (a port out of range, a bad character). */
int relay_host_route(const char *host, const char *domain, uint16_t *port,
                     char id[RELAY_ID_MAX + 1]);

/* relay_is_upgrade() - the client asks to switch protocols: Connection
 * lists "upgrade" (any case, among other tokens) and Upgrade is given. */
bool relay_is_upgrade(const char *connection, const char *upgrade);

struct relay_hdr {
	const char *name, *value;
};

enum relay_body {
	RELAY_BODY_NONE,
	RELAY_BODY_LENGTH,  /* Content-Length: length */
	RELAY_BODY_CHUNKED, /* the relay encodes each piece as a chunk */
};

/* A request as the client sent it, for the sandbox's server. */
struct relay_req {
	const char *method; /* a token, at most 32 bytes */
	const char *target; /* origin form ("/path?query"), or "*" for OPTIONS */
	const struct relay_hdr *hdrs;
	size_t nhdrs;
	enum relay_body body;
	uint64_t length;     /* RELAY_BODY_LENGTH */
	const char *upgrade; /* the Upgrade value when relay_is_upgrade(); else NULL */
	uint16_t port;       /* the sandbox's port: a Host when the client sent none */
};

/* relay_pass_on() - whether a client's request header goes to the
 * sandbox: not hop-by-hop (Connection, Keep-Alive, Proxy-*, TE, Trailer,
 * Transfer-Encoding, Upgrade), not framing the relay redoes
 * (Content-Length, Expect), not named by connection (the client's
 * Connection value; may be NULL), and none of coved's credentials or
 * routing (X-Access-Token, X-API-Key, E2B-Traffic-Access-Token,
 * E2b-Sandbox-Id, E2b-Sandbox-Port, X-Cove-*): the guest never sees them. */
bool relay_pass_on(const char *name, const char *connection);

/* relay_req_head() - the head the sandbox's server gets: the request
 * line (HTTP/1.1), the client's headers that pass on (Host first; one
 * made from port when the client gave none), the body's framing, and
 * "Connection: close" (one request a connection), or "Connection:
 * Upgrade" with the client's Upgrade.  *out is malloc'ed, *len bytes.
 * Return: 0, -EINVAL with err naming the field (a method that is not a
 * token, a target not in origin form or over RELAY_TARGET_MAX, a header
 * with CR, LF or NUL), or -ENOMEM. */
int relay_req_head(const struct relay_req *q, char **out, size_t *len, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* relay_chunk_head() - "<hex size>\r\n" for a chunk of n bytes (n > 0)
 * into buf (at least 20 bytes).  Return: its length. */
size_t relay_chunk_head(uint64_t n, char *buf);

/* The server's answer as it arrives: its head (status, headers, the
 * body's length when it gives one), then the body decoded (chunks
 * undone).  Informational answers (1xx but 101) are skipped. */
struct relay_resp {
	http_parser p;
	bool head_request; /* the request was HEAD: no body, whatever the head says */
	bool head_done;    /* status and headers are complete */
	bool done;         /* the whole answer is in */
	bool upgraded;     /* 101: what follows the head is the new protocol's */
	int status;
	int64_t length; /* Content-Length (a HEAD's too: the size the body would
	                   have), 0 for 204 and 304, or -1 (chunked, to the end) */
	unsigned nhdrs;
	uint32_t name_at[RELAY_HEADERS_MAX], value_at[RELAY_HEADERS_MAX];
	char head[RELAY_HEAD_MAX]; /* "name\0value\0" ... */
	size_t head_len;
	int last; /* the last header callback: 0 none, 1 field, 2 value */
	uint8_t *out;
	size_t out_len, out_cap;
	char err[160];
};

/* relay_resp_init() - ready for an answer to a request (HEAD when
 * head_request). */
void relay_resp_init(struct relay_resp *r, bool head_request);

/* relay_resp_feed() - takes n bytes the server sent: the head's parts are
 * kept, the body's bytes (decoded) appended at out[*outlen] (room for n
 * more is always enough).  Stops at the end of the head of a 101 or at
 * the end of the answer: what follows is not the answer's.
 * Return: the bytes taken (n, or fewer after a 101 head or the answer's
 * end), or -EPROTO with r->err (a malformed or oversized head, a broken
 * chunk). */
long relay_resp_feed(struct relay_resp *r, const uint8_t *in, size_t n, uint8_t *out,
                     size_t *outlen) __attribute__((warn_unused_result));

/* relay_resp_eof() - the server closed its side: an answer whose body
 * runs to the end is complete (r->done).  Return: 0, or -EPROTO with
 * r->err when the head or body was cut short. */
int relay_resp_eof(struct relay_resp *r) __attribute__((warn_unused_result));

/* relay_resp_header() - header i (< r->nhdrs) of a complete head. */
void relay_resp_header(const struct relay_resp *r, unsigned i, const char **name,
                       const char **value);

/* relay_pass_back() - whether the server's header goes to the client: not
 * hop-by-hop, not Content-Length or Transfer-Encoding (libmicrohttpd
 * frames the body), not named by connection (the server's Connection
 * value; may be NULL). */
bool relay_pass_back(const char *name, const char *connection);

#endif
