/* A host connection as the request handlers see it (agent-internal). */
#ifndef COVE_AGENT_CONN_H
#define COVE_AGENT_CONN_H

#include <jansson.h>
#include <stdint.h>

#include "agent.h"
#include "proto.h"
#include "request.h"

struct agent_conn {
	int fd; /* O_NONBLOCK stream socket */
	const struct agent_config *cfg;
	struct proto_reader rd; /* also used by the exec loop between polls */
};

/* Blocking receive of the next frame (polls the non-blocking fd); as
 * proto_recv. */
int agent_conn_recv(struct agent_conn *c, struct proto_hdr *h, uint8_t **payload)
    __attribute__((warn_unused_result));

/* Replies OK with obj (consumed; NULL sends {}). */
int agent_conn_ok(struct agent_conn *c, uint32_t id, json_t *obj)
    __attribute__((warn_unused_result));

/* Replies ERROR {"errno": -err, "message"} for a failed request; the
 * connection goes on.  Returns 0 or the send error. */
int agent_conn_fail(struct agent_conn *c, uint32_t id, int err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5), warn_unused_result));

/* Replies ERROR {"errno": err} for a frame that breaks the protocol (err is
 * EPROTO, EMSGSIZE, or ENOMEM when it could not be handled at all); returns
 * -err, which ends the connection. */
int agent_conn_reject(struct agent_conn *c, uint32_t id, int err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Request handlers: 0 when the request was answered (OK or ERROR) and the
 * connection goes on, negative errno when it must close. */
int agent_exec(struct agent_conn *c, const struct agent_req *req)
    __attribute__((warn_unused_result));
int agent_file_put(struct agent_conn *c, const struct agent_req *req)
    __attribute__((warn_unused_result));
int agent_file_get(struct agent_conn *c, const struct agent_req *req)
    __attribute__((warn_unused_result));
int agent_stat(struct agent_conn *c, const struct agent_req *req)
    __attribute__((warn_unused_result));
int agent_list(struct agent_conn *c, const struct agent_req *req)
    __attribute__((warn_unused_result));
int agent_mkdir(struct agent_conn *c, const struct agent_req *req)
    __attribute__((warn_unused_result));
int agent_remove(struct agent_conn *c, const struct agent_req *req)
    __attribute__((warn_unused_result));

/* Shared by EXEC and detached processes (exec.c): the agent's environment
 * with the sandbox CA's variables (ca: agent_ca_env(), or NULL) and x's
 * overrides on top (malloc'ed array, borrowed strings); a pty master and
 * slave of x's size (O_CLOEXEC, the master non-blocking); a variable. */
char **agent_exec_env(const struct agent_exec_req *x, char **ca);
int agent_open_pty(const struct agent_exec_req *x, int *master, int *slave)
    __attribute__((warn_unused_result));
const char *agent_env_get(char *const *env, const char *key);

/* Starts x's process (agent_spawn) with its stdio: a pty (*master, and
 * *in and out[0] are the master too) or pipes (out[0], out[1] the stdout
 * and stderr read ends, non-blocking when out_nonblock; *in stdin's write
 * end, non-blocking, when x->stdin_open, else the child reads /dev/null).
 * The environment is agent_exec_env's.  0 with *pid and *pidfd, or -errno
 * with a message in err; the fds made so far stay the caller's to close. */
int agent_exec_spawn(const struct agent_exec_req *x, bool out_nonblock, int *master, int *in,
                     int out[2], pid_t *pid, int *pidfd, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* Detached processes and MOVE (proc.c, docs/protocol.md): types 40-47. */
int agent_proc_request(struct agent_conn *c, const struct agent_req *req)
    __attribute__((warn_unused_result));

#endif
