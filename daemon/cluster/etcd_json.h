/* etcd's v3 JSON gateway, both ways, without any transport: the request
 * bodies coved sends (keys and values base64, int64 fields as strings) and
 * the answers it reads back.  Answers are hostile bytes: every field is
 * type- and range-checked, and anything malformed is -EPROTO with a
 * one-line message (tests/fuzz/fuzz_etcd_json.c).  daemon/cluster/etcd.c
 * carries these bodies over HTTP. */
#ifndef COVED_CLUSTER_ETCD_JSON_H
#define COVED_CLUSTER_ETCD_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The largest answer read (bigger ones are refused, not truncated), the
 * most kvs one answer may hold, the largest key and value sent, and the
 * most compares or ops in one txn branch (etcd's --max-txn-ops default). */
#define ETCD_ANSWER_MAX (64u << 20)
#define ETCD_KVS_MAX    1000000u
#define ETCD_KEY_MAX    4096u
#define ETCD_VALUE_MAX  (1u << 20)
#define ETCD_TXN_MAX    128u

/* One key as etcd holds it.  key and value are NUL-terminated copies
 * (value_len, key_len: their lengths, which may include NUL bytes). */
struct etcd_kv {
	char *key;
	size_t key_len;
	char *value;
	size_t value_len;
	int64_t create_rev, mod_rev, version, lease;
};

/* kvs of one answer, in etcd's order; revision: the answer header's
 * revision (the store's revision when it answered). */
struct etcd_kvs {
	struct etcd_kv *kv;
	size_t n;
	int64_t revision;
};

/* etcd_kvs_free() - frees every kv and zeroes k (safe on a zeroed k). */
void etcd_kvs_free(struct etcd_kvs *k);

/* Txn compares, ANDed, each an EQUAL: a key's mod or create revision,
 * its version (all 0 when the key is absent) or its value (never equal
 * when absent; value NUL-terminated). */
enum etcd_cmp_target { ETCD_CMP_MOD, ETCD_CMP_CREATE, ETCD_CMP_VERSION, ETCD_CMP_VALUE };
struct etcd_cmp {
	const char *key;
	enum etcd_cmp_target target;
	int64_t rev;
	const char *value;
};

/* Txn ops: PUT key=value (under lease when non-zero), DELETE key, GET key. */
enum etcd_op_kind { ETCD_OP_PUT, ETCD_OP_DELETE, ETCD_OP_GET };
struct etcd_op {
	enum etcd_op_kind kind;
	const char *key;
	const char *value;
	size_t value_len;
	int64_t lease;
};

/* etcd_json_b64_encode() - standard base64 with padding, NUL-terminated.
 * Return: a malloc'd string, or NULL when out of memory. */
char *etcd_json_b64_encode(const void *p, size_t n);

/* etcd_json_b64_decode() - strict standard base64 (padding required, no
 * whitespace, zero trailing bits) into a malloc'd NUL-terminated copy.
 * Return: 0, -EPROTO when s is not such base64, -ENOMEM. */
int etcd_json_b64_decode(const char *s, size_t n, char **out, size_t *outlen);

/* Request bodies: *body = malloc'd compact JSON.  A range with prefix
 * covers every key that starts with key ("" too); a delete's body is a
 * range's.  Return: 0, or -EINVAL (a key or value over the limits above,
 * a bad compare or op) or -ENOMEM with err filled and *body NULL. */
int etcd_json_range_req(const char *key, bool prefix, char **body, char *err, size_t errlen);
int etcd_json_put_req(const char *key, const char *val, size_t len, int64_t lease, char **body,
                      char *err, size_t errlen);
/* {"TTL":"v"} for a grant; {"ID":"v"} for a keepalive or a revoke. */
int etcd_json_lease_req(const char *field, int64_t v, char **body, char *err, size_t errlen);
int etcd_json_txn_req(const struct etcd_cmp *c, size_t nc, const struct etcd_op *ok, size_t nok,
                      const struct etcd_op *fail, size_t nfail, char **body, char *err,
                      size_t errlen);

/* Answers of HTTP status 200, as the gateway sends them.  Each returns 0
 * or -EPROTO (err: what is wrong); on failure the outputs hold nothing to
 * free.  The revision of a bare header (put, delete, revoke) is *revision
 * (may be NULL). */
int etcd_json_parse_header(const char *buf, size_t len, int64_t *revision, char *err,
                           size_t errlen);
int etcd_json_parse_range(const char *buf, size_t len, struct etcd_kvs *out, char *err,
                          size_t errlen);
int etcd_json_parse_grant(const char *buf, size_t len, int64_t *id, int64_t *ttl, char *err,
                          size_t errlen);
/* A keepalive's one streamed message {"result":{...}}: -ENOENT when its
 * TTL is absent or <= 0 (the lease is gone); a streamed {"error":{...}}
 * maps as etcd_json_parse_error() does. */
int etcd_json_parse_keepalive(const char *buf, size_t len, int64_t *ttl, char *err, size_t errlen);
/* got (may be NULL): the kvs of every GET of the branch taken, in op
 * order (a GET of an absent key adds none). */
int etcd_json_parse_txn(const char *buf, size_t len, bool *succeeded, struct etcd_kvs *got,
                        char *err, size_t errlen);

/* etcd_json_parse_error() - a gateway error answer {"error":"...",
 * "code":N} (or a stream's {"error":{"grpc_code":N,"message":"..."}}).
 * Return: the gRPC code as -errno (NOT_FOUND -ENOENT, DEADLINE_EXCEEDED
 * -ETIMEDOUT, UNAVAILABLE -EHOSTUNREACH, INVALID_ARGUMENT and
 * FAILED_PRECONDITION -EINVAL, RESOURCE_EXHAUSTED -ENOSPC, OUT_OF_RANGE
 * -ERANGE, PERMISSION_DENIED and UNAUTHENTICATED -EACCES, else -EIO) with
 * etcd's message in err; -EPROTO when buf is no such answer. */
int etcd_json_parse_error(const char *buf, size_t len, char *err, size_t errlen);

#endif
