/* RFC 3986 6.2.2.2 (percent-encoding normalisation) and 5.2.4
 * (remove_dot_segments) over an origin-form path. */
#include "httppath.h"
#include "hex.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

static bool unreserved(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '-' || c == '.' || c == '_' || c == '~';
}

/* A piece's name (up to any ';') is "." or "..". */
static bool dot_name(const char *p, size_t n)
{
	const char *semi = memchr(p, ';', n);
	if (semi)
		n = (size_t)(semi - p);
	return (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.');
}

/* One decoded segment (@s, @n bytes, literal '/' excluded): is a dot
 * segment formed or hidden by an encoding or a parameter?  @plain: the
 * raw segment had no %XX at all.  Pieces are split at %2F and %5C, the
 * separators some servers decode. */
static bool segment_refused(const char *s, size_t n, bool plain)
{
	if (plain && dot_name(s, n) && !memchr(s, ';', n))
		return false; /* a literal "." or "..": remove_dot_segments' job */
	size_t start = 0;
	for (size_t i = 0; i <= n; i++) {
		bool sep =
		    i + 3 <= n && s[i] == '%' &&
		    ((s[i + 1] == '2' && s[i + 2] == 'F') || (s[i + 1] == '5' && s[i + 2] == 'C'));
		if (i == n || sep) {
			if (dot_name(s + start, i - start))
				return true;
			if (sep)
				i += 2;
			start = i + 1;
		}
	}
	return false;
}

/* RFC 3986 5.2.4 in place over @p (@n bytes, starting with '/'), segment
 * by segment, ".." removing the output's last.  Each step writes no more
 * than it has read, so the output never overtakes the input. */
static size_t remove_dot_segments(char *p, size_t n)
{
	const char *in = p;
	char *out = p;
	size_t o = 0, i = 0;
	while (i < n) {
		size_t j = i + 1;
		while (j < n && in[j] != '/')
			j++;
		const char *seg = in + i + 1;
		size_t sl = j - i - 1;
		bool last = j == n;
		if (sl == 1 && seg[0] == '.') {
			if (last)
				out[o++] = '/';
		} else if (sl == 2 && seg[0] == '.' && seg[1] == '.') {
			while (o > 0 && out[o - 1] != '/')
				o--;
			if (o > 0)
				o--; /* the segment's own '/' */
			if (last)
				out[o++] = '/';
		} else {
			out[o++] = '/';
			memmove(out + o, seg, sl);
			o += sl;
		}
		i = j;
	}
	return o;
}

long httppath_normalize(const char *in, size_t len, char *out, size_t outlen)
{
	if (outlen < len + 2)
		return -E2BIG;
	if (!len || in[0] != '/')
		return -EINVAL;
	/* Decoding never lengthens the path, nor does remove_dot_segments. */
	size_t o = 0, seg = 0;
	bool plain = true;
	for (size_t i = 0; i <= len; i++) {
		if (i == len || in[i] == '/') {
			if (i > 0 && segment_refused(out + seg, o - seg, plain))
				return -EPERM;
			if (i == len)
				break;
			out[o++] = '/';
			seg = o;
			plain = true;
			continue;
		}
		unsigned char c = (unsigned char)in[i];
		if (c <= ' ' || c >= 0x7f || c == '\\' || c == '#' || c == '?')
			return -EINVAL;
		if (c != '%') {
			out[o++] = (char)c;
			continue;
		}
		int hi = i + 2 < len ? hex_digit(in[i + 1]) : -1;
		int lo = hi >= 0 ? hex_digit(in[i + 2]) : -1;
		if (lo < 0)
			return -EINVAL;
		unsigned char v = (unsigned char)(hi << 4 | lo);
		plain = false;
		if (unreserved(v)) {
			out[o++] = (char)v;
		} else {
			static const char hex[] = "0123456789ABCDEF";
			out[o++] = '%';
			out[o++] = hex[v >> 4];
			out[o++] = hex[v & 15];
		}
		i += 2;
	}
	size_t n = remove_dot_segments(out, o);
	out[n] = '\0';
	return (long)n;
}
