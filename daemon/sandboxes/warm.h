/* coved's warm pool (config "warm_pool", docs/pool.md "The warm pool"):
 * per template, sandboxes restored ahead of any request and kept running,
 * each handed out once to a create of that template. */
#ifndef COVED_SANDBOXES_WARM_H
#define COVED_SANDBOXES_WARM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "daemon/sandboxes/sandbox.h"

struct coved;
struct cove_sandbox;
struct cove_net_policy;

/* Stops what a coved before this one left in the pool (entries holding
 * WARM_MARK), then starts the refill thread when warm_pool names a
 * template.  0, or -errno with err. */
int coved_warm_start(struct coved *d, char *err, size_t errlen) __attribute__((warn_unused_result));
/* Ends the refill thread and stops every member (before coved exits). */
void coved_warm_stop(struct coved *d);

/* A member restored from template directory tdir, with a network (net) or
 * without, taken out of the pool for good (its id, a registry name, into
 * id), or NULL when none is ready.  Counts a hit, or a miss when the pool
 * keeps that template. */
struct cove_sandbox *coved_warm_take(struct coved *d, const char *tdir, bool net,
                                     char id[COVED_ID_LEN + 1]);
/* Makes a taken member the create's: priority 0 again, the create's
 * network policy (it waited with none), and a fresh restore notice (clock,
 * entropy) sent ahead of the first exec.  0, or -errno with err (then
 * coved_warm_discard() it). */
int coved_warm_handout(struct coved *d, struct cove_sandbox *sb, const struct cove_net_policy *pol,
                       char *err, size_t errlen) __attribute__((warn_unused_result));
/* Stops and frees a member that could not be handed out. */
void coved_warm_discard(struct cove_sandbox *sb);

/* The pool's lines of /metrics. */
void coved_warm_metrics(struct coved *d, FILE *f);

#endif
