/* The limits a create or resume meets (config max_sandboxes, max_creates
 * and the tenants' quotas) and the timeouts the config allows. */
#ifndef COVED_SANDBOXES_LIMITS_H
#define COVED_SANDBOXES_LIMITS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/conf/config.h"

struct coved;
struct coved_tenant;

/* coved_limit_ok() - the global limits, then tenant t's quota (t NULL:
 * none); a refusal is counted and said in msg (a 429).  On success one
 * global create slot is taken (release d->creating) and want is reserved
 * for t (release it with coved_limit_release). */
bool coved_limit_ok(struct coved *d, struct coved_tenant *t, const struct coved_usage *want,
                    char *msg, size_t len);
void coved_limit_release(struct coved *d, struct coved_tenant *t, const struct coved_usage *want);
/* A request's timeout (0: the default) within max_timeout_s. */
uint64_t coved_timeout_clamp(struct coved *d, uint64_t t);

#endif
