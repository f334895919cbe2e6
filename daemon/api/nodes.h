/* GET /nodes (nodes.c): the cluster's nodes as any key may see them, for
 * the console's overview: capacity, commitment, lease and draining, and
 * nothing of other tenants' sandboxes or of the nodes' addresses. */
#ifndef COVED_API_NODES_H
#define COVED_API_NODES_H

#include <jansson.h>

/* coved_nodes_public() - from coved_cluster_status()'s answer, the array
 * [{"id", "state" (ready, draining, lost), "leaseOk", "draining",
 * "vcpus", "vcpusCommitted", "memoryMiB", "memoryMiBCommitted"}] in its
 * order; a node entry that lacks a field or has one of the wrong type is
 * left out.  Pure.  NULL on ENOMEM or a status without "nodes". */
json_t *coved_nodes_public(const json_t *status);

#endif
