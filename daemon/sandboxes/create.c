/* coved's creates: a templateID resolved to an image, a store template
 * or a user snapshot; the limits and quota; the new sandbox booted or
 * restored through libcove, recorded and journaled (create.h). */
#include "daemon/sandboxes/create.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cove.h"
#include "daemon/http/status.h"
#include "daemon/sandboxes/builds.h"
#include "daemon/sandboxes/events.h"
#include "daemon/sandboxes/journal.h"
#include "daemon/sandboxes/limits.h"
#include "daemon/sandboxes/metrics.h"
#include "daemon/sandboxes/record.h"
#include "daemon/sandboxes/sandbox_priv.h"
#include "daemon/sandboxes/snapshots.h"
#include "daemon/sandboxes/state.h"
#include "daemon/sandboxes/table.h"
#include "daemon/sandboxes/templates.h"
#include "daemon/sandboxes/warm.h"
#include "errf.h"

/* Maps a templateID to an image path (malloc'ed), a snapshot directory
 * (*snap set, the snapshot held: coved_snap_unhold() once the sandbox is
 * listed) or a template the tenant built (its store name into store).
 * The tenant's builds come first, then its snapshots (by id or name), then
 * the config's templates and images.  404 when there is no such template. */
static int resolve_template(struct coved *d, const struct coved_tenant *tenant, const char *tid,
                            char **image, char **snap, char store[COVED_BUILD_STORE_LEN + 1],
                            char *msg, size_t len)
{
	*image = *snap = NULL;
	store[0] = 0;
	if (coved_build_ready(d, tenant, tid, store))
		return 0; /* the tenant's own names come first */
	char path[4200];
	int found = coved_snap_find(d, tenant, tid, path, sizeof(path));
	if (found < 0)
		return errf(msg, len, 503, "snapshots are busy (a delete is waiting): try again");
	if (found > 0) {
		if (!(*snap = strdup(path)))
			coved_snap_unhold();
		return *snap ? 0 : errf(msg, len, 500, "out of memory");
	}
	if (strncmp(tid, "snap-", 5) == 0)
		return errf(msg, len, 404, "snapshot '%s' not found", tid);
	return coved_template_shared(d, tid, image, msg, len);
}

/* Copies the snapshot chain a snapshot's meta file names. */
static void snap_chain_read(struct coved_sb *sb, const char *snapdir)
{
	char path[4300];
	snprintf(path, sizeof(path), "%s.json", snapdir);
	json_t *o = json_load_file(path, 0, NULL);
	coved_sb_add_snaps(sb, json_object_get(o, "chain"));
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
	char *image, *snap, store[COVED_BUILD_STORE_LEN + 1];
	int st = resolve_template(d, t, req->template_id, &image, &snap, store, msg, len);
	if (st)
		return st;
	struct coved_usage want = { .sandboxes = 1,
		                    .creates = 1,
		                    .cpus = req->cpus ? req->cpus : d->cfg.cpus,
		                    .memory_mib =
		                        req->memory_mib ? req->memory_mib : d->cfg.memory_mib };
	bool reserved = false;
	struct coved_sb *sb = coved_sb_new(d);
	json_t *netj = coved_net_json(&req->net);
	struct cove_net_policy pol;
	const char **allow = NULL, **deny = NULL;
	if (!sb) {
		st = 500;
		errf(msg, len, 500, "out of memory");
		goto out;
	}
	if ((st = coved_net_policy(&req->net, d->cfg.network, &pol, &allow, &deny, msg, len)))
		goto out;
	if (!coved_limit_ok(d, t, &want, msg, len)) {
		st = 429;
		goto out;
	}
	reserved = true;
	snprintf(sb->tenant, sizeof(sb->tenant), "%s", t->name);
	if (req->placed_id[0])
		snprintf(sb->id, sizeof(sb->id), "%.*s", COVED_ID_LEN, req->placed_id);
	bool restricted = req->net.public_given && !req->net.public_traffic;
	if ((!req->placed_id[0] && coved_new_id(sb->id) < 0) || coved_new_token(sb->token) < 0 ||
	    (restricted && coved_new_token(sb->traffic) < 0)) {
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
	uint64_t timeout = coved_timeout_clamp(d, req->timeout_s);
	/* An idle timeout: its own, else E2B's autoPause with autoResume
	 * (its timeout counts idle time), else the config's default. */
	uint64_t idle = req->idle_s ? req->idle_s
	                : sb->on_timeout == COVED_ON_TIMEOUT_PAUSE && req->auto_resume
	                    ? timeout
	                    : d->cfg.idle_timeout_s;
	sb->idle_s = (uint32_t)(idle ? coved_timeout_clamp(d, idle) : 0);
	sb->auto_resume = req->auto_resume_given ? req->auto_resume : sb->idle_s != 0;
	if (sb->idle_s)
		timeout = sb->idle_s;
	struct cove_config cfg;
	coved_sb_cove_config(d, sb, &cfg);
	cfg.image = image;
	cfg.cpus = sb->cpus;
	cfg.memory_mib = sb->memory_mib;
	cfg.disk_size = d->cfg.disk_mib << 20;
	cfg.net = pol;
	char err[512];
	double t0 = coved_mono_s();
	int r, tlock = -1;
	char *tdir = NULL;
	if (!snap && (st = coved_template_for(d, store[0] ? store : req->template_id, &cfg,
	                                      req->net.given, &tdir, &tlock, msg, len)) > 1) {
		atomic_fetch_sub(&d->creating, 1);
		goto out;
	}
	st = 0;
	/* A store or built-in template brings its own CPUs and memory. */
	sb->cpus = cfg.cpus;
	sb->memory_mib = cfg.memory_mib;
	/* A sandbox of the warm pool, restored ahead from this template,
	 * when one is ready (not for a cluster's placement: its id is
	 * chosen). */
	struct cove_sandbox *warm = NULL;
	char wid[COVED_ID_LEN + 1];
	if (tdir && !req->placed_id[0] &&
	    (warm = coved_warm_take(d, tdir, cfg.net.mode != COVE_NET_OFF, wid))) {
		if (coved_warm_handout(d, warm, &cfg.net, err, sizeof(err)) < 0) {
			fprintf(stderr, "coved: warm sandbox %s: %s (restoring one instead)\n", wid,
			        err);
			coved_warm_discard(warm);
			warm = NULL;
		}
	}
	if (warm) {
		memcpy(sb->id, wid, sizeof(sb->id));
		sb->cove = warm;
		sb->warm = true;
		r = 0;
	} else if (tdir) {
		r = cove_restore(&cfg, tdir, &sb->cove, err, sizeof(err));
	} else if (snap) {
		snap_chain_read(sb, snap);
		coved_sb_add_snap(sb, snap);
		if (!req->net.given)
			cfg.net.mode = COVE_NET_OFF; /* the snapshot's own policy */
		r = cove_restore(&cfg, snap, &sb->cove, err, sizeof(err));
	} else {
		r = cove_start(&cfg, &sb->cove, err, sizeof(err));
	}
	bool tdir_used = tdir != NULL;
	if (tdir) { /* the template was held for the restore or the take */
		close(tlock);
		free(tdir);
	}
	atomic_fetch_sub(&d->creating, 1);
	if (r < 0) {
		st = http_status_of(r, HTTP_OP_START);
		errf(msg, len, st, "%s", err);
		goto out;
	}
	double created_s = coved_mono_s() - t0;
	coved_hist_add(d, snap ? &d->m.restore : &d->m.create, created_s);
	sb->started_ms = coved_now_ms();
	sb->end_ms = sb->started_ms + (int64_t)timeout * 1000;
	sb->state = COVED_SB_RUNNING;
	coved_record_write(sb);
	coved_sb_list_add(d, sb);
	/* How it came to run: a warm sandbox taken, a snapshot or template
	 * restored, or a boot. */
	const char *how = sb->warm ? "warm" : (tdir_used || snap) ? "restore" : "boot";
	coved_event_with(sb, "created", "requested",
	                 json_pack("{s:s, s:s?, s:I, s:i, s:I, s:b, s:s, s:I}", "templateID",
	                           sb->template_id, "image", sb->image, "timeout",
	                           (json_int_t)timeout, "cpus", (int)sb->cpus, "memoryMiB",
	                           (json_int_t)sb->memory_mib, "warm", (int)sb->warm, "start", how,
	                           "createMs", (json_int_t)(created_s * 1000)));
	*out = sb;
	sb = NULL;
	st = 0;
out:
	/* Released after the list holds the new sandbox: for a moment it is
	 * counted twice, never not at all. */
	if (reserved)
		coved_limit_release(d, t, &want);
	free(allow);
	free(deny);
	free(image);
	if (snap)
		coved_snap_unhold(); /* listed now (or not made): it stands on it */
	free(snap);
	json_decref(netj);
	if (sb)
		coved_sb_free(sb);
	return st;
}
