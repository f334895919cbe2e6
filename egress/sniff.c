/* TLS ClientHello and HTTP request-head parsing (RFC 8446 4.1.2 and 4.2,
 * RFC 6066 3, draft-ietf-tls-esni; RFC 9112 3 and 7230 5.4). */
#include "sniff.h"

#include <stdbool.h>
#include <string.h>
#include <strings.h>

#include "httpreq.h"

#define TLS_HANDSHAKE    22
#define TLS_CLIENT_HELLO 1
#define TLS_EXT_SNI      0x0000
#define TLS_EXT_ECH      0xfe0d
#define TLS_RECORD_MAX   (16384 + 256)

/* A bounds-checked reader over one buffer. */
struct rd {
	const uint8_t *p;
	size_t len, off;
	bool bad;
};

static unsigned rd_u8(struct rd *r)
{
	if (r->bad || r->len - r->off < 1) {
		r->bad = true;
		return 0;
	}
	return r->p[r->off++];
}

static unsigned rd_u16(struct rd *r)
{
	unsigned hi = rd_u8(r);
	return hi << 8 | rd_u8(r);
}

/* A sub-reader over the next @n bytes (marks @r bad if they are not there). */
static struct rd rd_sub(struct rd *r, size_t n)
{
	struct rd s = { .bad = true };
	if (r->bad || r->len - r->off < n) {
		r->bad = true;
		return s;
	}
	s.p = r->p + r->off;
	s.len = n;
	s.off = 0;
	s.bad = false;
	r->off += n;
	return s;
}

static bool rd_end(const struct rd *r)
{
	return !r->bad && r->off == r->len;
}

/* The server_name extension's body: one host_name entry. */
static enum sniff_result parse_sni(struct rd *e, struct sniff_tls *out)
{
	struct rd list = rd_sub(e, rd_u16(e));
	if (!rd_end(e))
		return SNIFF_BAD;
	bool got = false;
	while (!list.bad && list.off < list.len) {
		unsigned type = rd_u8(&list);
		struct rd name = rd_sub(&list, rd_u16(&list));
		if (list.bad)
			return SNIFF_BAD;
		if (type != 0)
			continue; /* unknown name types are skipped (RFC 6066) */
		if (got || name.len == 0 || name.len > NETRULE_NAME_MAX + 1)
			return SNIFF_BAD;
		char tmp[NETRULE_NAME_MAX + 2];
		memcpy(tmp, name.p, name.len);
		tmp[name.len] = '\0';
		if (memchr(tmp, '\0', name.len))
			return SNIFF_BAD;
		if (netname_normalize(tmp, out->name, sizeof(out->name)))
			return SNIFF_BAD;
		got = true;
	}
	return list.bad ? SNIFF_BAD : got ? SNIFF_DONE : SNIFF_NONAME;
}

static enum sniff_result parse_hello(struct rd *h, struct sniff_tls *out)
{
	rd_u16(h);     /* legacy_version */
	rd_sub(h, 32); /* random */
	unsigned sid = rd_u8(h);
	if (sid > 32)
		return SNIFF_BAD;
	rd_sub(h, sid);
	unsigned cs = rd_u16(h);
	if (cs < 2 || cs % 2)
		return SNIFF_BAD;
	rd_sub(h, cs);
	unsigned comp = rd_u8(h);
	if (comp < 1)
		return SNIFF_BAD;
	rd_sub(h, comp);
	if (h->bad)
		return SNIFF_BAD;
	if (h->off == h->len)
		return SNIFF_NONAME; /* no extensions at all */
	struct rd exts = rd_sub(h, rd_u16(h));
	if (!rd_end(h))
		return SNIFF_BAD;
	enum sniff_result sni = SNIFF_NONAME;
	bool seen_sni = false;
	while (!exts.bad && exts.off < exts.len) {
		unsigned type = rd_u16(&exts);
		struct rd e = rd_sub(&exts, rd_u16(&exts));
		if (exts.bad)
			return SNIFF_BAD;
		if (type == TLS_EXT_ECH) {
			if (out->ech)
				return SNIFF_BAD; /* duplicate extensions are illegal */
			out->ech = 1;
		} else if (type == TLS_EXT_SNI) {
			if (seen_sni)
				return SNIFF_BAD;
			seen_sni = true;
			sni = parse_sni(&e, out);
			if (sni == SNIFF_BAD)
				return SNIFF_BAD;
		}
	}
	return exts.bad ? SNIFF_BAD : sni;
}

enum sniff_result sniff_clienthello(const uint8_t *buf, size_t len, struct sniff_tls *out)
{
	memset(out, 0, sizeof(*out));
	if (len > SNIFF_TLS_MAX)
		len = SNIFF_TLS_MAX;
	/* Gather the handshake bytes from consecutive handshake records. */
	static uint8_t hs[SNIFF_TLS_MAX];
	size_t hl = 0, off = 0;
	for (;;) {
		if (hl >= 4) {
			size_t need = 4 + ((size_t)hs[1] << 16 | (size_t)hs[2] << 8 | hs[3]);
			if (hs[0] != TLS_CLIENT_HELLO || need > SNIFF_TLS_MAX)
				return SNIFF_BAD;
			if (hl >= need) {
				struct rd h = { .p = hs + 4, .len = need - 4 };
				return parse_hello(&h, out);
			}
		}
		if (len - off < 5)
			break;
		const uint8_t *rec = buf + off;
		size_t rl = (size_t)rec[3] << 8 | rec[4];
		if (rec[0] != TLS_HANDSHAKE || rec[1] != 3 || rl == 0 || rl > TLS_RECORD_MAX)
			return SNIFF_BAD;
		if (len - off - 5 < rl)
			break;
		if (rl > sizeof(hs) - hl)
			return SNIFF_BAD;
		memcpy(hs + hl, rec + 5, rl);
		hl += rl;
		off += 5 + rl;
	}
	if (len - off >= 1 && buf[off] != TLS_HANDSHAKE)
		return SNIFF_BAD;
	if (len - off >= 2 && buf[off + 1] != 3)
		return SNIFF_BAD;
	return len >= SNIFF_TLS_MAX ? SNIFF_BAD : SNIFF_MORE;
}

/* ---- HTTP ---------------------------------------------------------------- */

/* The one parse behind sniff_http_host() and sniff_http_rewrite(): the
 * proxy is single-threaded and rewrites right after a DONE. */
static struct httpreq http_req;

enum sniff_result sniff_http_host(const uint8_t *buf, size_t len, struct sniff_http *out)
{
	memset(out, 0, sizeof(*out));
	if (len > SNIFF_HTTP_MAX)
		len = SNIFF_HTTP_MAX;
	struct httpreq *q = &http_req;
	httpreq_init(q);
	size_t used = 0;
	enum httpreq_result r = httpreq_feed(q, buf, len, &used);
	if (r == HTTPREQ_BAD)
		return SNIFF_BAD;
	if (r == HTTPREQ_MORE)
		return len >= SNIFF_HTTP_MAX ? SNIFF_BAD : SNIFF_MORE;
	struct httpreq_target t;
	const char *why;
	if (httpreq_target(q, &t, &why))
		return SNIFF_BAD;
	if (!t.have_host || t.host.ip)
		return SNIFF_NONAME;
	memcpy(out->name, t.host.name, sizeof(out->name));
	out->port = t.host.port;
	out->head_len = q->head_end;
	out->req = q;
	return SNIFF_DONE;
}

long sniff_http_rewrite(const struct sniff_http *h, uint8_t *out, size_t outlen)
{
	if (!h->req)
		return -1;
	return httpreq_rewrite(h->req, NULL, 0, NULL, NULL, 0, out, outlen);
}
