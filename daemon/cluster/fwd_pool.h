/* Kept connections to the other nodes.  A forward or a call takes a curl
 * handle for its node from here and gives it back when its transfer ended
 * cleanly, so the next one to that node reuses the handle's open
 * connection: no TCP handshake, and no new connection thread on the owner
 * (libmicrohttpd runs one per connection).  A handle also knows the socket
 * its transfer uses, so another thread can cut that transfer short
 * (fwd_conn_cancel) whether the connection was new or reused. */
#ifndef COVED_CLUSTER_FWD_POOL_H
#define COVED_CLUSTER_FWD_POOL_H

#include <curl/curl.h>
#include <stdbool.h>
#include <stddef.h>

/* Idle handles kept, per node and in all; one idle longer is closed. */
#define FWD_POOL_PER_NODE 8
#define FWD_POOL_MAX      64
#define FWD_POOL_IDLE_MS  30000

struct fwd_conn;

/* fwd_conn_get() - an idle handle for base (its options reset) or a new
 * one, with the socket callbacks set (a caller must not set
 * CURLOPT_OPENSOCKETFUNCTION, CLOSESOCKETFUNCTION or PREREQFUNCTION).
 * Return: NULL when out of memory. */
struct fwd_conn *fwd_conn_get(const char *base);

/* fwd_conn_easy() - the curl handle, for options and curl_easy_perform. */
CURL *fwd_conn_easy(struct fwd_conn *c);

/* fwd_conn_cancel() - from any thread: the transfer ends now (its socket
 * is shut down; one about to start or connect gives up). */
void fwd_conn_cancel(struct fwd_conn *c);

/* fwd_conn_put() - the transfer is over (no thread is in curl_easy_perform):
 * a clean one's handle goes back to the pool, any other is closed.  c may
 * be NULL. */
void fwd_conn_put(struct fwd_conn *c, bool clean);

/* fwd_pool_stats() - handles made and reuses since start. */
void fwd_pool_stats(size_t *made, size_t *reused);

/* fwd_pool_flush() - closes every idle handle (at coved's stop). */
void fwd_pool_flush(void);

#endif
