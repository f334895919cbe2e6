/* coved's creates: a new sandbox from a templateID (an image, a store
 * template or a user snapshot), within the limits and the tenant's quota. */
#ifndef COVED_SANDBOXES_CREATE_H
#define COVED_SANDBOXES_CREATE_H

#include <stddef.h>

#include "daemon/sandboxes/request.h"

struct coved;
struct cove_config;
struct coved_sb;
struct coved_tenant;

/* Creates and boots a sandbox; *out is a new reference.  HTTP status on
 * failure (msg says why), 0 on success. */
int coved_sb_create(struct coved *d, struct coved_tenant *t, const struct coved_create *req,
                    struct coved_sb **out, char *msg, size_t len);

/* coved_warm_prepare() - what a create of the shared template tid with no
 * other field restores (cfg: coved's defaults, the image *image, malloc'ed;
 * the network deny-all until a create's policy replaces it), and its
 * template directory (*tdir, malloc'ed; held through *lockfd until the
 * restore is done, as a create holds it).
 * Return: 0, or an HTTP status with msg. */
int coved_warm_prepare(struct coved *d, const char *tid, struct cove_config *cfg, char **image,
                       char **tdir, int *lockfd, char *msg, size_t len);

#endif
