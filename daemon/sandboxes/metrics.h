/* coved's counters and /metrics (Prometheus text format). */
#ifndef COVED_SANDBOXES_METRICS_H
#define COVED_SANDBOXES_METRICS_H

#include <stddef.h>
#include <stdint.h>

struct coved;
struct coved_hist;

void coved_hist_add(struct coved *d, struct coved_hist *h, double seconds);
void coved_metric_bump(struct coved *d, uint64_t *counter);
/* coved_metric_exec() - counts one finished exec: its duration and bytes
 * out of (stdout+stderr) and into (stdin) the sandbox. */
void coved_metric_exec(struct coved *d, double seconds, uint64_t out_bytes, uint64_t in_bytes);
/* The /metrics page (malloc'ed, *len bytes), or NULL. */
char *coved_metrics_text(struct coved *d, size_t *len);

#endif
