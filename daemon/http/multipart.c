/* Streaming multipart/form-data (multipart.h). */
#include "daemon/http/multipart.h"

#include <ctype.h>
#include <errno.h>
#include <string.h>
#include <strings.h>

int mp_boundary(const char *ct, char *out, size_t outlen)
{
	if (!ct || strncasecmp(ct, "multipart/form-data", 19) != 0)
		return -EINVAL;
	const char *p = ct + 19;
	while (*p) {
		while (*p == ';' || *p == ' ' || *p == '\t')
			p++;
		if (!strncasecmp(p, "boundary=", 9)) {
			p += 9;
			size_t n = 0;
			if (*p == '"') {
				p++;
				while (p[n] && p[n] != '"')
					n++;
				if (p[n] != '"')
					return -EINVAL;
			} else {
				while (p[n] && p[n] != ';' && p[n] != ' ' && p[n] != '\t')
					n++;
			}
			if (n == 0 || n > MP_BOUNDARY_MAX || n >= outlen)
				return -EINVAL;
			memcpy(out, p, n);
			out[n] = 0;
			return 0;
		}
		while (*p && *p != ';')
			p++;
	}
	return -EINVAL;
}

int mp_init(struct mp_parser *p, const char *boundary, const struct mp_callbacks *cb, void *opaque)
{
	size_t n = boundary ? strlen(boundary) : 0;
	if (n == 0 || n > MP_BOUNDARY_MAX || strpbrk(boundary, "\r\n"))
		return -EINVAL;
	memset(p->delim, 0, sizeof(p->delim));
	memcpy(p->delim, "\r\n--", 4);
	memcpy(p->delim + 4, boundary, n);
	p->dlen = n + 4;
	p->state = MP_PREAMBLE;
	p->wlen = 0;
	p->at_start = true;
	p->cb = cb;
	p->opaque = opaque;
	p->name[0] = p->filename[0] = 0;
	return 0;
}

static void consume(struct mp_parser *p, size_t n)
{
	memmove(p->work, p->work + n, p->wlen - n);
	p->wlen -= n;
}

/* Copies a header parameter's value (quoted with backslash escapes, or a
 * token) into out; "" when absent. */
static void header_param(const char *line, size_t len, const char *key, char *out, size_t outlen)
{
	out[0] = 0;
	size_t klen = strlen(key);
	for (size_t i = 0; i + klen < len; i++) {
		/* The parameter name must start after ';' or whitespace. */
		if ((i == 0 ||
		     !(line[i - 1] == ';' || line[i - 1] == ' ' || line[i - 1] == '\t')) ||
		    strncasecmp(line + i, key, klen) != 0 || line[i + klen] != '=')
			continue;
		size_t j = i + klen + 1, o = 0;
		if (j < len && line[j] == '"') {
			for (j++; j < len && line[j] != '"'; j++) {
				if (line[j] == '\\' && j + 1 < len)
					j++;
				if (o + 1 < outlen)
					out[o++] = line[j];
			}
		} else {
			for (; j < len && line[j] != ';' && line[j] != ' ' && line[j] != '\t';
			     j++) {
				if (o + 1 < outlen)
					out[o++] = line[j];
			}
		}
		out[o] = 0;
		return;
	}
}

/* The header block [0, n): finds Content-Disposition's name and filename. */
static int parse_headers(struct mp_parser *p, size_t n)
{
	p->name[0] = p->filename[0] = 0;
	const char *h = (const char *)p->work;
	size_t i = 0;
	while (i < n) {
		const char *eol = memmem(h + i, n - i, "\r\n", 2);
		size_t len = eol ? (size_t)(eol - (h + i)) : n - i;
		const char *line = h + i;
		if (len > 20 && !strncasecmp(line, "content-disposition:", 20)) {
			header_param(line + 20, len - 20, "name", p->name, sizeof(p->name));
			header_param(line + 20, len - 20, "filename", p->filename,
			             sizeof(p->filename));
		}
		for (size_t k = 0; k < len; k++) {
			if (line[k] == 0)
				return -EPROTO; /* no NUL in a header */
		}
		i += len + 2;
	}
	return 0;
}

/* One step over the work buffer: 1 when it made progress and may go on,
 * 0 when it needs more bytes, negative on error. */
static int step(struct mp_parser *p)
{
	switch (p->state) {
	case MP_PREAMBLE: {
		/* The first delimiter may open the body without its CRLF. */
		const uint8_t *d = (const uint8_t *)p->delim;
		size_t dl = p->dlen;
		if (p->at_start) {
			if (p->wlen < dl - 2)
				return 0;
			p->at_start = false;
			if (!memcmp(p->work, d + 2, dl - 2)) {
				consume(p, dl - 2);
				p->state = MP_AFTER_DELIM;
				return 1;
			}
		}
		const uint8_t *hit = memmem(p->work, p->wlen, d, dl);
		if (hit) {
			consume(p, (size_t)(hit - p->work) + dl);
			p->state = MP_AFTER_DELIM;
			return 1;
		}
		if (p->wlen >= dl)
			consume(p, p->wlen - (dl - 1));
		return 0;
	}
	case MP_AFTER_DELIM: {
		size_t i = 0;
		if (p->wlen >= 2 && p->work[0] == '-' && p->work[1] == '-') {
			p->state = MP_DONE;
			p->wlen = 0;
			return 0;
		}
		while (i < p->wlen && (p->work[i] == ' ' || p->work[i] == '\t'))
			i++;
		if (i > 64)
			return -EPROTO;
		if (p->wlen < i + 2)
			return 0;
		if (p->work[i] != '\r' || p->work[i + 1] != '\n')
			return -EPROTO;
		consume(p, i + 2);
		p->state = MP_HEADERS;
		return 1;
	}
	case MP_HEADERS: {
		size_t end, skip;
		if (p->wlen >= 2 && p->work[0] == '\r' && p->work[1] == '\n') {
			end = 0;
			skip = 2;
		} else {
			const uint8_t *hit = memmem(p->work, p->wlen, "\r\n\r\n", 4);
			if (!hit) {
				if (p->wlen > MP_HDR_MAX)
					return -EPROTO;
				return 0;
			}
			end = (size_t)(hit - p->work);
			skip = end + 4;
			if (end > MP_HDR_MAX)
				return -EPROTO;
		}
		if (parse_headers(p, end) < 0)
			return -EPROTO;
		consume(p, skip);
		p->state = MP_BODY;
		if (p->cb && p->cb->part_begin) {
			int r = p->cb->part_begin(p->opaque, p->name, p->filename);
			if (r < 0)
				return r;
		}
		return 1;
	}
	case MP_BODY: {
		const uint8_t *hit = memmem(p->work, p->wlen, p->delim, p->dlen);
		size_t n = hit ? (size_t)(hit - p->work)
		               : (p->wlen >= p->dlen ? p->wlen - (p->dlen - 1) : 0);
		if (n && p->cb && p->cb->data) {
			int r = p->cb->data(p->opaque, p->work, n);
			if (r < 0)
				return r;
		}
		if (!hit) {
			consume(p, n);
			return 0;
		}
		consume(p, n + p->dlen);
		p->state = MP_AFTER_DELIM;
		if (p->cb && p->cb->part_end) {
			int r = p->cb->part_end(p->opaque);
			if (r < 0)
				return r;
		}
		return 1;
	}
	case MP_DONE:
		p->wlen = 0; /* the epilogue is ignored */
		return 0;
	default:
		return -EPROTO;
	}
}

int mp_feed(struct mp_parser *p, const uint8_t *buf, size_t len)
{
	if (p->state == MP_FAILED)
		return -EPROTO;
	while (len) {
		size_t room = sizeof(p->work) - p->wlen;
		size_t n = len < room ? len : room;
		memcpy(p->work + p->wlen, buf, n);
		p->wlen += n;
		buf += n;
		len -= n;
		int r;
		while ((r = step(p)) == 1) {
		}
		if (r < 0) {
			p->state = MP_FAILED;
			return r;
		}
		if (p->wlen == sizeof(p->work)) { /* cannot happen: every state frees room */
			p->state = MP_FAILED;
			return -EPROTO;
		}
	}
	return 0;
}

int mp_finish(struct mp_parser *p)
{
	return p->state == MP_DONE ? 0 : -EPROTO;
}
