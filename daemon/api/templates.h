/* coved's template routes (templates.c): its own (POST /templates, GET
 * /templates[/{name}], DELETE /templates/{name}) and what the e2b SDK's
 * Template.build calls (POST /v3/templates, GET
 * /templates/{id}/files/{hash}, POST /v2/templates/{id}/builds/{id}, GET
 * /templates/{id}/builds/{id}/status, GET /templates/aliases/{alias}).
 * A tenant sees its own builds only; another's answer as missing ones. */
#ifndef COVED_API_TEMPLATES_H
#define COVED_API_TEMPLATES_H

#include <microhttpd.h>
#include <stdbool.h>
#include <stddef.h>

struct coved;
struct coved_tenant;

/* coved_templates_route() - answers a whole request when url is a
 * template route (true, with *ret); false otherwise. */
bool coved_templates_route(struct coved *d, struct coved_tenant *t, struct MHD_Connection *c,
                           const char *method, const char *url, const char *body, size_t len,
                           enum MHD_Result *ret);

#endif
