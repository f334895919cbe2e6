/* HTTP framing of relayed requests: routing values, the request head for
 * the sandbox, and the parser of its answer (over libhttp-parser). */
#include "daemon/http/relay.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "errf.h"

int relay_port_value(const char *s)
{
	if (!s || !s[0] || s[0] == '0' || strlen(s) > 5)
		return -EINVAL;
	int v = 0;
	for (const char *p = s; *p; p++) {
		if (*p < '0' || *p > '9')
			return -EINVAL;
		v = v * 10 + (*p - '0');
	}
	return v >= 1 && v <= 65535 ? v : -EINVAL;
}

int relay_host_route(const char *host, const char *domain, uint16_t *port,
                     char id[RELAY_ID_MAX + 1])
{
	if (!host || !domain || !domain[0])
		return 0;
	/* The name without the listener's ":port" (no IPv6 literal is ours). */
	size_t hl = strcspn(host, ":");
	if (host[hl] == ':') {
		const char *lp = host + hl + 1;
		if (!*lp || strspn(lp, "0123456789") != strlen(lp) || strlen(lp) > 5)
			return 0;
	}
	if (hl && host[hl - 1] == '.')
		hl--; /* a fully qualified "name." */
	size_t dl = strlen(domain);
	if (hl < dl + 2 || host[hl - dl - 1] != '.' || strncasecmp(host + hl - dl, domain, dl) != 0)
		return 0;
	size_t ll = hl - dl - 1; /* the part before ".<domain>" */
	const char *dash = memchr(host, '-', ll);
	if (!dash || memchr(host, '.', ll))
		return 0; /* "api.<domain>", or deeper names: not a port's */
	size_t pl = (size_t)(dash - host), il = ll - pl - 1;
	if (pl == 0 || strspn(host, "0123456789") != pl)
		return 0; /* the first label is not "<digits>-" */
	if (pl > 5 || host[0] == '0' || il == 0 || il > RELAY_ID_MAX)
		return -EINVAL;
	long v = strtol(host, NULL, 10);
	if (v < 1 || v > 65535)
		return -EINVAL;
	for (size_t i = 0; i < il; i++) {
		char c = (char)tolower((unsigned char)dash[1 + i]);
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')))
			return -EINVAL;
		id[i] = c;
	}
	id[il] = 0;
	*port = (uint16_t)v;
	return 1;
}

/* lists() - whether the comma-separated tokens of value hold name (any
 * case, spaces around tokens ignored). */
static bool lists(const char *value, const char *name)
{
	size_t nl = strlen(name);
	for (const char *p = value; p && *p;) {
		p += strspn(p, " \t,");
		size_t tl = strcspn(p, ",");
		size_t t = tl;
		while (t && (p[t - 1] == ' ' || p[t - 1] == '\t'))
			t--;
		if (t == nl && strncasecmp(p, name, nl) == 0)
			return true;
		p += tl;
	}
	return false;
}

bool relay_is_upgrade(const char *connection, const char *upgrade)
{
	return upgrade && upgrade[0] && lists(connection, "upgrade");
}

static bool hop_by_hop(const char *name)
{
	static const char *const hop[] = { "Connection",
		                           "Keep-Alive",
		                           "Proxy-Connection",
		                           "TE",
		                           "Trailer",
		                           "Transfer-Encoding",
		                           "Upgrade",
		                           "Proxy-Authenticate",
		                           "Proxy-Authorization",
		                           NULL };
	for (size_t i = 0; hop[i]; i++)
		if (strcasecmp(name, hop[i]) == 0)
			return true;
	return false;
}

bool relay_pass_on(const char *name, const char *connection)
{
	static const char *const ours[] = {
		"Content-Length", "Expect",           "Host",
		"X-Access-Token", "X-API-Key",        "E2B-Traffic-Access-Token",
		"E2b-Sandbox-Id", "E2b-Sandbox-Port", NULL
	};
	if (!name || !name[0] || hop_by_hop(name) || strncasecmp(name, "X-Cove-", 7) == 0)
		return false;
	for (size_t i = 0; ours[i]; i++)
		if (strcasecmp(name, ours[i]) == 0)
			return false;
	return !lists(connection, name);
}

bool relay_pass_back(const char *name, const char *connection)
{
	if (!name || !name[0] || hop_by_hop(name) || strcasecmp(name, "Content-Length") == 0)
		return false;
	return !lists(connection, name);
}

static bool is_tchar(unsigned char c)
{
	return isalnum(c) || (c && strchr("!#$%&'*+-.^_`|~", c));
}

static bool is_token(const char *s, size_t max)
{
	size_t n = strlen(s);
	if (n == 0 || n > max)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!is_tchar((unsigned char)s[i]))
			return false;
	return true;
}

/* A header value: no CR, LF, NUL or other control byte but tab. */
static bool value_ok(const char *v)
{
	for (const unsigned char *p = (const unsigned char *)v; *p; p++)
		if ((*p < 0x20 && *p != '\t') || *p == 0x7f)
			return false;
	return true;
}

static bool target_ok(const char *method, const char *t)
{
	size_t n = strlen(t);
	if (n == 0 || n > RELAY_TARGET_MAX)
		return false;
	if (strcmp(t, "*") == 0)
		return strcmp(method, "OPTIONS") == 0;
	if (t[0] != '/' || (n > 1 && t[1] == '/'))
		return false; /* origin form only; "//x" would read as authority */
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)t[i] <= 0x20 || t[i] == 0x7f)
			return false;
	return true;
}

/* A growing text buffer; on allocation failure it stays failed. */
struct sbuf {
	char *p;
	size_t len, cap;
	bool oom;
};

static void put(struct sbuf *b, const char *s, size_t n)
{
	if (b->oom)
		return;
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 1024;
		while (cap < b->len + n + 1)
			cap *= 2;
		char *np = realloc(b->p, cap);
		if (!np) {
			b->oom = true;
			return;
		}
		b->p = np;
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = 0;
}

static void puts3(struct sbuf *b, const char *name, const char *value)
{
	put(b, name, strlen(name));
	put(b, ": ", 2);
	put(b, value, strlen(value));
	put(b, "\r\n", 2);
}

int relay_req_head(const struct relay_req *q, char **out, size_t *len, char *err, size_t errlen)
{
	*out = NULL;
	*len = 0;
	if (!q->method || !is_token(q->method, 32))
		return errf(err, errlen, -EINVAL, "the request method is not an HTTP token");
	if (!q->target || !target_ok(q->method, q->target))
		return errf(err, errlen, -EINVAL,
		            "a sandbox port takes a request target in origin form (\"/path\"), "
		            "at most %d bytes",
		            RELAY_TARGET_MAX);
	const char *connection = NULL, *host = NULL;
	for (size_t i = 0; i < q->nhdrs; i++) {
		const struct relay_hdr *h = &q->hdrs[i];
		if (!h->name || !h->value || !is_token(h->name, 256) || !value_ok(h->value))
			return errf(err, errlen, -EINVAL, "request header '%.64s' is not valid",
			            h->name ? h->name : "");
		if (strcasecmp(h->name, "Connection") == 0)
			connection = h->value;
		else if (strcasecmp(h->name, "Host") == 0 && !host)
			host = h->value;
	}
	struct sbuf b = { 0 };
	put(&b, q->method, strlen(q->method));
	put(&b, " ", 1);
	put(&b, q->target, strlen(q->target));
	put(&b, " HTTP/1.1\r\n", 11);
	char tmp[64];
	if (host) {
		puts3(&b, "Host", host);
	} else {
		snprintf(tmp, sizeof(tmp), "127.0.0.1:%u", q->port);
		puts3(&b, "Host", tmp);
	}
	for (size_t i = 0; i < q->nhdrs; i++)
		if (relay_pass_on(q->hdrs[i].name, connection))
			puts3(&b, q->hdrs[i].name, q->hdrs[i].value);
	if (q->body == RELAY_BODY_LENGTH) {
		snprintf(tmp, sizeof(tmp), "%" PRIu64, q->length);
		puts3(&b, "Content-Length", tmp);
	} else if (q->body == RELAY_BODY_CHUNKED) {
		puts3(&b, "Transfer-Encoding", "chunked");
	}
	if (q->upgrade) {
		if (!value_ok(q->upgrade)) {
			free(b.p);
			return errf(err, errlen, -EINVAL, "the Upgrade header is not valid");
		}
		puts3(&b, "Connection", "Upgrade");
		puts3(&b, "Upgrade", q->upgrade);
	} else {
		puts3(&b, "Connection", "close");
	}
	put(&b, "\r\n", 2);
	if (b.oom) {
		free(b.p);
		return errf(err, errlen, -ENOMEM, "out of memory");
	}
	*out = b.p;
	*len = b.len;
	return 0;
}

size_t relay_chunk_head(uint64_t n, char *buf)
{
	return (size_t)snprintf(buf, 20, "%" PRIx64 "\r\n", n);
}

/* ---- the answer ------------------------------------------------------- */

static int fail(struct relay_resp *r, const char *msg)
{
	snprintf(r->err, sizeof(r->err), "%s", msg);
	return -1;
}

/* head_add() - n bytes of the head's store, bounded. */
static int head_add(struct relay_resp *r, const char *at, size_t n)
{
	if (n > RELAY_HEAD_MAX - 1 - r->head_len)
		return fail(r, "the server's answer head is over 64 KiB");
	for (size_t i = 0; i < n; i++)
		if (at[i] == 0)
			return fail(r, "the server's answer head holds a NUL byte");
	memcpy(r->head + r->head_len, at, n);
	r->head_len += n;
	return 0;
}

static int head_end_string(struct relay_resp *r)
{
	if (r->head_len >= RELAY_HEAD_MAX - 1)
		return fail(r, "the server's answer head is over 64 KiB");
	r->head[r->head_len++] = 0;
	return 0;
}

static int on_message_begin(http_parser *p)
{
	struct relay_resp *r = p->data;
	r->head_len = 0;
	r->nhdrs = 0;
	r->last = 0;
	return 0;
}

static int on_header_field(http_parser *p, const char *at, size_t n)
{
	struct relay_resp *r = p->data;
	if (r->last != 1) {
		if (r->last == 2 && head_end_string(r) < 0)
			return -1;
		if (r->nhdrs >= RELAY_HEADERS_MAX)
			return fail(r, "the server's answer has over 128 header lines");
		r->name_at[r->nhdrs] = (uint32_t)r->head_len;
		r->value_at[r->nhdrs] = UINT32_MAX;
		r->nhdrs++;
		r->last = 1;
	}
	return head_add(r, at, n);
}

static int on_header_value(http_parser *p, const char *at, size_t n)
{
	struct relay_resp *r = p->data;
	if (r->last == 0)
		return fail(r, "the server's answer has a header value without a name");
	if (r->last == 1) {
		if (head_end_string(r) < 0)
			return -1;
		r->value_at[r->nhdrs - 1] = (uint32_t)r->head_len;
		r->last = 2;
	}
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)at[i];
		if ((c < 0x20 && c != '\t') || c == 0x7f)
			return fail(r, "the server's answer has a control byte in a header");
	}
	return head_add(r, at, n);
}

static int on_headers_complete(http_parser *p)
{
	struct relay_resp *r = p->data;
	if (r->last == 1)
		return fail(r, "the server's answer has a header name without a value");
	if (r->last == 2 && head_end_string(r) < 0)
		return -1;
	r->last = 0;
	r->status = (int)p->status_code;
	if (r->status < 100 || r->status > 999)
		return fail(r, "the server's answer has no three-digit status");
	if (r->status >= 100 && r->status < 200 && r->status != 101)
		return 0; /* informational: the real answer follows */
	r->head_done = true;
	r->upgraded = r->status == 101;
	bool framed = (p->flags & F_CONTENTLENGTH) && !(p->flags & F_CHUNKED);
	r->length = framed ? (int64_t)p->content_length : -1;
	if (r->status == 204 || r->status == 304)
		r->length = 0;
	if (r->upgraded)
		r->length = -1;
	/* No body for HEAD (1); a 101 ends the answer at its head (2). */
	return r->upgraded ? 2 : r->head_request ? 1 : 0;
}

static int on_body(http_parser *p, const char *at, size_t n)
{
	struct relay_resp *r = p->data;
	if (!r->out || n > r->out_cap - r->out_len)
		return fail(r, "internal: no room for the body");
	memcpy(r->out + r->out_len, at, n);
	r->out_len += n;
	return 0;
}

static int on_message_complete(http_parser *p)
{
	struct relay_resp *r = p->data;
	if (r->head_done)
		r->done = true;
	/* Stop at the answer's end: anything after it is not ours. */
	if (r->done)
		http_parser_pause(p, 1);
	return 0;
}

static const http_parser_settings settings = {
	.on_message_begin = on_message_begin,
	.on_header_field = on_header_field,
	.on_header_value = on_header_value,
	.on_headers_complete = on_headers_complete,
	.on_body = on_body,
	.on_message_complete = on_message_complete,
};

void relay_resp_init(struct relay_resp *r, bool head_request)
{
	memset(r, 0, offsetof(struct relay_resp, head));
	r->head_len = 0;
	r->last = 0;
	r->out = NULL;
	r->out_len = r->out_cap = 0;
	r->err[0] = 0;
	http_parser_init(&r->p, HTTP_RESPONSE);
	r->p.data = r;
	r->head_request = head_request;
	r->length = -1;
}

long relay_resp_feed(struct relay_resp *r, const uint8_t *in, size_t n, uint8_t *out,
                     size_t *outlen)
{
	if (r->done || (r->head_done && r->upgraded))
		return 0;
	if (n == 0)
		return 0;
	r->out = out;
	r->out_len = *outlen;
	r->out_cap = *outlen + n;
	size_t k = http_parser_execute(&r->p, &settings, (const char *)in, n);
	*outlen = r->out_len;
	r->out = NULL;
	enum http_errno e = HTTP_PARSER_ERRNO(&r->p);
	if (e == HPE_PAUSED)
		return (long)k;
	if (e != HPE_OK) {
		if (!r->err[0])
			snprintf(r->err, sizeof(r->err), "the server's answer is not HTTP: %s",
			         http_errno_description(e));
		return -EPROTO;
	}
	if (r->head_done && r->upgraded)
		return (long)k; /* the rest is the new protocol's */
	if (k != n) {
		snprintf(r->err, sizeof(r->err), "the server's answer is not HTTP");
		return -EPROTO;
	}
	return (long)k;
}

int relay_resp_eof(struct relay_resp *r)
{
	if (r->done || (r->head_done && r->upgraded))
		return 0;
	if (!r->head_done) {
		snprintf(r->err, sizeof(r->err),
		         "the server closed the connection without a whole answer head");
		return -EPROTO;
	}
	uint8_t none[1];
	r->out = none;
	r->out_len = 0;
	r->out_cap = 0;
	http_parser_execute(&r->p, &settings, NULL, 0);
	r->out = NULL;
	enum http_errno e = HTTP_PARSER_ERRNO(&r->p);
	if ((e == HPE_OK || e == HPE_PAUSED) && r->done)
		return 0;
	snprintf(r->err, sizeof(r->err),
	         "the server closed the connection inside its answer's body");
	return -EPROTO;
}

void relay_resp_header(const struct relay_resp *r, unsigned i, const char **name,
                       const char **value)
{
	*name = r->head + r->name_at[i];
	*value = r->value_at[i] == UINT32_MAX ? "" : r->head + r->value_at[i];
}
