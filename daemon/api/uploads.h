/* COPY archives uploaded to coved (uploads.c), streamed to a file within
 * max_upload_bytes, never held in memory:
 *   PUT /templates/uploads/{token}  E2B's upload link (GET
 *                                   /templates/{id}/files/{hash} gave it);
 *                                   the token stands for the key
 *   PUT /templates/files/{hash}     coved's own, with the caller's key
 * Both answer 201 {"present": true} once the archive is unpacked, 400 for
 * an archive that is not a tar of files, folders and symlinks, 413 past
 * the bound. */
#ifndef COVED_API_UPLOADS_H
#define COVED_API_UPLOADS_H

#include <microhttpd.h>
#include <stdbool.h>
#include <stddef.h>

struct coved;
struct coved_tenant;

/* coved_upload_route() - whether method and url are an upload; *open:
 * one by token, which needs no API key. */
bool coved_upload_route(const char *method, const char *url, bool *open);

/* coved_upload_handle() - every call libmicrohttpd makes for an upload,
 * as envd_handle: the first sets *cls up (t: the caller's tenant, NULL
 * for a token), the ones with data write it, the last answers. */
enum MHD_Result coved_upload_handle(struct coved *d, struct coved_tenant *t,
                                    struct MHD_Connection *c, const char *url, const char *data,
                                    size_t *size, void **cls);

/* coved_upload_done() - frees *cls (a half-written spool goes). */
void coved_upload_done(void **cls);

#endif
