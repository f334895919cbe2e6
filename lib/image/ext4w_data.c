/* A regular file's contents into its inode; see ext4w_data.h.  Blocks are
 * taken straight from the block bitmap (ext2fs_new_range) and written in
 * runs; the extent being built grows while the next run lands right
 * after it, so a file written in one go is one extent per 128 MiB. */
#include <errno.h>
#include <et/com_err.h>
#include <string.h>

#include "common/errf.h"
#include "lib/image/ext4w_data.h"

/* after ext2fs.h, whose types it uses */
#include <ext2fs/ext3_extents.h>

struct fill {
	ext2_filsys fs;
	ext2_ino_t ino;
	struct ext2_inode_large *in;
	ext2_extent_handle_t h;
	struct ext2fs_extent pend; /* the extent being built; e_len 0: none */
	blk64_t goal;
	unsigned char *win;
	uint64_t win_blk; /* the file block at win[0] */
	size_t used;      /* bytes of the window given data */
	errcode_t *fserr;
	char *err;
	size_t errlen;
};

static int fs_fail(struct fill *f, errcode_t e, const char *what)
{
	*f->fserr = e;
	if (e == EXT2_ET_BLOCK_ALLOC_FAIL)
		return errf(f->err, f->errlen, -ENOSPC, "the disk is full");
	return errf(f->err, f->errlen, -EIO, "%s: %s", what, error_message(e));
}

static int all_zero(const unsigned char *p, size_t n)
{
	return p[0] == 0 && memcmp(p, p + 1, n - 1) == 0;
}

/* Puts the extent being built into the inode's tree. */
static int commit(struct fill *f)
{
	struct ext2fs_extent ex;
	int op = EXT2_EXTENT_INSERT_AFTER;

	if (!f->pend.e_len)
		return 0;
	(void)ext2fs_extent_goto(f->h, f->pend.e_lblk); /* a hole: the extent before */
	errcode_t e = ext2fs_extent_get(f->h, EXT2_EXTENT_CURRENT, &ex);
	if (e && e != EXT2_ET_NO_CURRENT_NODE)
		return fs_fail(f, e, "extent tree");
	if (!e && ex.e_lblk > f->pend.e_lblk)
		op = 0;
	e = ext2fs_extent_insert(f->h, op, &f->pend);
	if (!e)
		e = ext2fs_extent_fix_parents(f->h);
	if (e)
		return fs_fail(f, e, "extent tree");
	f->pend.e_len = 0;
	return 0;
}

/* Allocates and writes n blocks of data for file blocks lblk on. */
static int put_run(struct fill *f, blk64_t lblk, blk64_t n, const unsigned char *data)
{
	const unsigned int bs = f->fs->blocksize;

	while (n) {
		blk64_t pblk = 0, plen = 0;
		errcode_t e = EXT2_ET_BLOCK_ALLOC_FAIL;
		struct ext2fs_extent *p = &f->pend;
		if (p->e_len && p->e_lblk + p->e_len == lblk && p->e_len < EXT_INIT_MAX_LEN) {
			blk64_t room = EXT_INIT_MAX_LEN - p->e_len;
			e = ext2fs_new_range(f->fs, EXT2_NEWRANGE_FIXED_GOAL, p->e_pblk + p->e_len,
			                     n < room ? n : room, NULL, &pblk, &plen);
		}
		if (!e) {
			p->e_len += (__u32)plen;
		} else {
			int rc = commit(f);
			if (rc)
				return rc;
			blk64_t want = n < EXT_INIT_MAX_LEN ? n : EXT_INIT_MAX_LEN;
			e = ext2fs_new_range(f->fs, 0, f->goal, want, NULL, &pblk, &plen);
			if (e)
				return fs_fail(f, e, "allocating blocks");
			*p = (struct ext2fs_extent){ .e_lblk = lblk,
				                     .e_pblk = pblk,
				                     .e_len = (__u32)plen };
		}
		ext2fs_block_alloc_stats_range(f->fs, pblk, plen, +1);
		e = ext2fs_iblk_add_blocks(f->fs, (struct ext2_inode *)f->in, plen);
		if (!e)
			e = io_channel_write_blk64(f->fs->io, pblk, (int)plen, data);
		if (e)
			return fs_fail(f, e, "writing data");
		f->goal = pblk + plen;
		lblk += plen;
		n -= plen;
		data += plen * bs;
	}
	return 0;
}

/* Writes the window's runs of non-zero blocks and empties it. */
static int flush(struct fill *f)
{
	const unsigned int bs = f->fs->blocksize;
	size_t nblk = (f->used + bs - 1) / bs;
	size_t i = 0;

	while (i < nblk) {
		if (all_zero(f->win + i * bs, bs)) {
			i++;
			continue;
		}
		size_t j = i + 1;
		while (j < nblk && !all_zero(f->win + j * bs, bs))
			j++;
		int rc = put_run(f, f->win_blk + i, j - i, f->win + i * bs);
		if (rc)
			return rc;
		i = j;
	}
	memset(f->win, 0, nblk * bs);
	f->used = 0;
	return 0;
}

/* Copies one piece into the window, flushing it as the piece moves on. */
static int take(struct fill *f, const unsigned char *data, size_t len, uint64_t off)
{
	const unsigned int bs = f->fs->blocksize;

	while (len) {
		uint64_t blk = off / bs;
		if (f->used && blk >= f->win_blk + EXT4W_DATA_WIN / bs) {
			int rc = flush(f);
			if (rc)
				return rc;
		}
		if (!f->used)
			f->win_blk = blk;
		size_t at = (size_t)(off - f->win_blk * bs);
		size_t n = EXT4W_DATA_WIN - at < len ? EXT4W_DATA_WIN - at : len;
		memcpy(f->win + at, data, n);
		if (at + n > f->used)
			f->used = at + n;
		data += n;
		off += n;
		len -= n;
	}
	return 0;
}

static int pump(struct fill *f, uint64_t size, ext4w_read_fn rd, void *ctx)
{
	uint64_t next = 0; /* offsets never go back */

	for (;;) {
		const void *data;
		size_t len = 0;
		uint64_t off = 0;
		int r = rd(ctx, &data, &len, &off, f->err, f->errlen);
		if (r < 0)
			return r;
		if (r == 0)
			return flush(f);
		if (off < next)
			return errf(f->err, f->errlen, -EINVAL, "data at %llu goes back",
			            (unsigned long long)off);
		if (off > size || len > size - off)
			return errf(f->err, f->errlen, -EINVAL, "data past the size %llu",
			            (unsigned long long)size);
		if (len == 0)
			continue;
		int rc = take(f, data, len, off);
		if (rc)
			return rc;
		next = off + len;
	}
}

int ext4w_data_fill(ext2_filsys fs, ext2_ino_t ino, struct ext2_inode_large *in, uint64_t size,
                    ext4w_read_fn rd, void *ctx, unsigned char *win, errcode_t *fserr, char *err,
                    size_t errlen)
{
	struct fill f = {
		.fs = fs,
		.ino = ino,
		.in = in,
		.win = win,
		.fserr = fserr,
		.err = err,
		.errlen = errlen,
	};
	struct ext2_inode *small = (struct ext2_inode *)in;

	if (!(small->i_flags & EXT4_EXTENTS_FL))
		return errf(err, errlen, -EINVAL, "the file system has no extents");
	errcode_t e = ext2fs_inode_size_set(fs, small, size);
	if (!e)
		e = ext2fs_extent_open2(fs, ino, small, &f.h);
	if (e)
		return fs_fail(&f, e, "opening the file");
	f.goal = ext2fs_find_inode_goal(fs, ino, small, 0);
	int rc = pump(&f, size, rd, ctx);
	if (!rc)
		rc = commit(&f);
	memset(win, 0, f.used); /* left as found: all zero */
	ext2fs_extent_free(f.h);
	if (rc)
		return rc;
	e = ext2fs_write_inode_full(fs, ino, small, EXT2_INODE_SIZE(fs->super));
	if (e)
		return fs_fail(&f, e, "writing the inode");
	return 0;
}
