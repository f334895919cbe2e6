/* A Dockerfile into a template's spec (template.h,
 * docs/templates.md "Dockerfiles"): lib/image/dockerfile.c parses it,
 * here each instruction becomes the step that does the same. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "errf.h"
#include "io.h"
#include "lib/image/context.h"
#include "lib/image/dockerfile.h"
#include "lib/template/template_dockerfile.h"
#include "lib/template/template_store.h"

/* A JSON-form RUN for /bin/sh -c: each word quoted, run by exec. */
static char *shell_words(const struct df_list *l)
{
	size_t n = 5;
	for (size_t i = 0; i < l->n; i++)
		n += 3 + 4 * strlen(l->v[i]);
	char *o = malloc(n + 1), *p = o;
	if (!o)
		return NULL;
	p += sprintf(p, "exec");
	for (size_t i = 0; i < l->n; i++) {
		*p++ = ' ';
		*p++ = '\'';
		for (const char *c = l->v[i]; *c; c++) {
			if (*c == '\'') {
				memcpy(p, "'\\''", 4);
				p += 4;
			} else {
				*p++ = *c;
			}
		}
		*p++ = '\'';
	}
	*p = 0;
	return o;
}

static char *strv_text(const struct df_list *l)
{
	json_t *a = json_array();
	for (size_t i = 0; a && i < l->n; i++)
		json_array_append_new(a, json_string(l->v[i]));
	char *t = a ? json_dumps(a, JSON_COMPACT) : NULL;
	json_decref(a);
	return t;
}

/* FROM: an image by its transport, else a template of that name, else a
 * registry reference. */
static int from(struct cove_template_spec *s, const char *ref, char *err, size_t errlen)
{
	static const char *const kinds[] = { "oci:", "oci-archive:", "docker-archive:" };
	bool image = false;
	for (size_t i = 0; i < 3; i++)
		image = image || !strncmp(ref, kinds[i], strlen(kinds[i]));
	struct cove_template_manifest m;
	char e[256];
	if (!image && cove_template_name_valid(ref) &&
	    cove_template_load(ref, &m, e, sizeof(e)) == 0) {
		cove_template_manifest_free(&m);
		return cove_template_set(s, &s->from_template, ref, err, errlen);
	}
	int r = cove_template_set(s, &s->from, ref, err, errlen);
	return r < 0 ? r : cove_template_set_agent(s, err, errlen);
}

/* The source pattern pat alone: 1 when it names one tar archive (ADD
 * unpacks it), 0 when it is files or folders to copy; -errno with e. */
static int one_archive(const struct ctx *x, const char *pat, bool add, char *e, size_t elen)
{
	struct ctx_files f = { 0 };
	int r = ctx_resolve(x, &pat, 1, add, &f, e, elen);
	if (r == 0)
		r = f.n == 1 && f.v[0].archive;
	ctx_files_free(&f);
	return r;
}

/* COPY and ADD: runs of plain sources become one COPY step each; an ADD's
 * local tar archive (plain, gzip, bzip2, xz or zstd) becomes a step that
 * unpacks it into dest, as Docker does. */
static int copy(struct cove_template_spec *s, const struct df_step *st, const char *context,
                char *err, size_t errlen)
{
	const struct df_copy *c = &st->copy;
	if (!context)
		return errf(err, errlen, -EINVAL, "Dockerfile:%u: COPY needs a build context",
		            st->line);
	char chown[300], *owner = NULL;
	if (c->chown_user) {
		snprintf(chown, sizeof(chown), "%s%s%s", c->chown_user, c->chown_group ? ":" : "",
		         c->chown_group ? c->chown_group : "");
		owner = chown;
	}
	/* The sources must be there now: a missing one is this line's error,
	 * not the build's. */
	struct ctx x;
	char e[512];
	int r = ctx_open(&x, context, e, sizeof(e));
	bool opened = r == 0;
	const char *const *srcs = (const char *const *)c->srcs.v;
	size_t run = 0; /* plain sources gathered before i */
	for (size_t i = 0; r == 0 && i <= c->srcs.n; i++) {
		int arch = i < c->srcs.n ? one_archive(&x, srcs[i], c->add, e, sizeof(e)) : 1;
		if (arch < 0) {
			r = arch;
			break;
		}
		if (!arch) {
			run++;
			continue;
		}
		if (run)
			r = cove_template_add_copy(s, context, srcs + i - run, run, c->dest, owner,
			                           e, sizeof(e));
		run = 0;
		if (r == 0 && i < c->srcs.n) {
			char tar[PATH_MAX];
			if ((size_t)snprintf(tar, sizeof(tar), "%s/%s", context, srcs[i]) >=
			    sizeof(tar))
				r = errf(e, sizeof(e), -ENAMETOOLONG, "'%s': path too long",
				         srcs[i]);
			else
				r = cove_template_add_copy_archive(s, tar, c->dest, owner, e,
				                                   sizeof(e));
		}
	}
	if (opened)
		ctx_close(&x);
	return r < 0 ? errf(err, errlen, r, "Dockerfile:%u: %s", st->line, e) : 0;
}

static int step(struct cove_template_spec *s, const struct df_step *st, const char *context,
                char *err, size_t errlen)
{
	char e[512];
	int r = 0;
	switch (st->kind) {
	case DF_FROM:
		return from(s, st->args.v[0], err, errlen);
	case DF_ARG:
	case DF_ENV:
		for (size_t i = 0; r == 0 && i < st->args.n; i++)
			if (strchr(st->args.v[i], '='))
				r = cove_template_add_step(
				    s, st->kind == DF_ENV ? COVE_STEP_ENV : COVE_STEP_ARG,
				    st->args.v[i], e, sizeof(e));
		break;
	case DF_RUN: {
		char *cmd = st->shell ? strdup(st->args.v[0]) : shell_words(&st->args);
		r = cmd ? cove_template_add_run(s, cmd, e, sizeof(e)) : -ENOMEM;
		free(cmd);
		break;
	}
	case DF_COPY:
		return copy(s, st, context, err, errlen);
	case DF_WORKDIR:
		r = cove_template_add_step(s, COVE_STEP_WORKDIR, st->args.v[0], e, sizeof(e));
		break;
	case DF_USER:
		r = cove_template_add_step(s, COVE_STEP_USER, st->args.v[0], e, sizeof(e));
		break;
	default: /* CMD, ENTRYPOINT: from the config at the end; EXPOSE, LABEL: recorded
	            nowhere */
		return 0;
	}
	if (r == -ENOMEM)
		snprintf(e, sizeof(e), "out of memory");
	return r < 0 ? errf(err, errlen, r, "Dockerfile:%u: %s", st->line, e) : 0;
}

static int config_steps(struct cove_template_spec *s, const struct df_config *c, char *err,
                        size_t errlen)
{
	static const struct df_list none = { 0 };
	int r = 0;
	if (c->has_entrypoint) {
		char *t = strv_text(&c->entrypoint);
		r = t ? cove_template_add_step(s, COVE_STEP_ENTRYPOINT, t, err, errlen) : -ENOMEM;
		free(t);
	}
	/* An ENTRYPOINT with no CMD after it clears the base's CMD. */
	if (r == 0 && (c->has_cmd || c->has_entrypoint)) {
		char *t = strv_text(c->has_cmd ? &c->cmd : &none);
		r = t ? cove_template_add_step(s, COVE_STEP_CMD, t, err, errlen) : -ENOMEM;
		free(t);
	}
	return r == -ENOMEM ? errf(err, errlen, r, "out of memory") : r;
}

int cove_template_from_dockerfile(struct cove_template_spec *s, const char *path,
                                  const char *context, const char *const *build_args, size_t nargs,
                                  char *err, size_t errlen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errf(err, errlen, -errno, "Dockerfile '%s': %s", path, strerror(errno));
	char *text = malloc(DF_BYTES_MAX + 1);
	ssize_t n = text ? read_full(fd, text, DF_BYTES_MAX + 1) : -ENOMEM;
	close(fd);
	int r = 0;
	if (n < 0)
		r = errf(err, errlen, (int)n, "Dockerfile '%s': %s", path, strerror((int)-n));
	else if (n > DF_BYTES_MAX)
		r = errf(err, errlen, -EFBIG, "Dockerfile '%s' is larger than %d bytes", path,
		         DF_BYTES_MAX);
	struct dockerfile df = { 0 };
	if (r == 0)
		r = dockerfile_parse(text, (size_t)n, build_args, nargs, &df, err, errlen);
	for (size_t i = 0; r == 0 && i < df.nsteps; i++)
		r = step(s, &df.steps[i], context, err, errlen);
	if (r == 0)
		r = config_steps(s, &df.config, err, errlen);
	dockerfile_free(&df);
	free(text);
	return r;
}
