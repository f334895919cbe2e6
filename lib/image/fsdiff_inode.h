/* The filesystem diff's inode reads and error messages (fsdiff_inode.c). */
#ifndef COVE_IMAGE_FSDIFF_INODE_H
#define COVE_IMAGE_FSDIFF_INODE_H

#include "lib/image/fsdiff_state.h"

/* Whether inode (read from fs) is a live file: its group initialised,
 * linked, not deleted. */
bool fsdiff_inode_used(ext2_filsys fs, uint32_t ino, const struct ext2_inode_large *in);

/* Reads inode ino of fs; -EIO with a message when it cannot be read. */
int fsdiff_read_inode(struct fsdiff *d, ext2_filsys fs, uint32_t ino, struct ext2_inode_large *in);

/* The message of a libext2fs error, with the view's own if it has one. */
int fsdiff_ext2_err(struct fsdiff *d, const struct fsdiff_side *s, errcode_t e, const char *what);

#endif
