/* The names a guest's first bytes claim: the TLS ClientHello's SNI and the
 * HTTP request's Host (the head parsed by egress/httpreq.c, libhttp-parser).
 * Bounded parsers over hostile input, fuzzed
 * (tests/fuzz/fuzz_clienthello.c, fuzz_http_host.c).  Each takes all the
 * bytes read so far and is called again as more arrive; they never read
 * past @len and copy what they keep. */
#ifndef COVE_EGRESS_SNIFF_H
#define COVE_EGRESS_SNIFF_H

#include <stddef.h>
#include <stdint.h>

#include "netrule.h"

#define SNIFF_TLS_MAX  16384 /* bytes of TLS records read before giving up */
#define SNIFF_HTTP_MAX 8192  /* bytes of request head read before giving up */

enum sniff_result {
	SNIFF_MORE = 0,    /* need more bytes (and fewer than the cap are in) */
	SNIFF_DONE = 1,    /* parsed */
	SNIFF_BAD = -1,    /* malformed, or past the cap */
	SNIFF_NONAME = -2, /* well-formed but no usable name */
};

struct sniff_tls {
	char name[NETRULE_NAME_MAX + 1]; /* normalized SNI */
	int ech;                         /* an encrypted_client_hello (0xfe0d) extension */
};

/* sniff_clienthello() - the SNI of a ClientHello that starts at @buf (TLS
 * records of type handshake, the message may span several records).
 * Return: SNIFF_DONE (@out filled), SNIFF_MORE, SNIFF_BAD, SNIFF_NONAME
 * (no server_name; @out->ech still set). */
enum sniff_result sniff_clienthello(const uint8_t *buf, size_t len, struct sniff_tls *out);

struct httpreq;

struct sniff_http {
	char name[NETRULE_NAME_MAX + 1]; /* normalized Host, port removed */
	uint16_t port;                   /* the Host's port, 0 if none */
	size_t head_len;                 /* bytes up to and including the blank line */
	const struct httpreq *req;       /* the parse, until the next sniff_http_host() */
};

/* sniff_http_host() - the Host of an HTTP/1.0 or 1.1 request head at @buf.
 * One Host header is required (two are an error, as are CONNECT and an
 * absolute-form target of any scheme whose authority is not the Host's,
 * see httpreq_target()); an IP literal is SNIFF_NONAME.  Not reentrant.
 * Return: SNIFF_DONE, SNIFF_MORE, SNIFF_BAD, SNIFF_NONAME. */
enum sniff_result sniff_http_host(const uint8_t *buf, size_t len, struct sniff_http *out);

/* sniff_http_rewrite() - the request head for upstream, rebuilt from the
 * parse: every Connection, Keep-Alive and Proxy-Connection header dropped
 * and "Connection: close" added, so the server answers this one request
 * only (a second request on the connection could name another host of a
 * shared address).  @h: from a SNIFF_DONE, with no sniff_http_host() call
 * since.  Return: bytes written to @out, or -1 if it does not fit in
 * @outlen. */
long sniff_http_rewrite(const struct sniff_http *h, uint8_t *out, size_t outlen);

#endif
