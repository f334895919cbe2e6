/* coved's control-plane API (docs/api.md): E2B's sandbox routes, served
 * from one table. */
#ifndef COVED_API_ROUTES_H
#define COVED_API_ROUTES_H

#include <microhttpd.h>
#include <stddef.h>

struct coved;
struct coved_tenant;

/* coved_route() - answers one whole request (body read, bounded).  t: the
 * caller's tenant, from its API key; NULL only for an open /metrics. */
enum MHD_Result coved_route(struct coved *d, struct coved_tenant *t, struct MHD_Connection *c,
                            const char *method, const char *url, const char *body, size_t body_len);

#endif
