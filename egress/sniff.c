/* TLS ClientHello and HTTP request-head parsing (RFC 8446 4.1.2 and 4.2,
 * RFC 6066 3, draft-ietf-tls-esni; RFC 9112 3 and 7230 5.4). */
#include "sniff.h"

#include <stdbool.h>
#include <string.h>
#include <strings.h>

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

static bool is_tchar(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* HOST[:PORT] in [s, s+n) into @out; the name normalized. */
static enum sniff_result parse_authority(const char *s, size_t n, struct sniff_http *out)
{
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
		n--;
	while (n && (*s == ' ' || *s == '\t'))
		s++, n--;
	if (n == 0)
		return SNIFF_BAD;
	if (*s == '[')
		return SNIFF_NONAME; /* an IPv6 literal */
	const char *colon = memchr(s, ':', n);
	size_t hn = colon ? (size_t)(colon - s) : n;
	out->port = 0;
	if (colon) {
		size_t pl = n - hn - 1;
		unsigned v = 0;
		if (pl == 0 || pl > 5)
			return SNIFF_BAD;
		for (size_t i = 0; i < pl; i++) {
			if (colon[1 + i] < '0' || colon[1 + i] > '9')
				return SNIFF_BAD;
			v = v * 10 + (unsigned)(colon[1 + i] - '0');
		}
		if (v == 0 || v > 65535)
			return SNIFF_BAD;
		out->port = (uint16_t)v;
	}
	if (hn == 0 || hn > NETRULE_NAME_MAX + 1)
		return SNIFF_BAD;
	char tmp[NETRULE_NAME_MAX + 2];
	memcpy(tmp, s, hn);
	tmp[hn] = '\0';
	struct netaddr a;
	if (netaddr_parse(tmp, &a) == 0)
		return SNIFF_NONAME;
	if (memchr(tmp, '\0', hn) || netname_normalize(tmp, out->name, sizeof(out->name)))
		return SNIFF_BAD;
	return SNIFF_DONE;
}

/* The end of the head (after "\r\n\r\n"), or 0. */
static size_t head_end(const uint8_t *buf, size_t len)
{
	for (size_t i = 0; i + 3 < len; i++)
		if (buf[i] == '\r' && buf[i + 1] == '\n' && buf[i + 2] == '\r' &&
		    buf[i + 3] == '\n')
			return i + 4;
	return 0;
}

enum sniff_result sniff_http_host(const uint8_t *buf, size_t len, struct sniff_http *out)
{
	memset(out, 0, sizeof(*out));
	if (len > SNIFF_HTTP_MAX)
		len = SNIFF_HTTP_MAX;
	size_t end = head_end(buf, len);
	if (!end) {
		/* Fail early on bytes no request line starts with. */
		for (size_t i = 0; i < len && buf[i] != ' '; i++)
			if (!is_tchar(buf[i]))
				return SNIFF_BAD;
		return len >= SNIFF_HTTP_MAX ? SNIFF_BAD : SNIFF_MORE;
	}
	const char *p = (const char *)buf;
	/* Request line: METHOD SP TARGET SP HTTP/1.x CRLF */
	const char *eol = memchr(p, '\r', end);
	if (!eol || eol[1] != '\n')
		return SNIFF_BAD;
	const char *sp1 = memchr(p, ' ', (size_t)(eol - p));
	if (!sp1 || sp1 == p)
		return SNIFF_BAD;
	for (const char *q = p; q < sp1; q++)
		if (!is_tchar((unsigned char)*q))
			return SNIFF_BAD;
	const char *tgt = sp1 + 1;
	const char *sp2 = memchr(tgt, ' ', (size_t)(eol - tgt));
	if (!sp2 || sp2 == tgt || (size_t)(eol - sp2) != 9 || memcmp(sp2 + 1, "HTTP/1.", 7) ||
	    (sp2[8] != '0' && sp2[8] != '1'))
		return SNIFF_BAD;
	for (const char *q = tgt; q < sp2; q++)
		if ((unsigned char)*q <= ' ' || (unsigned char)*q >= 127)
			return SNIFF_BAD;
	/* Absolute form: the authority must agree with Host. */
	struct sniff_http abs = { .port = 0 };
	bool have_abs = false;
	size_t tl = (size_t)(sp2 - tgt);
	if (tl > 7 &&
	    (!strncasecmp(tgt, "http://", 7) || (tl > 8 && !strncasecmp(tgt, "https://", 8)))) {
		const char *a = tgt + (tgt[4] == ':' ? 7 : 8);
		const char *ae = a;
		while (ae < sp2 && *ae != '/' && *ae != '?' && *ae != '#')
			ae++;
		if (memchr(a, '@', (size_t)(ae - a)))
			return SNIFF_BAD;
		enum sniff_result r = parse_authority(a, (size_t)(ae - a), &abs);
		if (r != SNIFF_DONE)
			return r;
		have_abs = true;
	}
	/* Header fields. */
	bool have_host = false;
	const char *line = eol + 2;
	const char *stop = p + end - 2; /* the final CRLF */
	while (line < stop) {
		const char *le = memchr(line, '\r', (size_t)(stop - line) + 1);
		if (!le || le[1] != '\n')
			return SNIFF_BAD;
		const char *colon = memchr(line, ':', (size_t)(le - line));
		if (!colon || colon == line)
			return SNIFF_BAD; /* also refuses obs-fold continuation lines */
		for (const char *q = line; q < colon; q++)
			if (!is_tchar((unsigned char)*q))
				return SNIFF_BAD;
		for (const char *q = colon + 1; q < le; q++)
			if ((unsigned char)*q < ' ' && *q != '\t')
				return SNIFF_BAD;
		if (colon - line == 4 && !strncasecmp(line, "host", 4)) {
			if (have_host)
				return SNIFF_BAD;
			have_host = true;
			enum sniff_result r =
			    parse_authority(colon + 1, (size_t)(le - colon - 1), out);
			if (r != SNIFF_DONE)
				return r;
		}
		line = le + 2;
	}
	if (!have_host)
		return SNIFF_NONAME;
	if (have_abs && (strcmp(abs.name, out->name) || abs.port != out->port))
		return SNIFF_BAD;
	out->head_len = end;
	return SNIFF_DONE;
}

static bool hop_header(const char *line, size_t n)
{
	static const char *const drop[] = { "connection", "keep-alive", "proxy-connection" };
	for (size_t i = 0; i < sizeof(drop) / sizeof(drop[0]); i++) {
		size_t dl = strlen(drop[i]);
		if (n > dl && line[dl] == ':' && !strncasecmp(line, drop[i], dl))
			return true;
	}
	return false;
}

long sniff_http_rewrite(const uint8_t *head, size_t head_len, uint8_t *out, size_t outlen)
{
	static const char close_hdr[] = "Connection: close\r\n\r\n";
	const char *p = (const char *)head;
	if (head_len < 4)
		return -1;
	size_t o = 0, i = 0, stop = head_len - 2;
	bool first = true;
	while (i < stop) {
		const char *le = memchr(p + i, '\n', stop - i);
		size_t n = le ? (size_t)(le - (p + i)) + 1 : stop - i;
		if (first || !hop_header(p + i, n)) {
			if (n > outlen - o)
				return -1;
			memcpy(out + o, p + i, n);
			o += n;
		}
		first = false;
		i += n;
	}
	if (sizeof(close_hdr) - 1 > outlen - o)
		return -1;
	memcpy(out + o, close_hdr, sizeof(close_hdr) - 1);
	return (long)(o + sizeof(close_hdr) - 1);
}
