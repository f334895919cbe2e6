/* The changes made whole: attributes, hashes, targets (fsdiff_attr.c). */
#ifndef COVE_IMAGE_FSDIFF_ATTR_H
#define COVE_IMAGE_FSDIFF_ATTR_H

#include "lib/image/fsdiff_state.h"

/* Sorts d->c by path, merges what two sources said of one path, then
 * hashes regular files and reads symlink targets. */
int fsdiff_finish(struct fsdiff *d) __attribute__((warn_unused_result));

/* fsdiff_read_file's work (fsdiff.h). */
int fsdiff_attr_read(struct fsdiff *d, const struct fsdiff_change *c,
                     int (*sink)(void *arg, const void *buf, size_t len), void *arg, char *err,
                     size_t errlen) __attribute__((warn_unused_result));

#endif
