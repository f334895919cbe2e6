/* A libext2fs io_manager over a qcow2 chain (common/qcow2_read.h): a file
 * system as the chain from one layer down presents it, with an ext4
 * journal's un-checkpointed copies (jbd2.h) laid over the blocks they
 * replace.  Read-only: writes fail.  The filesystem diff (fsdiff.h) opens
 * two of them over one chain, the sandbox's view and its base's. */
#ifndef COVE_IMAGE_FSDIFF_IO_H
#define COVE_IMAGE_FSDIFF_IO_H

#include <ext2fs/ext2fs.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/image/jbd2.h"
#include "qcow2_read.h"

struct fsdiff_view {
	struct qcow2_chain *chain;
	unsigned int from; /* the layer the view starts at */
	/* The replay, and where the journal's blocks lie (journal block i is
	 * file system block jmap[i] of block_size bytes); NULL: none. */
	const struct jbd2_replay *replay;
	const uint64_t *jmap;
	uint32_t jblocks;
	uint32_t block_size;
	char err[256]; /* the last read's failure */
};

/* The manager; open it with the name fsdiff_view_name() gives. */
io_manager fsdiff_io_manager(void);

/* The name that opens view v (it holds v's address: v must outlive the
 * channel). */
void fsdiff_view_name(const struct fsdiff_view *v, char *buf, size_t len);

/* Reads bytes [off, off + len) of the view, the replay applied. */
int fsdiff_view_read(struct fsdiff_view *v, void *buf, size_t len, uint64_t off)
    __attribute__((warn_unused_result));

#endif
