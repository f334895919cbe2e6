/* What a sandbox's filesystem diff reads (diffsrc.c): its root disk's top
 * file, running or paused, and which of the layers below are its own. */
#ifndef COVED_SANDBOXES_DIFFSRC_H
#define COVED_SANDBOXES_DIFFSRC_H

#include <stddef.h>

struct coved_sb;
struct cove_diff;

/* Diffs sb against the template (or image) it was created from, under its
 * lifecycle lock: a running sandbox through a freeze of its /, a paused
 * one from its snapshot directory.  With tar_fd >= 0 the changed files
 * go there as a tar.  Returns 0, or an HTTP status with a message (404
 * removed, 409 stopped or dead, 500). */
int coved_sb_diff(struct coved_sb *sb, int tar_fd, struct cove_diff **out, char *msg, size_t len)
    __attribute__((warn_unused_result));

#endif
