/* The Connect protocol's framing (connectrpc.com/docs/protocol), JSON
 * codec only, as the e2b SDK speaks it to envd: unary calls are a plain
 * application/json body; server streams (application/connect+json) are
 * enveloped messages, 5 bytes each (a flag byte, a big-endian u32 length)
 * then the JSON, the last one flagged CONNECT_FLAG_END and carrying the
 * error and trailers.  Pure: no HTTP, no I/O (fuzzed by fuzz_connect). */
#ifndef COVED_HTTP_CONNECT_H
#define COVED_HTTP_CONNECT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#define CONNECT_HDR             5
#define CONNECT_FLAG_COMPRESSED 0x01
#define CONNECT_FLAG_END        0x02
#define CONNECT_MSG_MAX         (1u << 20) /* a request message we accept */

/* Unwraps a streaming request body that must hold exactly one uncompressed
 * message (server streams take one request): 0 with *msg / *len pointing
 * into body, or -EPROTO (bad flags, truncated, trailing bytes), -EMSGSIZE
 * (over CONNECT_MSG_MAX), with a reason in err. */
int connect_unwrap(const uint8_t *body, size_t len, const uint8_t **msg, size_t *msglen, char *err,
                   size_t errlen) __attribute__((warn_unused_result));

/* Writes an envelope header for a message of len bytes. */
void connect_envelope(uint8_t out[CONNECT_HDR], uint8_t flags, uint32_t len);

/* Encodes obj (consumed) as one enveloped message: malloc'ed bytes, *len
 * set; NULL on ENOMEM. */
uint8_t *connect_frame(json_t *obj, uint8_t flags, size_t *len);

/* The end-of-stream message: {} or {"error": {"code", "message"}}. */
uint8_t *connect_end_frame(const char *code, const char *message, size_t *len);

/* Connect error codes ("not_found", ...) and their HTTP status for unary
 * calls; unknown codes are 500. */
unsigned int connect_http_status(const char *code);

/* A Linux errno from the agent as a Connect code. */
const char *connect_code_from_errno(int err);

/* Parses a timeout header value (Connect-Timeout-Ms: 1-10 ASCII digits):
 * 0 with *ms, or -EINVAL. */
int connect_timeout_ms(const char *value, uint64_t *ms) __attribute__((warn_unused_result));

#endif
