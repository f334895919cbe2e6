/* coved's sandboxes: references, tenants (owners and quotas), the
 * lifecycle through libcove (create, pause, resume, stop, delete,
 * snapshot, fork, network) and the reaper's expiry and liveness checks.
 * Records and adoption: record.c. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cove.h"
#include "coved_priv.h"
#include "errf.h"

int64_t coved_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static double mono_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

const char *coved_state_name(enum coved_state s)
{
	static const char *const names[] = { "running", "paused", "stopped", "dead" };
	return (unsigned)s < 4 ? names[s] : "unknown";
}

static int random_chars(char *out, size_t n, const char *alphabet, size_t alen)
{
	unsigned char buf[64];
	if (n > sizeof(buf))
		return -EINVAL;
	size_t done = 0;
	while (done < n) {
		ssize_t k = getrandom(buf + done, n - done, 0);
		if (k < 0 && errno != EINTR)
			return -errno;
		if (k > 0)
			done += (size_t)k;
	}
	for (size_t i = 0; i < n; i++)
		out[i] = alphabet[buf[i] % alen];
	out[n] = 0;
	explicit_bzero(buf, sizeof(buf));
	return 0;
}

static int new_id(char *out)
{
	/* 36 letters: 256 % 36 != 0 skews a little; ids need uniqueness, not
	 * secrecy. */
	return random_chars(out, COVED_ID_LEN, "abcdefghijklmnopqrstuvwxyz0123456789", 36);
}

static int new_token(char *out)
{
	return random_chars(out, COVED_TOKEN_LEN, "0123456789abcdef", 16);
}

/* ---- references ---- */

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
	if (!sb->envs || !sb->metadata) {
		coved_sb_free(sb);
		return NULL;
	}
	return sb;
}

struct coved_sb *coved_sb_find(struct coved *d, const char *id)
{
	if (!id)
		return NULL;
	pthread_mutex_lock(&d->mu);
	struct coved_sb *sb = d->list;
	while (sb && strcmp(sb->id, id) != 0)
		sb = sb->next;
	if (sb)
		coved_sb_ref(sb);
	pthread_mutex_unlock(&d->mu);
	return sb;
}

/* ---- tenants ---- */

int coved_tenants_init(struct coved *d)
{
	d->tenants = calloc(d->nkeys ? d->nkeys : 1, sizeof(*d->tenants));
	if (!d->tenants)
		return -ENOMEM;
	d->ntenants = 0;
	for (size_t i = 0; i < d->nkeys; i++) {
		struct coved_tenant *t = coved_tenant_find(d, d->keys[i].tenant);
		if (!t) {
			t = &d->tenants[d->ntenants++];
			snprintf(t->name, sizeof(t->name), "%s", d->keys[i].tenant);
			coved_config_quota(&d->cfg, t->name, &t->q);
		}
		d->keys[i].t = t;
	}
	const char *k;
	json_t *v;
	json_object_foreach(d->cfg.tenants, k, v)
	{
		if (!coved_tenant_find(d, k))
			fprintf(stderr,
			        "coved: config tenants.%s: no key of the keys file is of it\n", k);
	}
	return 0;
}

struct coved_tenant *coved_tenant_find(struct coved *d, const char *name)
{
	for (size_t i = 0; name && i < d->ntenants; i++)
		if (strcmp(d->tenants[i].name, name) == 0)
			return &d->tenants[i];
	return NULL;
}

bool coved_sb_owned(const struct coved_sb *sb, const struct coved_tenant *t)
{
	return t && strcmp(sb->tenant, t->name) == 0;
}

struct coved_sb *coved_sb_find_for(struct coved *d, const char *id, const struct coved_tenant *t)
{
	struct coved_sb *sb = coved_sb_find(d, id);
	if (sb && !coved_sb_owned(sb, t)) {
		coved_sb_unref(sb);
		return NULL;
	}
	return sb;
}

struct coved_sb **coved_sb_all(struct coved *d, size_t *n)
{
	pthread_mutex_lock(&d->mu);
	size_t c = 0;
	for (struct coved_sb *sb = d->list; sb; sb = sb->next)
		c++;
	struct coved_sb **all = calloc(c + 1, sizeof(*all));
	*n = 0;
	if (all)
		for (struct coved_sb *sb = d->list; sb; sb = sb->next)
			all[(*n)++] = coved_sb_ref(sb);
	pthread_mutex_unlock(&d->mu);
	return all;
}

size_t coved_sb_count_live(struct coved *d)
{
	size_t n = 0;
	pthread_mutex_lock(&d->mu);
	for (struct coved_sb *sb = d->list; sb; sb = sb->next)
		n += sb->state == COVED_SB_RUNNING || sb->state == COVED_SB_PAUSED;
	pthread_mutex_unlock(&d->mu);
	return n;
}

void coved_sb_list_add(struct coved *d, struct coved_sb *sb)
{
	pthread_mutex_lock(&d->mu);
	coved_sb_ref(sb);
	struct coved_sb **p = &d->list;
	/* Oldest first: the list order is the listing's order. */
	while (*p)
		p = &(*p)->next;
	sb->next = NULL;
	*p = sb;
	pthread_mutex_unlock(&d->mu);
}

static void list_remove(struct coved *d, struct coved_sb *sb)
{
	pthread_mutex_lock(&d->mu);
	for (struct coved_sb **p = &d->list; *p; p = &(*p)->next)
		if (*p == sb) {
			*p = sb->next;
			sb->removed = true;
			pthread_mutex_unlock(&d->mu);
			coved_sb_unref(sb);
			return;
		}
	pthread_mutex_unlock(&d->mu);
}

const char *coved_sb_id(const struct coved_sb *sb)
{
	return sb->id;
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

const char *const *coved_sb_envs(const struct coved_sb *sb)
{
	return (const char *const *)sb->envs;
}

/* Keeps an ended handle until the record goes: envd callers may still hold
 * it (coved_sb_cove's contract).  Called with sb->mu held. */
static void retire_handle(struct coved_sb *sb)
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

/* ---- create ---- */

/* Maps a templateID to an image path (malloc'ed) or a snapshot directory
 * (*snap set).  404 when there is no such template. */
/* The tenant a user snapshot belongs to (its meta file's "tenant"; one
 * from before tenants: the first tenant's) is t. */
static bool snap_owned(struct coved *d, const char *snapdir, const struct coved_tenant *t)
{
	char path[4300];
	snprintf(path, sizeof(path), "%s.json", snapdir);
	json_t *o = json_load_file(path, 0, NULL);
	const char *owner = json_string_value(json_object_get(o, "tenant"));
	if (!owner && d->ntenants)
		owner = d->tenants[0].name;
	bool ok = t && owner && strcmp(owner, t->name) == 0;
	json_decref(o);
	return ok;
}

static int resolve_template(struct coved *d, const struct coved_tenant *tenant, const char *tid,
                            char **image, char **snap, char *msg, size_t len)
{
	*image = *snap = NULL;
	const char *name = tid;
	if (strcmp(tid, "base") == 0)
		name = d->cfg.default_image;
	json_t *t = json_object_get(d->cfg.templates, tid);
	if (json_is_string(t))
		name = json_string_value(t);
	if (strncmp(tid, "snap-", 5) == 0) {
		char path[4200];
		struct stat st;
		snprintf(path, sizeof(path), "%s/snapshots/%s", d->cfg.state_dir, tid);
		if (stat(path, &st) == 0 && S_ISDIR(st.st_mode) && snap_owned(d, path, tenant)) {
			*snap = strdup(path);
			return *snap ? 0 : 500;
		}
		return errf(msg, len, 404, "snapshot '%s' not found", tid);
	}
	if (!json_is_string(t) && coved_template_named(d, tid))
		return 0; /* neither: a template of the store */
	char *p = cove_image_path(name);
	struct stat st;
	if (!p || stat(p, &st) < 0 || !S_ISREG(st.st_mode)) {
		free(p);
		errf(msg, len, 404, "template '%s' not found (no image '%s')", tid, name);
		return 404;
	}
	*image = p;
	return 0;
}

static int net_policy(struct coved *d, json_t *net_json, struct cove_net_policy *p,
                      const char ***allow, const char ***deny, char *msg, size_t len)
{
	*allow = *deny = NULL;
	memset(p, 0, sizeof(*p));
	bool internet = true, given = net_json != NULL;
	json_t *a = NULL, *dn = NULL;
	if (net_json) {
		json_t *ia = json_object_get(net_json, "allow_internet_access");
		if (json_is_boolean(ia))
			internet = json_is_true(ia);
		a = json_object_get(net_json, "allowOut");
		dn = json_object_get(net_json, "denyOut");
	}
	if (!d->cfg.network) {
		/* No NIC: "no internet" holds; anything else cannot. */
		if (given && (internet || json_array_size(a) > 0)) {
			errf(msg, len, 400,
			     "networking is off in coved's config (\"network\": false): only "
			     "allow_internet_access false can be honoured");
			return 400;
		}
		p->mode = COVE_NET_OFF;
		return 0;
	}
	size_t na = json_array_size(a), nd = json_array_size(dn);
	*allow = calloc(na + 1, sizeof(char *));
	*deny = calloc(nd + 1, sizeof(char *));
	if (!*allow || !*deny)
		return 500;
	bool deny_all = false;
	size_t k = 0;
	for (size_t i = 0; i < nd; i++) {
		const char *s = json_string_value(json_array_get(dn, i));
		if (strcmp(s, "0.0.0.0/0") == 0)
			deny_all = true;
		else
			(*deny)[k++] = s;
	}
	for (size_t i = 0; i < na; i++)
		(*allow)[i] = json_string_value(json_array_get(a, i));
	if (na > 0)
		p->mode = COVE_NET_RULES;
	else if (!internet || deny_all)
		p->mode = COVE_NET_NONE;
	else
		p->mode = COVE_NET_OPEN;
	p->allow = na ? *allow : NULL;
	p->deny = k ? *deny : NULL;
	return 0;
}

static json_t *net_json_of(const struct coved_net *n)
{
	if (!n->given)
		return NULL;
	json_t *o = json_object();
	if (n->internet_given)
		json_object_set_new(o, "allow_internet_access", json_boolean(n->internet));
	if (n->allow_out)
		json_object_set(o, "allowOut", n->allow_out);
	if (n->deny_out)
		json_object_set(o, "denyOut", n->deny_out);
	return o;
}

static int status_of(int r)
{
	return r == -EINVAL ? 400 : r == -ENOENT ? 404 : r == -ENOTSUP ? 400 : 500;
}

/* What tenant t holds: its running and paused sandboxes and what its
 * creates in flight will add.  Called with d->mu held. */
static void tenant_usage(struct coved *d, const struct coved_tenant *t, struct coved_usage *u)
{
	*u = t->inflight;
	for (struct coved_sb *sb = d->list; sb; sb = sb->next) {
		if (strcmp(sb->tenant, t->name) != 0 ||
		    (sb->state != COVED_SB_RUNNING && sb->state != COVED_SB_PAUSED))
			continue;
		u->sandboxes++;
		u->cpus += sb->cpus;
		u->memory_mib += sb->memory_mib;
	}
}

/* limit_ok() - the global limits, then tenant t's quota (t NULL: none).
 * On success one global create slot is taken (release d->creating) and
 * want is reserved for t (release it with limit_release). */
static bool limit_ok(struct coved *d, struct coved_tenant *t, const struct coved_usage *want,
                     char *msg, size_t len)
{
	if (want->sandboxes && coved_sb_count_live(d) >= d->cfg.max_sandboxes) {
		coved_metric_bump(d, &d->m.limit_sandboxes);
		errf(msg, len, 429, "coved holds its maximum of %u sandboxes (max_sandboxes)",
		     d->cfg.max_sandboxes);
		return false;
	}
	if (atomic_fetch_add(&d->creating, 1) >= d->cfg.max_creates) {
		atomic_fetch_sub(&d->creating, 1);
		coved_metric_bump(d, &d->m.limit_creates);
		errf(msg, len, 429, "%u sandboxes are being created already (max_creates)",
		     d->cfg.max_creates);
		return false;
	}
	if (!t)
		return true;
	pthread_mutex_lock(&d->mu);
	struct coved_usage u;
	tenant_usage(d, t, &u);
	int st = coved_quota_check(t->name, &t->q, &u, want, msg, len);
	if (st == 0) {
		t->inflight.sandboxes += want->sandboxes;
		t->inflight.creates += want->creates;
		t->inflight.cpus += want->cpus;
		t->inflight.memory_mib += want->memory_mib;
	}
	pthread_mutex_unlock(&d->mu);
	if (st) {
		atomic_fetch_sub(&d->creating, 1);
		coved_metric_bump(d, &d->m.limit_tenant);
		return false;
	}
	return true;
}

static void limit_release(struct coved *d, struct coved_tenant *t, const struct coved_usage *want)
{
	if (!t)
		return;
	pthread_mutex_lock(&d->mu);
	t->inflight.sandboxes -= want->sandboxes;
	t->inflight.creates -= want->creates;
	t->inflight.cpus -= want->cpus;
	t->inflight.memory_mib -= want->memory_mib;
	pthread_mutex_unlock(&d->mu);
}

static uint64_t clamp_timeout(struct coved *d, uint64_t t)
{
	if (t == 0)
		t = d->cfg.default_timeout_s;
	return t > d->cfg.max_timeout_s ? d->cfg.max_timeout_s : t;
}

/* Copies the snapshot chain a snapshot's meta file names. */
static void snap_chain_read(struct coved_sb *sb, const char *snapdir)
{
	char path[4300];
	snprintf(path, sizeof(path), "%s.json", snapdir);
	json_t *o = json_load_file(path, 0, NULL);
	size_t i;
	json_t *v;
	json_array_foreach(json_object_get(o, "chain"), i, v)
	{
		if (json_is_string(v))
			coved_sb_add_snap(sb, json_string_value(v));
	}
	json_decref(o);
}

int coved_sb_create(struct coved *d, struct coved_tenant *t, const struct coved_create *req,
                    struct coved_sb **out, char *msg, size_t len)
{
	*out = NULL;
	if (!t)
		return errf(msg, len, 401, "missing or invalid API key (X-API-KEY)");
	if (req->cpus > d->cfg.max_cpus || req->memory_mib > d->cfg.max_memory_mib) {
		errf(msg, len, 400, "cpuCount is at most %u and memoryMB at most %llu here",
		     d->cfg.max_cpus, (unsigned long long)d->cfg.max_memory_mib);
		return 400;
	}
	char *image, *snap;
	int st = resolve_template(d, t, req->template_id, &image, &snap, msg, len);
	if (st)
		return st;
	struct coved_usage want = { .sandboxes = 1,
		                    .creates = 1,
		                    .cpus = req->cpus ? req->cpus : d->cfg.cpus,
		                    .memory_mib =
		                        req->memory_mib ? req->memory_mib : d->cfg.memory_mib };
	bool reserved = false;
	struct coved_sb *sb = coved_sb_new(d);
	json_t *netj = net_json_of(&req->net);
	struct cove_net_policy pol;
	const char **allow = NULL, **deny = NULL;
	if (!sb) {
		st = 500;
		errf(msg, len, 500, "out of memory");
		goto out;
	}
	if ((st = net_policy(d, netj, &pol, &allow, &deny, msg, len)))
		goto out;
	if (!limit_ok(d, t, &want, msg, len)) {
		st = 429;
		goto out;
	}
	reserved = true;
	snprintf(sb->tenant, sizeof(sb->tenant), "%s", t->name);
	if (new_id(sb->id) < 0 || new_token(sb->token) < 0) {
		atomic_fetch_sub(&d->creating, 1);
		st = 500;
		errf(msg, len, 500, "getrandom failed");
		goto out;
	}
	sb->template_id = strdup(req->template_id);
	sb->image = image ? strdup(image) : NULL;
	if (req->metadata) {
		json_decref(sb->metadata);
		sb->metadata = json_deep_copy(req->metadata);
	}
	if (req->env_vars)
		coved_set_envs(sb, req->env_vars);
	sb->network = json_incref(netj);
	sb->cpus = req->cpus ? req->cpus : d->cfg.cpus;
	sb->memory_mib = req->memory_mib ? req->memory_mib : d->cfg.memory_mib;
	sb->on_timeout = req->auto_pause_given
	                     ? (req->auto_pause ? COVED_ON_TIMEOUT_PAUSE : COVED_ON_TIMEOUT_KILL)
	                     : d->cfg.on_timeout;
	uint64_t timeout = clamp_timeout(d, req->timeout_s);
	struct cove_config cfg;
	cove_config_defaults(&cfg);
	cfg.name = sb->id;
	cfg.hostname = "cove";
	cfg.detached = true;
	cfg.net_pool = d->net_pool;
	cfg.image = image;
	cfg.cpus = sb->cpus;
	cfg.memory_mib = sb->memory_mib;
	cfg.disk_size = d->cfg.disk_mib << 20;
	cfg.boot_timeout_ms = d->cfg.boot_timeout_s * 1000;
	cfg.net = pol;
	cfg.vmm_pool = d->pool; /* a pre-spawned VMM when one fits (pool.c) */
	char err[512];
	double t0 = mono_s();
	int r, tlock = -1;
	char *tdir = NULL;
	if (!snap && (st = coved_template_for(d, req->template_id, &cfg, netj != NULL, &tdir,
	                                      &tlock, msg, len)) > 1) {
		atomic_fetch_sub(&d->creating, 1);
		goto out;
	}
	st = 0;
	if (tdir) {
		r = cove_restore(&cfg, tdir, &sb->cove, err, sizeof(err));
		close(tlock);
		free(tdir);
	} else if (snap) {
		snap_chain_read(sb, snap);
		coved_sb_add_snap(sb, snap);
		if (!netj)
			cfg.net.mode = COVE_NET_OFF; /* the snapshot's own policy */
		r = cove_restore(&cfg, snap, &sb->cove, err, sizeof(err));
	} else {
		r = cove_start(&cfg, &sb->cove, err, sizeof(err));
	}
	atomic_fetch_sub(&d->creating, 1);
	if (r < 0) {
		st = status_of(r);
		errf(msg, len, st, "%s", err);
		goto out;
	}
	coved_hist_add(d, snap ? &d->m.restore : &d->m.create, mono_s() - t0);
	sb->started_ms = coved_now_ms();
	sb->end_ms = sb->started_ms + (int64_t)timeout * 1000;
	sb->state = COVED_SB_RUNNING;
	coved_record_write(sb);
	coved_sb_list_add(d, sb);
	coved_journal_event(sb, "create",
	                    json_pack("{s:s, s:s?, s:I, s:i, s:I}", "templateID", sb->template_id,
	                              "image", sb->image, "timeout", (json_int_t)timeout, "cpus",
	                              (int)sb->cpus, "memoryMiB", (json_int_t)sb->memory_mib));
	*out = sb;
	sb = NULL;
	st = 0;
out:
	/* Released after the list holds the new sandbox: for a moment it is
	 * counted twice, never not at all. */
	if (reserved)
		limit_release(d, t, &want);
	free(allow);
	free(deny);
	free(image);
	free(snap);
	json_decref(netj);
	if (sb)
		coved_sb_free(sb);
	return st;
}

/* ---- lifecycle ---- */

int coved_sb_pause(struct coved_sb *sb, char *msg, size_t len)
{
	struct coved *d = sb->d;
	pthread_mutex_lock(&sb->op);
	int st = 0;
	if (sb->removed) {
		st = errf(msg, len, 404, "sandbox %s not found", sb->id);
		goto out;
	}
	if (sb->state != COVED_SB_RUNNING) {
		st = errf(msg, len, 409, "sandbox %s is %s, not running", sb->id,
		          coved_state_name(sb->state));
		goto out;
	}
	char dir[4200], err[512];
	snprintf(dir, sizeof(dir), "%s/snapshots/%s.%u", d->cfg.state_dir, sb->id,
	         sb->generation + 1);
	double t0 = mono_s();
	int r = cove_snapshot(sb->cove, dir, true, err, sizeof(err));
	if (r < 0) {
		char why[600];
		if (cove_sandbox_exited(sb->cove, 0, why, sizeof(why))) {
			coved_mark_dead(sb, why);
			st = errf(msg, len, 409, "pause of %s failed (%s) and the sandbox died: %s",
			          sb->id, err, why);
		} else {
			st = errf(msg, len, 500, "pause of %s failed: %s", sb->id, err);
		}
		goto out;
	}
	pthread_mutex_lock(&sb->mu);
	sb->generation++;
	coved_sb_add_snap(sb, dir);
	free(sb->paused_dir);
	sb->paused_dir = strdup(dir);
	sb->state = COVED_SB_PAUSED;
	retire_handle(sb);
	pthread_mutex_unlock(&sb->mu);
	coved_record_write(sb);
	coved_journal_event(sb, "pause",
	                    json_pack("{s:s, s:I}", "snapshot", dir, "duration_ms",
	                              (json_int_t)((mono_s() - t0) * 1000)));
out:
	pthread_mutex_unlock(&sb->op);
	return st;
}

int coved_sb_resume(struct coved_sb *sb, uint64_t timeout_s, bool *resumed, char *msg, size_t len)
{
	struct coved *d = sb->d;
	*resumed = false;
	pthread_mutex_lock(&sb->op);
	int st = 0;
	uint64_t timeout = clamp_timeout(d, timeout_s);
	if (sb->removed) {
		st = errf(msg, len, 404, "sandbox %s not found", sb->id);
		goto out;
	}
	if (sb->state == COVED_SB_RUNNING) {
		if (timeout_s) {
			pthread_mutex_lock(&sb->mu);
			int64_t end = coved_now_ms() + (int64_t)timeout * 1000;
			if (end > sb->end_ms)
				sb->end_ms = end;
			pthread_mutex_unlock(&sb->mu);
			coved_record_write(sb);
		}
		goto out;
	}
	if (sb->state != COVED_SB_PAUSED) {
		st = errf(msg, len, 409, "sandbox %s is %s: it cannot be resumed", sb->id,
		          coved_state_name(sb->state));
		goto out;
	}
	/* The paused sandbox is counted already: only a create slot more. */
	struct coved_tenant *t = coved_tenant_find(d, sb->tenant);
	const struct coved_usage want = { .creates = 1 };
	if (!limit_ok(d, t, &want, msg, len)) {
		st = 429;
		goto out;
	}
	struct cove_config cfg;
	cove_config_defaults(&cfg);
	cfg.name = sb->id;
	cfg.hostname = "cove";
	cfg.detached = true;
	cfg.net_pool = d->net_pool;
	cfg.boot_timeout_ms = d->cfg.boot_timeout_s * 1000;
	cfg.vmm_pool = d->pool;
	char err[512];
	double t0 = mono_s();
	struct cove_sandbox *c;
	int r = cove_restore(&cfg, sb->paused_dir, &c, err, sizeof(err));
	atomic_fetch_sub(&d->creating, 1);
	limit_release(d, t, &want);
	if (r < 0) {
		st = status_of(r) == 400 ? 500 : status_of(r);
		errf(msg, len, st, "resume of %s failed: %s", sb->id, err);
		goto out;
	}
	coved_hist_add(d, &d->m.restore, mono_s() - t0);
	pthread_mutex_lock(&sb->mu);
	sb->cove = c;
	sb->state = COVED_SB_RUNNING;
	sb->end_ms = coved_now_ms() + (int64_t)timeout * 1000;
	pthread_mutex_unlock(&sb->mu);
	coved_record_write(sb);
	coved_journal_event(sb, "resume",
	                    json_pack("{s:s, s:I}", "snapshot", sb->paused_dir, "duration_ms",
	                              (json_int_t)((mono_s() - t0) * 1000)));
	*resumed = true;
out:
	pthread_mutex_unlock(&sb->op);
	return st;
}

int coved_sb_set_timeout(struct coved_sb *sb, uint64_t timeout_s, char *msg, size_t len)
{
	(void)msg;
	(void)len;
	uint64_t t = clamp_timeout(sb->d, timeout_s);
	pthread_mutex_lock(&sb->mu);
	sb->end_ms = coved_now_ms() + (int64_t)t * 1000;
	pthread_mutex_unlock(&sb->mu);
	coved_record_write(sb);
	coved_journal_event(sb, "timeout", json_pack("{s:I}", "timeout", (json_int_t)t));
	return 0;
}

int coved_sb_stop(struct coved_sb *sb, char *msg, size_t len)
{
	pthread_mutex_lock(&sb->op);
	int st = 0;
	if (sb->removed) {
		st = errf(msg, len, 404, "sandbox %s not found", sb->id);
	} else if (sb->state == COVED_SB_RUNNING || sb->state == COVED_SB_PAUSED) {
		if (sb->state == COVED_SB_RUNNING)
			cove_stop(sb->cove);
		pthread_mutex_lock(&sb->mu);
		sb->state = COVED_SB_STOPPED;
		retire_handle(sb);
		pthread_mutex_unlock(&sb->mu);
		coved_record_write(sb);
		coved_journal_event(sb, "stop", NULL);
	}
	pthread_mutex_unlock(&sb->op);
	return st;
}

static int rm_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st;
	(void)type;
	(void)ftw;
	return remove(path) < 0 ? 0 : 0;
}

/* Whether another record or a user snapshot's chain still needs dir. */
static bool dir_in_use(struct coved *d, const char *dir, const struct coved_sb *except)
{
	bool used = false;
	pthread_mutex_lock(&d->mu);
	for (struct coved_sb *o = d->list; o && !used; o = o->next) {
		if (o == except)
			continue;
		for (size_t i = 0; i < o->nsnaps && !used; i++)
			used = strcmp(o->snaps[i], dir) == 0;
	}
	pthread_mutex_unlock(&d->mu);
	if (used)
		return true;
	char sdir[4200];
	snprintf(sdir, sizeof(sdir), "%s/snapshots", d->cfg.state_dir);
	DIR *dp = opendir(sdir);
	struct dirent *de;
	while (dp && !used && (de = readdir(dp))) {
		size_t l = strlen(de->d_name);
		if (strncmp(de->d_name, "snap-", 5) != 0 || l < 6 ||
		    strcmp(de->d_name + l - 5, ".json") != 0)
			continue;
		char path[4500];
		snprintf(path, sizeof(path), "%s/%s", sdir, de->d_name);
		json_t *o = json_load_file(path, 0, NULL);
		size_t i;
		json_t *v;
		json_array_foreach(json_object_get(o, "chain"), i, v)
		{
			used |= json_is_string(v) && strcmp(json_string_value(v), dir) == 0;
		}
		json_decref(o);
	}
	if (dp)
		closedir(dp);
	return used;
}

int coved_sb_delete(struct coved_sb *sb, char *msg, size_t len)
{
	struct coved *d = sb->d;
	pthread_mutex_lock(&sb->op);
	if (sb->removed) {
		pthread_mutex_unlock(&sb->op);
		return errf(msg, len, 404, "sandbox %s not found", sb->id);
	}
	if (sb->state == COVED_SB_RUNNING)
		cove_stop(sb->cove);
	pthread_mutex_lock(&sb->mu);
	sb->state = COVED_SB_STOPPED;
	retire_handle(sb);
	pthread_mutex_unlock(&sb->mu);
	list_remove(d, sb);
	coved_record_remove(sb);
	/* User snapshots (snap-*) outlive their sandbox; the rest go when no
	 * one stands on them. */
	char user[4200];
	snprintf(user, sizeof(user), "%s/snapshots/snap-", d->cfg.state_dir);
	for (size_t i = sb->nsnaps; i-- > 0;)
		if (strncmp(sb->snaps[i], user, strlen(user)) != 0 &&
		    !dir_in_use(d, sb->snaps[i], sb))
			nftw(sb->snaps[i], rm_one, 16, FTW_DEPTH | FTW_PHYS);
	coved_journal_event(sb, "delete", NULL);
	pthread_mutex_unlock(&sb->op);
	return 0;
}

int coved_sb_set_network(struct coved_sb *sb, const struct coved_net *net, char *msg, size_t len)
{
	pthread_mutex_lock(&sb->op);
	int st = 0;
	json_t *netj = net_json_of(net);
	if (!netj)
		netj = json_object();
	struct cove_net_policy pol;
	const char **allow = NULL, **deny = NULL;
	if (sb->state != COVED_SB_RUNNING) {
		st = errf(msg, len, 409, "sandbox %s is %s, not running", sb->id,
		          coved_state_name(sb->state));
		goto out;
	}
	if ((st = net_policy(sb->d, netj, &pol, &allow, &deny, msg, len)))
		goto out;
	char err[512];
	int r = cove_net_set(sb->cove, &pol, err, sizeof(err));
	if (r < 0) {
		st = r == -EINVAL || r == -ENOTSUP ? 400 : 500;
		errf(msg, len, st, "%s", err);
		goto out;
	}
	pthread_mutex_lock(&sb->mu);
	json_decref(sb->network);
	sb->network = json_incref(netj);
	pthread_mutex_unlock(&sb->mu);
	coved_record_write(sb);
	coved_journal_event(sb, "network", json_pack("{s:O}", "policy", netj));
out:
	free(allow);
	free(deny);
	json_decref(netj);
	pthread_mutex_unlock(&sb->op);
	return st;
}

/* Snapshot with resume into <state>/snapshots/<prefix><random>. */
static int snapshot_to(struct coved_sb *sb, const char *prefix, char *path, size_t plen, char *name,
                       size_t nlen, char *msg, size_t len)
{
	char rnd[17];
	if (random_chars(rnd, 16, "abcdefghijklmnopqrstuvwxyz0123456789", 36) < 0)
		return errf(msg, len, 500, "getrandom failed");
	snprintf(name, nlen, "%s%s", prefix, rnd);
	snprintf(path, plen, "%s/snapshots/%s", sb->d->cfg.state_dir, name);
	if (sb->state != COVED_SB_RUNNING)
		return errf(msg, len, 409, "sandbox %s is %s, not running", sb->id,
		            coved_state_name(sb->state));
	char err[512];
	int r = cove_snapshot(sb->cove, path, false, err, sizeof(err));
	if (r < 0)
		return errf(msg, len, 500, "snapshot of %s failed: %s", sb->id, err);
	/* The sandbox now stands on the snapshot's overlay too. */
	pthread_mutex_lock(&sb->mu);
	coved_sb_add_snap(sb, path);
	pthread_mutex_unlock(&sb->mu);
	json_t *meta =
	    json_pack("{s:s, s:s, s:s?, s:o}", "source", sb->id, "tenant", sb->tenant, "templateID",
	              sb->template_id, "chain", coved_str_list(sb->snaps, sb->nsnaps - 1));
	char *text = json_dumps(meta, JSON_COMPACT);
	json_decref(meta);
	char dir[4200], file[128];
	snprintf(dir, sizeof(dir), "%s/snapshots", sb->d->cfg.state_dir);
	snprintf(file, sizeof(file), "%s.json", name);
	if (text)
		coved_write_atomic(dir, file, text);
	free(text);
	coved_record_write(sb);
	return 0;
}

int coved_sb_snapshot(struct coved_sb *sb, char *snap_id, size_t idlen, char *msg, size_t len)
{
	pthread_mutex_lock(&sb->op);
	char path[4300];
	int st = snapshot_to(sb, "snap-", path, sizeof(path), snap_id, idlen, msg, len);
	if (st == 0)
		coved_journal_event(sb, "snapshot", json_pack("{s:s}", "snapshotID", snap_id));
	pthread_mutex_unlock(&sb->op);
	return st;
}

struct fork_job {
	struct coved *d;
	struct coved_tenant *t;
	struct coved_create req;
	struct coved_sb *parent, *child;
	int st;
	char msg[600];
};

static void *fork_one(void *arg)
{
	struct fork_job *j = arg;
	j->st = coved_sb_create(j->d, j->t, &j->req, &j->child, j->msg, sizeof(j->msg));
	return NULL;
}

int coved_sb_fork(struct coved_sb *sb, unsigned int count, uint64_t timeout_s, json_t **results,
                  char *msg, size_t len)
{
	*results = NULL;
	pthread_mutex_lock(&sb->op);
	char path[4300], name[64];
	int st = snapshot_to(sb, "snap-", path, sizeof(path), name, sizeof(name), msg, len);
	pthread_mutex_unlock(&sb->op);
	if (st)
		return st;
	coved_journal_event(sb, "fork",
	                    json_pack("{s:s, s:i}", "snapshotID", name, "count", (int)count));
	struct fork_job *jobs = calloc(count, sizeof(*jobs));
	pthread_t *th = calloc(count, sizeof(*th));
	bool *started = calloc(count, sizeof(*started));
	if (!jobs || !th || !started) {
		free(jobs);
		free(th);
		free(started);
		return errf(msg, len, 500, "out of memory");
	}
	for (unsigned int i = 0; i < count; i++) {
		struct fork_job *j = &jobs[i];
		j->d = sb->d;
		j->t = coved_tenant_find(sb->d, sb->tenant); /* forks are the parent's tenant's */
		snprintf(j->req.template_id, sizeof(j->req.template_id), "%s", name);
		j->req.timeout_s = timeout_s;
		pthread_mutex_lock(&sb->mu);
		j->req.metadata = json_deep_copy(sb->metadata);
		j->req.env_vars = coved_envs_object(sb);
		j->req.auto_pause = sb->on_timeout == COVED_ON_TIMEOUT_PAUSE;
		pthread_mutex_unlock(&sb->mu);
		j->req.auto_pause_given = true;
		started[i] = pthread_create(&th[i], NULL, fork_one, j) == 0;
		if (!started[i]) {
			j->st = 500;
			snprintf(j->msg, sizeof(j->msg), "cannot start a thread");
		}
	}
	json_t *arr = json_array();
	for (unsigned int i = 0; i < count; i++) {
		struct fork_job *j = &jobs[i];
		if (started[i])
			pthread_join(th[i], NULL);
		if (j->st == 0) {
			pthread_mutex_lock(&j->child->mu);
			free(j->child->template_id);
			j->child->template_id = sb->template_id ? strdup(sb->template_id) : NULL;
			pthread_mutex_unlock(&j->child->mu);
			coved_record_write(j->child);
			json_array_append_new(
			    arr, json_pack("{s:o}", "sandbox", coved_sb_json(j->child, true)));
			coved_sb_unref(j->child);
		} else {
			json_array_append_new(arr, json_pack("{s:{s:i, s:s}}", "error", "code",
			                                     j->st, "message", j->msg));
		}
		coved_create_free(&j->req);
	}
	free(jobs);
	free(th);
	free(started);
	*results = arr;
	return 0;
}

/* ---- the reaper ---- */

void coved_sb_tick(struct coved *d)
{
	size_t n;
	struct coved_sb **all = coved_sb_all(d, &n);
	int64_t now = coved_now_ms();
	for (size_t i = 0; all && i < n; i++) {
		struct coved_sb *sb = all[i];
		/* A long operation holds op: the next tick looks again. */
		if (pthread_mutex_trylock(&sb->op) != 0) {
			coved_sb_unref(sb);
			continue;
		}
		bool running = sb->state == COVED_SB_RUNNING && sb->cove;
		char why[600];
		bool died = running && cove_sandbox_exited(sb->cove, 0, why, sizeof(why));
		bool expired = running && !died && sb->end_ms <= now;
		if (died) {
			cove_stop(sb->cove); /* removes its registry entry */
			coved_mark_dead(sb, why);
		}
		pthread_mutex_unlock(&sb->op);
		if (expired) {
			char msg[600];
			coved_journal_event(
			    sb, "expired",
			    json_pack("{s:s}", "action",
			              sb->on_timeout == COVED_ON_TIMEOUT_PAUSE ? "pause" : "kill"));
			int st = sb->on_timeout == COVED_ON_TIMEOUT_PAUSE
			             ? coved_sb_pause(sb, msg, sizeof(msg))
			             : coved_sb_delete(sb, msg, sizeof(msg));
			if (st)
				fprintf(stderr, "coved: expiry of %s: %s\n", sb->id, msg);
		}
		coved_sb_unref(sb);
	}
	free(all);
}
