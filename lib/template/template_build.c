/* Building a template (template_build.h, docs/templates.md "Builds").
 * The sandbox starts from the longest prefix of steps whose result is in
 * the store's .steps/ (a snapshot taken after that step), else from the
 * parent template, else by a cold boot of the image (an imported image
 * boots cove-agent as its init).  Each RUN, PUT and COPY it then runs is
 * snapshotted into .steps/<key> (the sandbox goes on), so a rebuild that
 * changed only step k starts after step k-1.  ENV, WORKDIR and USER are
 * state the host keeps: each RUN gets it, and the end pushes it into the
 * agent as the defaults of every later exec. */
#include "lib/template/template_build.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "clock.h"
#include "cove.h"
#include "errf.h"
#include "io.h"
#include "lib/agent/proc.h"
#include "lib/template/template_copy.h"
#include "lib/template/template_ready.h"
#include "lib/template/template_rootfs.h"
#include "lib/template/template_store.h"
#include "proto.h"

/* ---- the state ---- */

/* How long the sync before the template's snapshot may take. */
#define SYNC_MS (5 * 60 * 1000)

static void strv_free(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

/* Sets "K=V" in the list (v, *n): replaces K's entry, else appends. */
static int env_set(char ***v, size_t *n, const char *kv)
{
	size_t klen = (size_t)(strchr(kv, '=') - kv);
	char *copy = strdup(kv);
	if (!copy)
		return -ENOMEM;
	for (size_t i = 0; i < *n; i++)
		if (!strncmp((*v)[i], kv, klen + 1)) {
			free((*v)[i]);
			(*v)[i] = copy;
			return 0;
		}
	char **g = realloc(*v, (*n + 2) * sizeof(**v));
	if (!g) {
		free(copy);
		return -ENOMEM;
	}
	*v = g;
	g[(*n)++] = copy;
	g[*n] = NULL;
	return 0;
}

static int set_str(char **field, const char *v)
{
	char *c = strdup(v);
	if (!c)
		return -ENOMEM;
	free(*field);
	*field = c;
	return 0;
}

/* A JSON array of strings (checked when the step was added) into *v. */
static int set_strv(char ***v, const char *json)
{
	json_t *a = json_loads(json, 0, NULL);
	size_t n = json_array_size(a);
	char **o = calloc(n + 1, sizeof(*o));
	int r = a && o ? 0 : -ENOMEM;
	for (size_t i = 0; r == 0 && i < n; i++)
		if (!(o[i] = strdup(json_string_value(json_array_get(a, i)) ?: "")))
			r = -ENOMEM;
	json_decref(a);
	if (r < 0) {
		strv_free(o);
		return r;
	}
	strv_free(*v);
	*v = o;
	return 0;
}

int template_fold_config(struct cove_template_config *c, const struct cove_template_step *steps,
                         size_t n)
{
	int r = 0;
	for (size_t i = 0; r == 0 && i < n; i++) {
		const struct cove_template_step *t = &steps[i];
		if (t->kind == COVE_STEP_ENV)
			r = env_set(&c->env, &c->nenv, t->run);
		else if (t->kind == COVE_STEP_WORKDIR)
			r = set_str(&c->workdir, t->run);
		else if (t->kind == COVE_STEP_USER)
			r = set_str(&c->user, t->run);
		else if (t->kind == COVE_STEP_CMD)
			r = set_strv(&c->cmd, t->run);
		else if (t->kind == COVE_STEP_ENTRYPOINT)
			r = set_strv(&c->entrypoint, t->run);
	}
	return r;
}

/* What RUN step i runs with: the ARGs before it, then the config's env
 * over them (an ENV of the same name wins, as Docker's does). */
static char **run_env(const struct cove_template_config *c, const struct cove_template_spec *s,
                      size_t i, size_t *n)
{
	char **v = NULL;
	*n = 0;
	int r = 0;
	for (size_t k = 0; r == 0 && k < i; k++)
		if (s->steps[k].kind == COVE_STEP_ARG)
			r = env_set(&v, n, s->steps[k].run);
	for (size_t k = 0; r == 0 && k < c->nenv; k++)
		r = env_set(&v, n, c->env[k]);
	if (r == 0 && !v)
		v = calloc(1, sizeof(*v));
	if (r < 0 || !v) {
		for (size_t k = 0; v && k < *n; k++)
			free(v[k]);
		free(v);
		return NULL;
	}
	return v;
}

/* ---- steps ---- */

static bool changes_guest(const struct cove_template_step *t)
{
	return t->kind == COVE_STEP_RUN || t->kind == COVE_STEP_PUT || t->kind == COVE_STEP_COPY;
}

static const char *step_word(const struct cove_template_step *t)
{
	static const char *const w[] = { "RUN",  "PUT", "COPY", "ENV",       "WORKDIR",
		                         "USER", "ARG", "CMD",  "ENTRYPOINT" };
	_Static_assert(sizeof(w) / sizeof(w[0]) == COVE_STEP_ENTRYPOINT + 1, "a word each");
	return w[t->kind];
}

static int run_step(struct cove_sandbox *sb, const struct cove_template_spec *s, size_t i,
                    const struct cove_template_config *st, const struct cove_template_io *io,
                    char *err, size_t errlen)
{
	const struct cove_template_step *t = &s->steps[i];
	char e[512];
	if (t->kind == COVE_STEP_PUT) {
		int r = cove_put_file(sb, t->local, t->guest, 0, e, sizeof(e));
		return r < 0 ? errf(err, errlen, r, "step %zu (PUT %s %s): %s", i + 1, t->local,
		                    t->guest, e)
		             : 0;
	}
	if (t->kind == COVE_STEP_COPY) {
		int r = template_copy(sb, t, e, sizeof(e));
		return r < 0 ? errf(err, errlen, r, "step %zu (COPY to %s): %s", i + 1, t->guest, e)
		             : 0;
	}
	size_t n;
	char **env = run_env(st, s, i, &n);
	if (!env)
		return errf(err, errlen, -ENOMEM, "out of memory");
	const char *argv[] = { "/bin/sh", "-c", t->run, NULL };
	struct cove_exec_opts o = {
		.argv = argv,
		.env = (const char *const *)env,
		.cwd = st->workdir,
		.user = st->user,
		.stdin_fd = -1,
		.on_stdout = io ? io->on_stdout : NULL,
		.on_stderr = io ? io->on_stderr : NULL,
		.opaque = io ? io->opaque : NULL,
	};
	unsigned int limit_s =
	    io && io->step_timeout_s ? io->step_timeout_s : COVE_TEMPLATE_STEP_TIMEOUT_S;
	o.timeout_ms = (uint64_t)limit_s * 1000;
	if (io && io->deadline_ms) {
		int64_t left = io->deadline_ms - mono_ms();
		if (left <= 0)
			return errf(err, errlen, -ETIMEDOUT,
			            "step %zu (RUN %s): the build's time is up", i + 1, t->run);
		if ((uint64_t)left < o.timeout_ms)
			o.timeout_ms = (uint64_t)left;
	}
	struct cove_exec_result res;
	int r = cove_exec(sb, &o, &res, e, sizeof(e));
	strv_free(env);
	if (r < 0)
		return errf(err, errlen, r, "step %zu (RUN %s): %s", i + 1, t->run, e);
	if (res.timed_out)
		return errf(err, errlen, -ETIMEDOUT, "step %zu (RUN %s) timed out after %llu s",
		            i + 1, t->run, (unsigned long long)(o.timeout_ms / 1000));
	int status = res.signal ? 128 + res.signal : res.exit_code;
	if (status) {
		errf(err, errlen, 0, "step %zu (RUN %s) failed with status %d", i + 1, t->run,
		     status);
		return status > 255 ? 255 : status;
	}
	return 0;
}

/* A working directory the guest may not have yet (Docker makes it). */
static int make_workdir(struct cove_sandbox *sb, const char *path, char *err, size_t errlen)
{
	char e[256];
	int r = cove_agent_call(
	    sb, PROTO_MKDIR, json_pack("{s:s, s:i, s:b}", "path", path, "mode", 0755, "parents", 1),
	    NULL, e, sizeof(e));
	return r < 0 ? errf(err, errlen, r, "WORKDIR %s: %s", path, e) : 0;
}

/* The snapshot of the steps so far into .steps/<key>, the sandbox going
 * on (best effort: a cache that cannot be written costs a rebuild). */
static void keep_step(struct cove_sandbox *sb, const char *store, const char *key,
                      const struct cove_template_io *io)
{
	char dir[PATH_MAX], tmp[PATH_MAX + 64], e[512];
	snprintf(dir, sizeof(dir), "%s/%s", store, STEPS_DIR);
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return;
	uint32_t rnd = 0;
	if (getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd))
		rnd = (uint32_t)time(NULL);
	snprintf(tmp, sizeof(tmp), "%s/%s/.tmp-%d.%08x", store, STEPS_DIR, (int)getpid(), rnd);
	snprintf(dir, sizeof(dir), "%s/%s/%s", store, STEPS_DIR, key);
	if (cove_snapshot(sb, tmp, false, e, sizeof(e)) < 0) {
		template_note(io, "step cache: %s", e);
		return;
	}
	if (renameat2(AT_FDCWD, tmp, AT_FDCWD, dir, RENAME_NOREPLACE) < 0)
		template_remove_dir(tmp); /* another build kept the same step */
}

/* ---- the start ---- */

struct start {
	struct cove_config cfg;
	char rootfs[PATH_MAX];
	char from[PATH_MAX]; /* a snapshot directory to restore, or "" */
	int lockfd;          /* the parent template's use lock, or -1 */
};

static int base_config(const char *store, const struct cove_template_spec *s,
                       const struct cove_template_io *io, struct start *b,
                       struct cove_template_config *c, char *err, size_t errlen)
{
	cove_config_defaults(&b->cfg);
	b->cfg.vmm = s->vmm;
	b->cfg.kernel = s->kernel;
	b->cfg.image = s->image;
	b->cfg.cpus = s->cpus;
	b->cfg.memory_mib = s->memory_mib;
	b->cfg.disk_size = s->disk_size;
	/* A NIC; restores bring their own policy. */
	if (s->net != COVE_TEMPLATE_NET_OFF)
		b->cfg.net.mode = s->net == COVE_TEMPLATE_NET_OPEN ? COVE_NET_OPEN : COVE_NET_NONE;
	b->lockfd = -1;
	if (s->from) {
		int r = template_rootfs(store, s, io, b->rootfs, sizeof(b->rootfs), c, err, errlen);
		if (r < 0)
			return r;
		b->cfg.image = b->rootfs;
		b->cfg.cmdline = ROOTFS_INIT;
		return 0;
	}
	if (!s->from_template)
		return 0;
	/* The parent: its config, and its use lock held while it is restored
	 * (a rebuild of it waits for this build's restore). */
	struct cove_template_manifest m;
	int r = cove_template_load(s->from_template, &m, err, errlen);
	if (r < 0)
		return r;
	*c = m.config;
	memset(&m.config, 0, sizeof(m.config));
	cove_template_manifest_free(&m);
	snprintf(b->from, sizeof(b->from), "%s/%s", store, s->from_template);
	if ((b->lockfd = template_lock_open(store, s->from_template, err, errlen)) < 0)
		return b->lockfd;
	if ((r = flock_wait(b->lockfd, LOCK_SH, LOCK_BUILD_WAIT_MS)) < 0)
		return errf(err, errlen, r, "template '%s': %s", s->from_template, strerror(-r));
	return 0;
}

/* The last step whose result is cached, or -1. */
static long cached_prefix(const char *store, const struct cove_template_spec *s,
                          const char (*keys)[SHA256_HEX])
{
	for (long i = (long)s->nsteps - 1; i >= 0; i--) {
		char p[PATH_MAX];
		struct stat st;
		snprintf(p, sizeof(p), "%s/%s/%s", store, STEPS_DIR, keys[i]);
		if (changes_guest(&s->steps[i]) && stat(p, &st) == 0 && S_ISDIR(st.st_mode))
			return i;
	}
	return -1;
}

static int start(const char *store, const struct cove_template_spec *s,
                 const char (*keys)[SHA256_HEX], bool force, struct start *b, long *done,
                 const struct cove_template_io *io, struct cove_sandbox **sb, char *err,
                 size_t errlen)
{
	char e[512], p[PATH_MAX];
	*done = force ? -1 : cached_prefix(store, s, keys);
	int64_t t0 = mono_ms();
	int r;
	if (*done >= 0) {
		snprintf(p, sizeof(p), "%s/%s/%s", store, STEPS_DIR, keys[*done]);
		template_note(io, "steps 1-%ld: cached, restoring the sandbox after them",
		              *done + 1);
		r = cove_restore(&b->cfg, p, sb, e, sizeof(e));
	} else if (b->from[0]) {
		template_note(io, "restoring template %s", s->from_template);
		r = cove_restore(&b->cfg, b->from, sb, e, sizeof(e));
	} else {
		template_note(io, "booting %s", s->from ? s->from : s->image);
		r = cove_start(&b->cfg, sb, e, sizeof(e));
	}
	if (b->lockfd >= 0) {
		close(b->lockfd); /* the restore has its own files now */
		b->lockfd = -1;
	}
	if (r < 0)
		return errf(err, errlen, r, "%s", e);
	template_note(io, "sandbox up in %lld ms", (long long)(mono_ms() - t0));
	return 0;
}

/* ---- the end ---- */

static int finish(struct cove_sandbox *sb, const struct cove_template_spec *s,
                  const struct cove_template_config *c, const char *tmp,
                  const struct cove_template_io *io, char *err, size_t errlen)
{
	char e[512];
	const struct cove_exec_defaults d = {
		.env = (const char *const *)c->env,
		.cwd = c->workdir,
		.user = c->user,
	};
	int r = cove_set_exec_defaults(sb, &d, e, sizeof(e));
	if (r < 0)
		return errf(err, errlen, r, "the exec defaults: %s", e);
	if (s->start_cmd && (r = template_start_ready(sb, s, io, err, errlen)) < 0)
		return r;
	/* The guest's dirty pages are in the snapshot either way; a sync
	 * makes the disk alone consistent too (the agent's: an image may
	 * have no sync program).  A step that wrote much (a venv, a pip
	 * install) leaves the guest up to its dirty limit to write back: on a
	 * slow disk that takes far past one agent step's 10 s. */
	if ((r = cove_agent_call_ms(sb, PROTO_SYNC, json_object(), NULL, SYNC_MS, e, sizeof(e))) <
	    0)
		return errf(err, errlen, r, "sync: %s", e);
	int64_t t0 = mono_ms();
	if ((r = cove_snapshot(sb, tmp, true, e, sizeof(e))) < 0)
		return errf(err, errlen, r, "snapshot: %s", e);
	template_note(io, "snapshot in %lld ms", (long long)(mono_ms() - t0));
	return 0;
}

int template_build(const char *store, const struct cove_template_spec *s,
                   const char (*keys)[SHA256_HEX], bool force, const char *tmp,
                   const struct cove_template_io *io, struct cove_template_config *c, char *err,
                   size_t errlen)
{
	struct start b = { .lockfd = -1 };
	memset(c, 0, sizeof(*c));
	int r = base_config(store, s, io, &b, c, err, errlen);
	struct cove_sandbox *sb = NULL;
	long done = -1;
	if (r == 0)
		r = start(store, s, keys, force, &b, &done, io, &sb, err, errlen);
	if (b.lockfd >= 0)
		close(b.lockfd);
	/* The state after the cached steps, then step by step. */
	for (long i = 0; r == 0 && i <= done; i++) {
		const struct cove_template_step *t = &s->steps[i];
		template_note(io, "step %ld/%zu: %s %s (cached)", i + 1, s->nsteps, step_word(t),
		              t->kind == COVE_STEP_RUN ? t->run
		              : t->guest               ? t->guest
		                                       : t->run);
	}
	if (r == 0 && (r = template_fold_config(c, s->steps, (size_t)(done + 1))) < 0)
		r = errf(err, errlen, r, "out of memory");
	if (r == 0 && done < 0 && c->workdir)
		r = make_workdir(sb, c->workdir, err, errlen); /* the image's */
	for (size_t i = (size_t)(done + 1); r == 0 && i < s->nsteps; i++) {
		const struct cove_template_step *t = &s->steps[i];
		const char *what = t->kind == COVE_STEP_RUN ? t->run : t->guest ? t->guest : t->run;
		template_note(io, "step %zu/%zu: %s %s", i + 1, s->nsteps, step_word(t), what);
		if (!changes_guest(t)) {
			if (template_fold_config(c, t, 1) < 0)
				r = errf(err, errlen, -ENOMEM, "out of memory");
			else if (t->kind == COVE_STEP_WORKDIR)
				r = make_workdir(sb, t->run, err, errlen);
			continue;
		}
		int64_t t0 = mono_ms();
		if ((r = run_step(sb, s, i, c, io, err, errlen)) != 0)
			break;
		keep_step(sb, store, keys[i], io);
		template_note(io, "step %zu/%zu: done in %lld ms", i + 1, s->nsteps,
		              (long long)(mono_ms() - t0));
	}
	if (r == 0)
		r = finish(sb, s, c, tmp, io, err, errlen);
	if (sb)
		cove_free(sb);
	if (r != 0)
		cove_template_config_free(c);
	return r;
}
