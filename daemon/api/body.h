/* coved's API request bodies: hostile JSON from the network (loaded by
 * daemon/http/json_body.h), checked at the edge into the sandboxes' typed
 * requests (tests/fuzz/fuzz_coved_json.c). */
#ifndef COVED_API_BODY_H
#define COVED_API_BODY_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/sandboxes/request.h"

#define COVED_META_MAX     64    /* metadata entries */
#define COVED_META_KEY_MAX 256   /* bytes */
#define COVED_META_VAL_MAX 1024  /* bytes */
#define COVED_ENV_MAX      256   /* envVars entries */
#define COVED_ENV_VAL_MAX  32768 /* bytes */
#define COVED_RULE_LEN_MAX 256   /* bytes of one network rule */
#define COVED_FORK_MAX     64    /* forks of one request */

/* Each returns 0, or -EINVAL with a one-line message naming the field.
 * The outputs own references (coved_create_free / coved_net_free). */
int coved_parse_create(json_t *o, struct coved_create *out, char *err, size_t errlen);
/* A create's {allow_internet_access, network: {allowOut, denyOut, ...}}. */
int coved_parse_net(json_t *o, struct coved_net *out, char *err, size_t errlen);
/* PUT /sandboxes/{id}/network's body, the same fields flat (as the SDK
 * sends them): out->given is always set. */
int coved_parse_net_update(json_t *o, struct coved_net *out, char *err, size_t errlen);
/* {timeout} required or optional (0 when absent and optional). */
int coved_parse_timeout(json_t *o, bool required, uint64_t *timeout_s, char *err, size_t errlen);
/* {count, timeout}: count 1..COVED_FORK_MAX, default 1. */
int coved_parse_fork(json_t *o, unsigned int *count, uint64_t *timeout_s, char *err, size_t errlen);

/* o's key, or NULL when absent or null. */
json_t *coved_body_field(json_t *o, const char *key);

/* o's key as an integer from 0 to max into *out; absent (or null) leaves
 * *out and sets *given (may be NULL) false.  -EINVAL with a line naming
 * the key. */
int coved_body_uint(json_t *o, const char *key, uint64_t max, uint64_t *out, bool *given, char *err,
                    size_t errlen) __attribute__((warn_unused_result));

#endif
