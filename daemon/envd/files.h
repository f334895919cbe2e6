/* envd's filesystem.Filesystem service and its /files upload and
 * download, through the agent. */
#ifndef COVED_ENVD_FILES_H
#define COVED_ENVD_FILES_H

#include <jansson.h>
#include <microhttpd.h>
#include <stddef.h>
#include <stdint.h>

struct envd_req;
struct envd_upload;

/* Unary: 0 with *reply (an object), or -1 with a Connect *code and msg. */
int envd_fs_stat(struct envd_req *r, struct MHD_Connection *c, json_t *body, json_t **reply,
                 const char **code, char *msg, size_t msglen);
int envd_fs_list(struct envd_req *r, struct MHD_Connection *c, json_t *body, json_t **reply,
                 const char **code, char *msg, size_t msglen);
int envd_fs_mkdir(struct envd_req *r, struct MHD_Connection *c, json_t *body, json_t **reply,
                  const char **code, char *msg, size_t msglen);
int envd_fs_move(struct envd_req *r, struct MHD_Connection *c, json_t *body, json_t **reply,
                 const char **code, char *msg, size_t msglen);
int envd_fs_remove(struct envd_req *r, struct MHD_Connection *c, json_t *body, json_t **reply,
                   const char **code, char *msg, size_t msglen);
/* GET /files: queues the download (or an error). */
enum MHD_Result envd_files_get(struct envd_req *r, struct MHD_Connection *c);
/* POST /files: begin on the first call (headers), feed every body piece,
 * finish (queues the answer) at the end. */
int envd_files_post_begin(struct envd_req *r, struct MHD_Connection *c, char *msg, size_t msglen);
void envd_files_post_feed(struct envd_req *r, const uint8_t *data, size_t len);
enum MHD_Result envd_files_post_end(struct envd_req *r, struct MHD_Connection *c);
void envd_upload_free(struct envd_upload *up);

#endif
