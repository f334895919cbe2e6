/* The changes made whole (fsdiff_attr.h): one per path, each side's type,
 * size, mode and owner, regular files' SHA-256 and symlinks' targets, all
 * read from the inodes and files themselves. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "errf.h"
#include "lib/base/sha256.h"
#include "lib/image/fsdiff_attr.h"
#include "lib/image/fsdiff_inode.h"

#define MAX_TARGET 4096
#define CHUNK      65536

static const char *type_of(uint16_t mode)
{
	switch (mode & LINUX_S_IFMT) {
	case LINUX_S_IFREG:
		return "file";
	case LINUX_S_IFDIR:
		return "dir";
	case LINUX_S_IFLNK:
		return "symlink";
	case LINUX_S_IFCHR:
		return "char";
	case LINUX_S_IFBLK:
		return "block";
	case LINUX_S_IFIFO:
		return "fifo";
	case LINUX_S_IFSOCK:
		return "socket";
	default:
		return "unknown";
	}
}

static void attr_of(const struct ext2_inode_large *in, struct fsdiff_attr *a)
{
	a->type = type_of(in->i_mode);
	a->size = EXT2_I_SIZE(in);
	a->mode = in->i_mode & 07777;
	a->uid = inode_uid(*in);
	a->gid = inode_gid(*in);
}

/* Reads a file's contents in order through sink. */
static int read_file(struct fsdiff *d, uint32_t ino, struct ext2_inode_large *in,
                     int (*sink)(void *arg, const void *buf, size_t len), void *arg)
{
	ext2_file_t f;
	errcode_t e = ext2fs_file_open2(d->now.fs, ino, (struct ext2_inode *)in, 0, &f);
	if (e)
		return fsdiff_ext2_err(d, &d->now, e, "file");
	uint8_t *buf = malloc(CHUNK);
	int r = buf ? 0 : errf(d->err, d->errlen, -ENOMEM, "out of memory");
	uint64_t left = EXT2_I_SIZE(in);
	while (!r && left) {
		unsigned int got = 0;
		e = ext2fs_file_read(f, buf, left < CHUNK ? (unsigned int)left : CHUNK, &got);
		if (e || !got) {
			r = e ? fsdiff_ext2_err(d, &d->now, e, "file")
			      : errf(d->err, d->errlen, -EIO, "file inode %u ends early", ino);
			break;
		}
		left -= got;
		r = sink(arg, buf, got);
	}
	free(buf);
	ext2fs_file_close(f);
	return r;
}

static int hash_sink(void *arg, const void *buf, size_t len)
{
	sha256_update(arg, buf, len);
	return 0;
}

struct text_sink {
	char *buf;
	size_t len;
};

static int target_sink(void *arg, const void *buf, size_t len)
{
	struct text_sink *t = arg;
	if (t->len + len > MAX_TARGET)
		return -ENAMETOOLONG;
	memcpy(t->buf + t->len, buf, len);
	t->len += len;
	return 0;
}

static int symlink_target(struct fsdiff *d, struct fsdiff_change *c, struct ext2_inode_large *in)
{
	uint64_t size = EXT2_I_SIZE(in);
	if (size > MAX_TARGET)
		return errf(d->err, d->errlen, -EIO, "%s: symlink target too long", c->path);
	if (!(c->target = calloc(1, MAX_TARGET + 1)))
		return errf(d->err, d->errlen, -ENOMEM, "out of memory");
	if (ext2fs_is_fast_symlink((struct ext2_inode *)in)) {
		memcpy(c->target, in->i_block,
		       size < sizeof(in->i_block) ? size : sizeof(in->i_block));
		return 0;
	}
	struct text_sink t = { .buf = c->target };
	return read_file(d, c->ino, in, target_sink, &t);
}

/* Fills one change's attributes from its inodes. */
static int complete(struct fsdiff *d, struct fsdiff_change *c)
{
	struct ext2_inode_large in;
	int r;
	if (c->kind != FSDIFF_ADDED) {
		if ((r = fsdiff_read_inode(d, d->old.fs, c->old_ino, &in)))
			return r;
		attr_of(&in, &c->old);
	}
	if (c->kind == FSDIFF_DELETED)
		return 0;
	if ((r = fsdiff_read_inode(d, d->now.fs, c->ino, &in)))
		return r;
	attr_of(&in, &c->now);
	if (LINUX_S_ISLNK(in.i_mode))
		return symlink_target(d, c, &in);
	if (!LINUX_S_ISREG(in.i_mode))
		return 0;
	if (c->now.size > d->disk_size || c->now.size > d->hash_left) {
		c->unhashed = true;
		d->st.files_unhashed++;
		return 0;
	}
	d->hash_left -= c->now.size;
	struct sha256 h;
	sha256_init(&h);
	if ((r = read_file(d, c->ino, &in, hash_sink, &h)))
		return r;
	sha256_final(&h, c->sha256);
	c->has_sha256 = true;
	return 0;
}

static int by_path(const void *a, const void *b)
{
	const struct fsdiff_change *x = a, *y = b;
	int c = strcmp(x->path, y->path);
	return c ? c : (int)x->kind - (int)y->kind;
}

/* Two reports of one path: added beats changed; added and deleted make a
 * change from the deleted file to the added one. */
static void merge(struct fsdiff_change *keep, struct fsdiff_change *drop)
{
	if (keep->kind == FSDIFF_ADDED && drop->kind == FSDIFF_DELETED) {
		keep->kind = FSDIFF_CHANGED;
		keep->old_ino = drop->old_ino;
	}
	free(drop->path);
	free(drop->target);
}

int fsdiff_finish(struct fsdiff *d)
{
	if (d->n)
		qsort(d->c, d->n, sizeof(*d->c), by_path);
	size_t w = 0;
	for (size_t i = 0; i < d->n; i++) {
		if (w && !strcmp(d->c[w - 1].path, d->c[i].path))
			merge(&d->c[w - 1], &d->c[i]);
		else
			d->c[w++] = d->c[i];
	}
	d->n = w;
	for (size_t i = 0; i < d->n; i++) {
		int r = complete(d, &d->c[i]);
		if (r)
			return r;
	}
	return 0;
}

int fsdiff_attr_read(struct fsdiff *d, const struct fsdiff_change *c,
                     int (*sink)(void *arg, const void *buf, size_t len), void *arg, char *err,
                     size_t errlen)
{
	d->err = err;
	d->errlen = errlen;
	if (c->kind == FSDIFF_DELETED || !c->has_sha256)
		return errf(err, errlen, -EINVAL, "%s: not a regular file of the sandbox", c->path);
	struct ext2_inode_large in;
	int r = fsdiff_read_inode(d, d->now.fs, c->ino, &in);
	return r ? r : read_file(d, c->ino, &in, sink, arg);
}
