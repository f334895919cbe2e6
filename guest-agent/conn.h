/* A host connection as the request handlers see it (agent-internal). */
#ifndef COVE_AGENT_CONN_H
#define COVE_AGENT_CONN_H

#include <jansson.h>
#include <stdint.h>

#include "proto.h"

struct agent_config;

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

/* For a handler that streams (an attach, a watch): looks at the connection
 * without waiting.  0 while nothing came, 1 for a PING it answered,
 * -errno when the stream must end (the host closed it, or sent a frame
 * other than PING: rejected, naming during). */
int agent_conn_check(struct agent_conn *c, const char *during) __attribute__((warn_unused_result));

#endif
