/* GET /events (server-sent events of the caller's tenant's sandboxes) and
 * POST/GET/DELETE /webhooks (docs/api.md). */
#ifndef COVED_API_EVENTS_H
#define COVED_API_EVENTS_H

#include <microhttpd.h>
#include <stdbool.h>
#include <stddef.h>

struct coved;
struct coved_tenant;

/* coved_events_route() - answers a whole request when url is /events or a
 * webhook route (true, with *ret); false otherwise.  t: the caller's
 * tenant (NULL: not authenticated). */
bool coved_events_route(struct coved *d, struct coved_tenant *t, struct MHD_Connection *c,
                        const char *method, const char *url, const char *body, size_t len,
                        enum MHD_Result *ret);

#endif
