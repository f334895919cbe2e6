/* PORT (port.c, docs/protocol.md "Ports"): the agent connects to a TCP
 * port on the guest's loopback and, once it said OK, the host connection
 * becomes a plain byte pipe to it (common/bytepipe.h) until both sides
 * have ended their streams.  What the host reaches a sandbox's servers
 * through without a NIC (coved's ports, `cove port`). */
#ifndef COVE_AGENT_PORT_H
#define COVE_AGENT_PORT_H

#include "conn.h"
#include "request.h"

/* agent_port() - the request handler.  Nothing listening (refused on
 * 127.0.0.1 and ::1) is ERROR ECONNREFUSED, no answer by the request's
 * timeout_ms ERROR ETIMEDOUT, and the connection goes on (0).  After OK
 * the connection is the pipe's: the return is then -ECONNRESET, which
 * ends it (an ERROR frame could no longer be told from the data). */
int agent_port(struct agent_conn *c, const struct agent_req *req)
    __attribute__((warn_unused_result));

#endif
