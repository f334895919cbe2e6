/* One sandbox the daemon owns: its references, the fields others read
 * through accessors, its snapshots and envVars (sandbox.h, sandbox_priv.h).
 * The list it sits in: table.c; its lifecycle: create.c, lifecycle.c. */
#include "daemon/sandboxes/sandbox_priv.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "cove.h"
#include "daemon/sandboxes/state.h"

int64_t coved_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

double coved_mono_s(void)
{
	return (double)mono_ns() / 1e9;
}

void coved_sb_cove_config(const struct coved *d, const struct coved_sb *sb, struct cove_config *cfg)
{
	cove_config_defaults(cfg);
	cfg->name = sb->id;
	cfg->hostname = "cove";
	cfg->detached = true;
	cfg->net_pool = d->net_pool;
	cfg->boot_timeout_ms = d->cfg.boot_timeout_s * 1000;
	cfg->vmm_pool = d->pool; /* a pre-spawned VMM when one fits (pool.c) */
}

const char *coved_state_name(enum coved_state s)
{
	static const char *const names[] = { "running", "paused", "stopped", "dead" };
	return (unsigned)s < 4 ? names[s] : "unknown";
}

struct coved_sb *coved_sb_ref(struct coved_sb *sb)
{
	atomic_fetch_add(&sb->refs, 1);
	return sb;
}

void coved_sb_free(struct coved_sb *sb)
{
	if (sb->cove)
		cove_free(sb->cove);
	for (size_t i = 0; i < sb->nretired; i++)
		cove_free(sb->retired[i]);
	free(sb->retired);
	for (size_t i = 0; i < sb->nsnaps; i++)
		free(sb->snaps[i]);
	free(sb->snaps);
	free(sb->paused_dir);
	free(sb->template_id);
	free(sb->image);
	free(sb->dead_why);
	json_decref(sb->metadata);
	json_decref(sb->network);
	if (sb->envs)
		for (char **e = sb->envs; *e; e++) {
			explicit_bzero(*e, strlen(*e));
			free(*e);
		}
	free(sb->envs);
	explicit_bzero(sb->token, sizeof(sb->token));
	explicit_bzero(sb->traffic, sizeof(sb->traffic));
	trace_root_fini(&sb->troot);
	pthread_mutex_destroy(&sb->jtail.mu);
	pthread_cond_destroy(&sb->jtail.grew);
	free(sb->jtail.egress_path);
	pthread_mutex_destroy(&sb->op);
	pthread_mutex_destroy(&sb->mu);
	free(sb);
}

void coved_sb_unref(struct coved_sb *sb)
{
	if (sb && atomic_fetch_sub(&sb->refs, 1) == 1)
		coved_sb_free(sb);
}

struct coved_sb *coved_sb_new(struct coved *d)
{
	struct coved_sb *sb = calloc(1, sizeof(*sb));
	if (!sb)
		return NULL;
	atomic_init(&sb->refs, 1);
	sb->d = d;
	pthread_mutex_init(&sb->op, NULL);
	pthread_mutex_init(&sb->mu, NULL);
	sb->envs = calloc(1, sizeof(char *));
	sb->metadata = json_object();
	pthread_mutex_init(&sb->jtail.mu, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC); /* journal waits have deadlines */
	pthread_cond_init(&sb->jtail.grew, &ca);
	pthread_condattr_destroy(&ca);
	if (!sb->envs || !sb->metadata) {
		coved_sb_free(sb);
		return NULL;
	}
	return sb;
}

const char *coved_sb_id(const struct coved_sb *sb)
{
	return sb->id;
}

bool coved_sb_restricted(const struct coved_sb *sb)
{
	return sb->traffic[0] != 0;
}

bool coved_sb_traffic_ok(const struct coved_sb *sb, const char *token)
{
	return sb->traffic[0] && token && coved_secret_eq(token, sb->traffic);
}

bool coved_sb_token_ok(const struct coved_sb *sb, const char *token)
{
	return token && coved_secret_eq(token, sb->token);
}

struct cove_sandbox *coved_sb_cove(struct coved_sb *sb)
{
	pthread_mutex_lock(&sb->mu);
	struct cove_sandbox *c = sb->state == COVED_SB_RUNNING ? sb->cove : NULL;
	pthread_mutex_unlock(&sb->mu);
	return c;
}

bool coved_sb_gone(struct coved_sb *sb)
{
	pthread_mutex_lock(&sb->d->mu); /* removed is the list's (table.c) */
	bool gone = sb->removed;
	pthread_mutex_unlock(&sb->d->mu);
	pthread_mutex_lock(&sb->mu);
	gone = gone || sb->state == COVED_SB_DEAD;
	pthread_mutex_unlock(&sb->mu);
	return gone;
}

const char *const *coved_sb_envs(const struct coved_sb *sb)
{
	return (const char *const *)sb->envs;
}

void coved_sb_retire(struct coved_sb *sb)
{
	if (!sb->cove)
		return;
	struct cove_sandbox **r = realloc(sb->retired, (sb->nretired + 1) * sizeof(*r));
	if (!r)
		return; /* leaks the handle rather than freeing it under a caller */
	sb->retired = r;
	r[sb->nretired++] = sb->cove;
	sb->cove = NULL;
}

int coved_sb_add_snap(struct coved_sb *sb, const char *dir)
{
	char **s = realloc(sb->snaps, (sb->nsnaps + 1) * sizeof(*s));
	if (!s)
		return -ENOMEM;
	sb->snaps = s;
	if (!(s[sb->nsnaps] = strdup(dir)))
		return -ENOMEM;
	sb->nsnaps++;
	return 0;
}

void coved_sb_add_snaps(struct coved_sb *sb, json_t *list)
{
	size_t i;
	json_t *v;
	json_array_foreach(list, i, v)
	{
		if (json_is_string(v))
			coved_sb_add_snap(sb, json_string_value(v));
	}
}

json_t *coved_str_list(char **v, size_t n)
{
	json_t *a = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, json_string(v[i]));
	return a;
}

json_t *coved_envs_object(struct coved_sb *sb)
{
	json_t *o = json_object();
	for (char **e = sb->envs; *e; e++) {
		char *eq = strchr(*e, '=');
		if (!eq)
			continue;
		char name[257];
		snprintf(name, sizeof(name), "%.*s", (int)(eq - *e), *e);
		json_object_set_new(o, name, json_string(eq + 1));
	}
	return o;
}

int coved_set_envs(struct coved_sb *sb, json_t *env_vars)
{
	size_t n = json_object_size(env_vars);
	char **envs = calloc(n + 1, sizeof(*envs));
	if (!envs)
		return -ENOMEM;
	size_t i = 0;
	const char *k;
	json_t *v;
	json_object_foreach(env_vars, k, v)
	{
		if (json_is_string(v) && asprintf(&envs[i], "%s=%s", k, json_string_value(v)) >= 0)
			i++;
	}
	if (sb->envs)
		for (char **e = sb->envs; *e; e++)
			free(*e);
	free(sb->envs);
	sb->envs = envs;
	return 0;
}
