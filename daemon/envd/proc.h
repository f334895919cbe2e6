/* envd's process.Process service: commands in the sandbox through the
 * agent, their output as Connect server streams. */
#ifndef COVED_ENVD_PROC_H
#define COVED_ENVD_PROC_H

#include <jansson.h>
#include <microhttpd.h>
#include <stddef.h>

struct envd_req;

/* Streams: each queues its own response. */
enum MHD_Result envd_proc_start(struct envd_req *r, struct MHD_Connection *c, json_t *body);
enum MHD_Result envd_proc_connect(struct envd_req *r, struct MHD_Connection *c, json_t *body);
/* Unary: 0 with *reply (an object), or -1 with a Connect *code and msg. */
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

#endif
