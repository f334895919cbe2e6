/* A filesystem diff written out (fsdiff_out.c). */
#ifndef COVE_IMAGE_FSDIFF_OUT_H
#define COVE_IMAGE_FSDIFF_OUT_H

#include "lib/image/fsdiff.h"

/* docker diff's text: "A /path", "C /path", "D /path", one a line; a
 * malloc'd string. */
char *fsdiff_text(const struct fsdiff *d);

/* The JSON object docs/diff.md describes ("changes", "stats"); malloc'd. */
char *fsdiff_json(const struct fsdiff *d);

/* A tar (pax) of the added and changed paths (regular files with their
 * contents, directories, symlinks) written to fd. */
int fsdiff_tar(struct fsdiff *d, int fd, char *err, size_t errlen)
    __attribute__((warn_unused_result));

#endif
