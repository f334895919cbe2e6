/* The envd surface as the control plane calls it (the contract's
 * daemon/envd.h, ENVD's): declared here too so coved builds before and
 * after ENVD's files land; coved_envd_stub.c has weak stand-ins. */
#ifndef COVED_ENVD_H
#define COVED_ENVD_H

#include <microhttpd.h>
#include <stdbool.h>
#include <stddef.h>

struct coved;

bool envd_route(struct MHD_Connection *c, const char *url);
enum MHD_Result envd_handle(struct coved *d, struct MHD_Connection *c, const char *url,
                            const char *method, const char *upload_data, size_t *upload_data_size,
                            void **req_cls);
void envd_request_done(struct coved *d, void **req_cls);
int envd_init(struct coved *d);
void envd_fini(struct coved *d);

#endif
