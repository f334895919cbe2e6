/* What envd.c, envd_proc.c and envd_files.c share (daemon-internal). */
#ifndef COVED_ENVD_PRIV_H
#define COVED_ENVD_PRIV_H

#include <jansson.h>
#include <microhttpd.h>
#include <stdbool.h>
#include <stdint.h>

#include "coved.h"
#include "envd.h"
#include "multipart.h"

#define ENVD_BODY_MAX        (1u << 20)   /* an RPC request body */
#define ENVD_STREAM_BLOCK    (256 * 1024) /* what a streaming reader hands MHD at once */
#define ENVD_KEEPALIVE_MAX_S 15           /* keepalive events at least this often */
#define ENVD_HEAD_MAX        4096         /* stdout/stderr bytes kept for the journal */

struct envd_upload; /* envd_files.c */

/* One envd request, from envd_handle's first call to envd_request_done. */
struct envd_req {
	struct coved *d;
	struct coved_sb *sb; /* a reference, NULL for /health */
	const struct envd_route_ent *route;
	uint8_t *body; /* the RPC body so far */
	size_t len;
	bool too_big;
	struct envd_upload *up; /* POST /files */
};

enum envd_kind { ENVD_UNARY, ENVD_STREAM, ENVD_HTTP };

struct envd_route_ent {
	const char *method, *path;
	enum envd_kind kind;
	/* Unary: *reply (an object) or a Connect error (*code, msg).  Stream:
	 * queues its own response.  HTTP: queues its own response. */
	enum MHD_Result (*stream)(struct envd_req *r, struct MHD_Connection *c, json_t *body);
	int (*unary)(struct envd_req *r, struct MHD_Connection *c, json_t *body, json_t **reply,
	             const char **code, char *msg, size_t msglen);
	enum MHD_Result (*http)(struct envd_req *r, struct MHD_Connection *c);
};

/* Queues a unary Connect error ({"code", "message"}, the code's status). */
enum MHD_Result envd_connect_error(struct MHD_Connection *c, const char *code, const char *msg);
/* Queues a stream that holds only its end: {"error": {code, message}}. */
enum MHD_Result envd_stream_error(struct MHD_Connection *c, const char *code, const char *msg);

/* The running sandbox's libcove handle, or NULL with a Connect code. */
struct cove_sandbox *envd_cove(struct envd_req *r, const char **code, char *msg, size_t msglen);

/* envd_proc.c */
enum MHD_Result envd_proc_start(struct envd_req *r, struct MHD_Connection *c, json_t *body);
enum MHD_Result envd_proc_connect(struct envd_req *r, struct MHD_Connection *c, json_t *body);
int envd_proc_input(struct envd_req *r, struct MHD_Connection *c, json_t *body, json_t **reply,
                    const char **code, char *msg, size_t msglen);
int envd_proc_signal(struct envd_req *r, struct MHD_Connection *c, json_t *body, json_t **reply,
                     const char **code, char *msg, size_t msglen);
int envd_proc_close_stdin(struct envd_req *r, struct MHD_Connection *c, json_t *body,
                          json_t **reply, const char **code, char *msg, size_t msglen);
int envd_proc_list(struct envd_req *r, struct MHD_Connection *c, json_t *body, json_t **reply,
                   const char **code, char *msg, size_t msglen);
int envd_proc_update(struct envd_req *r, struct MHD_Connection *c, json_t *body, json_t **reply,
                     const char **code, char *msg, size_t msglen);

/* envd_files.c */
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
enum MHD_Result envd_files_get(struct envd_req *r, struct MHD_Connection *c);
/* POST /files: begin on the first call (headers), feed every body piece,
 * finish (queues the answer) at the end. */
int envd_files_post_begin(struct envd_req *r, struct MHD_Connection *c, char *msg, size_t msglen);
void envd_files_post_feed(struct envd_req *r, const uint8_t *data, size_t len);
enum MHD_Result envd_files_post_end(struct envd_req *r, struct MHD_Connection *c);
void envd_upload_free(struct envd_upload *up);

#endif
