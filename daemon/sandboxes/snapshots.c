/* coved's user snapshots as objects: meta files, names, listing, lookup
 * and delete (snapshots.h). */
#include "daemon/sandboxes/snapshots.h"

#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "daemon/sandboxes/record.h"
#include "daemon/sandboxes/sandbox.h"
#include "daemon/sandboxes/sandbox_priv.h"
#include "daemon/sandboxes/snap_query.h"
#include "daemon/sandboxes/state.h"
#include "daemon/sandboxes/table.h"
#include "errf.h"

/* Creates from a snapshot read it (from the lookup until the new sandbox
 * is listed and so stands on it); a delete writes.  Meta files are
 * rewritten (a name moving) and removed under names_mu; the order is
 * snaps_rw, then names_mu. */
static pthread_rwlock_t snaps_rw = PTHREAD_RWLOCK_INITIALIZER;
static pthread_mutex_t names_mu = PTHREAD_MUTEX_INITIALIZER;

#define HOLD_WAIT_S   30
#define DELETE_WAIT_S 60

static struct timespec deadline(int s)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += s;
	return ts;
}

static void snap_dir(struct coved *d, char *out, size_t len)
{
	snprintf(out, len, "%s/snapshots", d->cfg.state_dir);
}

/* Whether meta file @o is tenant @t's (one from before tenants: the
 * first tenant's). */
static bool owned(struct coved *d, json_t *o, const struct coved_tenant *t)
{
	const char *owner = json_string_value(json_object_get(o, "tenant"));
	if (!owner && d->ntenants)
		owner = d->tenants[0].name;
	return t && owner && strcmp(owner, t->name) == 0;
}

/* Snapshot @id's meta when it is @t's and its directory is there; its
 * creation time into *ms (older ones: the meta file's mtime). */
static json_t *meta_load(struct coved *d, const char *id, const struct coved_tenant *t, int64_t *ms)
{
	char sdir[4200], path[4300];
	snap_dir(d, sdir, sizeof(sdir));
	snprintf(path, sizeof(path), "%s/%s", sdir, id);
	struct stat st;
	if (!coved_snap_id_ok(id) || stat(path, &st) < 0 || !S_ISDIR(st.st_mode))
		return NULL;
	snprintf(path, sizeof(path), "%s/%s.json", sdir, id);
	json_t *o = json_load_file(path, 0, NULL);
	if (!json_is_object(o) || !owned(d, o, t) || stat(path, &st) < 0) {
		json_decref(o);
		return NULL;
	}
	json_t *c = json_object_get(o, "createdAt");
	*ms = json_is_integer(c) ? (int64_t)json_integer_value(c) : (int64_t)st.st_mtime * 1000;
	return o;
}

/* The ids of every meta file there is (malloc'ed, each too). */
static char **scan_ids(struct coved *d, size_t *n)
{
	char sdir[4200];
	snap_dir(d, sdir, sizeof(sdir));
	*n = 0;
	char **ids = NULL;
	size_t cap = 0;
	DIR *dp = opendir(sdir);
	struct dirent *de;
	while (dp && (de = readdir(dp))) {
		size_t l = strlen(de->d_name);
		if (l < 6 || strcmp(de->d_name + l - 5, ".json") != 0 || l - 5 > COVED_SNAP_ID_MAX)
			continue;
		char id[COVED_SNAP_ID_MAX + 1];
		snprintf(id, sizeof(id), "%.*s", (int)(l - 5), de->d_name);
		if (!coved_snap_id_ok(id))
			continue;
		if (*n == cap) {
			char **m = realloc(ids, (cap = cap ? cap * 2 : 16) * sizeof(*m));
			if (!m)
				break;
			ids = m;
		}
		if ((ids[*n] = strdup(id)))
			(*n)++;
	}
	if (dp)
		closedir(dp);
	return ids;
}

static void ids_free(char **ids, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(ids[i]);
	free(ids);
}

/* The snapshots' names, read from their meta files once per change:
 * every create looks its templateID up among the tenant's snapshot names
 * before the shared templates, and reading each meta file for each create
 * cost a directory scan and O(snapshots) reads.  coved alone writes
 * <state>/snapshots, and each change of a meta file (written, renamed off,
 * removed) bumps names_gen after it is made; an index read at an older
 * generation is read again.  index_mu is the innermost lock. */
struct named {
	struct coved_snap_key key;
	char *owner, *name;
};

static pthread_mutex_t index_mu = PTHREAD_MUTEX_INITIALIZER;
static _Atomic uint64_t names_gen = 1;
static uint64_t index_gen;
static struct named *index_v;
static size_t index_n;

static void names_changed(void)
{
	atomic_fetch_add(&names_gen, 1);
}

static void index_free(void)
{
	for (size_t i = 0; i < index_n; i++) {
		free(index_v[i].owner);
		free(index_v[i].name);
	}
	free(index_v);
	index_v = NULL;
	index_n = 0;
}

/* Reads the index again (index_mu held); false when out of memory (then
 * it is empty and stale). */
static bool index_read(struct coved *d)
{
	/* The generation before the reads: a change during them reads again. */
	uint64_t gen = atomic_load(&names_gen);
	index_free();
	index_gen = 0;
	size_t n, m = 0;
	char **ids = scan_ids(d, &n);
	char sdir[4200], path[4300];
	snap_dir(d, sdir, sizeof(sdir));
	struct named *v = calloc(n ? n : 1, sizeof(*v));
	bool ok = v != NULL;
	for (size_t i = 0; ok && i < n; i++) {
		snprintf(path, sizeof(path), "%s/%s.json", sdir, ids[i]);
		json_t *o = json_load_file(path, 0, NULL);
		const char *nm = json_string_value(json_object_get(o, "name"));
		/* The owner by owned()'s rule: one from before tenants is the
		 * first tenant's. */
		const char *owner = json_string_value(json_object_get(o, "tenant"));
		if (!owner && d->ntenants)
			owner = d->tenants[0].name;
		json_t *c = json_object_get(o, "createdAt");
		struct stat st;
		if (nm && owner && stat(path, &st) == 0) {
			struct named *e = &v[m++];
			snprintf(e->key.id, sizeof(e->key.id), "%s", ids[i]);
			e->key.ms = json_is_integer(c) ? (int64_t)json_integer_value(c)
			                               : (int64_t)st.st_mtime * 1000;
			e->owner = strdup(owner);
			e->name = strdup(nm);
			ok = e->owner && e->name;
		}
		json_decref(o);
	}
	ids_free(ids, n);
	index_v = v;
	index_n = m;
	if (!ok) {
		index_free();
		return false;
	}
	index_gen = gen;
	return true;
}

/* The newest of @t's snapshots named @name, its id into @id: found or not. */
static bool by_name(struct coved *d, const struct coved_tenant *t, const char *name,
                    char id[COVED_SNAP_ID_MAX + 1])
{
	struct coved_snap_key best = { 0 };
	bool found = false;
	pthread_mutex_lock(&index_mu);
	if (index_gen == atomic_load(&names_gen) || index_read(d)) {
		for (size_t i = 0; i < index_n; i++) {
			const struct named *e = &index_v[i];
			if (!strcmp(e->name, name) && !strcmp(e->owner, t->name) &&
			    (!found || coved_snap_key_cmp(&e->key, &best) < 0)) {
				best = e->key;
				found = true;
			}
		}
	}
	pthread_mutex_unlock(&index_mu);
	/* Its directory must be there too, as for a lookup by id. */
	int64_t ms;
	json_t *o = found ? meta_load(d, best.id, t, &ms) : NULL;
	json_decref(o);
	if (o)
		snprintf(id, COVED_SNAP_ID_MAX + 1, "%s", best.id);
	return o != NULL;
}

void coved_snap_index_free(void)
{
	pthread_mutex_lock(&index_mu);
	index_free();
	index_gen = 0;
	pthread_mutex_unlock(&index_mu);
}

/* @tid, an id or a name, as one of @t's snapshots' id. */
static bool resolve(struct coved *d, const struct coved_tenant *t, const char *tid,
                    char id[COVED_SNAP_ID_MAX + 1])
{
	char err[160];
	if (coved_snap_id_ok(tid)) {
		int64_t ms;
		json_t *o = meta_load(d, tid, t, &ms);
		json_decref(o);
		snprintf(id, COVED_SNAP_ID_MAX + 1, "%s", tid);
		return o != NULL;
	}
	return coved_snap_name_ok(tid, err, sizeof(err)) && by_name(d, t, tid, id);
}

int coved_snap_record(struct coved_sb *sb, const char *id, const char *name)
{
	struct coved *d = sb->d;
	char tenant[sizeof(sb->tenant)];
	pthread_mutex_lock(&sb->mu);
	snprintf(tenant, sizeof(tenant), "%s", sb->tenant);
	json_t *meta = json_pack("{s:s, s:s, s:s?, s:o, s:I, s:s?}", "source", sb->id, "tenant",
	                         sb->tenant, "templateID", sb->template_id, "chain",
	                         coved_str_list(sb->snaps, sb->nsnaps ? sb->nsnaps - 1 : 0),
	                         "createdAt", (json_int_t)coved_now_ms(), "name", name);
	pthread_mutex_unlock(&sb->mu);
	char *text = meta ? json_dumps(meta, JSON_COMPACT) : NULL;
	json_decref(meta);
	if (!text)
		return -ENOMEM;
	char sdir[4200], file[COVED_SNAP_ID_MAX + 8];
	snap_dir(d, sdir, sizeof(sdir));
	snprintf(file, sizeof(file), "%s.json", id);
	pthread_mutex_lock(&names_mu);
	int r = coved_write_atomic(sdir, file, text);
	free(text);
	/* The name moves: every other snapshot of the tenant's loses it. */
	const struct coved_tenant *t = coved_tenant_find(d, tenant);
	size_t n = 0;
	char **ids = r == 0 && name && t ? scan_ids(d, &n) : NULL;
	for (size_t i = 0; i < n && r == 0; i++) {
		int64_t ms;
		json_t *o = strcmp(ids[i], id) ? meta_load(d, ids[i], t, &ms) : NULL;
		const char *nm = json_string_value(json_object_get(o, "name"));
		if (nm && strcmp(nm, name) == 0) {
			json_object_del(o, "name");
			/* An older file's time was its mtime: kept as it was. */
			json_object_set_new(o, "createdAt", json_integer((json_int_t)ms));
			char *ot = json_dumps(o, JSON_COMPACT);
			snprintf(file, sizeof(file), "%s.json", ids[i]);
			r = ot ? coved_write_atomic(sdir, file, ot) : -ENOMEM;
			free(ot);
		}
		json_decref(o);
	}
	if (ids)
		ids_free(ids, n);
	names_changed();
	pthread_mutex_unlock(&names_mu);
	return r;
}

int coved_snap_find(struct coved *d, const struct coved_tenant *t, const char *tid, char *path,
                    size_t len)
{
	struct timespec ts = deadline(HOLD_WAIT_S);
	if (pthread_rwlock_timedrdlock(&snaps_rw, &ts) != 0)
		return -1;
	char id[COVED_SNAP_ID_MAX + 1];
	if (!t || !resolve(d, t, tid, id)) {
		pthread_rwlock_unlock(&snaps_rw);
		return 0;
	}
	snprintf(path, len, "%s/snapshots/%s", d->cfg.state_dir, id);
	return 1;
}

void coved_snap_unhold(void)
{
	pthread_rwlock_unlock(&snaps_rw);
}

bool coved_snap_here(struct coved *d, const struct coved_tenant *t, const char *tid)
{
	char id[COVED_SNAP_ID_MAX + 1];
	return t && resolve(d, t, tid, id);
}

struct listed {
	struct coved_snap_key key;
	json_t *meta;
};

static int listed_cmp(const void *a, const void *b)
{
	return coved_snap_key_cmp(&((const struct listed *)a)->key,
	                          &((const struct listed *)b)->key);
}

static json_t *listed_json(const struct listed *e)
{
	const char *name = json_string_value(json_object_get(e->meta, "name"));
	char when[40];
	clock_rfc3339(e->key.ms, when, sizeof(when));
	return json_pack("{s:s, s:[s], s:s?, s:s?, s:s}", "snapshotID", e->key.id, "names",
	                 name ? name : e->key.id, "sandboxID",
	                 json_string_value(json_object_get(e->meta, "source")), "templateID",
	                 json_string_value(json_object_get(e->meta, "templateID")), "createdAt",
	                 when);
}

/* Whether listed snapshot @e is one @q asks for. */
static bool wanted(const struct listed *e, const struct coved_snap_query *q)
{
	const char *name = json_string_value(json_object_get(e->meta, "name"));
	const char *src = json_string_value(json_object_get(e->meta, "source"));
	if (q->sandbox_id[0] && (!src || strcmp(src, q->sandbox_id) != 0))
		return false;
	if (q->name[0] && strcmp(q->name, e->key.id) != 0 && (!name || strcmp(name, q->name) != 0))
		return false;
	return !q->after_given || coved_snap_key_cmp(&e->key, &q->after) > 0;
}

json_t *coved_snap_list(struct coved *d, const struct coved_tenant *t,
                        const struct coved_snap_query *q, char *next, size_t nlen)
{
	next[0] = 0;
	size_t n, m = 0;
	char **ids = scan_ids(d, &n);
	struct listed *all = calloc(n ? n : 1, sizeof(*all));
	json_t *arr = json_array();
	for (size_t i = 0; all && i < n; i++) {
		struct listed e = { 0 };
		if (!(e.meta = meta_load(d, ids[i], t, &e.key.ms)))
			continue;
		snprintf(e.key.id, sizeof(e.key.id), "%s", ids[i]);
		if (wanted(&e, q))
			all[m++] = e;
		else
			json_decref(e.meta);
	}
	qsort(all, m, sizeof(*all), listed_cmp);
	for (size_t i = 0; arr && i < m && i < q->limit; i++)
		json_array_append_new(arr, listed_json(&all[i]));
	if (m > q->limit)
		coved_snap_token(&all[q->limit - 1].key, next, nlen);
	for (size_t i = 0; i < m; i++)
		json_decref(all[i].meta);
	if (!all) {
		json_decref(arr);
		arr = NULL;
	}
	free(all);
	ids_free(ids, n);
	return arr;
}

bool coved_snap_dir_user(struct coved *d, const char *dir, const struct coved_sb *except, char *who,
                         size_t wlen)
{
	bool used = false;
	pthread_mutex_lock(&d->mu);
	for (struct coved_sb *o = d->list; o && !used; o = o->next) {
		if (o == except)
			continue;
		for (size_t i = 0; i < o->nsnaps && !used; i++)
			used = strcmp(o->snaps[i], dir) == 0;
		if (used && who)
			snprintf(who, wlen, "sandbox %s", o->id);
	}
	pthread_mutex_unlock(&d->mu);
	size_t n;
	char **ids = used ? NULL : scan_ids(d, &n);
	char sdir[4200], path[4300];
	snap_dir(d, sdir, sizeof(sdir));
	for (size_t i = 0; ids && i < n && !used; i++) {
		snprintf(path, sizeof(path), "%s/%s.json", sdir, ids[i]);
		json_t *o = json_load_file(path, 0, NULL);
		size_t j;
		json_t *v;
		json_array_foreach(json_object_get(o, "chain"), j, v)
		{
			used |= json_is_string(v) && strcmp(json_string_value(v), dir) == 0;
		}
		json_decref(o);
		if (used && who)
			snprintf(who, wlen, "snapshot %s", ids[i]);
	}
	if (ids)
		ids_free(ids, n);
	return used;
}

static int rm_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st;
	(void)type;
	(void)ftw;
	remove(path);
	return 0;
}

/* The pauses a deleted snapshot stood on (<state>/snapshots/<sandbox>.<n>,
 * kept for it after their sandbox went) go too when nothing else needs them. */
static void chain_drop(struct coved *d, json_t *chain)
{
	char pre[4200];
	snprintf(pre, sizeof(pre), "%s/snapshots/", d->cfg.state_dir);
	size_t i;
	json_t *v;
	json_array_foreach(chain, i, v)
	{
		const char *dir = json_string_value(v);
		if (!dir || strncmp(dir, pre, strlen(pre)) != 0 || strstr(dir, "/..") ||
		    strncmp(dir + strlen(pre), "snap-", 5) == 0)
			continue;
		if (!coved_snap_dir_user(d, dir, NULL, NULL, 0))
			nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	}
}

int coved_snap_delete(struct coved *d, const struct coved_tenant *t, const char *id_or_name,
                      char *msg, size_t len)
{
	struct timespec ts = deadline(DELETE_WAIT_S);
	if (pthread_rwlock_timedwrlock(&snaps_rw, &ts) != 0)
		return errf(msg, len, 409, "snapshot '%.64s' is being restored from: try again",
		            id_or_name);
	pthread_mutex_lock(&names_mu); /* no name moves off it meanwhile */
	int st = 0;
	char id[COVED_SNAP_ID_MAX + 1], path[4300], who[120];
	json_t *meta = NULL;
	int64_t ms;
	if (!t || !resolve(d, t, id_or_name, id) || !(meta = meta_load(d, id, t, &ms))) {
		st = errf(msg, len, 404, "snapshot '%.64s' not found", id_or_name);
		goto out;
	}
	snprintf(path, sizeof(path), "%s/snapshots/%s", d->cfg.state_dir, id);
	if (coved_snap_dir_user(d, path, NULL, who, sizeof(who))) {
		st = errf(msg, len, 409, "snapshot %s is in use: %s stands on it", id, who);
		goto out;
	}
	/* The directory first: a meta file without one lists as nothing. */
	nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	snprintf(path, sizeof(path), "%s/snapshots/%s.json", d->cfg.state_dir, id);
	if (unlink(path) < 0 && errno != ENOENT)
		fprintf(stderr, "coved: removing %s: %s\n", path, strerror(errno));
	names_changed();
	chain_drop(d, json_object_get(meta, "chain"));
out:
	json_decref(meta);
	pthread_mutex_unlock(&names_mu);
	pthread_rwlock_unlock(&snaps_rw);
	return st;
}
