/* One envd request as its handlers see it, and the Connect answers they
 * give (envd.c routes to proc.c and files.c; all three use these). */
#ifndef COVED_ENVD_RPC_H
#define COVED_ENVD_RPC_H

#include <microhttpd.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/agent/agent_client.h"

#define ENVD_BODY_MAX        (1u << 20)   /* an RPC request body */
#define ENVD_STREAM_BLOCK    (256 * 1024) /* what a streaming reader hands MHD at once */
#define ENVD_KEEPALIVE_MAX_S 15           /* keepalive events at least this often */
#define ENVD_HEAD_MAX        4096         /* stdout/stderr bytes kept for the journal */
#define ENVD_HEALTH_MS       2000         /* /health's ping to the agent, all steps */

struct coved;
struct coved_sb;
struct cove_sandbox;
struct envd_route_ent; /* envd.c's table */
struct envd_upload;    /* files.c */

/* One envd request, from envd_handle's first call to envd_request_done. */
struct envd_req {
	struct coved *d;
	struct coved_sb *sb; /* a reference */
	const struct envd_route_ent *route;
	uint8_t *body; /* the RPC body so far */
	size_t len;
	bool too_big;
	bool busy;              /* counted in the sandbox's busy (idle.h) */
	struct envd_upload *up; /* POST /files */
	/* The guest user the SDK named (envd_user), "" for none: processes
	 * run as it, files it writes and folders it makes are its. */
	char user[COVE_USER_MAX + 1];
};

/* r->user, or NULL (the sandbox's default) when none was named. */
const char *envd_req_user(const struct envd_req *r);

/* Queues a unary Connect error ({"code", "message"}, the code's status). */
enum MHD_Result envd_connect_error(struct MHD_Connection *c, const char *code, const char *msg);
/* Queues a stream that holds only its end: {"error": {code, message}}. */
enum MHD_Result envd_stream_error(struct MHD_Connection *c, const char *code, const char *msg);

/* A header holding milliseconds (Connect-Timeout-Ms): its value, 0 when
 * absent or malformed. */
int64_t envd_header_ms(struct MHD_Connection *c, const char *name);
/* A stream's keepalive interval in ms: the SDK's Keepalive-Ping-Interval
 * (seconds), at most ENVD_KEEPALIVE_MAX_S. */
int envd_keepalive_ms(struct MHD_Connection *c);

/* What a server stream (proc.c, watch.c) has ready for MHD. */
struct envd_out {
	uint8_t *buf; /* the frame(s) being handed over, malloc'ed */
	size_t len, off;
	bool finished; /* nothing after buf */
	bool gave;     /* the last read handed MHD bytes: do not block before it sent them */
};
/* An MHD content reader over o: hands out its bytes, refilling them with
 * next(cls, nowait), which sets o->buf and o->len, or o->finished (a wait
 * is never made with nowait).  Returns what the reader returns. */
ssize_t envd_out_read(struct envd_out *o, void (*next)(void *cls, bool nowait), void *cls,
                      char *buf, size_t max);

/* The running sandbox's libcove handle, or NULL with a Connect code. */
struct cove_sandbox *envd_cove(struct envd_req *r, const char **code, char *msg, size_t msglen);

#endif
