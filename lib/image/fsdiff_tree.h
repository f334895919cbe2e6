/* Naming what changed (fsdiff_tree.c). */
#ifndef COVE_IMAGE_FSDIFF_TREE_H
#define COVE_IMAGE_FSDIFF_TREE_H

#include "lib/image/fsdiff_state.h"

/* From the candidates, the changes: directory entries compared, added
 * directories listed, changed files named.  Fills d->c. */
int fsdiff_tree(struct fsdiff *d) __attribute__((warn_unused_result));

#endif
