/* The filesystem diff's engine (fsdiff.h): opens both file systems over
 * the chain (each journal replayed), maps the top layers' allocated
 * clusters to blocks, and finds the inodes whose bytes changed by
 * comparing only the inode-table blocks among those. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "errf.h"
#include "lib/image/fsdiff.h"
#include "lib/image/fsdiff_attr.h"
#include "lib/image/fsdiff_inode.h"
#include "lib/image/fsdiff_state.h"
#include "lib/image/fsdiff_tree.h"

#define OPEN_FLAGS    (EXT2_FLAG_64BITS | EXT2_FLAG_IGNORE_CSUM_ERRORS | EXT2_FLAG_SKIP_MMP)
#define MAX_JOURNAL   (1u << 22) /* journal blocks */
#define NO_BLOCK      UINT64_MAX
#define MAX_INODE_LEN 1024
#define HASH_DISKS    2 /* regular files hashed: at most this many disks' worth */

struct jmap_fill {
	uint64_t *map;
	uint32_t n;
};

static int jmap_block(ext2_filsys fs, blk64_t *blocknr, e2_blkcnt_t blockcnt, blk64_t ref_blk,
                      int ref_offset, void *priv)
{
	(void)fs, (void)ref_blk, (void)ref_offset;
	struct jmap_fill *f = priv;
	if (blockcnt >= 0 && (uint64_t)blockcnt < f->n)
		f->map[blockcnt] = *blocknr;
	return 0;
}

static int journal_read(void *arg, uint32_t jblock, uint8_t *buf)
{
	struct fsdiff_side *s = arg;
	if (jblock >= s->view.jblocks || s->jmap[jblock] == NO_BLOCK)
		return -EIO;
	uint64_t b = s->jmap[jblock];
	return qcow2_chain_read(s->view.chain, s->view.from, buf, s->view.block_size,
	                        b * s->view.block_size, s->view.err, sizeof(s->view.err));
}

/* The journal's block map and its replay, from the file system as it is
 * on disk (s->fs, no replay yet). */
static int load_journal(struct fsdiff *d, struct fsdiff_side *s, const char *what)
{
	ext2_filsys fs = s->fs;
	uint32_t ino = fs->super->s_journal_inum;
	if (!ext2fs_has_feature_journal(fs->super) || !ino)
		return 0;
	if (ino >= EXT2_FIRST_INODE(fs->super) || ino > fs->super->s_inodes_count)
		return errf(d->err, d->errlen, -EINVAL, "%s: bad journal inode %u", what, ino);
	struct ext2_inode in;
	errcode_t e = ext2fs_read_inode(fs, ino, &in);
	if (e)
		return fsdiff_ext2_err(d, s, e, what);
	uint64_t n = EXT2_I_SIZE(&in) / fs->blocksize;
	if (n < 2 || n > MAX_JOURNAL)
		return errf(d->err, d->errlen, -EINVAL, "%s: bad journal size", what);
	s->jmap = malloc(n * sizeof(*s->jmap));
	if (!s->jmap)
		return errf(d->err, d->errlen, -ENOMEM, "out of memory");
	for (uint64_t i = 0; i < n; i++)
		s->jmap[i] = NO_BLOCK;
	struct jmap_fill f = { .map = s->jmap, .n = (uint32_t)n };
	e = ext2fs_block_iterate3(fs, ino, BLOCK_FLAG_READ_ONLY | BLOCK_FLAG_DATA_ONLY, NULL,
	                          jmap_block, &f);
	if (e)
		return fsdiff_ext2_err(d, s, e, what);
	for (uint64_t i = 0; i < n; i++)
		if (s->jmap[i] != NO_BLOCK && s->jmap[i] >= ext2fs_blocks_count(fs->super))
			return errf(d->err, d->errlen, -EINVAL,
			            "%s: journal block outside the disk", what);
	s->view.jblocks = (uint32_t)n;
	s->view.block_size = fs->blocksize;
	char msg[200];
	int r = jbd2_replay_scan(fs->blocksize, (uint32_t)n, ext2fs_blocks_count(fs->super),
	                         journal_read, s, &s->replay, msg, sizeof(msg));
	if (r)
		return errf(d->err, d->errlen, r, "%s: %s", what, msg);
	return 0;
}

/* What the superblock (maybe a journal's copy) claims bounds every table
 * and bitmap read here: it must fit the disk. */
static int fits(struct fsdiff *d, const struct fsdiff_side *s, unsigned int from, const char *what)
{
	if (ext2fs_blocks_count(s->fs->super) > qcow2_chain_size(d->chain, from) / s->fs->blocksize)
		return errf(d->err, d->errlen, -EINVAL, "%s: larger than its disk", what);
	return 0;
}

/* Opens one side: as on disk, then (when its journal holds copies) again
 * with them laid over. */
static int side_open(struct fsdiff *d, struct fsdiff_side *s, unsigned int from, const char *what)
{
	char name[64];
	s->view.chain = d->chain;
	s->view.from = from;
	fsdiff_view_name(&s->view, name, sizeof(name));
	errcode_t e = ext2fs_open2(name, NULL, OPEN_FLAGS, 0, 0, fsdiff_io_manager(), &s->fs);
	if (e)
		return fsdiff_ext2_err(d, s, e, what);
	int r = fits(d, s, from, what);
	if (!r)
		r = load_journal(d, s, what);
	if (r || !s->replay.n)
		return r;
	ext2fs_close_free(&s->fs);
	s->view.replay = &s->replay;
	s->view.jmap = s->jmap;
	e = ext2fs_open2(name, NULL, OPEN_FLAGS, 0, 0, fsdiff_io_manager(), &s->fs);
	return e ? fsdiff_ext2_err(d, s, e, what) : fits(d, s, from, what);
}

static void mark(struct fsdiff *d, uint64_t b)
{
	if (b < d->nblocks)
		d->changed[b / 8] |= (uint8_t)(1u << (b % 8));
}

static bool is_changed(const struct fsdiff *d, uint64_t b)
{
	return b < d->nblocks && (d->changed[b / 8] >> (b % 8) & 1);
}

static int mark_range(void *arg, uint64_t off, uint64_t len)
{
	struct fsdiff *d = arg;
	uint64_t bs = d->now.fs->blocksize;
	d->st.bytes_allocated += len;
	for (uint64_t b = off / bs; b < (off + len + bs - 1) / bs && b < d->nblocks; b++)
		mark(d, b);
	return 0;
}

/* The blocks the top layers allocate, and every block either journal
 * replaces. */
static int changed_blocks(struct fsdiff *d, unsigned int base)
{
	d->nblocks = ext2fs_blocks_count(d->now.fs->super);
	d->changed = calloc(d->nblocks / 8 + 1, 1);
	if (!d->changed)
		return errf(d->err, d->errlen, -ENOMEM, "out of memory");
	for (unsigned int i = 0; i < base; i++) {
		int r = qcow2_chain_allocated(d->chain, i, mark_range, d, d->err, d->errlen);
		if (r)
			return r;
	}
	for (size_t i = 0; i < d->now.replay.n; i++)
		mark(d, d->now.replay.copy[i].block);
	for (size_t i = 0; i < d->old.replay.n; i++)
		mark(d, d->old.replay.copy[i].block);
	for (uint64_t i = 0; i < d->nblocks / 8 + 1; i++)
		d->st.blocks_changed += (uint64_t)__builtin_popcount(d->changed[i]);
	d->st.journal_copies_new = d->now.replay.n;
	d->st.journal_copies_old = d->old.replay.n;
	return 0;
}

/* Zeroes what changes without the file changing: the access time and the
 * checksums that cover it. */
static void mask_inode(uint8_t *p, size_t len)
{
	static const struct {
		size_t at, len;
	} skip[] = { { 8, 4 }, { 0x7c, 2 }, { 0x82, 2 }, { 0x8c, 4 } };
	for (size_t i = 0; i < sizeof(skip) / sizeof(skip[0]); i++)
		if (skip[i].at + skip[i].len <= len)
			memset(p + skip[i].at, 0, skip[i].len);
}

static int add_cand(struct fsdiff *d, uint32_t ino, const uint8_t *now, const uint8_t *old,
                    size_t isz)
{
	if (d->ncand == d->cap_cand) {
		size_t n = d->cap_cand ? d->cap_cand * 2 : 64;
		void *p = realloc(d->cand, n * sizeof(*d->cand));
		if (!p)
			return errf(d->err, d->errlen, -ENOMEM, "out of memory");
		d->cand = p;
		d->cap_cand = n;
	}
	struct fsdiff_cand *c = &d->cand[d->ncand++];
	memset(c, 0, sizeof(*c));
	size_t keep = isz < sizeof(c->now) ? isz : sizeof(c->now);
	memcpy(&c->now, now, keep);
	memcpy(&c->old, old, keep);
	c->ino = ino;
	c->new_used = fsdiff_inode_used(d->now.fs, ino, &c->now);
	c->old_used = fsdiff_inode_used(d->old.fs, ino, &c->old);
	c->same = c->new_used && c->old_used && c->now.i_generation == c->old.i_generation &&
	          (c->now.i_mode & LINUX_S_IFMT) == (c->old.i_mode & LINUX_S_IFMT);
	d->st.inodes_changed++;
	return 0;
}

/* Reads inode-table block i of group g on side s (zeros where the side
 * has no such group). */
static int itable_block(struct fsdiff *d, struct fsdiff_side *s, dgrp_t g, blk64_t i, uint8_t *buf)
{
	ext2_filsys fs = s->fs;
	memset(buf, 0, fs->blocksize);
	if (g >= fs->group_desc_count || i >= fs->inode_blocks_per_group)
		return 0;
	blk64_t b = ext2fs_inode_table_loc(fs, g) + i;
	if (b >= ext2fs_blocks_count(fs->super))
		return errf(d->err, d->errlen, -EIO, "inode table outside the file system");
	return fsdiff_view_read(&s->view, buf, fs->blocksize, b * fs->blocksize)
	           ? fsdiff_ext2_err(d, s, 0, "inode table")
	           : 0;
}

/* Compares one changed inode-table block inode by inode. */
static int compare_block(struct fsdiff *d, dgrp_t g, blk64_t i, uint8_t *a, uint8_t *b)
{
	ext2_filsys fs = d->now.fs;
	size_t isz = EXT2_INODE_SIZE(fs->super);
	uint32_t per = fs->blocksize / (uint32_t)isz;
	int r = itable_block(d, &d->now, g, i, a);
	if (!r)
		r = itable_block(d, &d->old, g, i, b);
	if (r)
		return r;
	d->st.itable_blocks++;
	if (!memcmp(a, b, fs->blocksize))
		return 0;
	uint8_t x[MAX_INODE_LEN], y[MAX_INODE_LEN];
	for (uint32_t j = 0; j < per; j++) {
		uint64_t ino = (uint64_t)g * fs->super->s_inodes_per_group + i * per + j + 1;
		if (ino > fs->super->s_inodes_count)
			break;
		d->st.inodes_examined++;
		if (ino < EXT2_FIRST_INODE(fs->super) && ino != EXT2_ROOT_INO)
			continue;
		memcpy(x, a + j * isz, isz);
		memcpy(y, b + j * isz, isz);
		mask_inode(x, isz);
		mask_inode(y, isz);
		if (!memcmp(x, y, isz))
			continue;
		if ((r = add_cand(d, (uint32_t)ino, a + j * isz, b + j * isz, isz)))
			return r;
	}
	return 0;
}

static int changed_inodes(struct fsdiff *d)
{
	ext2_filsys fs = d->now.fs, ofs = d->old.fs;
	size_t isz = EXT2_INODE_SIZE(fs->super);
	if (isz < EXT2_GOOD_OLD_INODE_SIZE || isz > MAX_INODE_LEN ||
	    isz != EXT2_INODE_SIZE(ofs->super) || fs->blocksize != ofs->blocksize ||
	    fs->super->s_inodes_per_group != ofs->super->s_inodes_per_group)
		return errf(d->err, d->errlen, -ENOTSUP,
		            "the file system's geometry differs from its base's");
	uint8_t *a = malloc(fs->blocksize), *b = malloc(fs->blocksize);
	int r = a && b ? 0 : errf(d->err, d->errlen, -ENOMEM, "out of memory");
	for (dgrp_t g = 0; !r && g < fs->group_desc_count; g++) {
		blk64_t it = ext2fs_inode_table_loc(fs, g);
		blk64_t oit = g < ofs->group_desc_count ? ext2fs_inode_table_loc(ofs, g) : it;
		for (blk64_t i = 0; !r && i < fs->inode_blocks_per_group; i++)
			if (is_changed(d, it + i) || is_changed(d, oit + i))
				r = compare_block(d, g, i, a, b);
	}
	free(a);
	free(b);
	return r;
}

static uint64_t now_us(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000 + (uint64_t)t.tv_nsec / 1000;
}

int fsdiff_run(struct qcow2_chain *chain, unsigned int base, struct fsdiff **out, char *err,
               size_t errlen)
{
	*out = NULL;
	uint64_t t0 = now_us();
	if (base < 1 || base >= qcow2_chain_layers(chain))
		return errf(err, errlen, -EINVAL, "no base layer %u below the changes", base);
	struct fsdiff *d = calloc(1, sizeof(*d));
	if (!d)
		return errf(err, errlen, -ENOMEM, "out of memory");
	d->chain = chain;
	/* Real contents fit the disk; a file larger is sparse, and a guest can
	 * make many: what is hashed is bounded (docs/diff.md). */
	d->disk_size = qcow2_chain_size(chain, 0);
	d->hash_left =
	    d->disk_size > UINT64_MAX / HASH_DISKS ? UINT64_MAX : HASH_DISKS * d->disk_size;
	d->err = err;
	d->errlen = errlen;
	int r = side_open(d, &d->now, 0, "the sandbox's file system");
	if (!r)
		r = side_open(d, &d->old, base, "the base's file system");
	if (!r)
		r = changed_blocks(d, base);
	if (!r)
		r = changed_inodes(d);
	if (!r)
		r = fsdiff_tree(d);
	if (!r)
		r = fsdiff_finish(d);
	if (r) {
		fsdiff_free(d);
		return r;
	}
	struct qcow2_read_stats qs;
	qcow2_chain_stats(chain, &qs);
	d->st.reads = qs.reads;
	d->st.bytes_read = qs.bytes_read;
	d->st.elapsed_us = now_us() - t0;
	*out = d;
	return 0;
}

size_t fsdiff_count(const struct fsdiff *d)
{
	return d->n;
}

const struct fsdiff_change *fsdiff_get(const struct fsdiff *d, size_t i)
{
	return i < d->n ? &d->c[i] : NULL;
}

const struct fsdiff_stats *fsdiff_stats(const struct fsdiff *d)
{
	return &d->st;
}

int fsdiff_read_file(struct fsdiff *d, const struct fsdiff_change *c,
                     int (*sink)(void *arg, const void *buf, size_t len), void *arg, char *err,
                     size_t errlen)
{
	return fsdiff_attr_read(d, c, sink, arg, err, errlen);
}

static void side_close(struct fsdiff_side *s)
{
	if (s->fs)
		ext2fs_close_free(&s->fs);
	jbd2_replay_free(&s->replay);
	free(s->jmap);
}

void fsdiff_free(struct fsdiff *d)
{
	if (!d)
		return;
	side_close(&d->now);
	side_close(&d->old);
	for (size_t i = 0; i < d->n; i++) {
		free(d->c[i].path);
		free(d->c[i].target);
	}
	free(d->c);
	free(d->cand);
	free(d->changed);
	free(d);
}
