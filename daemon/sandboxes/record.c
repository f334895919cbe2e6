/* coved's sandbox records: <state_dir>/sandboxes/<id>.json (0600, replaced
 * atomically), read back and re-adopted at start (record.h). */
#include "daemon/sandboxes/record.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cove.h"
#include "daemon/sandboxes/events.h"
#include "daemon/sandboxes/journal.h"
#include "daemon/sandboxes/metrics.h"
#include "daemon/sandboxes/sandbox_priv.h"
#include "daemon/sandboxes/state.h"
#include "daemon/sandboxes/table.h"

int coved_write_atomic(const char *dir, const char *name, const char *text)
{
	char tmp[4200], dst[4200];
	snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", dir, name);
	snprintf(dst, sizeof(dst), "%s/%s", dir, name);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return -errno;
	size_t n = strlen(text);
	int r = 0;
	if (write(fd, text, n) != (ssize_t)n || fsync(fd) < 0)
		r = -EIO;
	close(fd);
	if (r == 0 && rename(tmp, dst) < 0)
		r = -errno;
	if (r < 0) {
		unlink(tmp);
		return r;
	}
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		fsync(dfd);
		close(dfd);
	}
	return 0;
}

void coved_sb_dir_note(struct coved_sb *sb, struct coved_dir_note *n)
{
	memset(n, 0, sizeof(*n));
	pthread_mutex_lock(&sb->mu);
	snprintf(n->id, sizeof(n->id), "%s", sb->id);
	snprintf(n->tenant, sizeof(n->tenant), "%s", sb->tenant);
	snprintf(n->template_id, sizeof(n->template_id), "%s",
	         sb->template_id ? sb->template_id : "");
	n->state = coved_state_name(sb->state);
	n->cpus = sb->cpus;
	n->memory_mib = sb->memory_mib;
	snprintf(n->reason, sizeof(n->reason), "%s", sb->dead_why ? sb->dead_why : "");
	const char *shared = sb->d->cfg.cluster.shared_snapshot_dir;
	n->shared = shared && sb->paused_dir &&
	            strncmp(sb->paused_dir, shared, strlen(shared)) == 0 &&
	            sb->paused_dir[strlen(shared)] == '/';
	pthread_mutex_unlock(&sb->mu);
}

/* Cluster mode with a shared snapshot dir: the record goes there too, so
 * that another node can resume the sandbox when this one is gone. */
static void shared_copy(struct coved_sb *sb, const char *text)
{
	const char *shared = sb->d->cfg.cluster.shared_snapshot_dir;
	if (!sb->d->cfg.cluster.on || !shared)
		return;
	char dir[4200], name[64];
	snprintf(dir, sizeof(dir), "%s/records", shared);
	snprintf(name, sizeof(name), "%s.json", sb->id);
	if ((mkdir(dir, 0700) < 0 && errno != EEXIST) || coved_write_atomic(dir, name, text) < 0)
		fprintf(stderr, "coved: shared record of %s in %s: %s\n", sb->id, dir,
		        strerror(errno));
}

void coved_record_shared_remove(struct coved_sb *sb)
{
	const char *shared = sb->d->cfg.cluster.shared_snapshot_dir;
	char path[4300];
	if (!sb->d->cfg.cluster.on || !shared)
		return;
	snprintf(path, sizeof(path), "%s/records/%s.json", shared, sb->id);
	unlink(path);
}

/* The cluster's directory follows the record (cluster mode only). */
static void dir_follow(struct coved_sb *sb, bool removed)
{
	coved_dir_hook *h = atomic_load(&sb->d->dir_hook);
	if (!h)
		return;
	struct coved_dir_note n;
	coved_sb_dir_note(sb, &n);
	if (removed)
		n.state = NULL;
	h(sb->d, &n);
}

int coved_record_write(struct coved_sb *sb)
{
	pthread_mutex_lock(&sb->mu);
	json_t *o = json_pack(
	    "{s:i, s:s, s:s, s:s, s:s, s:s?, s:O, s:o, s:O?, s:I, s:I, s:i, s:I, s:s, s:s, s:s?, "
	    "s:o, s:s?, s:i}",
	    "version", 1, "sandboxID", sb->id, "token", sb->token, "tenant", sb->tenant,
	    "templateID", sb->template_id, "image", sb->image, "metadata", sb->metadata, "envVars",
	    coved_envs_object(sb), "network", sb->network, "startedAt", (json_int_t)sb->started_ms,
	    "endAt", (json_int_t)sb->end_ms, "cpus", (int)sb->cpus, "memoryMiB",
	    (json_int_t)sb->memory_mib, "onTimeout",
	    sb->on_timeout == COVED_ON_TIMEOUT_PAUSE ? "pause" : "kill", "state",
	    coved_state_name(sb->state), "deadReason", sb->dead_why, "snapshots",
	    coved_str_list(sb->snaps, sb->nsnaps), "pausedDir", sb->paused_dir, "generation",
	    (int)sb->generation);
	if (o && sb->idle_s)
		json_object_set_new(o, "idleTimeout", json_integer(sb->idle_s));
	if (o && sb->traffic[0])
		json_object_set_new(o, "trafficToken", json_string(sb->traffic));
	if (o && sb->auto_resume)
		json_object_set_new(o, "autoResume", json_true());
	if (o && sb->state_why[0])
		json_object_set_new(o, "stateReason", json_string(sb->state_why));
	pthread_mutex_unlock(&sb->mu);
	char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	if (!text)
		return -ENOMEM;
	char dir[4200], name[64];
	snprintf(dir, sizeof(dir), "%s/sandboxes", sb->d->cfg.state_dir);
	snprintf(name, sizeof(name), "%s.json", sb->id);
	int r = coved_write_atomic(dir, name, text);
	shared_copy(sb, text);
	explicit_bzero(text, strlen(text));
	free(text);
	if (r < 0)
		fprintf(stderr, "coved: record of %s: %s\n", sb->id, strerror(-r));
	dir_follow(sb, false);
	return r;
}

void coved_record_remove(struct coved_sb *sb)
{
	char path[4200];
	snprintf(path, sizeof(path), "%s/sandboxes/%s.json", sb->d->cfg.state_dir, sb->id);
	unlink(path);
	dir_follow(sb, true);
}

static enum coved_state state_from(const char *s)
{
	for (int i = 0; i < 4; i++)
		if (s && strcmp(s, coved_state_name(i)) == 0)
			return i;
	return COVED_SB_DEAD;
}

static struct coved_sb *record_read(struct coved *d, const char *path)
{
	json_error_t je;
	json_t *o = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
	if (!o) {
		fprintf(stderr, "coved: record %s: %s\n", path, je.text);
		return NULL;
	}
	struct coved_sb *sb = coved_sb_new(d);
	const char *id = json_string_value(json_object_get(o, "sandboxID"));
	const char *tok = json_string_value(json_object_get(o, "token"));
	if (!sb || !id || !tok || strlen(id) != COVED_ID_LEN || strlen(tok) != COVED_TOKEN_LEN ||
	    !cove_name_valid(id)) {
		fprintf(stderr, "coved: record %s: no valid sandboxID and token\n", path);
		json_decref(o);
		if (sb)
			coved_sb_free(sb);
		return NULL;
	}
	snprintf(sb->id, sizeof(sb->id), "%s", id);
	snprintf(sb->token, sizeof(sb->token), "%s", tok);
	/* A traffic token of the wrong shape closes the ports: never open. */
	const char *tt = json_string_value(json_object_get(o, "trafficToken"));
	if (json_object_get(o, "trafficToken")) {
		if (tt && strlen(tt) == COVED_TOKEN_LEN)
			snprintf(sb->traffic, sizeof(sb->traffic), "%s", tt);
		else if (coved_new_token(sb->traffic) < 0)
			memset(sb->traffic, 'x', COVED_TOKEN_LEN);
	}
	/* A record from before tenants belongs to the keys file's first
	 * tenant (a one-key coved keeps its sandboxes); a bad name, to none. */
	const char *s = json_string_value(json_object_get(o, "tenant"));
	if (!s && d->ntenants)
		s = d->tenants[0].name;
	if (s && coved_tenant_name_ok(s, strlen(s)))
		snprintf(sb->tenant, sizeof(sb->tenant), "%s", s);
	else
		fprintf(stderr, "coved: record %s: no valid tenant: no key reaches it\n", path);
	if ((s = json_string_value(json_object_get(o, "templateID"))))
		sb->template_id = strdup(s);
	if ((s = json_string_value(json_object_get(o, "image"))))
		sb->image = strdup(s);
	json_t *m = json_object_get(o, "metadata");
	if (json_is_object(m)) {
		json_decref(sb->metadata);
		sb->metadata = json_incref(m);
	}
	json_t *e = json_object_get(o, "envVars");
	if (json_is_object(e))
		coved_set_envs(sb, e);
	json_t *n = json_object_get(o, "network");
	if (json_is_object(n))
		sb->network = json_incref(n);
	sb->started_ms = json_integer_value(json_object_get(o, "startedAt"));
	sb->end_ms = json_integer_value(json_object_get(o, "endAt"));
	sb->cpus = (unsigned int)json_integer_value(json_object_get(o, "cpus"));
	sb->memory_mib = (uint64_t)json_integer_value(json_object_get(o, "memoryMiB"));
	s = json_string_value(json_object_get(o, "onTimeout"));
	sb->on_timeout =
	    s && strcmp(s, "pause") == 0 ? COVED_ON_TIMEOUT_PAUSE : COVED_ON_TIMEOUT_KILL;
	sb->state = state_from(json_string_value(json_object_get(o, "state")));
	if ((s = json_string_value(json_object_get(o, "deadReason"))))
		sb->dead_why = strdup(s);
	if ((s = json_string_value(json_object_get(o, "pausedDir"))))
		sb->paused_dir = strdup(s);
	sb->generation = (unsigned int)json_integer_value(json_object_get(o, "generation"));
	json_int_t idle = json_integer_value(json_object_get(o, "idleTimeout"));
	sb->idle_s = idle > 0 && idle <= UINT32_MAX ? (uint32_t)idle : 0;
	sb->auto_resume = json_is_true(json_object_get(o, "autoResume"));
	if ((s = json_string_value(json_object_get(o, "stateReason"))))
		snprintf(sb->state_why, sizeof(sb->state_why), "%s", s);
	coved_sb_add_snaps(sb, json_object_get(o, "snapshots"));
	json_decref(o);
	return sb;
}

void coved_mark_dead(struct coved_sb *sb, const char *why)
{
	pthread_mutex_lock(&sb->mu);
	sb->state = COVED_SB_DEAD;
	free(sb->dead_why);
	sb->dead_why = strdup(why);
	pthread_mutex_unlock(&sb->mu);
	coved_metric_bump(sb->d, &sb->d->m.vmm_exits);
	coved_event(sb, "dead", why);
	coved_record_write(sb);
}

/* Opens a running sandbox again after a daemon restart; the registry may
 * still say "starting" for a moment after a create that raced the stop. */
static void adopt_one(struct coved_sb *sb)
{
	char err[512];
	if (sb->state == COVED_SB_RUNNING) {
		int r = -EAGAIN;
		for (int tries = 0; tries < 50 && r == -EAGAIN; tries++) {
			r = cove_open(sb->id, &sb->cove, err, sizeof(err));
			if (r == -EAGAIN)
				usleep(100 * 1000);
		}
		if (r < 0) {
			sb->cove = NULL;
			coved_mark_dead(sb, r == -ENOENT || r == -ESRCH
			                        ? "its cove-vmm exited while the "
			                          "daemon was away"
			                        : err);
		}
	} else if (sb->state == COVED_SB_PAUSED) {
		struct stat st;
		if (!sb->paused_dir || stat(sb->paused_dir, &st) < 0)
			coved_mark_dead(sb, "its pause snapshot is missing");
	}
	coved_journal_event(sb, "adopted",
	                    json_pack("{s:s}", "state", coved_state_name(sb->state)));
}

struct coved_sb *coved_record_take(struct coved *d, const char *path, const char *tenant)
{
	struct coved_sb *sb = record_read(d, path);
	if (!sb)
		return NULL;
	if (strcmp(sb->tenant, tenant) != 0 || sb->state != COVED_SB_PAUSED) {
		fprintf(stderr, "coved: record %s: not a paused sandbox of tenant %s\n", path,
		        tenant);
		coved_sb_free(sb);
		return NULL;
	}
	adopt_one(sb);
	coved_sb_list_add(d, sb);
	coved_record_write(sb);
	return sb;
}

int coved_adopt_all(struct coved *d)
{
	char dir[4200];
	snprintf(dir, sizeof(dir), "%s/sandboxes", d->cfg.state_dir);
	DIR *dp = opendir(dir);
	if (!dp)
		return -errno;
	/* Sorted by start time so listings keep their order across restarts. */
	struct coved_sb **found = NULL;
	size_t n = 0;
	struct dirent *de;
	while ((de = readdir(dp))) {
		size_t l = strlen(de->d_name);
		if (de->d_name[0] == '.' || l < 6 || strcmp(de->d_name + l - 5, ".json") != 0)
			continue;
		char path[4400];
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		struct coved_sb *sb = record_read(d, path);
		if (!sb)
			continue;
		struct coved_sb **f = realloc(found, (n + 1) * sizeof(*f));
		if (!f) {
			coved_sb_free(sb);
			break;
		}
		found = f;
		found[n++] = sb;
	}
	closedir(dp);
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && found[j - 1]->started_ms > found[j]->started_ms; j--) {
			struct coved_sb *t = found[j];
			found[j] = found[j - 1];
			found[j - 1] = t;
		}
	for (size_t i = 0; i < n; i++) {
		adopt_one(found[i]);
		coved_sb_list_add(d, found[i]);
		coved_sb_unref(found[i]);
	}
	free(found);
	return (int)n;
}
