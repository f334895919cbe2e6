/* The sandbox record inside the sandboxes room: its fields and the
 * helpers its modules share (sandbox.c). */
#ifndef COVED_SANDBOXES_SANDBOX_PRIV_H
#define COVED_SANDBOXES_SANDBOX_PRIV_H

#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/conf/config.h"
#include "daemon/conf/keys.h"
#include "daemon/sandboxes/sandbox.h"
#include "daemon/trace/span.h"

struct coved;

/* The tail of a sandbox's journal (journal.c): appends one at a time. */
struct coved_jtail {
	pthread_mutex_t mu;
	pthread_cond_t grew; /* broadcast after each append (CLOCK_MONOTONIC) */
	bool loaded;         /* seq and hash read back from the file */
	uint64_t seq;
	char hash[65];     /* the last line's SHA-256 in hex */
	char *egress_path; /* the running sandbox's egress.log, once seen */
	bool egress_loaded;
	uint64_t egress_ino, egress_off; /* how far egress.log was folded in */
};

struct coved_sb {
	atomic_int refs;
	struct coved *d;
	pthread_mutex_t op; /* one lifecycle operation at a time (held long) */
	pthread_mutex_t mu; /* the fields below (held short) */
	char id[COVED_ID_LEN + 1];
	char token[COVED_TOKEN_LEN + 1];
	/* The traffic token its ports need (create's allowPublicTraffic
	 * false); "" when they are public.  Set at create, never changed. */
	char traffic[COVED_TOKEN_LEN + 1];
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
	char state_why[16]; /* why state last changed: requested, idle, auto, timeout */
	uint32_t idle_s;    /* end_ms is an idle timeout of this many seconds (0: not) */
	bool auto_resume;   /* an envd request to it paused resumes it (idle.c) */
	bool warm;          /* handed out by the warm pool (warm.c) */
	int busy;           /* envd requests in flight, streams included */
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
	bool removed;                /* deleted: no longer in the daemon's list */
	struct coved_jtail jtail;    /* the journal's chain and lock (journal.c) */
	int64_t hour_req_ms;         /* its create's request until its first exec, under
	                                jtail.mu (hourly.c); 0: none awaited */
	struct trace_root troot;     /* its span's ids and events, under jtail.mu */
	char trace_id[TRACE_ID_HEX]; /* its trace (getInfo's traceId), "" until its first line */
	struct coved_sb *next;
};

struct coved_sb *coved_sb_new(struct coved *d);
void coved_sb_free(struct coved_sb *sb);
int coved_sb_add_snap(struct coved_sb *sb, const char *dir);
/* Each string of a JSON array (NULL: none) through coved_sb_add_snap. */
void coved_sb_add_snaps(struct coved_sb *sb, json_t *list);
/* Keeps an ended handle until the record goes: envd callers may still
 * hold it (coved_sb_cove's contract).  Called with sb->mu held. */
void coved_sb_retire(struct coved_sb *sb);
int coved_set_envs(struct coved_sb *sb, json_t *env_vars);
json_t *coved_envs_object(struct coved_sb *sb);
json_t *coved_str_list(char **v, size_t n);
/* CLOCK_MONOTONIC in seconds, for durations. */
double coved_mono_s(void);
/* What every boot of sb shares (create, resume): the defaults, its id as
 * the name, detached, coved's pools and boot timeout. */
struct cove_config;
void coved_sb_cove_config(const struct coved *d, const struct coved_sb *sb,
                          struct cove_config *cfg);

#endif
