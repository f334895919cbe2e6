#include "httpreq.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

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
		    !span_clean(r, &r->url))
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

long httpreq_rewrite(const struct httpreq *r, const struct proxy_hdr *add, size_t nadd,
                     uint8_t *out, size_t outlen)
{
	size_t o = 0;
	char line[64];
	const char *m = httpreq_method(r);
	if (!put(out, outlen, &o, m, strlen(m)) || !put(out, outlen, &o, " ", 1) ||
	    !put(out, outlen, &o, r->buf + r->url.off, r->url.len))
		return -1;
	int l = snprintf(line, sizeof(line), " HTTP/%u.%u\r\n", r->p.http_major, r->p.http_minor);
	if (!put(out, outlen, &o, line, (size_t)l))
		return -1;
	for (size_t i = 0; i < r->nh; i++) {
		const uint8_t *n = r->buf + r->h[i].n.off;
		size_t nl = r->h[i].n.len;
		bool drop = name_is(n, nl, "connection") || name_is(n, nl, "keep-alive") ||
		            name_is(n, nl, "proxy-connection");
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
