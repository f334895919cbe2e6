/* coved's cluster mode: the node's life in the cluster (cluster.h). */
#include "daemon/cluster/cluster.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "daemon/cluster/etcd.h"
#include "daemon/cluster/forward.h"
#include "daemon/cluster/fwd_pool.h"
#include "daemon/cluster/view.h"
#include "daemon/sandboxes/lifecycle.h"
#include "daemon/sandboxes/record.h"
#include "daemon/sandboxes/sandbox.h"
#include "daemon/sandboxes/state.h"
#include "daemon/sandboxes/table.h"
#include "errf.h"
#include "lib/base/jail.h"
#include "lib/net/net_addr.h"

#define ETCD_TIMEOUT_MS 3000
#define COVED_VERSION   "0.28"

__attribute__((format(printf, 1, 2))) static void log_line(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "coved: cluster: ");
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

/* ---- the directory follows the records --------------------------------- */

static void want_of(struct coved_cluster *cl, const struct coved_dir_note *n, struct cl_dir *w)
{
	memset(w, 0, sizeof(*w));
	snprintf(w->node, sizeof(w->node), "%s", cl->cfg->node_id);
	snprintf(w->state, sizeof(w->state), "%s", n->state);
	snprintf(w->tenant, sizeof(w->tenant), "%s", n->tenant);
	snprintf(w->template_id, sizeof(w->template_id), "%s", n->template_id);
	w->vcpus = n->cpus;
	w->memory_mib = n->memory_mib;
	snprintf(w->reason, sizeof(w->reason), "%s", n->reason);
	w->shared = n->shared;
}

/* One record into the directory; a failure leaves it for the next tick. */
static void follow(struct coved *d, const struct coved_dir_note *n)
{
	struct coved_cluster *cl = d->cluster;
	if (!cl)
		return;
	struct cl_dir w;
	char err[300];
	if (n->state)
		want_of(cl, n, &w);
	int r = cl_dir_set(&cl->dir, n->id, n->state ? &w : NULL, true, err, sizeof(err));
	if (r < 0 && r != -EPERM) {
		log_line("directory write of %s: %s (tried again later)", n->id, err);
		pthread_mutex_lock(&cl->mu);
		cl->resync = true;
		pthread_mutex_unlock(&cl->mu);
	}
}

/* Every local record against the directory: a record the directory says
 * is dead or another node's is fenced here (never resurrected); the rest
 * are written where they differ.  Return: 0, or -errno (etcd away). */
static int reconcile(struct coved_cluster *cl)
{
	size_t n;
	struct coved_sb **all = coved_sb_all(cl->d, &n);
	int ret = all ? 0 : -ENOMEM;
	for (size_t i = 0; all && i < n; i++) {
		struct coved_dir_note note;
		coved_sb_dir_note(all[i], &note);
		cl_dir_forget(&cl->dir, note.id); /* read it fresh */
		struct cl_dir rec;
		enum cl_where w = cl_dir_lookup(&cl->dir, note.id, &rec, NULL, 0);
		bool live = strcmp(note.state, "running") == 0 || strcmp(note.state, "paused") == 0;
		if (w == CL_UNKNOWN) {
			ret = -EAGAIN;
		} else if (live && (w == CL_THERE ||
		                    (w == CL_LOST && strcmp(rec.node, cl->cfg->node_id)))) {
			log_line("%s belongs to node %s now: dropped here", note.id, rec.node);
			coved_sb_forget(all[i]);
		} else if (live && w == CL_LOST) {
			coved_sb_fence(all[i], rec.reason[0] ? rec.reason : "node lost");
		} else {
			follow(cl->d, &note);
		}
		coved_sb_unref(all[i]);
	}
	free(all);
	char err[300];
	if (ret == 0 && cl_alloc_settle(&cl->dir, err, sizeof(err)) < 0)
		ret = -EAGAIN;
	return ret;
}

/* ---- the node record -------------------------------------------------- */

/* The directories under dir whose names pass keep, into r's templates. */
static void names_in(const char *dir, bool snaps, struct cl_node_rec *r)
{
	DIR *dp = dir ? opendir(dir) : NULL;
	struct dirent *de;
	while (dp && r->ntemplates < CL_TEMPLATES && (de = readdir(dp))) {
		if (de->d_name[0] == '.' || strlen(de->d_name) > 128 ||
		    (snaps != (strncmp(de->d_name, "snap-", 5) == 0)))
			continue;
		char p[4400];
		struct stat st;
		snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
		if (stat(p, &st) == 0 && S_ISDIR(st.st_mode) &&
		    (r->templates[r->ntemplates] = strdup(de->d_name)))
			r->ntemplates++;
	}
	if (dp)
		closedir(dp);
}

/* What creates can start from here: the store's templates and the user
 * snapshots (snap-*), which placement prefers, or for a snapshot needs. */
static void templates_of(struct coved_cluster *cl, struct cl_node_rec *r)
{
	char snaps[4200];
	snprintf(snaps, sizeof(snaps), "%s/snapshots", cl->d->cfg.state_dir);
	names_in(cl->d->cfg.templates_dir, false, r);
	names_in(snaps, true, r);
}

/* "FIRST-LAST" from the environment (coved_config_setenv put the config's
 * there), else the default range. */
static void env_range(const char *name, uint64_t first, uint64_t last, uint64_t *a, uint64_t *b)
{
	const char *v = getenv(name);
	unsigned long long x, y;
	*a = first;
	*b = last;
	if (v && sscanf(v, "%llu-%llu", &x, &y) == 2 && x <= y) {
		*a = x;
		*b = y;
	}
}

/* What this node hands out on its host (records.h, cl_ranges_collide). */
static void ranges_of(struct coved_cluster *cl, struct cl_ranges *g)
{
	const char *rt = getenv("COVE_RUNTIME_DIR"), *cg = getenv("COVE_CGROUP_PARENT");
	memset(g, 0, sizeof(*g));
	g->given = true;
	snprintf(g->state_dir, sizeof(g->state_dir), "%s", cl->d->cfg.state_dir);
	snprintf(g->runtime_dir, sizeof(g->runtime_dir), "%s", rt ? rt : "");
	snprintf(g->cgroup_parent, sizeof(g->cgroup_parent), "%s", cg ? cg : "");
	env_range("COVE_JAIL_IDS", JAIL_IDS_FIRST, JAIL_IDS_FIRST + JAIL_IDS_COUNT - 1,
	          &g->jail_first, &g->jail_last);
	env_range("COVE_NET_INDEXES", 0, NET_INDEX_MAX, &g->net_first, &g->net_last);
}

/* Another live node on this host that would hand out what this one does,
 * or this node's id live with another address: coved does not start. */
static int collisions(struct coved_cluster *cl, char *err, size_t errlen)
{
	struct cl_ranges mine;
	ranges_of(cl, &mine);
	char why[300];
	int r = 0;
	pthread_mutex_lock(&cl->dir.mu);
	for (size_t i = 0; !r && i < cl->dir.nnodes; i++) {
		const struct cl_vnode *x = &cl->dir.nodes[i];
		bool me = strcmp(x->rec.id, cl->cfg->node_id) == 0;
		if (!x->live)
			continue;
		if (me && strcmp(x->rec.addr, cl->cfg->advertise) != 0)
			r = errf(err, errlen, -EEXIST, "node id %s is live already, at %s",
			         cl->cfg->node_id, x->rec.addr);
		else if (!me && strcmp(x->rec.host, cl->host) == 0 &&
		         cl_ranges_collide(&mine, &x->rec.ranges, why, sizeof(why)))
			r = errf(err, errlen, -EEXIST,
			         "node %s on this host (%s) has %s: give each node its own "
			         "(config runtime_dir, cgroup_parent, jail_ids, net_indexes)",
			         x->rec.id, cl->host, why);
	}
	pthread_mutex_unlock(&cl->dir.mu);
	return r;
}

static char *node_json(struct coved_cluster *cl)
{
	struct cl_node_rec r = { 0 };
	snprintf(r.id, sizeof(r.id), "%s", cl->cfg->node_id);
	snprintf(r.addr, sizeof(r.addr), "%s", cl->cfg->advertise);
	snprintf(r.version, sizeof(r.version), "%s", COVED_VERSION);
	snprintf(r.host, sizeof(r.host), "%s", cl->host);
	r.vcpus = cl->cfg->cap_vcpus;
	r.memory_mib = cl->cfg->cap_memory_mib;
	size_t n;
	struct coved_sb **all = coved_sb_all(cl->d, &n);
	for (size_t i = 0; all && i < n; i++) {
		struct coved_dir_note note;
		coved_sb_dir_note(all[i], &note);
		r.running += strcmp(note.state, "running") == 0;
		r.paused += strcmp(note.state, "paused") == 0;
		coved_sb_unref(all[i]);
	}
	free(all);
	templates_of(cl, &r);
	ranges_of(cl, &r.ranges);
	char *s = cl_node_encode(&r);
	cl_node_clear(&r);
	return s;
}

/* Writes the node record under the lease when it changed (or force). */
static int node_put(struct coved_cluster *cl, bool force, char *err, size_t errlen)
{
	char *s = node_json(cl);
	if (!s)
		return -ENOMEM;
	pthread_mutex_lock(&cl->put_mu);
	int r = 0;
	if (force || !cl->node_json || strcmp(s, cl->node_json) != 0) {
		char key[80];
		snprintf(key, sizeof(key), CL_PREFIX_NODES "%s", cl->cfg->node_id);
		pthread_mutex_lock(&cl->mu);
		int64_t lease = cl->lease;
		pthread_mutex_unlock(&cl->mu);
		r = etcd_put(cl->e, key, s, strlen(s), lease, err, errlen);
		if (r == 0) {
			free(cl->node_json);
			cl->node_json = s;
			s = NULL;
		}
	}
	pthread_mutex_unlock(&cl->put_mu);
	free(s);
	return r;
}

/* ---- reservations to undo -------------------------------------------- */

int coved_cluster_unreserve(struct coved_cluster *cl, const char *id, bool mine, char *err,
                            size_t errlen)
{
	int r = cl_dir_set(&cl->dir, id, NULL, mine, err, errlen);
	if (r == 0 || r == -EPERM || strlen(id) > COVED_ID_LEN)
		return r;
	pthread_mutex_lock(&cl->mu);
	if (cl->nunreleased < CL_UNRELEASED_MAX) {
		snprintf(cl->unreleased[cl->nunreleased].id, COVED_ID_LEN + 1, "%s", id);
		cl->unreleased[cl->nunreleased++].mine = mine;
	}
	pthread_mutex_unlock(&cl->mu);
	return r;
}

/* The releases etcd missed, once more each (a failure queues it again). */
static void unreserve_again(struct coved_cluster *cl)
{
	struct cl_unreleased todo[CL_UNRELEASED_MAX];
	pthread_mutex_lock(&cl->mu);
	size_t n = cl->nunreleased;
	memcpy(todo, cl->unreleased, n * sizeof(todo[0]));
	cl->nunreleased = 0;
	pthread_mutex_unlock(&cl->mu);
	char err[300];
	for (size_t i = 0; i < n; i++)
		if (coved_cluster_unreserve(cl, todo[i].id, todo[i].mine, err, sizeof(err)) == 0)
			log_line("released %s's reservation", todo[i].id);
}

/* ---- the lease -------------------------------------------------------- */

static void lease_path(struct coved_cluster *cl, char *p, size_t n)
{
	snprintf(p, n, "%s/cluster.lease", cl->d->cfg.state_dir);
}

static void lease_save(struct coved_cluster *cl)
{
	char p[4200], tmp[4300];
	lease_path(cl, p, sizeof(p));
	snprintf(tmp, sizeof(tmp), "%s.tmp", p);
	FILE *f = fopen(tmp, "we");
	if (f && fprintf(f, "%" PRId64 "\n", cl->lease) > 0 && fclose(f) == 0)
		rename(tmp, p);
	else if (f)
		fclose(f);
}

/* The lease of a coved that ran before us, if it is still alive: a quick
 * restart keeps the node's key (and its sandboxes) without a gap. */
static int64_t lease_reuse(struct coved_cluster *cl)
{
	char p[4200];
	lease_path(cl, p, sizeof(p));
	FILE *f = fopen(p, "re");
	int64_t id = 0, ttl = 0;
	if (!f)
		return 0;
	if (fscanf(f, "%" SCNd64, &id) != 1)
		id = 0;
	fclose(f);
	char err[256];
	return id > 0 && etcd_lease_keepalive(cl->e, id, &ttl, err, sizeof(err)) == 0 && ttl > 0
	           ? id
	           : 0;
}

static void fence(struct coved_cluster *cl, const char *why)
{
	pthread_mutex_lock(&cl->mu);
	if (!cl->fenced)
		log_line("fenced: %s (no creates until etcd answers)", why);
	cl->fenced = true;
	snprintf(cl->why, sizeof(cl->why), "%s", why);
	pthread_mutex_unlock(&cl->mu);
}

/* One renewal, or a new lease and registration once the old is gone. */
static void renew(struct coved_cluster *cl)
{
	char err[300];
	int64_t ttl = 0, now = wall_ms();
	int r =
	    cl->lease ? etcd_lease_keepalive(cl->e, cl->lease, &ttl, err, sizeof(err)) : -ENOENT;
	if (r == -ENOENT || (r == 0 && ttl <= 0)) {
		bool had = cl->lease != 0;
		int64_t id;
		r = etcd_lease_grant(cl->e, cl->cfg->lease_ttl_s, &id, err, sizeof(err));
		if (r == 0) {
			pthread_mutex_lock(&cl->mu);
			cl->lease = id;
			pthread_mutex_unlock(&cl->mu);
			lease_save(cl);
			r = node_put(cl, true, err, sizeof(err));
		}
		if (r == 0) {
			if (had)
				log_line("lease was lost; registered again with a new one");
			pthread_mutex_lock(&cl->mu);
			cl->resync = true;
			pthread_mutex_unlock(&cl->mu);
		}
	}
	if (r == 0) {
		pthread_mutex_lock(&cl->mu);
		cl->renewed_ms = now;
		if (cl->fenced)
			log_line("lease renewed: accepting creates again");
		cl->fenced = false;
		cl->why[0] = 0;
		pthread_mutex_unlock(&cl->mu);
		return;
	}
	pthread_mutex_lock(&cl->mu);
	bool late = now - cl->renewed_ms > (int64_t)cl->cfg->lease_ttl_s * 1000;
	pthread_mutex_unlock(&cl->mu);
	if (late) {
		char why[sizeof(cl->why)];
		snprintf(why, sizeof(why), "cannot renew the etcd lease: %.200s", err);
		fence(cl, why);
	}
}

static void tick(struct coved_cluster *cl)
{
	char err[300];
	pthread_mutex_lock(&cl->mu);
	bool fenced = cl->fenced;
	pthread_mutex_unlock(&cl->mu);
	if (fenced)
		return;
	unreserve_again(cl);
	if (node_put(cl, false, err, sizeof(err)) < 0)
		log_line("node record: %s", err);
	if (cl_view_refresh(&cl->dir, err, sizeof(err)) < 0)
		return;
	int marked = cl_dir_scan(&cl->dir, err, sizeof(err));
	if (marked > 0)
		fprintf(stderr, "coved: cluster: %d sandboxes of lost nodes marked dead\n", marked);
	pthread_mutex_lock(&cl->mu);
	bool resync = cl->resync;
	cl->resync = false;
	pthread_mutex_unlock(&cl->mu);
	if (resync && reconcile(cl) < 0) {
		pthread_mutex_lock(&cl->mu);
		cl->resync = true;
		pthread_mutex_unlock(&cl->mu);
	}
}

/* every() - calls fn every third of the TTL, counted from each call's
 * start (a slow call shortens the next wait), until the stop. */
static void every(struct coved_cluster *cl, void (*fn)(struct coved_cluster *))
{
	int64_t period_ms = (int64_t)cl->cfg->lease_ttl_s * 1000 / 3;
	int64_t next = mono_ms() + period_ms;
	pthread_mutex_lock(&cl->mu);
	while (!cl->stop) {
		int64_t left = next - mono_ms();
		if (left > 0) {
			struct timespec ts = clock_after_ms(CLOCK_MONOTONIC, left);
			pthread_cond_timedwait(&cl->cond, &cl->mu, &ts);
			continue; /* woken: look at stop and the time again */
		}
		next = mono_ms() + period_ms;
		pthread_mutex_unlock(&cl->mu);
		fn(cl);
		pthread_mutex_lock(&cl->mu);
	}
	pthread_mutex_unlock(&cl->mu);
}

static void *lease_run(void *arg)
{
	every(arg, renew);
	return NULL;
}

static void *dir_run(void *arg)
{
	every(arg, tick);
	return NULL;
}

int coved_cluster_start(struct coved *d, char *err, size_t errlen)
{
	const struct coved_cluster_config *cfg = &d->cfg.cluster;
	if (!cfg->on)
		return 0;
	struct coved_cluster *cl = calloc(1, sizeof(*cl));
	if (!cl)
		return errf(err, errlen, -ENOMEM, "out of memory");
	cl->d = d;
	cl->cfg = cfg;
	fwd_curl_init(); /* libcurl's global set-up, once, before any thread uses it */
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_mutex_init(&cl->mu, NULL);
	pthread_mutex_init(&cl->put_mu, NULL);
	pthread_cond_init(&cl->cond, &ca);
	pthread_condattr_destroy(&ca);
	if (gethostname(cl->host, sizeof(cl->host) - 1) < 0)
		snprintf(cl->host, sizeof(cl->host), "?");
	cl->e = etcd_new((const char *const *)cfg->etcd, cfg->netcd, ETCD_TIMEOUT_MS, err, errlen);
	if (!cl->e || cl_dir_init(&cl->dir, cl->e, cfg->node_id) < 0) {
		etcd_free(cl->e);
		free(cl);
		return -EINVAL;
	}
	cl->renewed_ms = wall_ms();
	char e2[300];
	int r = cl_view_refresh(&cl->dir, e2, sizeof(e2));
	if (r == 0)
		r = collisions(cl, err, errlen);
	else
		log_line("etcd cannot be read now (%s): the node starts fenced", e2);
	if (r == -EEXIST) {
		cl_dir_fini(&cl->dir);
		etcd_free(cl->e);
		free(cl);
		return r;
	}
	cl->lease = lease_reuse(cl);
	d->cluster = cl;
	atomic_store(&d->dir_hook, follow);
	if (cl->lease && node_put(cl, true, e2, sizeof(e2)) < 0)
		cl->lease = 0;
	renew(cl); /* a new lease when the old one is gone */
	if (cl->lease && cl_view_refresh(&cl->dir, e2, sizeof(e2)) == 0 && reconcile(cl) == 0)
		log_line("node %s joined (%s)", cfg->node_id, cfg->advertise);
	else
		cl->resync = true;
	bool lease_on = pthread_create(&cl->lease_thread, NULL, lease_run, cl) == 0;
	if (!lease_on || pthread_create(&cl->dir_thread, NULL, dir_run, cl) != 0) {
		if (lease_on) {
			pthread_mutex_lock(&cl->mu);
			cl->stop = true;
			pthread_cond_broadcast(&cl->cond);
			pthread_mutex_unlock(&cl->mu);
			pthread_join(cl->lease_thread, NULL);
		}
		atomic_store(&d->dir_hook, NULL);
		d->cluster = NULL;
		cl_dir_fini(&cl->dir);
		etcd_free(cl->e);
		free(cl);
		return errf(err, errlen, -EAGAIN, "cannot start the cluster thread");
	}
	return 0;
}

void coved_cluster_stop(struct coved *d)
{
	struct coved_cluster *cl = d->cluster;
	if (!cl)
		return;
	pthread_mutex_lock(&cl->mu);
	cl->stop = true;
	pthread_cond_broadcast(&cl->cond);
	pthread_mutex_unlock(&cl->mu);
	pthread_join(cl->lease_thread, NULL);
	pthread_join(cl->dir_thread, NULL);
	/* A record write that etcd missed is written now, while etcd answers:
	 * a node stopped for good must not leave a paused sandbox "running"
	 * in the directory (the lost-node scan would mark it dead). */
	pthread_mutex_lock(&cl->mu);
	bool resync = cl->resync && !cl->fenced && cl->lease;
	pthread_mutex_unlock(&cl->mu);
	if (resync && reconcile(cl) < 0)
		log_line("stopping with directory writes etcd did not take");
	/* The lease stays: a restart within the TTL keeps the node's key,
	 * and a node stopped for good is reaped as lost. */
	atomic_store(&d->dir_hook, NULL);
	d->cluster = NULL;
	fwd_pool_flush();
	cl_dir_fini(&cl->dir);
	etcd_free(cl->e);
	free(cl->node_json);
	pthread_cond_destroy(&cl->cond);
	pthread_mutex_destroy(&cl->put_mu);
	pthread_mutex_destroy(&cl->mu);
	free(cl);
}

bool coved_cluster_fenced(struct coved *d, char *why, size_t len)
{
	struct coved_cluster *cl = d->cluster;
	if (!cl)
		return false;
	pthread_mutex_lock(&cl->mu);
	bool f = cl->fenced || !cl->lease;
	snprintf(why, len, "%s", cl->why[0] ? cl->why : "this node holds no etcd lease yet");
	pthread_mutex_unlock(&cl->mu);
	return f;
}

json_t *coved_cluster_health(struct coved *d)
{
	char why[300];
	if (!d->cluster)
		return NULL;
	bool f = coved_cluster_fenced(d, why, sizeof(why));
	return json_pack("{s:s, s:s, s:s*}", "node", d->cluster->cfg->node_id, "lease",
	                 f ? "lost" : "ok", "reason", f ? why : NULL);
}

json_t *coved_cluster_status(struct coved *d)
{
	struct coved_cluster *cl = d->cluster;
	char err[300], why[300];
	if (!cl)
		return NULL;
	int r = cl_view_refresh(&cl->dir, err, sizeof(err));
	bool f = coved_cluster_fenced(d, why, sizeof(why));
	json_t *nodes = json_array();
	pthread_mutex_lock(&cl->dir.mu);
	for (size_t i = 0; i < cl->dir.nnodes; i++) {
		const struct cl_vnode *x = &cl->dir.nodes[i];
		json_t *t = json_array();
		for (size_t k = 0; k < x->rec.ntemplates; k++)
			json_array_append_new(t, json_string(x->rec.templates[k]));
		const char *state = !x->live ? "lost" : x->draining ? "draining" : "ready";
		json_array_append_new(
		    nodes,
		    json_pack("{s:s, s:s, s:s, s:s, s:b, s:b, s:I, s:I, s:I, s:I, s:{s:I, s:I}, "
		              "s:o}",
		              "id", x->rec.id, "addr", x->rec.addr, "version", x->rec.version,
		              "state", state, "ready", x->live, "draining", x->draining, "vcpus",
		              (json_int_t)x->rec.vcpus, "vcpus_committed",
		              (json_int_t)x->alloc.vcpus, "memory_mib",
		              (json_int_t)x->rec.memory_mib, "memory_mib_committed",
		              (json_int_t)x->alloc.memory_mib, "sandboxes", "running",
		              (json_int_t)x->rec.running, "paused", (json_int_t)x->rec.paused,
		              "templates", t));
	}
	pthread_mutex_unlock(&cl->dir.mu);
	size_t made, reused;
	fwd_pool_stats(&made, &reused);
	return json_pack("{s:s, s:o, s:{s:b, s:s*, s:I, s:s*, s:{s:I, s:I}}}", "node",
	                 cl->cfg->node_id, "nodes", nodes, "self", "fenced", f, "reason",
	                 f ? why : NULL, "etcd_writes", (json_int_t)atomic_load(&cl->dir.writes),
	                 "etcd_error", r < 0 ? err : NULL, "node_connections", "opened",
	                 (json_int_t)made, "reused", (json_int_t)reused);
}

int coved_cluster_drain(struct coved *d, const char *id, bool on, char *err, size_t errlen)
{
	struct coved_cluster *cl = d->cluster;
	if (!cl)
		return errf(err, errlen, -ENOTSUP, "coved is not in cluster mode");
	if (!cl_id_ok(id, CL_NODE_ID_MAX))
		return errf(err, errlen, -EINVAL, "'%s' is not a node id", id);
	char key[80];
	snprintf(key, sizeof(key), CL_PREFIX_DRAIN "%s", id);
	int r = on ? etcd_put(cl->e, key, "1", 1, 0, err, errlen)
	           : etcd_delete(cl->e, key, err, errlen);
	if (r == 0)
		r = cl_view_refresh(&cl->dir, err, errlen);
	return r;
}
