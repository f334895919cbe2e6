/* The filesystem diff's internals, shared by its engine (fsdiff.c: the two
 * file systems, the changed blocks, the changed inodes), its naming of
 * paths (fsdiff_tree.c) and its output (fsdiff_out.c). */
#ifndef COVE_IMAGE_FSDIFF_PRIV_H
#define COVE_IMAGE_FSDIFF_PRIV_H

#include <ext2fs/ext2fs.h>

#include "lib/image/fsdiff.h"
#include "lib/image/fsdiff_io.h"
#include "lib/image/jbd2.h"

/* One file system: the view it is read through and its journal replay. */
struct fsdiff_side {
	struct fsdiff_view view;
	struct jbd2_replay replay;
	uint64_t *jmap;
	ext2_filsys fs;
};

/* An inode whose bytes differ between the two sides. */
struct fsdiff_cand {
	uint32_t ino;
	bool old_used, new_used;
	bool same;  /* used on both sides as the same file (generation, type) */
	bool named; /* a changed directory's listing named it */
	struct ext2_inode_large now, old;
};

struct fsdiff {
	struct qcow2_chain *chain;
	struct fsdiff_side now, old;
	uint8_t *changed; /* bitmap of the new side's blocks */
	uint64_t nblocks;
	struct fsdiff_cand *cand; /* sorted by ino */
	size_t ncand, cap_cand;
	struct fsdiff_change *c;
	size_t n, cap;
	struct fsdiff_stats st;
	char *err;
	size_t errlen;
};

/* Whether inode (read from fs) is a live file: its group initialised,
 * linked, not deleted. */
bool fsdiff_inode_used(ext2_filsys fs, uint32_t ino, const struct ext2_inode_large *in);

/* Reads inode ino of fs; -EIO with a message when it cannot be read. */
int fsdiff_read_inode(struct fsdiff *d, ext2_filsys fs, uint32_t ino, struct ext2_inode_large *in);

/* From the candidates, the changes: directory entries compared, added
 * directories listed, changed files named.  Fills d->c. */
int fsdiff_tree(struct fsdiff *d) __attribute__((warn_unused_result));

/* Sorts d->c by path, merges what two sources said of one path, then
 * hashes regular files and reads symlink targets. */
int fsdiff_finish(struct fsdiff *d) __attribute__((warn_unused_result));

/* The message of a libext2fs error, with the view's own if it has one. */
int fsdiff_ext2_err(struct fsdiff *d, const struct fsdiff_side *s, errcode_t e, const char *what);

#endif
