/* coved's request bodies: hostile JSON from the network, checked at the
 * edge into typed structs (tests/fuzz/fuzz_coved_json.c). */
#ifndef COVED_BODY_H
#define COVED_BODY_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define COVED_META_MAX         64    /* metadata entries */
#define COVED_META_KEY_MAX     256   /* bytes */
#define COVED_META_VAL_MAX     1024  /* bytes */
#define COVED_ENV_MAX          256   /* envVars entries */
#define COVED_ENV_VAL_MAX      32768 /* bytes */
#define COVED_RULE_LEN_MAX     256   /* bytes of one network rule */
#define COVED_TEMPLATE_LEN_MAX 64    /* bytes of a templateID */
#define COVED_FORK_MAX         64    /* forks of one request */

/* A network policy as E2B asks for it. */
struct coved_net {
	bool given;    /* any network field was present */
	bool internet; /* allow_internet_access (default true) */
	bool internet_given;
	json_t *allow_out, *deny_out; /* arrays of strings, or NULL */
};

struct coved_create {
	char template_id[COVED_TEMPLATE_LEN_MAX + 1];
	json_t *metadata;   /* object of strings, or NULL */
	json_t *env_vars;   /* object of strings, or NULL */
	uint64_t timeout_s; /* 0: not given */
	bool auto_pause, auto_pause_given;
	unsigned int cpus;   /* 0: not given (Cove extension cpuCount) */
	uint64_t memory_mib; /* 0: not given (Cove extension memoryMB) */
	struct coved_net net;
};

/* coved_json_depth_ok() - whether raw JSON nests at most max deep (counted
 * on the bytes, before any parser recurses). */
bool coved_json_depth_ok(const char *buf, size_t len, unsigned int max);

/* coved_body_load() - parses a body into an object.  Empty body: {}.
 * Return: the object, or NULL with err filled (400). */
json_t *coved_body_load(const char *buf, size_t len, unsigned int max_depth, char *err,
                        size_t errlen);

/* Each returns 0, or -EINVAL with a one-line message naming the field.
 * The outputs own references (coved_create_free / coved_net_free). */
int coved_parse_create(json_t *o, struct coved_create *out, char *err, size_t errlen);
void coved_create_free(struct coved_create *c);
int coved_parse_net(json_t *o, struct coved_net *out, char *err, size_t errlen);
void coved_net_free(struct coved_net *n);
/* {timeout} required or optional (0 when absent and optional). */
int coved_parse_timeout(json_t *o, bool required, uint64_t *timeout_s, char *err, size_t errlen);
/* {count, timeout}: count 1..COVED_FORK_MAX, default 1. */
int coved_parse_fork(json_t *o, unsigned int *count, uint64_t *timeout_s, char *err, size_t errlen);

#endif
