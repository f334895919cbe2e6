/* coved's config file (docs/api.md, "Configuration"), parsed, and the
 * tenants' quotas it gives.  Pure: the daemon's rooms read the struct. */
#ifndef COVED_CONF_CONFIG_H
#define COVED_CONF_CONFIG_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum coved_on_timeout { COVED_ON_TIMEOUT_KILL, COVED_ON_TIMEOUT_PAUSE };

/* A tenant's limits (config "tenants" and "tenant_defaults"); UINT64_MAX:
 * no limit of the tenant's own (the global ones still hold). */
struct coved_quota {
	uint64_t max_sandboxes;  /* running + paused, creates in flight counted */
	uint64_t max_creates;    /* creates and resumes in flight */
	uint64_t max_cpus;       /* vCPUs summed over running + paused */
	uint64_t max_memory_mib; /* memory summed over running + paused */
};

/* What a tenant holds, or what one request would add to it. */
struct coved_usage {
	uint64_t sandboxes, creates, cpus, memory_mib;
};

/* The "cluster" object (issue 28; docs/api.md, "Cluster"): this coved as a node
 * of a cluster on etcd.  Checked at load; on is false without it. */
struct coved_cluster_config {
	bool on;              /* the config has "cluster" */
	char **etcd;          /* 1 to COVED_CLUSTER_ETCD_MAX http:// or https:// URLs */
	size_t netcd;         /* how many */
	char *node_id;        /* [a-z0-9-]{1,32} */
	char *advertise;      /* http(s)://HOST:PORT, no path: where other nodes reach us */
	unsigned lease_ttl_s; /* 2..300, default 10 */
	char *secret;         /* secret_file's line: node-to-node auth; never logged */
	uint64_t cap_vcpus, cap_memory_mib; /* "capacity"; default: online CPUs, MemTotal*9/10 */
	char *shared_snapshot_dir;          /* storage every node mounts; NULL: none */
};
#define COVED_CLUSTER_ETCD_MAX   8
#define COVED_CLUSTER_ID_MAX     32
#define COVED_CLUSTER_SECRET_MIN 32
#define COVED_CLUSTER_SECRET_MAX 1024

/* The config file (docs/api.md, "Configuration"); every key optional. */
struct coved_config {
	char *socket;               /* Unix socket path */
	char *socket_group;         /* group given the socket when it exists */
	char *tcp;                  /* "ADDR:PORT" or NULL: no TCP listener */
	char *state_dir;            /* records, snapshots, journals */
	char *api_keys_file;        /* one key a line, mode 0600 */
	char *default_image;        /* the image "base" maps to */
	json_t *templates;          /* {"name": "image name"} */
	unsigned int max_requests;  /* in flight at once; over it: 429 */
	unsigned int max_sandboxes; /* running + paused; over it: 429 */
	unsigned int max_creates;   /* creates/resumes in flight; over it: 429 */
	size_t max_body;            /* request body bytes */
	unsigned int max_depth;     /* JSON nesting */
	unsigned int conn_timeout_s;
	uint64_t default_timeout_s, max_timeout_s;
	uint64_t idle_timeout_s;          /* a create's idle timeout when it gives none; 0: none */
	bool webhook_private_ok;          /* webhooks may reach loopback and private addresses */
	enum coved_on_timeout on_timeout; /* when the request does not say */
	unsigned int cpus, max_cpus;
	uint64_t memory_mib, max_memory_mib;
	uint64_t disk_mib;            /* root disk size; 0: the image's */
	unsigned int boot_timeout_s;  /* until a new sandbox's agent answers */
	unsigned int max_builds;      /* template builds at once (builds.c); 0: none */
	unsigned int build_timeout_s; /* one build's time limit, waiting for a slot included */
	uint64_t max_upload;          /* bytes of one uploaded COPY archive */
	bool network;                 /* sandboxes may have a network */
	unsigned int net_pool_size;   /* networks set up ahead (cove_net_pool_new); 0: none */
	bool metrics_auth;            /* /metrics needs an API key too */
	char *templates_dir;          /* the template store (lib/template.h); NULL: none,
	                        creates boot cold (config "templates_dir": null) */
	bool templates_dir_set;
	unsigned int pool_size;   /* pre-spawned VMMs kept ready (pool.c); 0: none */
	unsigned int pool_cpus;   /* their vCPU count; 0: cpus */
	json_t *warm_pool;        /* {"templateID": N}: restored sandboxes kept running (warm.c) */
	char *tls_cert, *tls_key; /* PEM files: the TCP listener serves HTTPS */
	/* Ports (issue 32, daemon/ports): "<port>-<id>.<domain>" names a
	 * sandbox's port (NULL: only E2b-Sandbox-Port does), and creates
	 * answer with it; a stream idle for port_idle_s ends. */
	char *domain;
	unsigned int port_idle_s;
	bool ports_public;                   /* a sandbox's ports need no token unless its create
	                      restricted them (E2B's allowPublicTraffic) */
	unsigned int header_timeout_s;       /* idle limit until a request head is in */
	unsigned int max_connections_per_ip; /* TCP listener, per client address */
	json_t *tenants;                     /* {"NAME": {quota keys}}, checked at load */
	struct coved_quota tenant_default;   /* tenants that "tenants" does not name */
	/* Per-node ranges, so several coved on one host never collide: libcove's
	 * $COVE_RUNTIME_DIR, $COVE_CGROUP_PARENT, $COVE_JAIL_IDS and
	 * $COVE_NET_INDEXES ("FIRST-LAST", checked), set by coved_config_setenv;
	 * NULL: the environment's, or libcove's default. */
	char *runtime_dir, *cgroup_parent, *jail_ids, *net_indexes;
	/* Traces (docs/tracing.md): the OTEL_* variables' stand-ins, used
	 * where the variable is not set; NULL: none.  otlp_headers may hold
	 * secrets: never logged. */
	char *otlp_endpoint, *otlp_headers, *otlp_service_name, *otlp_sampler;
	struct coved_cluster_config cluster;
};

int coved_config_load(const char *path, struct coved_config *cfg, char *err, size_t errlen)
    __attribute__((warn_unused_result));
void coved_config_free(struct coved_config *cfg);

#define COVED_WARM_MAX 16 /* warm sandboxes per template */
/* coved_config_setenv() - the per-node ranges the config gives, as the
 * COVE_* variables libcove reads in this process; one not given is left
 * as it is.  Before any libcove call.
 * Return: 0, or -errno with one line in err. */
int coved_config_setenv(const struct coved_config *cfg, char *err, size_t errlen)
    __attribute__((warn_unused_result));
/* The quota of tenant name: its "tenants" entry, else tenant_default. */
void coved_config_quota(const struct coved_config *cfg, const char *name, struct coved_quota *q);
/* coved_quota_check() - whether a tenant holding used may take want more.
 * Return: 0, or 429 with msg naming the limit that is full. */
int coved_quota_check(const char *tenant, const struct coved_quota *q,
                      const struct coved_usage *used, const struct coved_usage *want, char *msg,
                      size_t len);

#endif
