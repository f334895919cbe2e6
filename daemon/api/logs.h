/* GET /sandboxes/{id}/logs: the sandbox's journal (daemon/sandboxes/
 * journal.h) as a page of lines, as a verdict on its hash chain
 * (?verify=1), or as a stream of lines (?follow=1). */
#ifndef COVED_API_LOGS_H
#define COVED_API_LOGS_H

#include <jansson.h>
#include <microhttpd.h>

struct coved;
struct coved_sb;

/* coved_logs_get() - answers the logs request on c for sb (the caller's,
 * already found).  Query: offset, limit (pages), since=SEQ|RFC3339,
 * verify=1, follow=1. */
enum MHD_Result coved_logs_get(struct coved *d, struct MHD_Connection *c, struct coved_sb *sb);

/* coved_logs_export() - POST /sandboxes/{id}/traces/export
 * {"endpoint": URL}: the journal's spans (daemon/trace/span.h) sent to
 * the OTLP/HTTP collector at URL (its /v1/traces added unless URL ends
 * so), with OTEL_EXPORTER_OTLP_HEADERS.  Answers {"spans": N}, or 502
 * naming what the collector did.  Like a webhook, it reaches no host or
 * private address unless the config's webhook_private_ok allows it. */
enum MHD_Result coved_logs_export(struct coved *d, struct MHD_Connection *c, struct coved_sb *sb,
                                  json_t *body);

#endif
