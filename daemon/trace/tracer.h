/* coved's tracer: the exporter as the OTEL_* variables (or the config)
 * set it up, the context of the request a thread serves, and the hook
 * that turns each journal line into spans (docs/tracing.md). */
#ifndef COVED_TRACE_TRACER_H
#define COVED_TRACE_TRACER_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "daemon/conf/config.h"
#include "daemon/trace/context.h"
#include "daemon/trace/otlp.h"
#include "daemon/trace/span.h"

struct tracer;

/* tracer_settings() - the collector's URL (malloc'ed; NULL: tracing is
 * off), headers, service name and sampler from OTEL_EXPORTER_OTLP_TRACES_ENDPOINT
 * (used as is), OTEL_EXPORTER_OTLP_ENDPOINT (+ "/v1/traces"),
 * OTEL_EXPORTER_OTLP_HEADERS, OTEL_SERVICE_NAME, OTEL_TRACES_SAMPLER(_ARG),
 * each falling back on @cfg's otlp_* key.  Return: 0, or -1 with a
 * one-line @err. */
struct tracer_settings {
	char *url, *service;
	struct trace_headers headers;
	struct trace_sampler sampler;
};
int tracer_settings(const struct coved_config *cfg, struct tracer_settings *out, char *err,
                    size_t errlen);
void tracer_settings_free(struct tracer_settings *s);

/* tracer_start() - NULL with *err empty when tracing is off; NULL with
 * @err on a bad setting.  Call after curl_global_init. */
struct tracer *tracer_start(const struct coved_config *cfg, char *err, size_t errlen);
void tracer_stop(struct tracer *t);

/* tracer_line() - the spans of journal line @line (see span.h) queued for
 * export, unless the sampler leaves its trace out.  @r is the sandbox's
 * span, under the journal's lock.  @t may be NULL (off). */
void tracer_line(struct tracer *t, struct trace_root *r, json_t *line);

/* The Prometheus lines of the exporter's counters ("" when off): at most
 * @len bytes into @buf. */
void tracer_metrics(struct tracer *t, char *buf, size_t len);

/* ---- the request a thread serves (server.c: one thread per connection) --- */

struct trace_req {
	struct trace_ctx ctx;
	char tenant[65]; /* "" for an envd request: its token names the sandbox */
};
/* trace_req_begin() - the calling thread now serves a request that sent
 * @traceparent (NULL: none; a malformed one is ignored) for @tenant. */
void trace_req_begin(const char *traceparent, const char *tracestate, const char *tenant);
void trace_req_end(void);
/* trace_req_mark() - writes the request's context ("trace_id",
 * "parent_span_id") into @line, a journal line begun now and appended
 * later, maybe by another thread (trace_stamp keeps it). */
void trace_req_mark(json_t *line, const char *tenant);
/* trace_req_for() - the calling thread's request's context if it may
 * join sandbox lines of @tenant (the request's tenant is the sandbox's,
 * or it is an envd request), else NULL. */
const struct trace_ctx *trace_req_for(const char *tenant);

/* trace_traces_url() - an OTLP endpoint as given to an export: used as is
 * when it ends in /v1/traces, else with /v1/traces added (malloc'ed).
 * NULL when it is no http:// or https:// URL (or too long). */
char *trace_traces_url(const char *ep);

/* trace_export_journal() - a journal file's spans (the same the live
 * export sends) to @url, in batches (@public_only: see otlp_post).  Return: the spans sent, or -1 with
 * a one-line @err. */
long trace_export_journal(int fd, const char *url, const char *service,
                          const struct trace_headers *h, bool public_only, char *err,
                          size_t errlen);

#endif
