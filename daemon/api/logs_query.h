/* GET /sandboxes/{id}/logs's query: which journal lines a caller wants
 * (?since=SEQ or ?since=RFC3339).  Pure, fuzzed (fuzz_jchain). */
#ifndef COVED_API_LOGS_QUERY_H
#define COVED_API_LOGS_QUERY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct coved_since {
	bool by_time; /* false: by seq */
	uint64_t seq; /* lines with a greater seq */
	int64_t ms;   /* lines stamped at or after this Unix time (ms) */
};

/* coved_since_parse() - @v as a seq (digits) or an RFC 3339 time
 * ("2026-12-03T10:00:00Z", fractions and offsets allowed).
 * Return: 0, or -1 with a one-line @err. */
int coved_since_parse(const char *v, struct coved_since *s, char *err, size_t errlen);

/* coved_rfc3339_ms() - Unix milliseconds of an RFC 3339 time of @len
 * bytes.  Return: 0, or -1 when it is not one. */
int coved_rfc3339_ms(const char *v, size_t len, int64_t *ms);

/* coved_since_keeps() - whether journal line @line (@len bytes) is wanted. */
bool coved_since_keeps(const struct coved_since *s, const char *line, size_t len);

#endif
