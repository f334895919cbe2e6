/* The filesystem diff of an ext4 disk against its base (docs/diff.md):
 * what a qcow2 chain's top layers changed, as paths added, changed and
 * deleted.  Only what the top layers allocated is compared (mapped to
 * ext4 blocks, then to inode-table entries and directories), plus what
 * naming the changed paths needs; both file systems are read through
 * libext2fs over the chain (fsdiff_io.h), each with its journal replayed
 * in memory (jbd2.h).  Everything read is hostile: a malformed file
 * system fails the call with a one-line message. */
#ifndef COVE_IMAGE_FSDIFF_H
#define COVE_IMAGE_FSDIFF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "qcow2_read.h"

#include "lib/image/fsdiff_types.h"

struct fsdiff;

/* Diffs the file system the chain presents from layer 0 against the one
 * it presents from layer base (1 <= base < layers): layers [0, base) are
 * the changes.  The chain must stay open until fsdiff_free.  The result
 * is sorted by path.  Returns 0 or -errno with a one-line message. */
int fsdiff_run(struct qcow2_chain *chain, unsigned int base, struct fsdiff **out, char *err,
               size_t errlen) __attribute__((warn_unused_result));

size_t fsdiff_count(const struct fsdiff *d);
const struct fsdiff_change *fsdiff_get(const struct fsdiff *d, size_t i);
const struct fsdiff_stats *fsdiff_stats(const struct fsdiff *d);

/* Streams the new contents of change c (a regular file added or changed)
 * to sink, in order; sink returning non-zero stops with that value. */
int fsdiff_read_file(struct fsdiff *d, const struct fsdiff_change *c,
                     int (*sink)(void *arg, const void *buf, size_t len), void *arg, char *err,
                     size_t errlen) __attribute__((warn_unused_result));

void fsdiff_free(struct fsdiff *d);

#endif
