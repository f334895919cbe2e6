#include "httpreq.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "httppath.h"

static struct httpreq *req_of(http_parser *p)
{
	return p->data;
}

static void extend(struct httpreq *r, struct httpreq_span *s, const char *at, size_t len)
{
	uint32_t off = (uint32_t)((const uint8_t *)at - r->buf);
	if (!s->len)
		s->off = off;
	s->len = off + (uint32_t)len - s->off;
}

static int on_url(http_parser *p, const char *at, size_t len)
{
	struct httpreq *r = req_of(p);
	extend(r, &r->url, at, len);
	return 0;
}

static int on_field(http_parser *p, const char *at, size_t len)
{
	struct httpreq *r = req_of(p);
	if (!r->nh || r->in_value) {
		if (r->nh == HTTPREQ_HDRS_MAX)
			return 1;
		r->nh++;
		memset(&r->h[r->nh - 1], 0, sizeof(r->h[0]));
		r->in_value = 0;
	}
	extend(r, &r->h[r->nh - 1].n, at, len);
	return 0;
}

static int on_value(http_parser *p, const char *at, size_t len)
{
	struct httpreq *r = req_of(p);
	if (!r->nh)
		return 1;
	r->in_value = 1;
	extend(r, &r->h[r->nh - 1].v, at, len);
	return 0;
}

static int on_headers_complete(http_parser *p)
{
	http_parser_pause(p, 1);
	return 0;
}

static const http_parser_settings settings = {
	.on_url = on_url,
	.on_header_field = on_field,
	.on_header_value = on_value,
	.on_headers_complete = on_headers_complete,
};

void httpreq_init(struct httpreq *r)
{
	memset(r, 0, sizeof(*r));
	http_parser_init(&r->p, HTTP_REQUEST);
	r->p.data = r;
}

/* What the rebuilt head repeats must be one line each. */
static bool span_clean(const struct httpreq *r, const struct httpreq_span *s)
{
	for (uint32_t i = 0; i < s->len; i++) {
		uint8_t c = r->buf[s->off + i];
		if (c == '\r' || c == '\n' || c == 0)
			return false;
	}
	return true;
}

/* A header name is a token (RFC 9110): the parser, built lenient, lets
 * spaces through. */
static bool span_token(const struct httpreq *r, const struct httpreq_span *s)
{
	for (uint32_t i = 0; i < s->len; i++) {
		uint8_t c = r->buf[s->off + i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      (c && strchr("!#$%&'*+-.^_`|~", c))))
			return false;
	}
	return s->len > 0;
}

enum httpreq_result httpreq_feed(struct httpreq *r, const uint8_t *data, size_t len, size_t *used)
{
	*used = 0;
	if (r->head_end)
		return HTTPREQ_DONE;
	size_t room = sizeof(r->buf) - r->len;
	size_t n = len < room ? len : room;
	memcpy(r->buf + r->len, data, n);
	r->len += n;
	*used = n;
	size_t k = http_parser_execute(&r->p, &settings, (const char *)r->buf + r->parsed,
	                               r->len - r->parsed);
	enum http_errno e = HTTP_PARSER_ERRNO(&r->p);
	if (e == HPE_PAUSED) {
		/* Paused at the head's last LF, which is not counted. */
		r->head_end = r->parsed + k + 1;
		r->parsed = r->head_end;
		if (r->head_end > r->len || r->buf[r->head_end - 1] != '\n' || !r->url.len ||
		    !span_clean(r, &r->url) || r->p.http_major != 1 || r->p.http_minor > 1)
			goto bad;
		for (size_t i = 0; i < r->nh; i++)
			if (!span_token(r, &r->h[i].n) || !span_clean(r, &r->h[i].v))
				goto bad;
		return HTTPREQ_DONE;
	}
	if (e != HPE_OK)
		goto bad;
	r->parsed += k;
	if (r->len == sizeof(r->buf)) {
		r->status = 431;
		return HTTPREQ_BAD;
	}
	return HTTPREQ_MORE;
bad:
	r->status = 400;
	r->head_end = 0;
	return HTTPREQ_BAD;
}

const char *httpreq_method(const struct httpreq *r)
{
	return http_method_str((enum http_method)r->p.method);
}

size_t httpreq_headers(const struct httpreq *r, struct proxy_hdr *out, size_t max)
{
	size_t n = 0;
	for (size_t i = 0; i < r->nh && n < max; i++, n++) {
		out[n].name = (const char *)r->buf + r->h[i].n.off;
		out[n].nlen = r->h[i].n.len;
		out[n].value = (const char *)r->buf + r->h[i].v.off;
		out[n].vlen = r->h[i].v.len;
	}
	return n;
}

static bool name_is(const uint8_t *n, size_t len, const char *want)
{
	return strlen(want) == len && !strncasecmp((const char *)n, want, len);
}

static bool put(uint8_t *out, size_t outlen, size_t *o, const void *p, size_t n)
{
	if (*o + n > outlen)
		return false;
	memcpy(out + *o, p, n);
	*o += n;
	return true;
}

long httpreq_rewrite(const struct httpreq *r, const char *target, size_t tlen, const char *host,
                     const struct proxy_hdr *add, size_t nadd, uint8_t *out, size_t outlen)
{
	size_t o = 0;
	char line[64];
	const char *m = httpreq_method(r);
	if (!target) {
		target = (const char *)r->buf + r->url.off;
		tlen = r->url.len;
	}
	if (!put(out, outlen, &o, m, strlen(m)) || !put(out, outlen, &o, " ", 1) ||
	    !put(out, outlen, &o, target, tlen))
		return -1;
	int l = snprintf(line, sizeof(line), " HTTP/%u.%u\r\n", r->p.http_major, r->p.http_minor);
	if (!put(out, outlen, &o, line, (size_t)l))
		return -1;
	if (host && (!put(out, outlen, &o, "Host: ", 6) ||
	             !put(out, outlen, &o, host, strlen(host)) || !put(out, outlen, &o, "\r\n", 2)))
		return -1;
	for (size_t i = 0; i < r->nh; i++) {
		const uint8_t *n = r->buf + r->h[i].n.off;
		size_t nl = r->h[i].n.len;
		bool drop = name_is(n, nl, "connection") || name_is(n, nl, "keep-alive") ||
		            name_is(n, nl, "proxy-connection") || (host && name_is(n, nl, "host"));
		for (size_t a = 0; a < nadd && !drop; a++)
			drop = add[a].nlen == nl && !strncasecmp(add[a].name, (const char *)n, nl);
		if (drop)
			continue;
		if (!put(out, outlen, &o, n, nl) || !put(out, outlen, &o, ": ", 2) ||
		    !put(out, outlen, &o, r->buf + r->h[i].v.off, r->h[i].v.len) ||
		    !put(out, outlen, &o, "\r\n", 2))
			return -1;
	}
	for (size_t a = 0; a < nadd; a++)
		if (!put(out, outlen, &o, add[a].name, add[a].nlen) ||
		    !put(out, outlen, &o, ": ", 2) ||
		    !put(out, outlen, &o, add[a].value, add[a].vlen) ||
		    !put(out, outlen, &o, "\r\n", 2))
			return -1;
	static const char tail[] = "Connection: close\r\n\r\n";
	if (!put(out, outlen, &o, tail, sizeof(tail) - 1))
		return -1;
	return (long)o;
}

/* ---- where the request goes ----------------------------------------------- */

static bool v6_char(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') ||
	       c == ':' || c == '.';
}

/* HOST[:PORT] or [V6][:PORT] in [s, s+n), spaces around it ignored. */
static int authority_parse(const char *s, size_t n, struct httpreq_authority *a)
{
	memset(a, 0, sizeof(*a));
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
		n--;
	while (n && (*s == ' ' || *s == '\t'))
		s++, n--;
	if (!n)
		return -EINVAL;
	const char *h = s, *rest;
	size_t hn;
	if (*s == '[') {
		const char *close = memchr(s, ']', n);
		if (!close || close == s + 1 || close - s - 1 > 45)
			return -EINVAL;
		h = s + 1;
		hn = (size_t)(close - h);
		for (size_t i = 0; i < hn; i++)
			if (!v6_char(h[i]))
				return -EINVAL;
		a->ip = true;
		rest = close + 1;
	} else {
		const char *colon = memchr(s, ':', n);
		hn = colon ? (size_t)(colon - s) : n;
		rest = s + hn;
	}
	size_t rn = n - (size_t)(rest - s);
	if (rn) {
		unsigned v = 0;
		if (rest[0] != ':' || rn < 2 || rn > 6)
			return -EINVAL;
		for (size_t i = 1; i < rn; i++) {
			if (rest[i] < '0' || rest[i] > '9')
				return -EINVAL;
			v = v * 10 + (unsigned)(rest[i] - '0');
		}
		if (v == 0 || v > 65535)
			return -EINVAL;
		a->port = (uint16_t)v;
	}
	if (hn == 0 || hn > NETRULE_NAME_MAX + 1)
		return -EINVAL;
	char tmp[NETRULE_NAME_MAX + 2];
	memcpy(tmp, h, hn);
	tmp[hn] = '\0';
	if (memchr(tmp, '\0', hn))
		return -EINVAL;
	struct netaddr ad;
	if (a->ip || netaddr_parse(tmp, &ad) == 0) {
		if (hn >= sizeof(a->name))
			return -EINVAL;
		a->ip = true;
		for (size_t i = 0; i <= hn; i++)
			a->name[i] =
			    (char)((tmp[i] >= 'A' && tmp[i] <= 'Z') ? tmp[i] + 32 : tmp[i]);
		return 0;
	}
	return netname_normalize(tmp, a->name, sizeof(a->name)) ? -EINVAL : 0;
}

static bool authority_eq(const struct httpreq_authority *x, const struct httpreq_authority *y)
{
	return x->ip == y->ip && x->port == y->port && !strcmp(x->name, y->name);
}

#define URL_HAS(u, f) ((u).field_set & (1 << (f)))

int httpreq_target(const struct httpreq *r, struct httpreq_target *t, const char **why)
{
	memset(t, 0, sizeof(*t));
	*why = NULL;
	if (r->p.method == HTTP_CONNECT) {
		*why = "CONNECT is refused";
		return -EPERM;
	}
	for (size_t i = 0; i < r->nh; i++) {
		if (!name_is(r->buf + r->h[i].n.off, r->h[i].n.len, "host"))
			continue;
		if (t->have_host) {
			*why = "two Host headers";
			return -EPERM;
		}
		t->have_host = true;
		if (authority_parse((const char *)r->buf + r->h[i].v.off, r->h[i].v.len,
		                    &t->host)) {
			*why = "the Host header does not parse";
			return -EINVAL;
		}
	}
	const char *u = (const char *)r->buf + r->url.off;
	size_t ul = r->url.len;
	if (ul == 1 && u[0] == '*') {
		t->asterisk = true;
		return 0;
	}
	struct http_parser_url pu;
	http_parser_url_init(&pu);
	if (ul > UINT16_MAX || http_parser_parse_url(u, ul, 0, &pu)) {
		*why = "the target does not parse";
		return -EINVAL;
	}
	if (URL_HAS(pu, UF_FRAGMENT)) {
		*why = "a fragment in the target";
		return -EINVAL;
	}
	if (URL_HAS(pu, UF_SCHEMA)) {
		if (URL_HAS(pu, UF_USERINFO)) {
			*why = "userinfo in the target";
			return -EPERM;
		}
		size_t a0 = (size_t)pu.field_data[UF_SCHEMA].off + pu.field_data[UF_SCHEMA].len;
		size_t a1 = URL_HAS(pu, UF_PATH)    ? pu.field_data[UF_PATH].off
		            : URL_HAS(pu, UF_QUERY) ? (size_t)pu.field_data[UF_QUERY].off - 1
		                                    : ul;
		if (a1 > ul || a1 < a0 + 3 || memcmp(u + a0, "://", 3) ||
		    authority_parse(u + a0 + 3, a1 - a0 - 3, &t->abs)) {
			*why = "the target's authority does not parse";
			return -EINVAL;
		}
		t->absolute = true;
	} else if (u[0] != '/') {
		*why = "the target is neither a path nor absolute";
		return -EINVAL;
	}
	if (URL_HAS(pu, UF_PATH))
		t->path = (struct httpreq_span){ r->url.off + pu.field_data[UF_PATH].off,
			                         pu.field_data[UF_PATH].len };
	if (URL_HAS(pu, UF_QUERY)) {
		t->has_query = true;
		t->query = (struct httpreq_span){ r->url.off + pu.field_data[UF_QUERY].off,
			                          pu.field_data[UF_QUERY].len };
	}
	if (t->absolute && t->have_host && !authority_eq(&t->abs, &t->host)) {
		*why = "the target's authority is not the Host";
		return -EPERM;
	}
	return 0;
}

int httpreq_intercepted(const struct httpreq *r, const char *name, uint16_t port, char *tgt,
                        size_t tgtlen, size_t *tlen, const char **why)
{
	*tlen = 0;
	if (r->p.method == HTTP_TRACE) {
		*why = "TRACE is refused on an intercepted connection";
		return 403;
	}
	struct httpreq_target t;
	int e = httpreq_target(r, &t, why);
	if (e)
		return e == -EPERM ? 403 : 400;
	const struct httpreq_authority *a = t.have_host ? &t.host : t.absolute ? &t.abs : NULL;
	if (a && (a->ip || strcmp(a->name, name))) {
		*why = "the request's Host is not the name the connection was made to";
		return 403;
	}
	if (a && a->port && a->port != port) {
		*why = "the request's Host names another port";
		return 403;
	}
	if (t.asterisk) {
		if (r->p.method != HTTP_OPTIONS || tgtlen < 2) {
			*why = "'*' is a target for OPTIONS only";
			return 400;
		}
		memcpy(tgt, "*", 2);
		*tlen = 1;
		return 0;
	}
	const char *p = t.path.len ? (const char *)r->buf + t.path.off : "/";
	long n = httppath_normalize(p, t.path.len ? t.path.len : 1, tgt, tgtlen);
	if (n == -EPERM) {
		*why = "an encoded or parameterised dot segment in the path";
		return 403;
	}
	if (n < 0) {
		*why = "the path does not parse";
		return 400;
	}
	size_t o = (size_t)n;
	if (t.has_query) {
		if (o + 1 + t.query.len + 1 > tgtlen) {
			*why = "the target is too long";
			return 400;
		}
		tgt[o++] = '?';
		memcpy(tgt + o, r->buf + t.query.off, t.query.len);
		o += t.query.len;
		tgt[o] = '\0';
	}
	*tlen = o;
	return 0;
}
