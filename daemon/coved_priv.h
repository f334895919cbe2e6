/* coved's control plane, inside: the daemon, its sandbox records, config,
 * metrics and journal.  Not for the envd files (they use coved.h). */
#ifndef COVED_PRIV_H
#define COVED_PRIV_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "body.h"
#include "coved.h"

#define COVED_ID_LEN       20 /* sandbox ids: [a-z0-9], as E2B's look */
#define COVED_TOKEN_LEN    64 /* access tokens: 32 random bytes in hex */
#define COVED_KEYS_MAX     64
#define COVED_TENANT_LEN   64 /* tenant names: [A-Za-z0-9_.-], 1 to 64 */
#define COVED_ENVD_VERSION "0.5.7"

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
	enum coved_on_timeout on_timeout; /* when the request does not say */
	unsigned int cpus, max_cpus;
	uint64_t memory_mib, max_memory_mib;
	uint64_t disk_mib;           /* root disk size; 0: the image's */
	unsigned int boot_timeout_s; /* until a new sandbox's agent answers */
	bool network;                /* sandboxes may have a network */
	unsigned int net_pool_size;  /* networks set up ahead (cove_net_pool_new); 0: none */
	bool metrics_auth;           /* /metrics needs an API key too */
	char *templates_dir;         /* the template store (lib/template.h); NULL: none,
	                        creates boot cold (config "templates_dir": null) */
	bool templates_dir_set;
	unsigned int pool_size;              /* pre-spawned VMMs kept ready (pool.c); 0: none */
	unsigned int pool_cpus;              /* their vCPU count; 0: cpus */
	char *tls_cert, *tls_key;            /* PEM files: the TCP listener serves HTTPS */
	unsigned int header_timeout_s;       /* idle limit until a request head is in */
	unsigned int max_connections_per_ip; /* TCP listener, per client address */
	json_t *tenants;                     /* {"NAME": {quota keys}}, checked at load */
	struct coved_quota tenant_default;   /* tenants that "tenants" does not name */
};

/* One line of the API keys file: a key and the tenant it belongs to. */
struct coved_key {
	char *key;
	char tenant[COVED_TENANT_LEN + 1];
	struct coved_tenant *t; /* coved's tenant table entry (main.c); NULL in the parser */
};

/* A tenant as coved runs it: its quota and its creates in flight (the
 * sandboxes it holds are counted from the list).  inflight: under coved.mu. */
struct coved_tenant {
	char name[COVED_TENANT_LEN + 1];
	struct coved_quota q;
	struct coved_usage inflight;
};

/* daemon/template.c: the template a create restores, when there is one:
 * 0 with *dir (malloc'ed) and *lockfd (close it once the restore has
 * started), 1 when the create boots cold (no store, an image of the
 * config's templates), or an HTTP status with msg.  cfg (cpus, memory,
 * disk size, image, net) says what the base template is of, and is made
 * a restore's (disk size 0, the template's network). */
struct cove_config;
struct coved;
int coved_template_for(struct coved *d, const char *tid, struct cove_config *cfg, bool net_given,
                       char **dir, int *lockfd, char *msg, size_t len);
/* Whether tid names a template in the store (not "base", not an image). */
bool coved_template_named(struct coved *d, const char *tid);

int coved_config_load(const char *path, struct coved_config *cfg, char *err, size_t errlen)
    __attribute__((warn_unused_result));
void coved_config_free(struct coved_config *cfg);
/* coved_keys_load() - reads the API keys file (docs/api.md, "Tenants"):
 * one "TENANT:KEY" or bare "KEY" a line ('#' comments, blank lines
 * skipped).  A bare key is a tenant of its own, named "key-" and 12 hex
 * digits of the key's SHA-256.  -EPERM when the file is readable by group
 * or others, -EINVAL with the line number for a bad line.
 * Return: 0 with *keys (free with coved_keys_free), or -errno with err. */
int coved_keys_load(const char *path, struct coved_key **keys, size_t *n, char *err, size_t errlen)
    __attribute__((warn_unused_result));
void coved_keys_free(struct coved_key *keys, size_t n);
/* coved_tenant_name_ok() - whether s[0..len) is a tenant name: 1 to 64 of
 * A-Z a-z 0-9 _ . -, not "." or ".." (names go into logs and records). */
bool coved_tenant_name_ok(const char *s, size_t len);
/* The quota of tenant name: its "tenants" entry, else tenant_default. */
void coved_config_quota(const struct coved_config *cfg, const char *name, struct coved_quota *q);
/* coved_quota_check() - whether a tenant holding used may take want more.
 * Return: 0, or 429 with msg naming the limit that is full. */
int coved_quota_check(const char *tenant, const struct coved_quota *q,
                      const struct coved_usage *used, const struct coved_usage *want, char *msg,
                      size_t len);
/* Constant-time string equality (time depends on b's length only). */
bool coved_secret_eq(const char *a, const char *b);

enum coved_state {
	COVED_SB_RUNNING,
	COVED_SB_PAUSED,
	COVED_SB_STOPPED,
	COVED_SB_DEAD,
};
const char *coved_state_name(enum coved_state s);

struct coved_sb {
	atomic_int refs;
	struct coved *d;
	pthread_mutex_t op; /* one lifecycle operation at a time (held long) */
	pthread_mutex_t mu; /* the fields below (held short) */
	char id[COVED_ID_LEN + 1];
	char token[COVED_TOKEN_LEN + 1];
	char tenant[COVED_TENANT_LEN + 1]; /* the owner: set at create, never changed */
	char *template_id, *image;
	json_t *metadata; /* object of strings */
	char **envs;      /* "K=V", NULL-terminated */
	json_t *network;  /* {allowOut, denyOut, allow_internet_access} as asked, or NULL */
	int64_t started_ms, end_ms;
	unsigned int cpus;
	uint64_t memory_mib;
	enum coved_on_timeout on_timeout;
	enum coved_state state;
	char *dead_why;
	/* Snapshot directories this sandbox's disks stand on (its pauses and
	 * the snapshot it was forked from); the last pause is paused_dir. */
	char **snaps;
	size_t nsnaps;
	char *paused_dir;
	unsigned int generation; /* pause count, for fresh directory names */
	struct cove_sandbox *cove;
	struct cove_sandbox **retired; /* handles of earlier lives, freed with sb */
	size_t nretired;
	bool removed; /* deleted: no longer in the daemon's list */
	struct coved_sb *next;
};

struct coved_hist {
	uint64_t counts[12]; /* per bucket of COVED_BUCKETS, +Inf last */
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
	struct cove_vmm_pool *pool; /* pre-spawned VMMs (pool.c), or NULL */
};

/* ---- the VMM pool (pool.c) ---- */
/* Starts the pool when pool_size > 0 (members come up in the background):
 * 0, or -errno with err. */
int coved_pool_start(struct coved *d, char *err, size_t errlen) __attribute__((warn_unused_result));
/* Ends every member not taken (before coved exits). */
void coved_pool_stop(struct coved *d);
/* The pool's lines of /metrics. */
void coved_pool_metrics(struct coved *d, FILE *f);

/* ---- tenants (sandbox.c) ---- */
/* Builds d->tenants from d->keys and the config's quotas: 0 or -ENOMEM. */
int coved_tenants_init(struct coved *d) __attribute__((warn_unused_result));
struct coved_tenant *coved_tenant_find(struct coved *d, const char *name);
/* coved_sb_find_for() - coved_sb_find() for tenant t: another tenant's
 * sandbox is not found, exactly as a missing one. */
struct coved_sb *coved_sb_find_for(struct coved *d, const char *id, const struct coved_tenant *t);
bool coved_sb_owned(const struct coved_sb *sb, const struct coved_tenant *t);

/* ---- sandboxes (sandbox.c) ---- */
int coved_adopt_all(struct coved *d);
struct coved_sb *coved_sb_ref(struct coved_sb *sb);
/* Snapshot of the list (references; release each, then free the array). */
struct coved_sb **coved_sb_all(struct coved *d, size_t *n);
size_t coved_sb_count_live(struct coved *d);
/* Creates and boots a sandbox; *out is a new reference.  HTTP status on
 * failure (msg says why), 0 on success. */
int coved_sb_create(struct coved *d, struct coved_tenant *t, const struct coved_create *req,
                    struct coved_sb **out, char *msg, size_t len);
int coved_sb_pause(struct coved_sb *sb, char *msg, size_t len);
int coved_sb_resume(struct coved_sb *sb, uint64_t timeout_s, bool *resumed, char *msg, size_t len);
int coved_sb_stop(struct coved_sb *sb, char *msg, size_t len);
int coved_sb_delete(struct coved_sb *sb, char *msg, size_t len);
int coved_sb_set_timeout(struct coved_sb *sb, uint64_t timeout_s, char *msg, size_t len);
int coved_sb_snapshot(struct coved_sb *sb, char *snap_id, size_t idlen, char *msg, size_t len);
int coved_sb_fork(struct coved_sb *sb, unsigned int count, uint64_t timeout_s, json_t **results,
                  char *msg, size_t len);
int coved_sb_set_network(struct coved_sb *sb, const struct coved_net *net, char *msg, size_t len);
/* The sandbox as the API shows it (a new object). */
json_t *coved_sb_json(struct coved_sb *sb, bool with_token);
/* Checks expiry and liveness of every sandbox; the reaper calls it. */
void coved_sb_tick(struct coved *d);
int coved_record_write(struct coved_sb *sb);
/* Internals shared by sandbox.c and record.c. */
struct coved_sb *coved_sb_new(struct coved *d);
void coved_sb_free(struct coved_sb *sb);
void coved_sb_list_add(struct coved *d, struct coved_sb *sb);
int coved_sb_add_snap(struct coved_sb *sb, const char *dir);
json_t *coved_str_list(char **v, size_t n);
json_t *coved_envs_object(struct coved_sb *sb);
int coved_write_atomic(const char *dir, const char *name, const char *text);
void coved_record_remove(struct coved_sb *sb);
int coved_set_envs(struct coved_sb *sb, json_t *env_vars);
/* Records sb as dead (why), counts a VMM exit, journals it. */
void coved_mark_dead(struct coved_sb *sb, const char *why);
int64_t coved_now_ms(void);

/* ---- journal (journal.c) ---- */
/* Lifecycle event: {"type": type, ...extra}; extra may be NULL (stolen). */
void coved_journal_event(struct coved_sb *sb, const char *type, json_t *extra);
char *coved_journal_path(const struct coved *d, const char *id);

/* ---- metrics (metrics.c) ---- */
void coved_hist_add(struct coved *d, struct coved_hist *h, double seconds);
void coved_metric_bump(struct coved *d, uint64_t *counter);
char *coved_metrics_text(struct coved *d, size_t *len);

/* ---- HTTP (server.c, routes.c) ---- */
int coved_serve(struct coved *d, char *err, size_t errlen);
void coved_unserve(struct coved *d);
enum MHD_Result coved_json_reply(struct MHD_Connection *c, unsigned int status, json_t *body);
/* t: the caller's tenant, from its API key; NULL only for an open /metrics. */
enum MHD_Result coved_route(struct coved *d, struct coved_tenant *t, struct MHD_Connection *c,
                            const char *method, const char *url, const char *body, size_t body_len);

#endif
