/* Detached processes and MOVE (proc.c, docs/protocol.md): types 40-47. */
#ifndef COVE_AGENT_PROC_H
#define COVE_AGENT_PROC_H

#include "conn.h"
#include "request.h"

/* Request handler: 0 when the request was answered (OK or ERROR) and the
 * connection goes on, negative errno when it must close. */
int agent_proc_request(struct agent_conn *c, const struct agent_req *req)
    __attribute__((warn_unused_result));

#endif
