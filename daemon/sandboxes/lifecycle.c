/* coved's sandboxes after create: pause, resume, stop, delete, the
 * timeout and the network of a running one, and the reaper's expiry and
 * liveness checks (lifecycle.h). */
#include "daemon/sandboxes/lifecycle.h"

#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cove.h"
#include "daemon/http/status.h"
#include "daemon/sandboxes/events.h"
#include "daemon/sandboxes/idle.h"
#include "daemon/sandboxes/journal.h"
#include "daemon/sandboxes/limits.h"
#include "daemon/sandboxes/metrics.h"
#include "daemon/sandboxes/record.h"
#include "daemon/sandboxes/sandbox_priv.h"
#include "daemon/sandboxes/snapshots.h"
#include "daemon/sandboxes/state.h"
#include "daemon/sandboxes/table.h"
#include "errf.h"

int coved_sb_pause(struct coved_sb *sb, char *msg, size_t len)
{
	return coved_sb_pause_why(sb, "requested", msg, len);
}

int coved_sb_pause_why(struct coved_sb *sb, const char *reason, char *msg, size_t len)
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
	/* Cluster mode: on the storage every node mounts, when there is one,
	 * so that any node can resume it (docs/cluster.md). */
	const char *shared = d->cfg.cluster.on ? d->cfg.cluster.shared_snapshot_dir : NULL;
	if (shared)
		snprintf(dir, sizeof(dir), "%s/%s.%u", shared, sb->id, sb->generation + 1);
	else
		snprintf(dir, sizeof(dir), "%s/snapshots/%s.%u", d->cfg.state_dir, sb->id,
		         sb->generation + 1);
	double t0 = coved_mono_s();
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
	snprintf(sb->state_why, sizeof(sb->state_why), "%s", reason);
	coved_sb_retire(sb);
	pthread_mutex_unlock(&sb->mu);
	coved_record_write(sb);
	coved_event_with(sb, "paused", reason,
	                 json_pack("{s:s, s:I}", "snapshot", dir, "duration_ms",
	                           (json_int_t)((coved_mono_s() - t0) * 1000)));
out:
	pthread_mutex_unlock(&sb->op);
	return st;
}

int coved_sb_resume(struct coved_sb *sb, uint64_t timeout_s, bool *resumed, char *msg, size_t len)
{
	return coved_sb_resume_why(sb, timeout_s, resumed, "requested", msg, len);
}

int coved_sb_resume_why(struct coved_sb *sb, uint64_t timeout_s, bool *resumed, const char *reason,
                        char *msg, size_t len)
{
	struct coved *d = sb->d;
	*resumed = false;
	pthread_mutex_lock(&sb->op);
	int st = 0;
	uint64_t timeout = coved_timeout_clamp(d, timeout_s);
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
	if (!coved_limit_ok(d, t, &want, msg, len)) {
		st = 429;
		goto out;
	}
	struct cove_config cfg;
	coved_sb_cove_config(d, sb, &cfg);
	char err[512];
	double t0 = coved_mono_s();
	struct cove_sandbox *c;
	int r = cove_restore(&cfg, sb->paused_dir, &c, err, sizeof(err));
	atomic_fetch_sub(&d->creating, 1);
	coved_limit_release(d, t, &want);
	if (r < 0) {
		st = http_status_of(r, HTTP_OP_RESUME);
		errf(msg, len, st, "resume of %s failed: %s", sb->id, err);
		goto out;
	}
	coved_hist_add(d, &d->m.restore, coved_mono_s() - t0);
	pthread_mutex_lock(&sb->mu);
	sb->cove = c;
	sb->state = COVED_SB_RUNNING;
	snprintf(sb->state_why, sizeof(sb->state_why), "%s", reason);
	/* An idle-paused sandbox's countdown starts again from its idle time. */
	if (sb->idle_s && !timeout_s)
		timeout = sb->idle_s;
	sb->end_ms = coved_now_ms() + (int64_t)timeout * 1000;
	pthread_mutex_unlock(&sb->mu);
	coved_record_write(sb);
	coved_event_with(sb, "resumed", reason,
	                 json_pack("{s:s, s:I}", "snapshot", sb->paused_dir, "duration_ms",
	                           (json_int_t)((coved_mono_s() - t0) * 1000)));
	*resumed = true;
out:
	pthread_mutex_unlock(&sb->op);
	return st;
}

int coved_sb_set_timeout(struct coved_sb *sb, uint64_t timeout_s, char *msg, size_t len)
{
	(void)msg;
	(void)len;
	uint64_t t = coved_timeout_clamp(sb->d, timeout_s);
	pthread_mutex_lock(&sb->mu);
	sb->end_ms = coved_now_ms() + (int64_t)t * 1000;
	pthread_mutex_unlock(&sb->mu);
	coved_record_write(sb);
	coved_journal_event(sb, "timeout", json_pack("{s:I}", "timeout", (json_int_t)t));
	return 0;
}

/* halt() - sb's VMM stopped (when it runs) and its handle retired: it is
 * stopped now.  Called with sb->op held. */
static void halt(struct coved_sb *sb)
{
	if (sb->state == COVED_SB_RUNNING)
		cove_stop(sb->cove);
	pthread_mutex_lock(&sb->mu);
	sb->state = COVED_SB_STOPPED;
	coved_sb_retire(sb);
	pthread_mutex_unlock(&sb->mu);
}

int coved_sb_stop(struct coved_sb *sb, char *msg, size_t len)
{
	pthread_mutex_lock(&sb->op);
	int st = 0;
	if (sb->removed) {
		st = errf(msg, len, 404, "sandbox %s not found", sb->id);
	} else if (sb->state == COVED_SB_RUNNING || sb->state == COVED_SB_PAUSED) {
		halt(sb);
		coved_record_write(sb);
		coved_event(sb, "stopped", "requested");
	}
	pthread_mutex_unlock(&sb->op);
	return st;
}

void coved_sb_fence(struct coved_sb *sb, const char *why)
{
	pthread_mutex_lock(&sb->op);
	if (!sb->removed && (sb->state == COVED_SB_RUNNING || sb->state == COVED_SB_PAUSED)) {
		halt(sb);
		coved_mark_dead(sb, why);
	}
	pthread_mutex_unlock(&sb->op);
}

void coved_sb_forget(struct coved_sb *sb)
{
	pthread_mutex_lock(&sb->op);
	if (!sb->removed) {
		halt(sb);
		coved_sb_list_remove(sb->d, sb);
		coved_record_remove(sb);
		coved_journal_event(sb, "moved", NULL);
	}
	pthread_mutex_unlock(&sb->op);
}

static int rm_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st;
	(void)type;
	(void)ftw;
	return remove(path) < 0 ? 0 : 0;
}

int coved_sb_delete(struct coved_sb *sb, char *msg, size_t len)
{
	return coved_sb_delete_why(sb, "requested", msg, len);
}

int coved_sb_delete_why(struct coved_sb *sb, const char *reason, char *msg, size_t len)
{
	struct coved *d = sb->d;
	pthread_mutex_lock(&sb->op);
	if (sb->removed) {
		pthread_mutex_unlock(&sb->op);
		return errf(msg, len, 404, "sandbox %s not found", sb->id);
	}
	halt(sb);
	coved_sb_list_remove(d, sb);
	coved_record_remove(sb);
	coved_record_shared_remove(sb);
	/* User snapshots (snap-*) outlive their sandbox; the rest go when no
	 * one stands on them. */
	char user[4200];
	snprintf(user, sizeof(user), "%s/snapshots/snap-", d->cfg.state_dir);
	for (size_t i = sb->nsnaps; i-- > 0;)
		if (strncmp(sb->snaps[i], user, strlen(user)) != 0 &&
		    !coved_snap_dir_user(d, sb->snaps[i], sb, NULL, 0))
			nftw(sb->snaps[i], rm_one, 16, FTW_DEPTH | FTW_PHYS);
	coved_event(sb, "killed", reason);
	pthread_mutex_unlock(&sb->op);
	return 0;
}

int coved_sb_set_network(struct coved_sb *sb, const struct coved_net *net, char *msg, size_t len)
{
	pthread_mutex_lock(&sb->op);
	int st = 0;
	json_t *netj = coved_net_json(net);
	if (!netj)
		netj = json_object();
	struct cove_net_policy pol;
	const char **allow = NULL, **deny = NULL;
	if (sb->state != COVED_SB_RUNNING) {
		st = errf(msg, len, 409, "sandbox %s is %s, not running", sb->id,
		          coved_state_name(sb->state));
		goto out;
	}
	if ((st = coved_net_policy(net, sb->d->cfg.network, &pol, &allow, &deny, msg, len)))
		goto out;
	char err[512];
	int r = cove_net_set(sb->cove, &pol, err, sizeof(err));
	if (r < 0) {
		st = http_status_of(r, HTTP_OP_NET);
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
		/* An idle timeout counts only time with nothing going on. */
		if (expired && sb->idle_s)
			expired = coved_sb_idle_due(sb);
		if (died) {
			cove_stop(sb->cove); /* removes its registry entry */
			coved_mark_dead(sb, why);
		}
		pthread_mutex_unlock(&sb->op);
		if (expired && sb->idle_s) {
			char msg[600];
			if (coved_sb_pause_why(sb, "idle", msg, sizeof(msg)))
				fprintf(stderr, "coved: idle pause of %s: %s\n", sb->id, msg);
		} else if (expired) {
			char msg[600];
			coved_event_with(
			    sb, "timed_out", "timeout",
			    json_pack("{s:s}", "action",
			              sb->on_timeout == COVED_ON_TIMEOUT_PAUSE ? "pause" : "kill"));
			int st = sb->on_timeout == COVED_ON_TIMEOUT_PAUSE
			             ? coved_sb_pause_why(sb, "timeout", msg, sizeof(msg))
			             : coved_sb_delete_why(sb, "timeout", msg, sizeof(msg));
			if (st)
				fprintf(stderr, "coved: expiry of %s: %s\n", sb->id, msg);
		}
		coved_sb_unref(sb);
	}
	free(all);
}

int coved_sb_wake(struct coved_sb *sb, char *msg, size_t len)
{
	pthread_mutex_lock(&sb->mu);
	bool wake = sb->auto_resume && sb->state == COVED_SB_PAUSED && !sb->removed;
	pthread_mutex_unlock(&sb->mu);
	if (!wake)
		return 0;
	bool resumed;
	int st = coved_sb_resume_why(sb, 0, &resumed, "auto", msg, len);
	/* Another request may have resumed it first: running is what counts. */
	if (st == 409) {
		pthread_mutex_lock(&sb->mu);
		st = sb->state == COVED_SB_RUNNING ? 0 : st;
		pthread_mutex_unlock(&sb->mu);
	}
	return st;
}
