/* A template build's thread: a slot, the spec from the request, then
 * cove_template_ensure with its progress and output in the build's log
 * (build_run.h). */
#include "daemon/sandboxes/build_run.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cove.h"
#include "daemon/sandboxes/build_files.h"
#include "daemon/sandboxes/builds_priv.h"
#include "daemon/sandboxes/sandbox.h"
#include "daemon/sandboxes/state.h"
#include "daemon/sandboxes/templates.h"
#include "errf.h"
#include "lib/template/template.h"

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
	if (p && p->status == COVED_BUILD_READY) {
		snprintf(out, len, "%s", p->store);
		return 0;
	}
	if (!p && coved_template_named(d, name)) {
		snprintf(out, len, "%s", name);
		return 0;
	}
	return errf(err, errlen, -ENOENT, "fromTemplate '%s': no such template is built", name);
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
	for (size_t i = 0; i < r->nsteps; i++) {
		const struct coved_bstep *st = &r->steps[i];
		int k;
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
	if ((r->from && (k = cove_template_set(s, &s->from, r->from, err, errlen)) < 0) ||
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
		}
		return;
	}
	if (r == 0)
		coved_build_finish(d, b, COVED_BUILD_READY, NULL);
	else if (r > 0)
		coved_build_finish(d, b, COVED_BUILD_ERROR,
		                   (snprintf(why, sizeof(why), "a step failed (exit status %d)%s%.200s",
		                             r, *err ? ": " : "", err),
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
		const struct cove_template_io io = {
			.note = on_note, .on_stdout = on_stdout, .on_stderr = on_stderr, .opaque = j
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

int coved_build_spawn(struct coved *d, struct coved_build *b)
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
