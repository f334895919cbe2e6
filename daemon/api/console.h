/* The web console at /ui/ (docs/console.md): static files compiled into
 * coved, served without an API key (they hold none: the page asks for it
 * and keeps it in sessionStorage) under a strict Content-Security-Policy.
 * Everything the console shows comes from the API routes, with the key. */
#ifndef COVED_API_CONSOLE_H
#define COVED_API_CONSOLE_H

#include <microhttpd.h>
#include <stdbool.h>

/* coved_console_route() - whether method/url is the console's: a GET or
 * HEAD of "/ui" or under "/ui/". */
bool coved_console_route(const char *method, const char *url);

/* coved_console_reply() - answers a console request (after
 * coved_console_route said it is one): the file, gzipped when the client
 * accepts it, a redirect for "/ui", or 404. */
enum MHD_Result coved_console_reply(struct MHD_Connection *c, const char *url);

/* The security headers every console answer carries (CSP and the rest),
 * added to r. */
void coved_console_headers(struct MHD_Response *r);

#endif
