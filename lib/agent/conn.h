/* One connection to the guest agent (conn.c): the connect handshake
 * through the VMM's hybrid vsock, requests and replies with deadlines.
 * It knows nothing of a restore notice in flight (agent_client.h waits
 * for it; notice.c is the one that must not). */
#ifndef COVE_LIB_AGENT_CONN_H
#define COVE_LIB_AGENT_CONN_H

#include <stddef.h>
#include <stdint.h>

#include "lib/base/handle.h"

/* Every step of a conversation with the agent has a deadline on the host:
 * a frozen guest (or VMM) costs a command this, never forever.  A step is
 * the connect handshake, sending one request, or one reply (for a file
 * transfer, each DATA frame: an inactivity deadline). */
#define AGENT_STEP_MS 10000

/* Opens a stream to the guest agent through the VMM's Unix socket
 * (Firecracker's hybrid vsock: "CONNECT <port>\n" -> "OK <hostport>\n") by
 * deadline (mono_ms()), giving up (-EINTR) once *cancel (a signal number
 * set by a handler; may be NULL) is non-zero.  Does not wait for a restore
 * notice in flight.  Returns the fd (blocking) or -errno: -ETIMEDOUT with
 * "the sandbox did not answer within N s". */
int agent_connect_unsettled(struct cove_sandbox *sb, int64_t deadline, volatile int *cancel,
                            char *err, size_t errlen);

/* Waits up to wait_ms for a frame on fd, then reads it whole within
 * AGENT_STEP_MS: 1 with *h and *payload (malloc'ed, NUL-terminated; free
 * it), 0 when none came, or -errno with a one-line message. */
struct proto_hdr;
int agent_frame_next(int fd, int wait_ms, struct proto_hdr *h, uint8_t **payload, char *err,
                     size_t errlen);

/* -ETIMEDOUT with "the sandbox did not answer within N s", N the seconds
 * since started (mono_ms()). */
int agent_timeout(int64_t started, char *err, size_t errlen);

/* Sends one JSON request (a jansson object, consumed), within
 * AGENT_STEP_MS. */
struct json_t;
int cove_send_json(int fd, uint16_t type, struct json_t *obj, char *err, size_t errlen);

/* Reads frames until one of type want (or ERROR, turned into a message);
 * returns its payload (malloc'ed, NUL-terminated) through *payload.
 * Within AGENT_STEP_MS, or by deadline (mono_ms()) for cove_expect_until. */
int cove_expect(int fd, uint16_t want, uint8_t **payload, uint32_t *len, char *err, size_t errlen);
int cove_expect_until(int fd, uint16_t want, uint8_t **payload, uint32_t *len, int64_t deadline,
                      char *err, size_t errlen);

/* An ERROR frame's {"errno","message"}: the message in err, -errno. */
int cove_error_frame(const uint8_t *payload, char *err, size_t errlen);

#endif
