/* coved's state, which every room of the daemon reaches through the one
 * struct coved: the config, the keys and their tenants, the sandbox list,
 * the counters behind /metrics, the pools.  Types only: the functions are
 * in the modules that own each part (table.h, metrics.h, pool.h, ...). */
#ifndef COVED_SANDBOXES_STATE_H
#define COVED_SANDBOXES_STATE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/conf/config.h"

struct coved_key;
struct coved_tenant;
struct coved_sb;
struct cove_net_pool;
struct cove_vmm_pool;
struct coved_builds;
struct coved_uploads;
struct coved_events;
struct coved_warm;

struct coved;
struct coved_cluster;

/* What the cluster's directory mirrors of a sandbox record: record.c
 * hands it to the cluster on every write and removal (docs/cluster.md). */
struct coved_dir_note {
	char id[33];
	char tenant[65];
	char template_id[129];
	const char *state; /* coved_state_name(); NULL: the record was removed */
	unsigned int cpus;
	uint64_t memory_mib;
	char reason[200];
	bool shared; /* its pause snapshot is in the cluster's shared_snapshot_dir */
};
typedef void coved_dir_hook(struct coved *d, const struct coved_dir_note *n);

struct coved_hist {
	uint64_t counts[12]; /* per bucket of metrics.c's buckets, +Inf last */
	uint64_t n;
	double sum;
};

struct coved_metrics {
	pthread_mutex_t mu;
	struct coved_hist create, restore, exec;
	uint64_t execs, exec_out, exec_in;
	uint64_t vmm_exits;
	uint64_t limit_requests, limit_sandboxes, limit_creates, limit_tenant;
	uint64_t requests;
	uint64_t port_requests, port_errors; /* to sandboxes' ports (daemon/ports) */
};

struct coved {
	struct coved_config cfg;
	struct coved_key *keys;
	size_t nkeys;
	struct coved_tenant *tenants; /* one per distinct tenant of the keys, file order */
	size_t ntenants;
	pthread_mutex_t mu; /* the list */
	struct coved_sb *list;
	atomic_uint in_flight, creating;
	struct coved_metrics m;
	struct cove_net_pool *net_pool; /* or NULL */
	pthread_t reaper;
	pthread_mutex_t stop_mu;
	pthread_cond_t stop_cond;
	bool stopping;
	struct cove_vmm_pool *pool;       /* pre-spawned VMMs (pool.c), or NULL */
	struct coved_cluster *cluster;    /* cluster mode (daemon/cluster), or NULL */
	struct coved_builds *builds;      /* template builds (builds.h) */
	struct coved_uploads *uploads;    /* COPY archives' upload links (build_files.h) */
	coved_dir_hook *_Atomic dir_hook; /* set by the cluster; NULL: none */
	struct coved_sampler *sampler;    /* usage samples (sampler.h), or NULL */
	struct coved_hourly *hourly;      /* the last hour per tenant (hourly.h), under m.mu */
	struct coved_events *events;      /* /events and webhooks (events.h), or NULL */
	struct coved_warm *warm;          /* the warm pool (warm.h), or NULL */
	struct tracer *tracer;            /* traces' export (daemon/trace), or NULL: off */
};

#endif
