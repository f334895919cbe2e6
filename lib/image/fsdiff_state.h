/* The filesystem diff's state, shared by its engine (fsdiff.c: the two
 * file systems, the changed blocks, the changed inodes), its naming of
 * paths (fsdiff_tree.c), its completion (fsdiff_attr.c) and its inode
 * reads (fsdiff_inode.c). */
#ifndef COVE_IMAGE_FSDIFF_STATE_H
#define COVE_IMAGE_FSDIFF_STATE_H

#include <ext2fs/ext2fs.h>

#include "lib/image/fsdiff_io.h"
#include "lib/image/fsdiff_types.h"
#include "lib/image/jbd2.h"
#include "qcow2_read.h"

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
	uint64_t hash_left; /* bytes of regular files still to hash */
	uint64_t disk_size; /* the sandbox's disk */
	char *err;
	size_t errlen;
};

#endif
