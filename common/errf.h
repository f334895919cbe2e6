/* One-line error messages: format into a caller's buffer and return an
 * error code, so a failure path reads `return errf(err, errlen, -EINVAL,
 * "bad --memory %s", s);`.  Linked into every Cove binary. */
#ifndef COVE_ERRF_H
#define COVE_ERRF_H

#include <stddef.h>

/* snprintf into err (when err and errlen are non-zero), with control
 * characters made "?" so the message is one line; returns code. */
int errf(char *err, size_t errlen, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
