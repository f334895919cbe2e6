/* The types of one node's view of the cluster and of its directory cache
 * (dir.h, view.h): types only, so that both modules stand on them. */
#ifndef COVED_CLUSTER_DIR_STATE_H
#define COVED_CLUSTER_DIR_STATE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "daemon/cluster/records.h"

struct etcd;

/* One node as the view has it. */
struct cl_vnode {
	struct cl_node_rec rec;
	struct cl_alloc alloc;
	int64_t alloc_rev; /* mod revision of /cove/alloc/<id>; 0: absent */
	bool live;         /* its leased key is there */
	bool draining;
};

struct cl_entry;

struct cl_dir_state {
	struct etcd *e;
	char self[CL_NODE_ID_MAX + 1];
	pthread_mutex_t mu;  /* the view, the allocs and the cache (held short) */
	pthread_mutex_t wmu; /* one record transaction at a time from this node */
	pthread_mutex_t rmu; /* one placement's view refresh at a time */
	struct cl_vnode *nodes;
	size_t nnodes;
	int64_t view_ms; /* when the view was read; 0: never */
	struct cl_entry **buckets;
	atomic_uint_fast64_t writes; /* etcd write transactions this node made */
	uint64_t seed;
};

#endif
