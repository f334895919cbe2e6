/* The templates coved's creates restore (lib/template.h): templateID
 * "base" (or an image name) is the base template of that image with the
 * request's CPUs, memory, disk size and whether it has a NIC, built on
 * first use; a name `cove template build` made in templates_dir is that
 * template, rebuilt when its inputs changed. */
#include "daemon/sandboxes/templates.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cove.h"
#include "daemon/sandboxes/state.h"
#include "errf.h"
#include "lib/template/template.h"

static void note(void *opaque, const char *line)
{
	(void)opaque;
	fprintf(stderr, "coved: %s\n", line);
}

bool coved_template_named(struct coved *d, const char *tid)
{
	if (!d->cfg.templates_dir || !cove_template_name_valid(tid) || !strcmp(tid, "base"))
		return false;
	char p[PATH_MAX];
	struct stat st;
	snprintf(p, sizeof(p), "%s/%s/%s", d->cfg.templates_dir, tid, COVE_TEMPLATE_FILE);
	return lstat(p, &st) == 0 && S_ISREG(st.st_mode);
}

int coved_template_for(struct coved *d, const char *tid, struct cove_config *cfg, bool net_given,
                       char **dir, int *lockfd, char *msg, size_t len)
{
	*dir = NULL;
	*lockfd = -1;
	if (!d->cfg.templates_dir)
		return 1;
	cove_template_set_store(d->cfg.templates_dir);
	struct cove_template_manifest m = { 0 };
	char err[600], path[PATH_MAX + 128];
	bool named = !cfg->image; /* resolve_template found no image: a store template */
	int r;
	if (named) {
		r = cove_template_load(tid, &m, err, sizeof(err));
		char *vmm = r == 0 ? realpath(cfg->vmm, NULL) : NULL;
		if (r == 0 && !vmm)
			r = errf(err, sizeof(err), -ENOENT, "cove-vmm '%s': %s", cfg->vmm,
			         strerror(errno));
		if (r == 0) {
			free(m.spec.vmm);
			m.spec.vmm = vmm;
		}
	} else {
		r = cove_template_base_spec(&m.spec, cfg,
		                            cfg->net.mode != COVE_NET_OFF ? COVE_TEMPLATE_NET_NONE
		                                                          : COVE_TEMPLATE_NET_OFF,
		                            err, sizeof(err));
	}
	const struct cove_template_io io = { .note = note };
	/* A template built from an image, a parent or a folder is used as it
	 * is: only a build (the CLI, the API) makes it again. */
	if (r == 0 && named && cove_template_sealed(&m.spec))
		r = cove_template_use(tid, path, sizeof(path), lockfd, err, sizeof(err));
	else if (r == 0)
		r = cove_template_ensure(&m.spec, false, &io, path, sizeof(path), lockfd, err,
		                         sizeof(err));
	if (r != 0) {
		cove_template_manifest_free(&m);
		errf(msg, len, 500, "template '%s': %s", tid, err);
		return 500;
	}
	cfg->disk_size = 0; /* the template's */
	if (named) {
		cfg->cpus = m.spec.cpus;
		cfg->memory_mib = m.spec.memory_mib;
		/* Without a NIC in the template there is no network to give,
		 * unless the request asked for one (then the restore says no). */
		if (m.spec.net == COVE_TEMPLATE_NET_OFF && !net_given)
			cfg->net.mode = COVE_NET_OFF;
		if (m.spec.net != COVE_TEMPLATE_NET_OFF && cfg->net.mode == COVE_NET_OFF)
			cfg->net.mode = COVE_NET_NONE; /* not the build's policy */
	}
	cove_template_manifest_free(&m);
	if (!(*dir = strdup(path))) {
		close(*lockfd);
		*lockfd = -1;
		errf(msg, len, 500, "out of memory");
		return 500;
	}
	return 0;
}

/* The templates every tenant shares: the config's templates and images
 * ("base": its default image; *image malloc'ed), else a template of the
 * store (0 with *image NULL).  404 when there is none. */
int coved_template_shared(struct coved *d, const char *tid, char **image, char *msg, size_t len)
{
	*image = NULL;
	const char *name = tid;
	if (strcmp(tid, "base") == 0)
		name = d->cfg.default_image;
	json_t *t = json_object_get(d->cfg.templates, tid);
	if (json_is_string(t))
		name = json_string_value(t);
	if (!json_is_string(t) && coved_template_named(d, tid))
		return 0; /* neither: a template of the store */
	char *p = cove_image_path(name);
	struct stat st;
	if (!p || stat(p, &st) < 0 || !S_ISREG(st.st_mode)) {
		free(p);
		errf(msg, len, 404, "template '%s' not found (no image '%s')", tid, name);
		return 404;
	}
	*image = p;
	return 0;
}
