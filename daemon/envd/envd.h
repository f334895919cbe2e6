/* coved's envd surface: the in-sandbox API of E2B ("envd") that the e2b
 * SDK reaches at E2B_SANDBOX_URL, served for every sandbox on coved's own
 * listeners (docs/api.md "envd", docs/e2b-compat.md).  The control plane
 * (daemon/server.c) hands a request over on its first call when
 * envd_route() says it is ours, and every later call of it too. */
#ifndef COVED_ENVD_H
#define COVED_ENVD_H

#include <microhttpd.h>
#include <stdbool.h>
#include <stddef.h>

struct coved;

/* True when this request belongs to the envd surface: its path starts
 * with /process.Process/ or /filesystem.Filesystem/, or is /files, /health
 * or /envs, or it carries E2b-Sandbox-Id. */
bool envd_route(struct MHD_Connection *c, const char *url);
/* An MHD_AccessHandlerCallback's contract; *req_cls is ENVD's own. */
enum MHD_Result envd_handle(struct coved *d, struct MHD_Connection *c, const char *url,
                            const char *method, const char *upload_data, size_t *upload_data_size,
                            void **req_cls);
/* From the control plane's MHD_OPTION_NOTIFY_COMPLETED for requests that
 * envd_handle took. */
void envd_request_done(struct coved *d, void **req_cls);
int envd_init(struct coved *d);
void envd_fini(struct coved *d);

#endif
