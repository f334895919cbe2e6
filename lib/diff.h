/* A sandbox's filesystem diff against its base (docs/diff.md; part of
 * cove.h's API): the root disk's qcow2 chain read on the host
 * (lib/image/fsdiff.h), with the guest's root file system frozen by its
 * agent meanwhile when the sandbox runs. */
#ifndef COVE_LIB_DIFF_H
#define COVE_LIB_DIFF_H

#include <stddef.h>

#include "lib/base/cove_types.h"
#include "lib/image/fsdiff.h"
#include "lib/image/fsdiff_out.h"

struct cove_diff;

/* Diffs sb's root disk against what it started from: the template or
 * snapshot it was restored from (that directory's frozen disk), else the
 * image it booted.  A running sandbox's root file system is frozen
 * through its agent (sync, FIFREEZE; the agent thaws it by itself if we
 * never come back) for the read and thawed after; a paused one is read
 * as its disk is (what the guest had not written out yet is not there).
 * With tar_fd >= 0 the changed files also go there as a tar, before the
 * thaw.  Returns 0 or -errno with a one-line message. */
int cove_diff(struct cove_sandbox *sb, int tar_fd, struct cove_diff **out, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* What cove_diff_disk reads. */
struct cove_diff_src {
	const char *top; /* the root disk's top qcow2 file */
	/* The base: the layer of the chain at this path, or with base NULL the
	 * first layer below top that lies in none of own_dirs (the sandbox's
	 * own frozen layers: its pauses' snapshot directories). */
	const char *base;
	const char *const *own_dirs;
	size_t nown;
	/* A running sandbox whose / is frozen for the read; NULL: the disk is
	 * not being written (a paused or stopped sandbox). */
	struct cove_sandbox *freeze;
	int tar_fd; /* >= 0: the changed files as a tar, before the thaw */
};

/* cove_diff's work on explicit files (coved: a sandbox paused to a
 * snapshot directory has no running VMM). */
int cove_diff_disk(const struct cove_diff_src *src, struct cove_diff **out, char *err,
                   size_t errlen) __attribute__((warn_unused_result));

/* The path of sb's root disk (its top qcow2 file) into out. */
void cove_root_disk(const struct cove_sandbox *sb, char *out, size_t len);

/* The result (valid until cove_diff_free). */
const struct fsdiff *cove_diff_result(const struct cove_diff *d);

void cove_diff_free(struct cove_diff *d);

#endif
