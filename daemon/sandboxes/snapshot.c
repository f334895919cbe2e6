/* coved's snapshots of a running sandbox: a user snapshot (snap-*, kept
 * after the sandbox goes) and a fork into new sandboxes (snapshot.h). */
#include "daemon/sandboxes/snapshot.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cove.h"
#include "daemon/sandboxes/create.h"
#include "daemon/sandboxes/events.h"
#include "daemon/sandboxes/journal.h"
#include "daemon/sandboxes/record.h"
#include "daemon/sandboxes/request.h"
#include "daemon/sandboxes/sandbox_priv.h"
#include "daemon/sandboxes/snapshots.h"
#include "daemon/sandboxes/state.h"
#include "daemon/sandboxes/table.h"
#include "daemon/sandboxes/view.h"
#include "errf.h"

/* Snapshot with resume into <state>/snapshots/<prefix><random>, named
 * label (NULL: not named). */
static int snapshot_to(struct coved_sb *sb, const char *prefix, const char *label, char *path,
                       size_t plen, char *name, size_t nlen, char *msg, size_t len)
{
	char rnd[17];
	if (coved_new_name(rnd, 16) < 0)
		return errf(msg, len, 500, "getrandom failed");
	snprintf(name, nlen, "%s%s", prefix, rnd);
	snprintf(path, plen, "%s/snapshots/%s", sb->d->cfg.state_dir, name);
	if (sb->state != COVED_SB_RUNNING)
		return errf(msg, len, 409, "sandbox %s is %s, not running", sb->id,
		            coved_state_name(sb->state));
	char err[512];
	/* New sandboxes start from it: their guests need not each write the
	 * same dirty blocks back (the snapshot is right without it). */
	if (cove_snapshot_sync(sb->cove, SNAPSHOT_SYNC_MS, err, sizeof(err)) < 0)
		fprintf(stderr, "coved: snapshot of %s: %s; taken without it\n", sb->id, err);
	int r = cove_snapshot(sb->cove, path, false, err, sizeof(err));
	if (r < 0)
		return errf(msg, len, 500, "snapshot of %s failed: %s", sb->id, err);
	/* The sandbox now stands on the snapshot's overlay too. */
	pthread_mutex_lock(&sb->mu);
	coved_sb_add_snap(sb, path);
	pthread_mutex_unlock(&sb->mu);
	if (coved_snap_record(sb, name, label) < 0)
		fprintf(stderr, "coved: the meta file of %s was not written\n", name);
	coved_record_write(sb);
	return 0;
}

int coved_sb_snapshot(struct coved_sb *sb, const char *label, char *snap_id, size_t idlen,
                      char *msg, size_t len)
{
	pthread_mutex_lock(&sb->op);
	char path[4300];
	int st = snapshot_to(sb, "snap-", label, path, sizeof(path), snap_id, idlen, msg, len);
	if (st == 0)
		coved_event_with(sb, "snapshotted", "requested",
		                 json_pack("{s:s, s:s?}", "snapshotID", snap_id, "name", label));
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
	int st = snapshot_to(sb, "snap-", NULL, path, sizeof(path), name, sizeof(name), msg, len);
	pthread_mutex_unlock(&sb->op);
	if (st)
		return st;
	coved_event_with(sb, "forked", "requested",
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
		/* A fork's ports are as closed as its parent's, with a token of
		 * its own. */
		j->req.net.public_given = true;
		j->req.net.public_traffic = !coved_sb_restricted(sb);
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
