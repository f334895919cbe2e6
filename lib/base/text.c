/* Guest text made safe for a terminal, and host name checks (text.h). */
#include "lib/base/text.h"

#include <string.h>

enum { T_TEXT, T_ESC, T_CSI, T_STR, T_STR_ESC, T_C2 };

#define ESC 0x1b

void text_filter_init(struct text_filter *f)
{
	memset(f, 0, sizeof(*f));
}

/* Whether seq[0, n) (after ESC [) is SGR: parameters then 'm'. */
static bool is_sgr(const char *seq, size_t n)
{
	if (n == 0 || seq[n - 1] != 'm')
		return false;
	for (size_t i = 0; i + 1 < n; i++)
		if (!((seq[i] >= '0' && seq[i] <= '9') || seq[i] == ';' || seq[i] == ':'))
			return false;
	return true;
}

size_t text_filter(struct text_filter *f, const unsigned char *in, size_t len, char *out,
                   size_t cap)
{
	size_t o = 0;
#define PUT(c)                          \
	do {                            \
		if (o < cap)            \
			out[o++] = (c); \
	} while (0)
	for (size_t i = 0; i < len; i++) {
		unsigned char c = in[i];
		switch (f->state) {
		case T_TEXT:
			if (c == ESC)
				f->state = T_ESC;
			else if (c == 0xc2)
				f->state = T_C2;
			else
				PUT((char)c);
			break;
		case T_C2: /* a C1 control is U+0080..U+009F: C2 80..C2 9F */
			f->state = T_TEXT;
			if (c >= 0x80 && c <= 0x9f) {
				PUT('?');
			} else {
				PUT((char)0xc2);
				i--; /* c again, as text */
			}
			break;
		case T_ESC:
			if (c == '[') {
				f->state = T_CSI;
				f->n = 0;
			} else if (c == ']' || c == 'P' || c == '_' || c == '^' || c == 'X') {
				f->state = T_STR; /* OSC, DCS, APC, PM, SOS: up to BEL or ST */
			} else {
				f->state = T_TEXT; /* a two-byte sequence: dropped */
			}
			break;
		case T_CSI:
			if (f->n < sizeof(f->seq))
				f->seq[f->n] = (char)c;
			f->n++;
			if (c >= 0x40 && c <= 0x7e) {
				if (f->n <= sizeof(f->seq) && is_sgr(f->seq, f->n)) {
					PUT((char)ESC);
					PUT('[');
					for (size_t k = 0; k < f->n; k++)
						PUT(f->seq[k]);
				}
				f->state = T_TEXT;
			} else if (c < 0x20 || c > 0x7e) {
				f->state = T_TEXT; /* malformed: dropped */
			}
			break;
		case T_STR:
			if (c == 0x07)
				f->state = T_TEXT;
			else if (c == ESC)
				f->state = T_STR_ESC;
			break;
		case T_STR_ESC:
			f->state = c == '\\' ? T_TEXT : T_STR;
			break;
		}
	}
#undef PUT
	return o;
}

void text_clean(char *s)
{
	unsigned char *r = (unsigned char *)s;
	char *w = s;
	while (*r) {
		unsigned char c = *r++;
		if (c == ESC) {
			*w++ = '?';
			if (*r == '[') {
				r++;
				while (*r && !(*r >= 0x40 && *r <= 0x7e))
					r++;
				if (*r)
					r++;
			} else if (*r == ']' || *r == 'P' || *r == '_' || *r == '^' || *r == 'X') {
				while (*r && *r != 0x07 && !(r[0] == ESC && r[1] == '\\'))
					r++;
				r += *r == 0x07 ? 1 : *r ? 2 : 0;
			} else if (*r) {
				r++;
			}
		} else if (c == 0xc2 && *r >= 0x80 && *r <= 0x9f) {
			r++;
			*w++ = '?';
		} else if ((c < 0x20 && c != '\t' && c != '\n') || c == 0x7f) {
			*w++ = '?';
		} else {
			*w++ = (char)c;
		}
	}
	*w = 0;
}

bool text_hostname_valid(const char *s)
{
	size_t total = s ? strlen(s) : 0;
	if (total == 0 || total > 253)
		return false;
	size_t label = 0;
	for (size_t i = 0; i <= total; i++) {
		char c = s[i];
		if (c == '.' || c == 0) {
			if (label == 0 || label > 63 || s[i - 1] == '-')
				return false;
			label = 0;
			continue;
		}
		bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		          (c >= '0' && c <= '9') || c == '-';
		if (!ok || (label == 0 && c == '-'))
			return false;
		label++;
	}
	return true;
}
