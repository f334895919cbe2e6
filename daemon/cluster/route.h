/* Requests in cluster mode (docs/cluster.md, "Routing"): node-to-node
 * authentication, forwarding a sandbox's requests to the node that owns
 * it, placing creates, listing across nodes, and the operator's /cluster
 * routes.  Every function is a no-op (false, NULL) when cluster mode is
 * off. */
#ifndef COVED_CLUSTER_ROUTE_H
#define COVED_CLUSTER_ROUTE_H

#include <jansson.h>
#include <microhttpd.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct coved;
struct coved_tenant;
struct fwd;

/* coved_cluster_node_call() - whether the request comes from another node
 * (X-Cove-Node-Auth holds the cluster's secret). */
bool coved_cluster_node_call(struct coved *d, struct MHD_Connection *c);

/* coved_cluster_node_tenant() - a node call's tenant (X-Cove-Tenant), or
 * NULL when the call is not a node's or names no tenant of ours. */
struct coved_tenant *coved_cluster_node_tenant(struct coved *d, struct MHD_Connection *c);

/* coved_cluster_intercept() - on a request's first call: a request for a
 * sandbox this node does not have, that the directory puts on another
 * live node, is forwarded there (*f set: feed it the rest of the request);
 * one whose node is lost is answered here (*ret set).  t: the caller's
 * tenant (NULL for envd requests).  Return: true when taken. */
bool coved_cluster_intercept(struct coved *d, struct MHD_Connection *c, const char *method,
                             const char *url, bool envd, struct coved_tenant *t, struct fwd **f,
                             enum MHD_Result *ret);

/* coved_cluster_place() - a create that reached this node, placed.
 * Return: 0: here, with the reserved id in id (33 bytes); 1: answered
 * (*ret: the owner's answer relayed, or 503 when no node can). */
int coved_cluster_place(struct coved *d, struct MHD_Connection *c, struct coved_tenant *t,
                        const char *url, const char *body, size_t len, const char *template_id,
                        uint64_t vcpus, uint64_t memory_mib, char *id, enum MHD_Result *ret);

/* coved_cluster_release() - a placed create failed here: its reservation
 * and record go. */
void coved_cluster_release(struct coved *d, const char *id);

/* coved_cluster_list_more() - the other live nodes' answers to the same
 * list request, appended to arr (up to limit in all). */
void coved_cluster_list_more(struct coved *d, struct MHD_Connection *c, struct coved_tenant *t,
                             const char *url, json_t *arr, size_t limit);

/* coved_cluster_admin() - GET /cluster and POST /cluster/nodes/{id}/drain
 * (the Unix socket's operator only). */
enum MHD_Result coved_cluster_admin(struct coved *d, struct MHD_Connection *c, const char *method,
                                    const char *url, const char *body, size_t len);

#endif
