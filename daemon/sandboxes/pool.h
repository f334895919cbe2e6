/* coved's VMM pool (config pool_size and pool_cpus). */
#ifndef COVED_SANDBOXES_POOL_H
#define COVED_SANDBOXES_POOL_H

#include <stddef.h>
#include <stdio.h>

struct coved;

/* Starts the pool when pool_size > 0 (members come up in the background):
 * 0, or -errno with err. */
int coved_pool_start(struct coved *d, char *err, size_t errlen) __attribute__((warn_unused_result));
/* Ends every member not taken (before coved exits). */
void coved_pool_stop(struct coved *d);
/* The pool's lines of /metrics. */
void coved_pool_metrics(struct coved *d, FILE *f);

#endif
