/* A template build's bounded log (buildlog.h). */
#include "daemon/sandboxes/buildlog.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void coved_blog_init(struct coved_blog *l, size_t max_bytes)
{
	memset(l, 0, sizeof(*l));
	l->max_bytes = max_bytes;
}

void coved_blog_free(struct coved_blog *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i].text);
	free(l->v);
	memset(l, 0, sizeof(*l));
}

/* The length of the UTF-8 sequence at s (n bytes left), 0 when invalid. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	size_t k = s[0] < 0x80             ? 1
	           : (s[0] & 0xe0) == 0xc0 ? 2
	           : (s[0] & 0xf0) == 0xe0 ? 3
	           : (s[0] & 0xf8) == 0xf0 ? 4
	                                   : 0;
	if (k == 0 || k > n || (k == 2 && s[0] < 0xc2) || (k == 4 && s[0] > 0xf4))
		return 0;
	for (size_t i = 1; i < k; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	if (k == 3 && ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] >= 0xa0)))
		return 0;
	if (k == 4 && ((s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] >= 0x90)))
		return 0;
	return k;
}

/* A copy of text that JSON and a terminal take: invalid UTF-8 and
 * control characters (but tab) become '?'. */
static char *clean(const char *text, size_t len)
{
	char *o = malloc(len + 1);
	if (!o)
		return NULL;
	const unsigned char *s = (const unsigned char *)text;
	size_t i = 0;
	while (i < len) {
		size_t k = utf8_len(s + i, len - i);
		if (k == 0 || (k == 1 && ((s[i] < 0x20 && s[i] != '\t') || s[i] == 0x7f))) {
			o[i++] = '?';
			continue;
		}
		memcpy(o + i, s + i, k);
		i += k;
	}
	o[len] = 0;
	return o;
}

/* Drops the oldest lines after the head until the texts fit in 3/4 of
 * the bound (at least one line stays after the head). */
static void shrink(struct coved_blog *l)
{
	size_t k = l->head;
	while (l->bytes > l->max_bytes / 4 * 3 && k + 1 < l->n) {
		l->bytes -= strlen(l->v[k].text);
		free(l->v[k].text);
		k++;
	}
	size_t gone = k - l->head;
	memmove(&l->v[l->head], &l->v[k], (l->n - k) * sizeof(l->v[0]));
	l->n -= gone;
	l->dropped += gone;
}

void coved_blog_add(struct coved_blog *l, int64_t ms, enum coved_blog_level level, const char *text,
                    size_t len)
{
	const char *nl = memchr(text, '\n', len);
	if (nl)
		len = (size_t)(nl - text);
	if (len > COVED_BLOG_LINE_MAX)
		len = COVED_BLOG_LINE_MAX;
	if (len && text[len - 1] == '\r')
		len--;
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 64;
		struct coved_blog_line *v = realloc(l->v, cap * sizeof(*v));
		if (!v)
			return; /* the line is lost, the log stays whole */
		l->v = v;
		l->cap = cap;
	}
	char *t = clean(text, len);
	if (!t)
		return;
	l->v[l->n++] =
	    (struct coved_blog_line){ .seq = l->next_seq++, .ms = ms, .level = level, .text = t };
	l->bytes += len;
	if (l->bytes <= l->max_bytes / 4 && !l->dropped)
		l->head = l->n;
	if (l->bytes > l->max_bytes)
		shrink(l);
}

void coved_blog_limit(struct coved_blog *l, size_t max)
{
	l->max_bytes = max;
	if (l->bytes <= max)
		return;
	size_t h = 0, hb = 0, t = l->n, tb = 0;
	while (h < l->n && hb + strlen(l->v[h].text) <= max / 4)
		hb += strlen(l->v[h++].text);
	/* The tail starts after an earlier gap, so that one gap holds both. */
	size_t floor = l->dropped && l->head > h ? l->head : h;
	while (t > floor && tb + strlen(l->v[t - 1].text) <= max / 4 * 3 - hb)
		tb += strlen(l->v[--t].text);
	for (size_t i = h; i < t; i++)
		free(l->v[i].text);
	memmove(&l->v[h], &l->v[t], (l->n - t) * sizeof(l->v[0]));
	l->dropped += t - h;
	l->n -= t - h;
	l->head = h;
	l->bytes = hb + tb;
}

void coved_blog_output(struct coved_blog *l, int64_t ms, int stream, const char *buf, size_t len)
{
	stream = stream ? 1 : 0;
	enum coved_blog_level lv = stream ? COVED_BLOG_WARN : COVED_BLOG_INFO;
	char *part = l->part[stream];
	size_t *pn = &l->partn[stream];
	while (len) {
		const char *nl = memchr(buf, '\n', len);
		size_t take = nl ? (size_t)(nl - buf) : len;
		size_t room = COVED_BLOG_LINE_MAX - *pn;
		size_t n = take < room ? take : room;
		memcpy(part + *pn, buf, n);
		*pn += n;
		if (nl || *pn == COVED_BLOG_LINE_MAX) {
			coved_blog_add(l, ms, lv, part, *pn);
			*pn = 0;
		}
		/* A line over the bound goes on as a line of its own. */
		size_t used = nl && n == take ? take + 1 : n;
		buf += used;
		len -= used;
	}
}

void coved_blog_flush(struct coved_blog *l, int64_t ms)
{
	for (int s = 0; s < 2; s++) {
		if (l->partn[s])
			coved_blog_add(l, ms, s ? COVED_BLOG_WARN : COVED_BLOG_INFO, l->part[s],
			               l->partn[s]);
		l->partn[s] = 0;
	}
}

uint64_t coved_blog_read(const struct coved_blog *l, uint64_t from, size_t max,
                         void (*fn)(void *opaque, const struct coved_blog_line *line), void *opaque)
{
	size_t given = 0;
	for (size_t i = 0; i < l->n && given < max; i++) {
		const struct coved_blog_line *x = &l->v[i];
		/* The gap after the head: one line says what went. */
		if (i == l->head && l->dropped && x->seq > from) {
			uint64_t first = i ? l->v[i - 1].seq + 1 : 0;
			if (first >= from) {
				char t[96];
				snprintf(t, sizeof(t),
				         "... %llu lines dropped (the log is bounded) ...",
				         (unsigned long long)(x->seq - first));
				struct coved_blog_line m = { .seq = first,
					                     .ms = x->ms,
					                     .level = COVED_BLOG_WARN,
					                     .text = t };
				fn(opaque, &m);
				if (++given == max)
					return x->seq;
			}
		}
		if (x->seq < from)
			continue;
		fn(opaque, x);
		given++;
		from = x->seq + 1;
	}
	return from;
}
