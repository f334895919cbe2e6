/* A sandbox's TCP ports through its agent (port.c; part of cove.h's API):
 * PROTO_PORT over a new agent connection, which then carries the port's
 * bytes both ways (docs/protocol.md "Ports").  Needs no NIC: coved's
 * forwarded requests and `cove port` go this way. */
#ifndef COVE_LIB_AGENT_PORT_H
#define COVE_LIB_AGENT_PORT_H

#include <stddef.h>
#include <stdint.h>

struct cove_sandbox;

/* The agent's own bound on its connect, when the caller gives none. */
#define COVE_PORT_CONNECT_MS 2000

/* cove_port_open() - a connection to TCP port (1-65535) on the guest's
 * loopback: the agent connection, once the agent said OK, returned as a
 * blocking fd that the caller reads and writes as the port's stream (its
 * shutdown(SHUT_WR) reaches the guest's server as an end of stream) and
 * closes.  connect_ms (1-60000; 0: COVE_PORT_CONNECT_MS) bounds the
 * guest's connect; the whole call is done by then plus AGENT_STEP_MS.
 * Return: the fd, or -errno with one line in err: -ECONNREFUSED "nothing
 * listens on port N in the sandbox", -ETIMEDOUT, -EINVAL (a bad port), or
 * the agent connection's error. */
int cove_port_open(struct cove_sandbox *sb, unsigned int port, unsigned int connect_ms, char *err,
                   size_t errlen) __attribute__((warn_unused_result));

/* cove_port_on() - the same request on an agent connection already open
 * (fd, blocking), by deadline (mono_ms()).  Return: 0 (fd is now the
 * port's stream), or -errno as above. */
int cove_port_on(int fd, unsigned int port, unsigned int connect_ms, int64_t deadline, char *err,
                 size_t errlen) __attribute__((warn_unused_result));

#endif
