/* Inode reads and libext2fs errors for the filesystem diff (fsdiff_inode.h). */
#include <errno.h>
#include <et/com_err.h>
#include <string.h>

#include "errf.h"
#include "lib/image/fsdiff_inode.h"

int fsdiff_ext2_err(struct fsdiff *d, const struct fsdiff_side *s, errcode_t e, const char *what)
{
	if (s && s->view.err[0])
		return errf(d->err, d->errlen, -EIO, "%s: %s", what, s->view.err);
	return errf(d->err, d->errlen, -EIO, "%s: %s", what, error_message(e));
}

bool fsdiff_inode_used(ext2_filsys fs, uint32_t ino, const struct ext2_inode_large *in)
{
	if (!ino || ino > fs->super->s_inodes_count)
		return false;
	dgrp_t g = (ino - 1) / fs->super->s_inodes_per_group;
	if (ext2fs_has_group_desc_csum(fs) && ext2fs_bg_flags_test(fs, g, EXT2_BG_INODE_UNINIT))
		return false;
	return in->i_links_count && !in->i_dtime && in->i_mode;
}

int fsdiff_read_inode(struct fsdiff *d, ext2_filsys fs, uint32_t ino, struct ext2_inode_large *in)
{
	memset(in, 0, sizeof(*in));
	if (!ino || ino > fs->super->s_inodes_count)
		return errf(d->err, d->errlen, -EIO, "inode %u outside the file system", ino);
	errcode_t e = ext2fs_read_inode_full(fs, ino, (struct ext2_inode *)in, sizeof(*in));
	return e ? fsdiff_ext2_err(d, fs == d->now.fs ? &d->now : &d->old, e, "inode") : 0;
}
