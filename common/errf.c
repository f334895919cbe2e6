#include "errf.h"

#include <stdarg.h>
#include <stdio.h>

int errf(char *err, size_t errlen, int code, const char *fmt, ...)
{
	if (err && errlen) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
		/* The message may quote hostile input (a JSON parser's "near"
		 * text, a key, a name): it stays one printable line. */
		for (unsigned char *p = (unsigned char *)err; *p; p++)
			if (*p < 0x20 || *p == 0x7f)
				*p = '?';
	}
	return code;
}
