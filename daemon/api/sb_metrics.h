/* GET /sandboxes/{id}/metrics (sb_metrics.c): the sandbox's usage samples
 * as E2B's getMetrics reads them (docs/api.md).  Not coved's own
 * Prometheus page, which is GET /metrics. */
#ifndef COVED_API_SB_METRICS_H
#define COVED_API_SB_METRICS_H

#include <microhttpd.h>

struct coved;
struct coved_sb;

/* Answers for sb (the caller's tenant's, found by the route): 200 with
 * the samples in ?start=&end= (Unix seconds), 400 for a bad range. */
enum MHD_Result coved_sb_metrics_reply(struct coved *d, struct MHD_Connection *c,
                                       struct coved_sb *sb);

#endif
