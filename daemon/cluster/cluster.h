/* coved's cluster mode (docs/cluster.md): the node's lease and record in
 * etcd, the thread that renews them and reaps lost nodes' sandboxes, the
 * directory that follows every sandbox record, and the reconcile at start.
 * Off (every call a no-op, d->cluster NULL) unless the config has
 * "cluster". */
#ifndef COVED_CLUSTER_CLUSTER_H
#define COVED_CLUSTER_CLUSTER_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "daemon/cluster/dir.h"
#include "daemon/sandboxes/sandbox.h"

struct coved;

#define CL_UNRELEASED_MAX 256

/* A reservation whose release etcd did not take. */
struct cl_unreleased {
	char id[COVED_ID_LEN + 1];
	bool mine; /* only while the record names this node */
};

struct coved_cluster {
	struct coved *d;
	const struct coved_cluster_config *cfg;
	struct etcd *e;
	struct cl_dir_state dir;
	pthread_t lease_thread; /* renews the lease, and nothing else */
	pthread_t dir_thread;   /* the node record, the view, the scan, reconcile */
	pthread_mutex_t put_mu; /* node_json, and the node record's writes */
	pthread_mutex_t mu;     /* the fields below */
	pthread_cond_t cond;
	bool stop;
	int64_t lease;      /* 0: none held */
	int64_t renewed_ms; /* the last renewal that etcd answered */
	bool fenced;        /* lost the lease (or etcd) for over a TTL: no creates */
	char why[256];
	bool resync; /* a directory write failed: reconcile on the next tick */
	/* Reservations of creates that failed, whose release etcd did not
	 * take: tried again every tick, so no capacity stays held. */
	struct cl_unreleased unreleased[CL_UNRELEASED_MAX];
	size_t nunreleased;
	char *node_json;
	char host[64];
};

/* coved_cluster_unreserve() - drops id's record and gives its vCPUs
 * and memory back to its node's alloc (mine: only while the record names
 * this node); when etcd does not take it now, the tick tries again.
 * Return: 0 done now, or -errno (err says why; it is queued). */
int coved_cluster_unreserve(struct coved_cluster *cl, const char *id, bool mine, char *err,
                            size_t errlen);

/* coved_cluster_start() - joins the cluster: lease, node record,
 * reconcile of the adopted sandboxes, and two threads: one renews the
 * lease every third of its TTL, so no slow directory work (a scan, a
 * reconcile on a loaded host) ever delays a renewal; the other keeps the
 * node record, the view and the directory on the same period.  etcd being
 * away is not fatal (the node starts fenced and keeps trying).
 * Return: 0, or -errno with err (a config that cannot work). */
int coved_cluster_start(struct coved *d, char *err, size_t errlen);
void coved_cluster_stop(struct coved *d);

/* coved_cluster_fenced() - whether this node refuses creates now; why. */
bool coved_cluster_fenced(struct coved *d, char *why, size_t len);

/* coved_cluster_health() - {"node", "lease": "ok"|"lost", "reason"?}. */
json_t *coved_cluster_health(struct coved *d);

/* coved_cluster_status() - GET /cluster's document (docs/cluster.md). */
json_t *coved_cluster_status(struct coved *d);

/* coved_cluster_drain() - marks node id draining (or not).  Return 0/-errno. */
int coved_cluster_drain(struct coved *d, const char *id, bool on, char *err, size_t errlen);

#endif
