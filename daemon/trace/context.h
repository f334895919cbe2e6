/* Trace contexts: W3C traceparent and tracestate, OTLP's header list
 * (OTEL_EXPORTER_OTLP_HEADERS) and the sampler's name.  Pure parsers of
 * what callers send: fuzzed (fuzz_trace_context). */
#ifndef COVED_TRACE_CONTEXT_H
#define COVED_TRACE_CONTEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TRACE_ID_LEN      16
#define TRACE_SPAN_LEN    8
#define TRACE_ID_HEX      (2 * TRACE_ID_LEN + 1)
#define TRACE_SPAN_HEX    (2 * TRACE_SPAN_LEN + 1)
#define TRACE_STATE_MAX   512 /* W3C: at most 512 bytes are kept */
#define TRACE_HEADERS_MAX 32

struct trace_ctx {
	bool set;
	uint8_t trace_id[TRACE_ID_LEN];
	uint8_t span_id[TRACE_SPAN_LEN];
	uint8_t flags; /* bit 0: sampled */
};

/* trace_parse_parent() - a traceparent header: "00-" 32 lowercase hex
 * "-" 16 lowercase hex "-" 2 hex, neither id all zero.  Return: 0 with
 * @out filled, or -1 (out->set false): the header is ignored. */
int trace_parse_parent(const char *s, size_t len, struct trace_ctx *out);
/* trace_format_parent() - @c as a traceparent (56 bytes and a NUL). */
void trace_format_parent(const struct trace_ctx *c, char out[56]);

/* trace_state_valid() - a tracestate header W3C would pass on: at most 32
 * comma-separated key=value members of printable ASCII, 512 bytes. */
bool trace_state_valid(const char *s, size_t len);

/* Lowercase hex of n bytes (out: 2n + 1 bytes); and back: 0 or -1 (a
 * character that is no lowercase hex digit, or the wrong length). */
void trace_hex(const uint8_t *b, size_t n, char *out);
int trace_unhex(const char *s, size_t len, uint8_t *b, size_t n);
/* Whether n bytes are all zero (an invalid id). */
bool trace_zero(const uint8_t *b, size_t n);
/* Random non-zero ids (getrandom). */
void trace_new_id(uint8_t id[TRACE_ID_LEN]);
void trace_new_span(uint8_t id[TRACE_SPAN_LEN]);

/* OTEL_EXPORTER_OTLP_HEADERS: "k1=v1,k2=v2", values percent-decoded,
 * blanks around keys and values trimmed.  Each header comes out as
 * "Key: value" (malloc'ed, in out->line).  The values may be secrets:
 * nothing here prints them. */
struct trace_headers {
	char *line[TRACE_HEADERS_MAX];
	size_t n;
};
/* trace_parse_headers() - Return: 0, or -1 with a one-line @err that
 * names the entry's position, never its value. */
int trace_parse_headers(const char *s, size_t len, struct trace_headers *out, char *err,
                        size_t errlen);
void trace_headers_free(struct trace_headers *h);

/* OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG. */
struct trace_sampler {
	bool parent_based; /* parentbased_*: a sampled parent decides */
	double ratio;      /* 0: never, 1: always */
};
/* trace_parse_sampler() - NULL or "" name: always_on.  Return: 0, or -1
 * with @err naming an unknown sampler or a ratio outside [0, 1]. */
int trace_parse_sampler(const char *name, const char *arg, struct trace_sampler *out, char *err,
                        size_t errlen);
/* trace_sampled() - whether a new trace id (or one under parent @p) is
 * sampled: traceidratio compares the id's last 8 bytes with the ratio, so
 * every node decides the same for one trace. */
bool trace_sampled(const struct trace_sampler *s, const struct trace_ctx *p,
                   const uint8_t id[TRACE_ID_LEN]);

#endif
