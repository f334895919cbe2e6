/* Template builds through the API: the table, the records (builds.h). */
#include "daemon/sandboxes/builds.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/sandboxes/build_run.h"
#include "daemon/sandboxes/builds_priv.h"
#include "daemon/sandboxes/sandbox.h"
#include "daemon/sandboxes/state.h"
#include "daemon/sandboxes/table.h"
#include "errf.h"
#include "lib/template/template.h"

const char *coved_bstatus_name(enum coved_bstatus s)
{
	static const char *const names[] = { "pending", "waiting", "building", "ready", "error" };
	return (unsigned)s < 5 ? names[s] : "error";
}

struct coved_build *coved_build_find(struct coved_builds *bs, const char *tenant, const char *name)
{
	struct coved_build *b = bs->list;
	while (b && (strcmp(b->tenant, tenant) || strcmp(b->name, name)))
		b = b->next;
	return b;
}

void coved_build_free(struct coved_build *b)
{
	coved_build_req_free(&b->req);
	coved_blog_free(&b->log);
	free(b);
}

static void record_path(const struct coved *d, const char *store, char *p, size_t len)
{
	snprintf(p, len, "%s/builds/%s.json", d->cfg.state_dir, store);
}

void coved_build_save(struct coved *d, const struct coved_build *b)
{
	char p[4200], tmp[4300];
	record_path(d, b->store, p, sizeof(p));
	snprintf(tmp, sizeof(tmp), "%s.tmp", p);
	json_t *o = json_pack("{s:i, s:s, s:s, s:s, s:s, s:s, s:I, s:I}", "version", 1, "tenant",
	                      b->tenant, "name", b->name, "build_id", b->id, "status",
	                      coved_bstatus_name(b->status), "reason", b->reason, "created_ms",
	                      (json_int_t)b->created_ms, "finished_ms", (json_int_t)b->finished_ms);
	if (o && json_dump_file(o, tmp, JSON_COMPACT) == 0 && rename(tmp, p) < 0)
		unlink(tmp);
	if (!o)
		fprintf(stderr, "coved: cannot write %s: out of memory\n", p);
	json_decref(o);
}

void coved_build_finish(struct coved *d, struct coved_build *b, enum coved_bstatus st,
                        const char *reason)
{
	b->status = st;
	snprintf(b->reason, sizeof(b->reason), "%s", reason ? reason : "");
	b->finished_ms = coved_now_ms();
	coved_blog_flush(&b->log, b->finished_ms);
	char line[400];
	int n = snprintf(line, sizeof(line), "build %s%s%s", coved_bstatus_name(st),
	                 reason ? ": " : "", reason ? reason : "");
	coved_blog_add(&b->log, b->finished_ms,
	               st == COVED_BUILD_ERROR ? COVED_BLOG_ERROR : COVED_BLOG_INFO, line,
	               n < 0 ? 0 : (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
	coved_build_save(d, b);
}

/* A record of an earlier run (name and tenant checked against the file's
 * own name); one that was running is an error now. */
static struct coved_build *load_record(struct coved *d, const char *file)
{
	char p[4200];
	snprintf(p, sizeof(p), "%s/builds/%s", d->cfg.state_dir, file);
	json_t *o = json_load_file(p, 0, NULL);
	const char *tenant = json_string_value(json_object_get(o, "tenant"));
	const char *name = json_string_value(json_object_get(o, "name"));
	const char *id = json_string_value(json_object_get(o, "build_id"));
	const char *st = json_string_value(json_object_get(o, "status"));
	const char *reason = json_string_value(json_object_get(o, "reason"));
	struct coved_build *b = NULL;
	char store[COVED_BUILD_STORE_LEN + 1];
	if (tenant && name && id && st && coved_tenant_name_ok(tenant, strlen(tenant)) &&
	    coved_build_name_ok(name) && strlen(id) == COVED_BUILD_ID_LEN &&
	    (coved_build_store_name(tenant, name, store), !strncmp(file, store, strlen(store))) &&
	    (b = calloc(1, sizeof(*b)))) {
		snprintf(b->tenant, sizeof(b->tenant), "%s", tenant);
		snprintf(b->name, sizeof(b->name), "%s", name);
		snprintf(b->store, sizeof(b->store), "%s", store);
		snprintf(b->id, sizeof(b->id), "%s", id);
		snprintf(b->reason, sizeof(b->reason), "%s", reason ? reason : "");
		b->created_ms = json_integer_value(json_object_get(o, "created_ms"));
		b->finished_ms = json_integer_value(json_object_get(o, "finished_ms"));
		b->status = strcmp(st, "ready") == 0 ? COVED_BUILD_READY : COVED_BUILD_ERROR;
		coved_blog_init(&b->log, COVED_BUILD_LOG_MAX);
		if (strcmp(st, "ready") && strcmp(st, "error"))
			coved_build_finish(d, b, COVED_BUILD_ERROR, "coved restarted during the build");
	}
	json_decref(o);
	return b;
}

int coved_builds_init(struct coved *d, char *err, size_t errlen)
{
	struct coved_builds *bs = calloc(1, sizeof(*bs));
	if (!bs)
		return errf(err, errlen, -ENOMEM, "out of memory");
	pthread_mutex_init(&bs->mu, NULL);
	pthread_cond_init(&bs->slot, NULL);
	d->builds = bs;
	char p[4200];
	snprintf(p, sizeof(p), "%s/builds", d->cfg.state_dir);
	DIR *dir = opendir(p);
	if (!dir)
		return errf(err, errlen, -errno, "cannot read %s: %s", p, strerror(errno));
	struct dirent *e;
	while ((e = readdir(dir))) {
		size_t n = strlen(e->d_name);
		if (n < 6 || strcmp(e->d_name + n - 5, ".json"))
			continue;
		struct coved_build *b = load_record(d, e->d_name);
		if (b && !coved_build_find(bs, b->tenant, b->name)) {
			b->next = bs->list;
			bs->list = b;
		} else if (b) {
			coved_build_free(b);
		}
	}
	closedir(dir);
	return 0;
}

/* A new build of the tenant's name in the table (replacing a finished
 * one), or NULL with an HTTP status in *st. */
static struct coved_build *new_build(struct coved *d, const struct coved_tenant *t,
                                     const char *name, int *st, char *msg, size_t len)
{
	struct coved_builds *bs = d->builds;
	struct coved_build *old = coved_build_find(bs, t->name, name);
	if (old && old->thread) {
		*st = errf(msg, len, 409, "template '%s' is being built (build %s)", name, old->id);
		return NULL;
	}
	char hex[COVED_TOKEN_LEN + 1];
	struct coved_build *b = calloc(1, sizeof(*b));
	if (!b || coved_new_token(hex) < 0) {
		free(b);
		*st = errf(msg, len, 500, "out of memory or no random numbers");
		return NULL;
	}
	snprintf(b->tenant, sizeof(b->tenant), "%s", t->name);
	snprintf(b->name, sizeof(b->name), "%s", name);
	coved_build_store_name(t->name, name, b->store);
	/* E2B's buildID looks like a UUID: 32 random hex digits, dashed. */
	snprintf(b->id, sizeof(b->id), "%.8s-%.4s-%.4s-%.4s-%.12s", hex, hex + 8, hex + 12,
	         hex + 16, hex + 20);
	b->created_ms = coved_now_ms();
	coved_blog_init(&b->log, COVED_BUILD_LOG_MAX);
	if (old) {
		struct coved_build **pp = &bs->list;
		while (*pp != old)
			pp = &(*pp)->next;
		*pp = old->next;
		coved_build_free(old);
	}
	b->next = bs->list;
	bs->list = b;
	return b;
}

int coved_build_request(struct coved *d, const struct coved_tenant *t, struct coved_build_req *req,
                        char id[COVED_BUILD_ID_LEN + 1], char *msg, size_t len)
{
	if (!d->cfg.max_builds || !d->cfg.templates_dir)
		return errf(msg, len, 403, "this coved builds no templates (max_template_builds 0 "
		                           "or no templates_dir)");
	int st = 0;
	pthread_mutex_lock(&d->builds->mu);
	struct coved_build *b = new_build(d, t, req->name, &st, msg, len);
	if (b) {
		b->req = *req;
		memset(req, 0, sizeof(*req));
		b->status = COVED_BUILD_PENDING;
		snprintf(id, COVED_BUILD_ID_LEN + 1, "%s", b->id);
		coved_build_save(d, b);
	}
	pthread_mutex_unlock(&d->builds->mu);
	return st;
}

/* Moves the steps and sources of req into b's request (E2B's second call). */
static void take_steps(struct coved_build_req *to, struct coved_build_req *req)
{
	char name[sizeof(to->name)];
	unsigned int cpus = to->cpus;
	uint64_t mem = to->memory_mib;
	memcpy(name, to->name, sizeof(name));
	coved_build_req_free(to);
	*to = *req;
	memset(req, 0, sizeof(*req));
	memcpy(to->name, name, sizeof(name));
	to->cpus = cpus;
	to->memory_mib = mem;
}

int coved_build_start(struct coved *d, const struct coved_tenant *t, const char *id,
                      struct coved_build_req *req, json_t **out, char *msg, size_t len)
{
	*out = NULL;
	if (!d->cfg.max_builds || !d->cfg.templates_dir)
		return errf(msg, len, 403, "this coved builds no templates (max_template_builds 0 "
		                           "or no templates_dir)");
	struct coved_builds *bs = d->builds;
	int st = 0;
	pthread_mutex_lock(&bs->mu);
	struct coved_build *b;
	if (id) {
		b = coved_build_find(bs, t->name, req->name);
		if (!b || strcmp(b->id, id) || b->status != COVED_BUILD_PENDING) {
			st = errf(msg, len, b && !strcmp(b->id, id) ? 409 : 404,
			          b && !strcmp(b->id, id) ? "build %s has started already"
			                                   : "build %s not found",
			          id);
			goto out;
		}
		take_steps(&b->req, req);
	} else {
		if (!(b = new_build(d, t, req->name, &st, msg, len)))
			goto out;
		b->req = *req;
		memset(req, 0, sizeof(*req));
	}
	b->status = COVED_BUILD_WAITING;
	b->deadline_ms = coved_now_ms() + (int64_t)d->cfg.build_timeout_s * 1000;
	int r = coved_build_spawn(d, b);
	if (r < 0) {
		coved_build_finish(d, b, COVED_BUILD_ERROR, "cannot start a build thread");
		st = errf(msg, len, 500, "cannot start a build thread: %s", strerror(-r));
		goto out;
	}
	coved_build_save(d, b);
	*out = json_pack("{s:s, s:s, s:s}", "name", b->name, "build_id", b->id, "status",
	                 coved_bstatus_name(b->status));
out:
	pthread_mutex_unlock(&bs->mu);
	return st;
}

int coved_build_delete(struct coved *d, const struct coved_tenant *t, const char *name, char *msg,
                       size_t len)
{
	struct coved_builds *bs = d->builds;
	pthread_mutex_lock(&bs->mu);
	struct coved_build *b = coved_build_find(bs, t->name, name);
	int st = 0;
	if (!b) {
		st = errf(msg, len, 404, "template '%s' not found", name);
	} else if (b->thread) {
		st = errf(msg, len, 409, "template '%s' is being built (build %s)", name, b->id);
	} else {
		char err[512], p[4200];
		cove_template_set_store(d->cfg.templates_dir);
		int r = b->status == COVED_BUILD_READY ? cove_template_remove(b->store, err, sizeof(err))
		                                       : 0;
		if (r < 0 && r != -ENOENT) {
			st = errf(msg, len, 500, "template '%s': %s", name, err);
		} else {
			record_path(d, b->store, p, sizeof(p));
			unlink(p);
			struct coved_build **pp = &bs->list;
			while (*pp != b)
				pp = &(*pp)->next;
			*pp = b->next;
			coved_build_free(b);
		}
	}
	pthread_mutex_unlock(&bs->mu);
	return st;
}

bool coved_build_ready(struct coved *d, const struct coved_tenant *t, const char *name,
                       char store[COVED_BUILD_STORE_LEN + 1])
{
	if (!d->builds || !t)
		return false;
	pthread_mutex_lock(&d->builds->mu);
	struct coved_build *b = coved_build_find(d->builds, t->name, name);
	bool ok = b && b->status == COVED_BUILD_READY;
	if (ok)
		snprintf(store, COVED_BUILD_STORE_LEN + 1, "%s", b->store);
	pthread_mutex_unlock(&d->builds->mu);
	return ok;
}

bool coved_build_pending(struct coved *d, const struct coved_tenant *t, const char *name,
                         const char *id)
{
	if (!d->builds || !t)
		return false;
	pthread_mutex_lock(&d->builds->mu);
	struct coved_build *b = coved_build_find(d->builds, t->name, name);
	bool ok = b && b->status == COVED_BUILD_PENDING && (!id || !strcmp(b->id, id));
	pthread_mutex_unlock(&d->builds->mu);
	return ok;
}
