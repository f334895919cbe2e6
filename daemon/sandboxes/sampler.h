/* coved's usage sampler (sampler.c): one thread that reads every running
 * sandbox's CPU, memory and disk on the host (lib/usage.h) every
 * COVED_SAMPLE_MS into a ring per sandbox (samples.h), for GET
 * /sandboxes/{id}/metrics.  A paused sandbox keeps its samples and gets no
 * new ones; a deleted one's go with it. */
#ifndef COVED_SANDBOXES_SAMPLER_H
#define COVED_SANDBOXES_SAMPLER_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#define COVED_SAMPLE_MS 2000

struct coved;
struct coved_sampler;

/* Starts the thread (d->sampler): 0, or -errno with err.  Call once the
 * sandbox table is loaded; stop before it is released. */
int coved_sampler_start(struct coved *d, char *err, size_t errlen)
    __attribute__((warn_unused_result));
void coved_sampler_stop(struct coved *d);
/* One round now (the thread's step; tests). */
void coved_sampler_tick(struct coved *d);

/* The samples of sandbox id in [start_s, end_s] (0: open) as getMetrics'
 * array (an empty one for a sandbox not sampled yet); NULL on ENOMEM. */
json_t *coved_sampler_json(struct coved *d, const char *id, int64_t start_s, int64_t end_s);

#endif
