/* The OTLP/HTTP exporter: spans queued by any thread, sent by one
 * background thread in batches as JSON to the collector's /v1/traces
 * with libcurl.  The queue is bounded: when the collector is slow or
 * down, spans past its bound (and a batch that fails) are dropped and
 * counted; a request never waits on the collector. */
#ifndef COVED_TRACE_OTLP_H
#define COVED_TRACE_OTLP_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/trace/context.h"

struct otlp_config {
	const char *url;     /* the full URL, .../v1/traces */
	const char *service; /* service.name */
	const struct trace_headers *headers;
	size_t queue_max; /* spans waiting, at most (0: 2048) */
	size_t batch_max; /* spans per request, at most (0: 512) */
	int interval_ms;  /* a batch goes at least this often (0: 500) */
	int connect_ms;   /* connect timeout (0: 1000) */
	int timeout_ms;   /* the whole request's (0: 3000) */
};

struct otlp_counts {
	uint64_t exported, dropped, errors, queued;
};

struct otlp;

/* otlp_start() - copies @cfg and starts the thread.  Call curl_global_init
 * first.  Return: the exporter, or NULL with a one-line @err. */
struct otlp *otlp_start(const struct otlp_config *cfg, char *err, size_t errlen);
/* otlp_enqueue() - queues @span (stolen).  Return: false when it was
 * dropped (the queue full, or the exporter stopping). */
bool otlp_enqueue(struct otlp *e, json_t *span);
void otlp_counts(struct otlp *e, struct otlp_counts *out);
/* otlp_stop() - sends what is queued (within the timeouts), stops the
 * thread and frees @e. */
void otlp_stop(struct otlp *e);

/* otlp_post() - one synchronous export of @spans (stolen) to @url, for
 * a past journal's spans.  @public_only: connect to no loopback, private,
 * link-local or other always-denied address (common/netrule.h), checked
 * on the address curl dials (an API caller's URL).  Return: 0, or -1
 * with a one-line @err (that never shows a header's value). */
int otlp_post(const char *url, const char *service, const struct trace_headers *h, json_t *spans,
              int timeout_ms, bool public_only, char *err, size_t errlen);

#endif
