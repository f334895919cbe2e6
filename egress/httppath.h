/* The path of an intercepted request, normalised once (issue 26) so that
 * a rule's match_paths and the server judge the same path: the rule sees
 * what is forwarded.  Hostile input, fuzzed by tests/fuzz/fuzz_httppath.c. */
#ifndef COVE_EGRESS_HTTPPATH_H
#define COVE_EGRESS_HTTPPATH_H

#include <stddef.h>

/* httppath_normalize() - @in (@len bytes, an origin-form path without its
 * query) in the normal form of RFC 3986 6.2.2: every %XX of an unreserved
 * character decoded, every other %XX kept with upper-case hex, then
 * remove_dot_segments (5.2.4) over the segments between literal '/'.
 * Refused, because servers disagree on them: a dot segment ("." or "..",
 * or either before a ';' parameter) that an encoding forms or hides (a
 * %2E, or a %2F or %5C inside the segment), and "..;" or ".;" segments.
 * An encoded '/' elsewhere ("group%2Fproject") stays as it is.
 * @out gets a NUL-terminated path that starts with '/'; @outlen of
 * @len + 2 always suffices.
 * Return: the length written; -EINVAL (not a path: no leading '/', a bad
 * %XX, a control, space, backslash or non-ASCII byte), -EPERM (refused, as
 * above) or -E2BIG (@outlen too small). */
long httppath_normalize(const char *in, size_t len, char *out, size_t outlen)
    __attribute__((warn_unused_result));

#endif
