/* libFuzzer target: the path normaliser of intercepted requests
 * (egress/httppath.c).  What it accepts is a path that starts with '/',
 * has no "." or ".." segment, no %XX of an unreserved character, and is
 * its own normal form. */
#include <assert.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "egress/httppath.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1; /* lower case never comes out */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char out[65536 + 2], again[65536 + 2];
	if (size > 65536)
		return 0;
	long n = httppath_normalize((const char *)data, size, out, size + 2);
	if (n < 0) {
		assert(n == -EINVAL || n == -EPERM);
		return 0;
	}
	assert((size_t)n <= size + 1 && out[0] == '/' && out[n] == '\0');
	assert(strlen(out) == (size_t)n);
	for (long i = 0; i < n; i++) {
		if (out[i] == '/') {
			const char *s = out + i + 1;
			assert(!(s[0] == '.' && (s[1] == '/' || s[1] == '\0')));
			assert(!(s[0] == '.' && s[1] == '.' && (s[2] == '/' || s[2] == '\0')));
		}
		if (out[i] == '%') {
			int hi = hexval(out[i + 1]), lo = hi >= 0 ? hexval(out[i + 2]) : -1;
			assert(lo >= 0);
			unsigned char v = (unsigned char)(hi << 4 | lo);
			assert(!((v >= 'a' && v <= 'z') || (v >= 'A' && v <= 'Z') ||
			         (v >= '0' && v <= '9') || (v && strchr("-._~", v))));
		}
	}
	long m = httppath_normalize(out, (size_t)n, again, (size_t)n + 2);
	assert(m == n && !memcmp(out, again, (size_t)n));
	return 0;
}
