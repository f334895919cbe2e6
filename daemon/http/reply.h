/* coved's HTTP replies: a JSON body, a control-plane error, a text body.
 * Every room that answers a request (the API, envd, the server) queues
 * its answer through these. */
#ifndef COVED_HTTP_REPLY_H
#define COVED_HTTP_REPLY_H

#include <jansson.h>
#include <microhttpd.h>
#include <stddef.h>

/* coved_reply_private() - marks r as not to be cached or sniffed
 * (Cache-Control: no-store, X-Content-Type-Options: nosniff): every answer
 * to a request with an API key or token carries these. */
void coved_reply_private(struct MHD_Response *r);

/* coved_json_reply() - answers body (stolen; NULL: no body) with status. */
enum MHD_Result coved_json_reply(struct MHD_Connection *c, unsigned int status, json_t *body);

/* coved_json_error() - answers {"code": status, "message": msg} with that
 * HTTP status (control-plane style); a 429 carries Retry-After: 1. */
enum MHD_Result coved_json_error(struct MHD_Connection *c, unsigned int status, const char *msg);

/* coved_text_reply() - answers len bytes of text (malloc'ed, stolen) with
 * status and, when ctype is not NULL, that Content-Type. */
enum MHD_Result coved_text_reply(struct MHD_Connection *c, unsigned int status, const char *ctype,
                                 char *text, size_t len);

/* coved_stream_reply() - answers 200 with a body of unknown length (chunked)
 * that @read produces from @cls, @block bytes at a time, with that
 * Content-Type and Cache-Control: no-store; @done frees cls when the
 * response ends, or at once when it cannot be made. */
enum MHD_Result coved_stream_reply(struct MHD_Connection *c, const char *ctype, size_t block,
                                   MHD_ContentReaderCallback read, void *cls,
                                   MHD_ContentReaderFreeCallback done);

#endif
