/* The etcd v3 client of coved's cluster mode: etcd 3.4's JSON gateway
 * (POST ENDPOINT/v3/kv/range and the like) over libcurl, the bodies from
 * etcd_json.h.  Thread-safe: any thread may call any function on one
 * struct etcd (between etcd_new() and etcd_free()).
 *
 * Every call is bounded by the timeout given to etcd_new(), in total over
 * all endpoints: the last endpoint that answered is tried first, then the
 * others.  A read (get, range, keepalive) moves on to the next endpoint
 * after any failure; a write only when its request never left (no
 * connection), since a write that timed out may have been applied.
 *
 * Return of every call: 0, or -errno with a one-line message in err
 * naming the endpoint and what failed: -ETIMEDOUT, -ECONNREFUSED or
 * -EHOSTUNREACH (unreachable; TLS failures too), -EPROTO (a malformed or
 * oversized answer), -ENOENT (etcd's "not found", a lost lease), -EINVAL
 * (a bad argument or etcd refused the request), -ENOSPC (etcd's quota),
 * -ENOMEM, -EIO (anything else). */
#ifndef COVED_CLUSTER_ETCD_H
#define COVED_CLUSTER_ETCD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/cluster/etcd_json.h"

/* The most endpoints and the longest one (http:// or https:// URL). */
#define ETCD_ENDPOINTS_MAX 8u
#define ETCD_ENDPOINT_MAX  256u

struct etcd;

/* etcd_new() - a client of endpoints[0..n) ("http://127.0.0.1:2379"; a
 * trailing / is dropped), each call bounded by timeout_ms (>= 1).  Nothing
 * is connected yet.  Return: the client, or NULL with err filled. */
struct etcd *etcd_new(const char *const *endpoints, size_t n, unsigned int timeout_ms, char *err,
                      size_t errlen);
/* etcd_free() - after every call on e has returned (NULL: nothing). */
void etcd_free(struct etcd *e);

/* etcd_get() - key's kv into out (out->n 0 when absent, else 1);
 * etcd_range_prefix() - every key starting with prefix, in key order.
 * On success the caller frees out with etcd_kvs_free(); on failure out
 * holds nothing. */
int etcd_get(struct etcd *e, const char *key, struct etcd_kvs *out, char *err, size_t errlen);
int etcd_range_prefix(struct etcd *e, const char *prefix, struct etcd_kvs *out, char *err,
                      size_t errlen);

/* etcd_put() - key = val[0..len), under lease when non-zero. */
int etcd_put(struct etcd *e, const char *key, const char *val, size_t len, int64_t lease, char *err,
             size_t errlen);
/* etcd_delete() - removes key; an absent key is no error. */
int etcd_delete(struct etcd *e, const char *key, char *err, size_t errlen);

/* etcd_lease_grant() - a new lease of ttl_s seconds: its id. */
int etcd_lease_grant(struct etcd *e, int64_t ttl_s, int64_t *id, char *err, size_t errlen);
/* etcd_lease_keepalive() - renews lease id once; ttl_left (may be NULL):
 * its TTL again.  -ENOENT when the lease is gone. */
int etcd_lease_keepalive(struct etcd *e, int64_t id, int64_t *ttl_left, char *err, size_t errlen);
/* etcd_lease_revoke() - ends lease id and deletes its keys; -ENOENT when
 * it was gone already. */
int etcd_lease_revoke(struct etcd *e, int64_t id, char *err, size_t errlen);

/* etcd_txn() - if every compare c[0..nc) holds, runs ok[0..nok), else
 * fail[0..nfail) (either may be NULL when its count is 0), atomically.
 * succeeded: which branch ran.  got (may be NULL): the kvs read by the
 * GET ops of that branch, in op order (none for an absent key; match them
 * by key), and the revision after the txn; freed with etcd_kvs_free(). */
int etcd_txn(struct etcd *e, const struct etcd_cmp *c, size_t nc, const struct etcd_op *ok,
             size_t nok, const struct etcd_op *fail, size_t nfail, bool *succeeded,
             struct etcd_kvs *got, char *err, size_t errlen);

#endif
