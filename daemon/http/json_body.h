/* Request bodies as JSON: hostile bytes from the network, bounded before
 * any parser recurses (tests/fuzz/fuzz_coved_json.c). */
#ifndef COVED_HTTP_JSON_BODY_H
#define COVED_HTTP_JSON_BODY_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* coved_json_depth_ok() - whether raw JSON nests at most max deep (counted
 * on the bytes, before any parser recurses). */
bool coved_json_depth_ok(const char *buf, size_t len, unsigned int max);

/* coved_body_load() - parses a body into an object.  Empty body: {}.
 * Return: the object, or NULL with err filled (400). */
json_t *coved_body_load(const char *buf, size_t len, unsigned int max_depth, char *err,
                        size_t errlen);

#endif
