/* coved's creates: a new sandbox from a templateID (an image, a store
 * template or a user snapshot), within the limits and the tenant's quota. */
#ifndef COVED_SANDBOXES_CREATE_H
#define COVED_SANDBOXES_CREATE_H

#include <stddef.h>

#include "daemon/sandboxes/request.h"

struct coved;
struct coved_sb;
struct coved_tenant;

/* Creates and boots a sandbox; *out is a new reference.  HTTP status on
 * failure (msg says why), 0 on success. */
int coved_sb_create(struct coved *d, struct coved_tenant *t, const struct coved_create *req,
                    struct coved_sb **out, char *msg, size_t len);

#endif
