/* The head of an HTTP/1.x request, parsed by Debian's libhttp-parser (never
 * by hand), for both the proxy's Host check (egress/sniff.c) and
 * interception (issue 15, egress/mitm.c): method, target, version and
 * headers as spans of the bytes received, so the target's authority can be
 * held against Host, a rule matched and the head rebuilt.  Bytes after the
 * head are the body and are forwarded as they are.  Hostile input: bounded
 * (16 KiB of head, 100 headers), fuzzed by tests/fuzz/fuzz_httpreq.c and
 * fuzz_http_host.c. */
#ifndef COVE_EGRESS_HTTPREQ_H
#define COVE_EGRESS_HTTPREQ_H

#include <http_parser.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "netrule.h"
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
 * once the head of an HTTP/1.0 or 1.1 request is complete (the body's
 * first bytes may be in buf from head_end to len), MORE, or BAD with
 * r->status. */
enum httpreq_result httpreq_feed(struct httpreq *r, const uint8_t *data, size_t len, size_t *used);

/* After DONE: the method's name, the target, the headers as proxy_hdr. */
const char *httpreq_method(const struct httpreq *r);
size_t httpreq_headers(const struct httpreq *r, struct proxy_hdr *out, size_t max);

/* One authority: a Host header's value or an absolute-form target's. */
struct httpreq_authority {
	char name[NETRULE_NAME_MAX + 1]; /* normalized; an IP literal as written */
	uint16_t port;                   /* 0 if none */
	bool ip;                         /* an IPv4 or [IPv6] literal */
};

/* Where a request goes, as its head says. */
struct httpreq_target {
	bool have_host;
	struct httpreq_authority host; /* the one Host header */
	bool absolute;                 /* absolute-form (any scheme) */
	struct httpreq_authority abs;  /* its authority: equal to host if have_host */
	bool asterisk;                 /* "*" */
	struct httpreq_span path;      /* in r->buf; empty for "*" or "scheme://a" */
	bool has_query;
	struct httpreq_span query; /* after the '?' */
};

/* httpreq_target() - after DONE: the Host header and the target, checked
 * against each other.  @why gets a short reason on failure.
 * Return: 0; -EINVAL when the target or Host does not parse (a fragment,
 * an empty Host, a bad port: 400); -EPERM when refused (403): CONNECT, two
 * Host headers, userinfo, or an absolute-form target whose authority
 * (name and port as written) is not the Host's. */
int httpreq_target(const struct httpreq *r, struct httpreq_target *t, const char **why)
    __attribute__((warn_unused_result));

#define HTTPREQ_TARGET_MAX (HTTPREQ_HEAD_MAX + 4)

/* httpreq_intercepted() - the decisions for a request on an intercepted
 * connection to @name (the name its rule matched: the SNI, or the Host
 * that egress/sniff.c read) on @port: CONNECT and TRACE (which echoes the
 * injected headers back) are refused; the request's authority (Host, or
 * the absolute-form target's without one) must be @name, with no port or
 * @port; the path is normalised (egress/httppath.h).  @tgt gets the
 * origin-form target to forward and match (path, '?', query),
 * NUL-terminated, *@tlen its length.
 * Return: 0, or the status to answer (400 or 403) with @why. */
int httpreq_intercepted(const struct httpreq *r, const char *name, uint16_t port, char *tgt,
                        size_t tgtlen, size_t *tlen, const char **why)
    __attribute__((warn_unused_result));

/* httpreq_rewrite() - the head for the server: the request line (with
 * @target if not NULL, else the guest's), "Host: @host" if @host is not
 * NULL (the guest's Host headers dropped), the guest's headers minus
 * Connection, Keep-Alive, Proxy-Connection and any named in @add (any
 * case), then @add, then "Connection: close" (one request per connection).
 * Return: its length, or -1 if over @outlen. */
long httpreq_rewrite(const struct httpreq *r, const char *target, size_t tlen, const char *host,
                     const struct proxy_hdr *add, size_t nadd, uint8_t *out, size_t outlen);

#endif
