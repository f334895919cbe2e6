/* Template builds through the API: the table, the records, the build
 * threads (a slot, the spec from the request, cove_template_ensure with
 * its progress and output in the build's log) (builds.h). */
#include "daemon/sandboxes/builds.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "cove.h"
#include "daemon/sandboxes/build_files.h"
#include "daemon/sandboxes/builds_priv.h"
#include "daemon/sandboxes/sandbox.h"
#include "daemon/sandboxes/state.h"
#include "daemon/sandboxes/table.h"
#include "daemon/sandboxes/templates.h"
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
	json_t *o = json_pack("{s:i, s:s, s:s, s:s, s:s, s:s, s:b, s:I, s:I}", "version", 1,
	                      "tenant", b->tenant, "name", b->name, "build_id", b->id, "status",
	                      coved_bstatus_name(b->status), "reason", b->reason, "built", b->built,
	                      "created_ms", (json_int_t)b->created_ms, "finished_ms",
	                      (json_int_t)b->finished_ms);
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
	               n < 0                      ? 0
	               : (size_t)n < sizeof(line) ? (size_t)n
	                                          : sizeof(line) - 1);
	coved_blog_limit(&b->log, COVED_BUILD_LOG_KEPT); /* kept while coved runs */
	coved_build_save(d, b);
}

/* A record of an earlier run (name and tenant checked against the file's
 * own name); one that was running is an error now. */
static struct coved_build *load_record(struct coved *d, const char *file)
{
	char p[4200];
	snprintf(p, sizeof(p), "%s/builds/%s", d->cfg.state_dir, file);
	json_t *o = json_load_file(p, 0, NULL);
	struct coved_build_record rec;
	struct coved_build *b = NULL;
	if (coved_build_record_parse(o, file, &rec) == 0 && (b = calloc(1, sizeof(*b)))) {
		memcpy(b->tenant, rec.tenant, sizeof(b->tenant));
		memcpy(b->name, rec.name, sizeof(b->name));
		memcpy(b->store, rec.store, sizeof(b->store));
		memcpy(b->id, rec.id, sizeof(b->id));
		memcpy(b->reason, rec.reason, sizeof(b->reason));
		b->created_ms = rec.created_ms;
		b->finished_ms = rec.finished_ms;
		b->status = rec.ready ? COVED_BUILD_READY : COVED_BUILD_ERROR;
		b->built = rec.built;
		coved_blog_init(&b->log, COVED_BUILD_LOG_MAX);
		if (rec.running)
			coved_build_finish(d, b, COVED_BUILD_ERROR,
			                   "coved restarted during the build");
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
	if (coved_files_init(d) < 0)
		return errf(err, errlen, -ENOMEM, "out of memory");
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

/* ---- the build thread ---- */

struct job {
	struct coved *d;
	struct coved_build *b;
};

static void on_note(void *opaque, const char *line)
{
	struct job *j = opaque;
	pthread_mutex_lock(&j->d->builds->mu);
	coved_blog_add(&j->b->log, coved_now_ms(), COVED_BLOG_INFO, line, strlen(line));
	pthread_mutex_unlock(&j->d->builds->mu);
}

static void on_output(struct job *j, int stream, const void *data, size_t len)
{
	pthread_mutex_lock(&j->d->builds->mu);
	coved_blog_output(&j->b->log, coved_now_ms(), stream, data, len);
	pthread_mutex_unlock(&j->d->builds->mu);
}

static void on_stdout(void *opaque, const void *data, size_t len)
{
	on_output(opaque, 0, data, len);
}

static void on_stderr(void *opaque, const void *data, size_t len)
{
	on_output(opaque, 1, data, len);
}

/* The store template from_template names: the tenant's own build of that
 * name, else one of the operator's store. */
static int parent_of(struct coved *d, const char *tenant, const char *name, char *out, size_t len,
                     char *err, size_t errlen)
{
	struct coved_build *p = coved_build_find(d->builds, tenant, name);
	if (p && p->built) {
		snprintf(out, len, "%s", p->store);
		return 0;
	}
	if (!p && coved_template_named(d, name)) {
		snprintf(out, len, "%s", name);
		return 0;
	}
	return errf(err, errlen, -ENOENT, "fromTemplate '%s': no such template is built", name);
}

/* After a COPY with a mode: a RUN that sets it on what the COPY put at
 * its top (recursively, as E2B's builder does), as root: with USER steps
 * around it when the steps so far made another user the default (user). */
static int add_mode(struct cove_template_spec *s, const char *ctx, const struct coved_bstep *st,
                    const char *user, char *err, size_t errlen)
{
	char words[COVE_TEMPLATE_RUN_MAX - 64], cmd[COVE_TEMPLATE_RUN_MAX];
	int k = coved_files_mode_targets(ctx, st->src, st->dest, words, sizeof(words), err, errlen);
	if (k < 0)
		return k;
	if (!words[0])
		return 0; /* an empty folder: nothing to set */
	snprintf(cmd, sizeof(cmd), "chmod -R %s -- %s", st->mode, words);
	bool other = user && strcmp(user, "root") && strncmp(user, "root:", 5) &&
	             strcmp(user, "0") && strncmp(user, "0:", 2);
	if ((other && (k = cove_template_add_step(s, COVE_STEP_USER, "root", err, errlen)) < 0) ||
	    (k = cove_template_add_step(s, COVE_STEP_RUN, cmd, err, errlen)) < 0 ||
	    (other && (k = cove_template_add_step(s, COVE_STEP_USER, user, err, errlen)) < 0))
		return k;
	return 0;
}

/* The steps of r into s: RUN, ENV, WORKDIR and USER as they are, a COPY
 * from its archive's unpacked folder. */
static int add_steps(struct coved *d, const char *tenant, const struct coved_build_req *r,
                     struct cove_template_spec *s, char *err, size_t errlen)
{
	static const enum cove_template_step_kind kinds[] = {
		[COVED_BSTEP_RUN] = COVE_STEP_RUN,
		[COVED_BSTEP_ENV] = COVE_STEP_ENV,
		[COVED_BSTEP_WORKDIR] = COVE_STEP_WORKDIR,
		[COVED_BSTEP_USER] = COVE_STEP_USER,
	};
	const char *user = NULL; /* the default user the steps so far set */
	for (size_t i = 0; i < r->nsteps; i++) {
		const struct coved_bstep *st = &r->steps[i];
		int k;
		if (st->kind == COVED_BSTEP_USER)
			user = st->arg;
		if (st->kind != COVED_BSTEP_COPY) {
			k = cove_template_add_step(s, kinds[st->kind], st->arg, err, errlen);
		} else {
			char ctx[4400];
			coved_files_dir(d, tenant, st->files, ctx, sizeof(ctx));
			const char *src = st->src;
			k = coved_files_present(d, tenant, st->files)
			        ? cove_template_add_copy(s, ctx, &src, 1, st->dest, st->chown, err,
			                                 errlen)
			        : errf(err, errlen, -ENOENT, "the files %.12s... were not uploaded",
			               st->files);
			if (k == 0 && st->mode[0])
				k = add_mode(s, ctx, st, user, err, errlen);
		}
		if (k < 0)
			return k;
	}
	return 0;
}

/* The spec of b's request: coved's kernel and VMM, its image when the
 * request names no other, its CPUs, memory and network. */
static int make_spec(struct coved *d, const struct coved_build *b, const char *parent,
                     struct cove_template_spec *s, char *err, size_t errlen)
{
	const struct coved_build_req *r = &b->req;
	struct cove_config cfg;
	cove_config_defaults(&cfg);
	char *image = cove_image_path(d->cfg.default_image);
	cfg.image = image;
	cfg.cpus = r->cpus ? r->cpus : d->cfg.cpus;
	cfg.memory_mib = r->memory_mib ? r->memory_mib : d->cfg.memory_mib;
	cfg.disk_size = (r->disk_mib ? r->disk_mib : d->cfg.disk_mib) << 20;
	int k = cove_template_spec_init(s, b->store, &cfg, err, errlen);
	free(image);
	if (k < 0)
		return k;
	s->net = d->cfg.network ? COVE_TEMPLATE_NET_OPEN : COVE_TEMPLATE_NET_OFF;
	s->ready_port = r->ready_port;
	s->ready_timeout_s = r->ready_timeout_s;
	if ((r->from && ((k = cove_template_set(s, &s->from, r->from, err, errlen)) < 0 ||
	                 (k = cove_template_set_agent(s, err, errlen)) < 0)) ||
	    (parent && (k = cove_template_set(s, &s->from_template, parent, err, errlen)) < 0) ||
	    (r->start_cmd &&
	     (k = cove_template_set(s, &s->start_cmd, r->start_cmd, err, errlen)) < 0) ||
	    (r->ready_cmd &&
	     (k = cove_template_set(s, &s->ready_cmd, r->ready_cmd, err, errlen)) < 0) ||
	    (k = add_steps(d, b->tenant, r, s, err, errlen)) < 0)
		return k;
	return 0;
}

/* Waits (under mu) for a slot until b's deadline: whether it got one. */
static bool take_slot(struct coved *d, struct coved_build *b)
{
	struct coved_builds *bs = d->builds;
	struct timespec ts = { .tv_sec = b->deadline_ms / 1000,
		               .tv_nsec = (b->deadline_ms % 1000) * 1000000 };
	while (bs->running >= d->cfg.max_builds && coved_now_ms() < b->deadline_ms)
		pthread_cond_timedwait(&bs->slot, &bs->mu, &ts); /* CLOCK_REALTIME, as now_ms */
	if (bs->running >= d->cfg.max_builds)
		return false;
	bs->running++;
	return true;
}

/* Under mu: b's end from ensure's result r. */
static void settle(struct coved *d, struct coved_build *b, int r, const char *err)
{
	char why[300];
	if (b->status == COVED_BUILD_ERROR) {
		/* Over its time limit: ended already; what it built goes. */
		if (r == 0) {
			char e[200];
			if (cove_template_remove(b->store, e, sizeof(e)) < 0)
				fprintf(stderr, "coved: template %s: %s\n", b->store, e);
			b->built = false; /* it had replaced the one before */
			coved_build_save(d, b);
		}
		return;
	}
	b->built |= r == 0;
	if (r == 0)
		coved_build_finish(d, b, COVED_BUILD_READY, NULL);
	else if (r > 0)
		coved_build_finish(
		    d, b, COVED_BUILD_ERROR,
		    (snprintf(why, sizeof(why), "a step failed (exit status %d)%s%.200s", r,
		              *err ? ": " : "", err),
		     why));
	else
		coved_build_finish(d, b, COVED_BUILD_ERROR, err);
}

static void *run(void *arg)
{
	struct job *j = arg;
	struct coved *d = j->d;
	struct coved_build *b = j->b;
	struct coved_builds *bs = d->builds;
	char err[600] = "", parent[COVE_TEMPLATE_NAME_MAX + 1];
	struct cove_template_spec spec = { 0 };
	int r = -ETIMEDOUT;
	pthread_mutex_lock(&bs->mu);
	bool slot = take_slot(d, b);
	if (slot && b->status == COVED_BUILD_ERROR) { /* its time ran out meanwhile */
		bs->running--;
		pthread_cond_broadcast(&bs->slot);
		slot = false;
	}
	if (!slot)
		snprintf(err, sizeof(err), "waited for a build slot past template_build_timeout_s");
	if (slot) {
		b->status = COVED_BUILD_BUILDING;
		coved_build_save(d, b);
		r = b->req.from_template ? parent_of(d, b->tenant, b->req.from_template, parent,
		                                     sizeof(parent), err, sizeof(err))
		                         : 0;
	}
	pthread_mutex_unlock(&bs->mu);
	/* The request is b's alone while its thread runs: read unlocked. */
	if (slot && r == 0)
		r = make_spec(d, b, b->req.from_template ? parent : NULL, &spec, err, sizeof(err));
	if (slot && r == 0) {
		/* RUNs end by the build's deadline (template_build_timeout_s),
		 * a wall-clock time here, a monotonic one there. */
		const struct cove_template_io io = {
			.note = on_note,
			.on_stdout = on_stdout,
			.on_stderr = on_stderr,
			.opaque = j,
			.deadline_ms = mono_ms() + (b->deadline_ms - coved_now_ms()),
		};
		char dir[4200];
		int lockfd = -1;
		cove_template_set_store(d->cfg.templates_dir);
		r = cove_template_ensure(&spec, b->req.force, &io, dir, sizeof(dir), &lockfd, err,
		                         sizeof(err));
		if (lockfd >= 0)
			close(lockfd);
	}
	cove_template_spec_free(&spec);
	pthread_mutex_lock(&bs->mu);
	if (slot) {
		bs->running--;
		pthread_cond_broadcast(&bs->slot);
	}
	settle(d, b, r, err);
	b->thread = false;
	bs->threads--;
	pthread_mutex_unlock(&bs->mu);
	free(j);
	return NULL;
}

/* Starts b's thread (b->status WAITING, its deadline set; under mu). */
static int spawn(struct coved *d, struct coved_build *b)
{
	struct job *j = malloc(sizeof(*j));
	if (!j)
		return -ENOMEM;
	*j = (struct job){ .d = d, .b = b };
	pthread_attr_t at;
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	pthread_t th;
	int e = pthread_create(&th, &at, run, j);
	pthread_attr_destroy(&at);
	if (e) {
		free(j);
		return -e;
	}
	b->thread = true;
	d->builds->threads++;
	return 0;
}

/* ---- requests ---- */

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
	size_t n = 0;
	for (struct coved_build *x = bs->list; x; x = x->next)
		n += strcmp(x->tenant, t->name) == 0;
	if (!old && n >= COVED_BUILDS_PER_TENANT) {
		*st = errf(msg, len, 403, "the tenant has %d templates: delete some first",
		           COVED_BUILDS_PER_TENANT);
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
		b->built = old->built; /* its template serves creates until a new one is built */
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
		return errf(msg, len, 403,
		            "this coved builds no templates (max_template_builds 0 "
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
		return errf(msg, len, 403,
		            "this coved builds no templates (max_template_builds 0 "
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
	int r = spawn(d, b);
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
	if (!b || b->thread) {
		int st = b ? errf(msg, len, 409, "template '%s' is being built or deleted", name)
		           : errf(msg, len, 404, "template '%s' not found", name);
		pthread_mutex_unlock(&bs->mu);
		return st;
	}
	/* Busy while the store removes it (up to a minute for restores that
	 * hold it), unlocked meanwhile; no create takes it from now on. */
	enum coved_bstatus was = b->status;
	bool built = b->built;
	char store[COVED_BUILD_STORE_LEN + 1], err[512], p[4200];
	b->thread = true;
	b->status = COVED_BUILD_ERROR;
	b->built = false;
	memcpy(store, b->store, sizeof(store));
	pthread_mutex_unlock(&bs->mu);
	cove_template_set_store(d->cfg.templates_dir);
	/* A failed rebuild leaves the last good one in the store: it goes too. */
	int r = cove_template_remove(store, err, sizeof(err));
	pthread_mutex_lock(&bs->mu);
	b->thread = false;
	int st = 0;
	if (r < 0 && r != -ENOENT) {
		b->status = was;
		b->built = built;
		st = errf(msg, len, 500, "template '%s': %s", name, err);
	} else {
		record_path(d, store, p, sizeof(p));
		unlink(p);
		struct coved_build **pp = &bs->list;
		while (*pp != b)
			pp = &(*pp)->next;
		*pp = b->next;
		coved_build_free(b);
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
	bool ok = b && b->built;
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

void coved_builds_expire(struct coved *d)
{
	struct coved_builds *bs = d->builds;
	if (!bs)
		return;
	char why[120];
	snprintf(why, sizeof(why), "over template_build_timeout_s (%u s)", d->cfg.build_timeout_s);
	int64_t now = coved_now_ms();
	pthread_mutex_lock(&bs->mu);
	for (struct coved_build *b = bs->list; b; b = b->next)
		if ((b->status == COVED_BUILD_WAITING || b->status == COVED_BUILD_BUILDING) &&
		    now >= b->deadline_ms)
			coved_build_finish(d, b, COVED_BUILD_ERROR, why);
	pthread_mutex_unlock(&bs->mu);
}

bool coved_builds_quiet(struct coved *d, unsigned int wait_ms)
{
	struct coved_builds *bs = d->builds;
	if (!bs)
		return true;
	for (unsigned int t = 0;; t += 50) {
		pthread_mutex_lock(&bs->mu);
		unsigned int n = bs->threads;
		pthread_mutex_unlock(&bs->mu);
		if (n == 0)
			return true;
		if (t >= wait_ms)
			return false;
		usleep(50 * 1000);
	}
}
