/* cove_diff (diff.h): finds the sandbox's root overlay and the layer it
 * started from in its chain, freezes a running guest's root file system,
 * diffs, thaws. */
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "errf.h"
#include "lib/agent/proc.h"
#include "lib/base/handle.h"
#include "lib/diff.h"
#include "lib/vmm/vmm_api.h"
#include "proto.h"

#define FREEZE_MS     10000 /* the agent thaws by itself after this */
#define FREEZE_TAR_MS 60000 /* ... when the changed files are copied too */

struct cove_diff {
	struct qcow2_chain *chain;
	struct fsdiff *diff;
};

/* The resolved path of the file the sandbox started from. */
static int base_file(const struct cove_sandbox *sb, char *out, char *err, size_t errlen)
{
	struct registry_meta *m = calloc(1, sizeof(*m));
	if (!m)
		return errf(err, errlen, -ENOMEM, "out of memory");
	int r = registry_meta_read(sb->dir, m);
	if (r < 0) {
		free(m);
		return errf(err, errlen, r, "sandbox %s: no readable meta.json", sb->name);
	}
	char path[PATH_MAX + 16];
	r = -ENOENT;
	if (m->restored_from[0]) {
		static const char *const names[] = { "disk0.qcow2", "disk0.img" };
		for (size_t i = 0; r && i < 2; i++) {
			snprintf(path, sizeof(path), "%s/%s", m->restored_from, names[i]);
			r = realpath(path, out) ? 0 : -errno;
		}
	} else if (m->image[0]) {
		snprintf(path, sizeof(path), "%s", m->image);
		r = realpath(path, out) ? 0 : -errno;
	}
	free(m);
	return r ? errf(err, errlen, r, "sandbox %s: its base disk is gone (%s)", sb->name,
	                strerror(-r))
	         : 0;
}

/* Whether path lies in directory dir. */
static bool inside(const char *path, const char *dir)
{
	char real[PATH_MAX];
	if (!realpath(dir, real))
		return false;
	size_t n = strlen(real);
	return !strncmp(path, real, n) && path[n] == '/';
}

/* The chain of the top disk and the index of the base in it. */
static int open_chain(const struct cove_diff_src *src, struct qcow2_chain **chain,
                      unsigned int *index, char *err, size_t errlen)
{
	int r = qcow2_chain_open(src->top, chain, err, errlen);
	if (r)
		return r;
	for (unsigned int i = 1; i < qcow2_chain_layers(*chain); i++) {
		const char *p = qcow2_chain_path(*chain, i);
		bool own = false;
		for (size_t k = 0; !src->base && k < src->nown; k++)
			own = own || inside(p, src->own_dirs[k]);
		if (src->base ? !strcmp(p, src->base) : !own) {
			*index = i;
			return 0;
		}
	}
	qcow2_chain_close(*chain);
	*chain = NULL;
	return errf(err, errlen, -ENOENT, "%s: no base layer in its chain%s%s", src->top,
	            src->base ? " at " : "", src->base ? src->base : "");
}

static int freeze(struct cove_sandbox *sb, int ms, char *err, size_t errlen)
{
	json_t *req = json_pack("{s:i}", "timeout_ms", ms);
	if (!req)
		return errf(err, errlen, -ENOMEM, "out of memory");
	char e[256] = "";
	int r = cove_agent_call(sb, PROTO_FREEZE, req, NULL, e, sizeof(e));
	return r < 0 ? errf(err, errlen, r, "freezing the guest's file system: %s", e) : 0;
}

static void thaw(struct cove_sandbox *sb)
{
	char e[256];
	(void)!cove_agent_call(sb, PROTO_THAW, json_object(), NULL, e, sizeof(e));
}

int cove_diff_disk(const struct cove_diff_src *src, struct cove_diff **out, char *err,
                   size_t errlen)
{
	*out = NULL;
	struct cove_diff *d = calloc(1, sizeof(*d));
	if (!d)
		return errf(err, errlen, -ENOMEM, "out of memory");
	/* The VMM writes its qcow2 data and tables through (pwrite, no cache of
	 * its own), and a freeze returns once the guest's writes have
	 * completed, so the files hold everything the guest wrote. */
	int r = 0;
	if (src->freeze &&
	    (r = freeze(src->freeze, src->tar_fd >= 0 ? FREEZE_TAR_MS : FREEZE_MS, err, errlen))) {
		free(d);
		return r;
	}
	unsigned int index = 0;
	r = open_chain(src, &d->chain, &index, err, errlen);
	if (!r)
		r = fsdiff_run(d->chain, index, &d->diff, err, errlen);
	if (!r && src->tar_fd >= 0)
		r = fsdiff_tar(d->diff, src->tar_fd, err, errlen);
	if (src->freeze)
		thaw(src->freeze);
	if (r) {
		cove_diff_free(d);
		return r;
	}
	*out = d;
	return 0;
}

int cove_diff(struct cove_sandbox *sb, int tar_fd, struct cove_diff **out, char *err, size_t errlen)
{
	*out = NULL;
	char base[PATH_MAX], top[PATH_MAX];
	int r = base_file(sb, base, err, errlen);
	if (r)
		return r;
	bool paused = false;
	if ((r = vmm_api_paused(sb->api, &paused)) < 0)
		return errf(err, errlen, r, "sandbox %s: its VMM does not answer", sb->name);
	cove_root_disk(sb, top, sizeof(top));
	struct cove_diff_src src = {
		.top = top, .base = base, .freeze = paused ? NULL : sb, .tar_fd = tar_fd
	};
	return cove_diff_disk(&src, out, err, errlen);
}

void cove_root_disk(const struct cove_sandbox *sb, char *out, size_t len)
{
	snprintf(out, len, "%s/disk0.qcow2", sb->root);
}

const struct fsdiff *cove_diff_result(const struct cove_diff *d)
{
	return d->diff;
}

void cove_diff_free(struct cove_diff *d)
{
	if (!d)
		return;
	fsdiff_free(d->diff);
	qcow2_chain_close(d->chain);
	free(d);
}
