/* Trace contexts (context.h): strict W3C parsing, OTLP header lists. */
#include "daemon/trace/context.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

void trace_hex(const uint8_t *b, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[b[i] >> 4];
		out[2 * i + 1] = digits[b[i] & 15];
	}
	out[2 * n] = 0;
}

int trace_unhex(const char *s, size_t len, uint8_t *b, size_t n)
{
	if (len != 2 * n)
		return -1;
	for (size_t i = 0; i < n; i++) {
		int h = hexval(s[2 * i]), l = hexval(s[2 * i + 1]);
		if (h < 0 || l < 0)
			return -1;
		b[i] = (uint8_t)(h << 4 | l);
	}
	return 0;
}

bool trace_zero(const uint8_t *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (b[i])
			return false;
	return true;
}

/* #syscalls: getrandom */
static void random_nonzero(uint8_t *b, size_t n)
{
	do {
		size_t got = 0;
		while (got < n) {
			ssize_t k = getrandom(b + got, n - got, 0);
			if (k < 0 && errno == EINTR)
				continue;
			if (k <= 0)
				break;
			got += (size_t)k;
		}
		if (got < n) { /* no entropy source: a counter keeps ids distinct */
			static _Atomic uint64_t ctr;
			uint64_t v = ++ctr;
			memset(b, 0, n);
			memcpy(b + n - sizeof(v), &v, sizeof(v));
		}
	} while (trace_zero(b, n));
}

void trace_new_id(uint8_t id[TRACE_ID_LEN])
{
	random_nonzero(id, TRACE_ID_LEN);
}

void trace_new_span(uint8_t id[TRACE_SPAN_LEN])
{
	random_nonzero(id, TRACE_SPAN_LEN);
}

int trace_parse_parent(const char *s, size_t len, struct trace_ctx *out)
{
	memset(out, 0, sizeof(*out));
	/* version 00 is exactly 55 bytes: 2 + 1 + 32 + 1 + 16 + 1 + 2 */
	if (!s || len != 55 || s[0] != '0' || s[1] != '0' || s[2] != '-' || s[35] != '-' ||
	    s[52] != '-')
		return -1;
	struct trace_ctx c = { 0 };
	uint8_t fl;
	if (trace_unhex(s + 3, 32, c.trace_id, TRACE_ID_LEN) < 0 ||
	    trace_unhex(s + 36, 16, c.span_id, TRACE_SPAN_LEN) < 0 ||
	    trace_unhex(s + 53, 2, &fl, 1) < 0)
		return -1;
	if (trace_zero(c.trace_id, TRACE_ID_LEN) || trace_zero(c.span_id, TRACE_SPAN_LEN))
		return -1;
	c.flags = fl;
	c.set = true;
	*out = c;
	return 0;
}

void trace_format_parent(const struct trace_ctx *c, char out[56])
{
	char t[TRACE_ID_HEX], p[TRACE_SPAN_HEX], f[3];
	trace_hex(c->trace_id, TRACE_ID_LEN, t);
	trace_hex(c->span_id, TRACE_SPAN_LEN, p);
	trace_hex(&c->flags, 1, f);
	snprintf(out, 56, "00-%s-%s-%s", t, p, f);
}

bool trace_state_valid(const char *s, size_t len)
{
	if (!s || len > TRACE_STATE_MAX)
		return false;
	size_t members = 0, i = 0;
	while (i < len) {
		size_t start = i;
		while (i < len && s[i] != ',')
			i++;
		/* [start, i) is one member, blanks around it allowed */
		size_t a = start, b = i;
		while (a < b && (s[a] == ' ' || s[a] == '\t'))
			a++;
		while (b > a && (s[b - 1] == ' ' || s[b - 1] == '\t'))
			b--;
		if (a < b) {
			const char *eq = memchr(s + a, '=', b - a);
			if (!eq || eq == s + a || eq == s + b - 1 || ++members > 32)
				return false;
			for (size_t k = a; k < b; k++)
				if (s[k] < 0x20 || s[k] > 0x7e)
					return false;
		}
		i++; /* past the comma */
	}
	return true;
}

/* ---- OTEL_EXPORTER_OTLP_HEADERS --------------------------------------------- */

static void trim(const char **a, const char **b)
{
	while (*a < *b && (**a == ' ' || **a == '\t'))
		(*a)++;
	while (*b > *a && ((*b)[-1] == ' ' || (*b)[-1] == '\t'))
		(*b)--;
}

/* Percent-decodes [a, b) into out (room for b - a + 1); -1 on a bad
 * escape or a control byte (a header value must stay one line). */
static int pct_decode(const char *a, const char *b, char *out)
{
	size_t n = 0;
	while (a < b) {
		unsigned char c = (unsigned char)*a;
		if (c == '%') {
			if (b - a < 3)
				return -1;
			int h = hexval((char)(a[1] | 0x20)), l = hexval((char)(a[2] | 0x20));
			if (h < 0 || l < 0)
				return -1;
			c = (unsigned char)(h << 4 | l);
			a += 3;
		} else {
			a++;
		}
		if (c < 0x20 || c == 0x7f)
			return -1;
		out[n++] = (char)c;
	}
	out[n] = 0;
	return 0;
}

static bool token_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       (c && strchr("!#$&'*+-.^_`|~", c)); /* strchr finds the NUL too */
}

int trace_parse_headers(const char *s, size_t len, struct trace_headers *out, char *err,
                        size_t errlen)
{
	memset(out, 0, sizeof(*out));
	const char *p = s, *end = s + len;
	size_t pos = 0;
	while (s && p < end) {
		const char *comma = memchr(p, ',', (size_t)(end - p));
		const char *stop = comma ? comma : end;
		pos++;
		const char *eq = memchr(p, '=', (size_t)(stop - p));
		const char *ka = p, *kb = eq ? eq : stop;
		trim(&ka, &kb);
		if (ka == kb && !eq) { /* an empty entry: "a=b,,c=d" */
			p = stop + (comma ? 1 : 0);
			continue;
		}
		if (!eq || ka == kb) {
			snprintf(err, errlen,
			         "OTEL_EXPORTER_OTLP_HEADERS: entry %zu is no key=value", pos);
			goto fail;
		}
		for (const char *k = ka; k < kb; k++)
			if (!token_char(*k)) {
				snprintf(
				    err, errlen,
				    "OTEL_EXPORTER_OTLP_HEADERS: entry %zu has a key that is no "
				    "HTTP header name",
				    pos);
				goto fail;
			}
		if (out->n == TRACE_HEADERS_MAX) {
			snprintf(err, errlen, "OTEL_EXPORTER_OTLP_HEADERS: more than %d entries",
			         TRACE_HEADERS_MAX);
			goto fail;
		}
		const char *va = eq + 1, *vb = stop;
		trim(&va, &vb);
		size_t kl = (size_t)(kb - ka);
		char *line = malloc(kl + 2 + (size_t)(vb - va) + 1);
		if (!line) {
			snprintf(err, errlen, "OTEL_EXPORTER_OTLP_HEADERS: out of memory");
			goto fail;
		}
		memcpy(line, ka, kl);
		memcpy(line + kl, ": ", 2);
		if (pct_decode(va, vb, line + kl + 2) < 0) {
			free(line);
			snprintf(
			    err, errlen,
			    "OTEL_EXPORTER_OTLP_HEADERS: entry %zu has a bad percent escape or a "
			    "control character",
			    pos);
			goto fail;
		}
		out->line[out->n++] = line;
		p = stop + (comma ? 1 : 0);
	}
	return 0;
fail:
	trace_headers_free(out);
	return -1;
}

void trace_headers_free(struct trace_headers *h)
{
	for (size_t i = 0; i < h->n; i++) {
		explicit_bzero(h->line[i], strlen(h->line[i]));
		free(h->line[i]);
	}
	h->n = 0;
}

/* ---- the sampler -------------------------------------------------------------- */

int trace_parse_sampler(const char *name, const char *arg, struct trace_sampler *out, char *err,
                        size_t errlen)
{
	*out = (struct trace_sampler){ .parent_based = false, .ratio = 1 };
	if (!name || !*name)
		return 0;
	const char *base = name;
	if (!strncmp(name, "parentbased_", 12)) {
		out->parent_based = true;
		base = name + 12;
	}
	if (!strcmp(base, "always_on")) {
		out->ratio = 1;
	} else if (!strcmp(base, "always_off")) {
		out->ratio = 0;
	} else if (!strcmp(base, "traceidratio")) {
		char *e = NULL;
		double r = arg && *arg ? strtod(arg, &e) : 1;
		if ((arg && *arg && *e) || !(r >= 0 && r <= 1)) {
			snprintf(err, errlen,
			         "OTEL_TRACES_SAMPLER_ARG: '%.40s' is no ratio between 0 and 1",
			         arg ? arg : "");
			return -1;
		}
		out->ratio = r;
	} else {
		snprintf(err, errlen,
		         "OTEL_TRACES_SAMPLER: '%.60s' is none of always_on, always_off, "
		         "traceidratio, parentbased_*",
		         name);
		return -1;
	}
	return 0;
}

bool trace_sampled(const struct trace_sampler *s, const struct trace_ctx *p,
                   const uint8_t id[TRACE_ID_LEN])
{
	if (s->parent_based && p && p->set)
		return p->flags & 1;
	if (s->ratio >= 1)
		return true;
	if (s->ratio <= 0)
		return false;
	uint64_t v = 0;
	for (int i = 8; i < TRACE_ID_LEN; i++)
		v = v << 8 | id[i];
	return (double)(v >> 11) < s->ratio * (double)(1ull << 53);
}
