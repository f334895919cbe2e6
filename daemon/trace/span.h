/* A sandbox's journal lines as OTLP spans (JSON encoding).  One converter
 * for the live export and for the export of a past journal, so both send
 * the same spans: the ids are in the lines (trace_stamp writes them in
 * before the line is appended), the rest is read from the line.  Pure:
 * unit-tested and fuzzed. */
#ifndef COVED_TRACE_SPAN_H
#define COVED_TRACE_SPAN_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "daemon/trace/context.h"

#define TRACE_EVENTS_MAX 256 /* egress events kept on a sandbox's span */

/* The sandbox's own span: begun by its "created" line, sent when a line
 * ends the sandbox (killed, dead); egress decisions and credential
 * injections are its events. */
struct trace_root {
	bool stamped; /* the ids below are chosen (trace_stamp) */
	bool set;     /* the span is begun (trace_line_spans) */
	uint8_t trace_id[TRACE_ID_LEN], span_id[TRACE_SPAN_LEN], parent[TRACE_SPAN_LEN];
	bool has_parent;
	char tenant[65], sandbox[65];
	char *template_id;
	int64_t start_ms;
	json_t *events; /* OTLP span events */
	uint32_t dropped_events;
};

void trace_root_fini(struct trace_root *r);

/* trace_stamp() - writes the ids into a journal line before it is
 * appended: "trace_id", "span_id", "parent_span_id".  A line made while
 * request @req (a caller's traceparent; may be NULL or unset) is served
 * joins the caller's trace under its span; any other joins the sandbox's
 * trace under the sandbox's span.  The first "created" line begins the
 * sandbox's span (a new trace, or the caller's) and carries its ids
 * ("sandbox_span_id", "sandbox_parent_span_id") and @tenant.  Egress lines
 * carry the sandbox's span's ids: they become its events. */
void trace_stamp(struct trace_root *r, const struct trace_ctx *req, const char *tenant,
                 json_t *line);

/* trace_root_load() - the sandbox's span as its "created" line (the
 * journal's first, @line) began it: for a journal written before coved
 * restarted.  Return: 0, or -1 when the line carries no ids. */
int trace_root_load(struct trace_root *r, json_t *line);

/* trace_line_spans() - the spans journal line @line makes, appended to
 * @out (OTLP span objects): its own (none for an egress line, which
 * becomes an event of the sandbox's span) and the sandbox's when the
 * line ends the sandbox.  A line without ids makes none.  Return: how
 * many were appended. */
int trace_line_spans(struct trace_root *r, json_t *line, json_t *out);

/* trace_envelope() - an OTLP ExportTraceServiceRequest of @spans (stolen)
 * from service @service. */
json_t *trace_envelope(const char *service, json_t *spans);

/* Journal time (RFC 3339 with ms) in Unix ms: 0, or -1. */
int trace_time_ms(const char *s, int64_t *ms);

#endif
