/* The head of an HTTP/1.x request the proxy intercepts (issue 15), parsed
 * by Debian's libhttp-parser (never by hand): method, target, version and
 * headers as spans of the bytes received, so a rule can be matched and the
 * head rebuilt with the injected headers.  Bytes after the head are the
 * body and are forwarded as they are.  Hostile input: bounded (16 KiB of
 * head, 100 headers), fuzzed by tests/fuzz/fuzz_httpreq.c. */
#ifndef COVE_EGRESS_HTTPREQ_H
#define COVE_EGRESS_HTTPREQ_H

#include <http_parser.h>
#include <stddef.h>
#include <stdint.h>

#include "proxyrule.h"

#define HTTPREQ_HEAD_MAX 16384
#define HTTPREQ_HDRS_MAX 100

enum httpreq_result { HTTPREQ_MORE = 0, HTTPREQ_DONE = 1, HTTPREQ_BAD = -1 };

struct httpreq_span {
	uint32_t off, len;
};

struct httpreq {
	http_parser p;
	uint8_t buf[HTTPREQ_HEAD_MAX]; /* the head, then body bytes read with it */
	size_t len, parsed;
	struct httpreq_span url;
	struct {
		struct httpreq_span n, v;
	} h[HTTPREQ_HDRS_MAX];
	size_t nh;
	int in_value;
	size_t head_end; /* after DONE: where the body starts in buf */
	int status;      /* after BAD: 400, or 431 (head too large) */
};

void httpreq_init(struct httpreq *r);

/* httpreq_feed() - take up to @len bytes (*@used says how many); DONE
 * once the head is complete (the body's first bytes may be in buf from
 * head_end to len), MORE, or BAD with r->status. */
enum httpreq_result httpreq_feed(struct httpreq *r, const uint8_t *data, size_t len, size_t *used);

/* After DONE: the method's name, the target, the headers as proxy_hdr. */
const char *httpreq_method(const struct httpreq *r);
size_t httpreq_headers(const struct httpreq *r, struct proxy_hdr *out, size_t max);

/* httpreq_rewrite() - the head for the server: the request line, the
 * guest's headers minus Connection, Keep-Alive, Proxy-Connection and any
 * named in @add (any case), then @add, then "Connection: close" (one
 * request per connection).  Return: its length, or -1 if over @outlen. */
long httpreq_rewrite(const struct httpreq *r, const struct proxy_hdr *add, size_t nadd,
                     uint8_t *out, size_t outlen);

#endif
