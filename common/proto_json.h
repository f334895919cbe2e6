/* JSON helpers for the control payloads of the host <-> agent protocol
 * (docs/protocol.md), on top of jansson.  Shared by cove-agent and libcove. */
#ifndef COVE_PROTO_JSON_H
#define COVE_PROTO_JSON_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Parses a control payload, which must be one JSON object (duplicate keys
 * rejected); an empty payload reads as {}.  On success *out is a new
 * reference.  -EPROTO for anything else, with a reason in err. */
int proto_json_parse(const uint8_t *payload, uint32_t len, json_t **out, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* Encodes obj compactly (obj is not consumed) and sends it as one frame.
 * -EMSGSIZE when the text exceeds PROTO_MAX_PAYLOAD, -ENOMEM, or proto_send's
 * errors. */
int proto_send_json(int fd, uint16_t type, uint32_t id, const json_t *obj)
    __attribute__((warn_unused_result));

/* Sends ERROR {"errno": err, "message": msg}; err is a positive errno (a
 * negative one is turned around). */
int proto_send_error(int fd, uint32_t id, int err, const char *msg)
    __attribute__((warn_unused_result));

/* Optional members.  A member that is absent or null gives def; one of the
 * wrong JSON type or outside [min, max] is -EINVAL. */
int proto_json_int(const json_t *obj, const char *key, int64_t min, int64_t max, int64_t def,
                   int64_t *out) __attribute__((warn_unused_result));
int proto_json_bool(const json_t *obj, const char *key, bool def, bool *out)
    __attribute__((warn_unused_result));
/* *out is NULL when absent or null, else the string (owned by obj). */
int proto_json_str(const json_t *obj, const char *key, const char **out)
    __attribute__((warn_unused_result));

#endif
