/* Entries made and removed in an ext4w image; see ext4w.h.  New inodes
 * are written whole (so nothing of an inode freed before survives), then
 * linked; a directory that is full grows by a block and the link is
 * tried again.  A tree is removed without unlinking inside it: every
 * inode below loses one link per name, and those left with none are
 * freed with their blocks. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "common/errf.h"
#include "lib/image/ext4w_priv.h"
#include "lib/image/ext4w_tree.h"

/* Links name -> ino into dir (growing dir when full) and indexes it. */
static errcode_t add_link(struct ext4w *w, ext2_ino_t dir, const char *name, ext2_ino_t ino, int ft)
{
	errcode_t e = ext4w_dir_append(w->fs, dir, name, ino, ft);
	if (e == EXT2_ET_DIR_NO_SPACE) {
		e = ext2fs_expand_dir(w->fs, dir);
		if (!e)
			e = ext2fs_link(w->fs, dir, name, ino, ft);
	}
	if (!e)
		dirindex_add(&w->idx, dir, name, ino, ft);
	return e;
}

/* The parent of a new entry at path, which must not exist yet. */
static int new_entry(struct ext4w *w, const char *path, ext2_ino_t *dir, const char **name,
                     char *err, size_t errlen)
{
	ext2_ino_t ino;
	uint32_t mode;
	int rc = ext4w_parent(w, path, dir, name, err, errlen);
	if (rc)
		return rc;
	rc = ext4w_walk(w, path, strlen(path), &ino, &mode, NULL, 0);
	if (rc == 0)
		return errf(err, errlen, -EEXIST, "'%s' exists", path);
	return rc == -ENOENT ? 0 : ext4w_walk(w, path, strlen(path), &ino, &mode, err, errlen);
}

/* A new inode for path in dir, written whole with a's attributes and
 * counted as used. */
static int make_inode(struct ext4w *w, const char *path, ext2_ino_t dir, const struct ext4w_attr *a,
                      union ext4w_inode *b, ext2_ino_t *ino, char *err, size_t errlen)
{
	errcode_t e = ext2fs_new_inode(w->fs, dir, (int)a->mode, NULL, ino);
	if (e)
		return ext4w_fs_err(w, e, path, "allocating an inode", err, errlen);
	ext4w_init_inode(w, b, a);
	return 0;
}

static int commit_inode(struct ext4w *w, const char *path, ext2_ino_t dir, const char *name,
                        ext2_ino_t ino, union ext4w_inode *b, char *err, size_t errlen)
{
	errcode_t e = ext4w_put(w, ino, b);
	if (e)
		return ext4w_fs_err(w, e, path, "writing an inode", err, errlen);
	ext2fs_inode_alloc_stats2(w->fs, ino, +1, S_ISDIR(b->small.i_mode));
	e = add_link(w, dir, name, ino, ext4w_mode_ft(b->small.i_mode));
	return e ? ext4w_fs_err(w, e, path, "linking", err, errlen) : 0;
}

int ext4w_write(struct ext4w *w, const char *path, const struct ext4w_attr *a, uint64_t size,
                ext4w_read_fn rd, void *ctx, char *err, size_t errlen)
{
	ext2_ino_t dir, ino;
	const char *name;
	union ext4w_inode b;
	char why[256] = "";

	if (!S_ISREG(a->mode))
		return errf(err, errlen, -EINVAL, "'%s': not a regular file's mode", path);
	if (size > (uint64_t)UINT32_MAX * w->fs->blocksize)
		return errf(err, errlen, -EFBIG, "'%s': %llu bytes is too large for ext4", path,
		            (unsigned long long)size);
	int rc = new_entry(w, path, &dir, &name, err, errlen);
	if (!rc)
		rc = make_inode(w, path, dir, a, &b, &ino, err, errlen);
	if (rc)
		return rc;
	b.small.i_flags |= EXT4_EXTENTS_FL;
	ext2_extent_handle_t h;
	errcode_t e = ext2fs_extent_open2(w->fs, ino, &b.small, &h); /* an empty tree */
	if (e)
		return ext4w_fs_err(w, e, path, "starting extents", err, errlen);
	ext2fs_extent_free(h);
	rc = commit_inode(w, path, dir, name, ino, &b, err, errlen);
	if (rc)
		return rc;
	e = 0;
	rc = ext4w_data_fill(w->fs, ino, &b.large, size, rd, ctx, w->win, &e, why, sizeof(why));
	if (rc && e)
		return ext4w_fail(w, rc, err, errlen, "'%s': %s", path, why);
	return rc ? errf(err, errlen, rc, "'%s': %s", path, why) : 0;
}

int ext4w_mkdir(struct ext4w *w, const char *path, const struct ext4w_attr *a, char *err,
                size_t errlen)
{
	ext2_ino_t dir, ino;
	const char *name;
	union ext4w_inode b;

	if (!S_ISDIR(a->mode))
		return errf(err, errlen, -EINVAL, "'%s': not a directory's mode", path);
	int rc = new_entry(w, path, &dir, &name, err, errlen);
	if (rc)
		return rc;
	errcode_t e = ext4w_get(w, dir, &b);
	if (e)
		return ext4w_fs_err(w, e, path, "reading an inode", err, errlen);
	/* Past EXT2_LINK_MAX subdirectories a directory counts 1 (dir_nlink). */
	unsigned int links = b.small.i_links_count;
	int many = links == 1 || links >= EXT2_LINK_MAX - 1;
	if (many && !ext2fs_has_feature_dir_nlink(w->fs->super))
		return errf(err, errlen, -EMLINK, "'%s': too many subdirectories", path);
	e = ext2fs_new_inode(w->fs, dir, (int)a->mode, NULL, &ino);
	if (!e) /* made unlinked, then linked here: no scan of dir */
		e = ext2fs_mkdir(w->fs, dir, ino, NULL);
	if (!e)
		e = add_link(w, dir, name, ino, EXT2_FT_DIR);
	if (!e && !(e = ext4w_get(w, dir, &b)) && (many || b.small.i_links_count == links)) {
		b.small.i_links_count = many ? 1 : links + 1; /* the new ".." */
		e = ext4w_put(w, dir, &b);
	}
	if (!e)
		e = ext4w_get(w, ino, &b);
	if (e)
		return ext4w_fs_err(w, e, path, "making a directory", err, errlen);
	ext4w_put_attr(w, &b, a);
	e = ext4w_put(w, ino, &b);
	return e ? ext4w_fs_err(w, e, path, "writing an inode", err, errlen) : 0;
}

int ext4w_symlink(struct ext4w *w, const char *path, const char *target, const struct ext4w_attr *a,
                  char *err, size_t errlen)
{
	ext2_ino_t dir, ino;
	const char *name;
	union ext4w_inode b;
	char copy[PATH_MAX];

	size_t n = strnlen(target, sizeof(copy));
	if (n == 0 || n >= sizeof(copy) || n >= w->fs->blocksize)
		return errf(err, errlen, -ENAMETOOLONG, "'%s': a link target of %zu bytes", path,
		            n);
	memcpy(copy, target, n + 1);
	int rc = new_entry(w, path, &dir, &name, err, errlen);
	if (rc)
		return rc;
	errcode_t e = ext2fs_new_inode(w->fs, dir, S_IFLNK | 0777, NULL, &ino);
	if (!e) /* made unlinked, then linked here: no scan of dir */
		e = ext2fs_symlink(w->fs, dir, ino, NULL, copy);
	if (!e)
		e = add_link(w, dir, name, ino, EXT2_FT_SYMLINK);
	if (!e)
		e = ext4w_get(w, ino, &b);
	if (e)
		return ext4w_fs_err(w, e, path, "making a symbolic link", err, errlen);
	struct ext4w_attr x = *a;
	x.mode = S_IFLNK | 0777;
	ext4w_put_attr(w, &b, &x);
	e = ext4w_put(w, ino, &b);
	return e ? ext4w_fs_err(w, e, path, "writing an inode", err, errlen) : 0;
}

int ext4w_link(struct ext4w *w, const char *path, const char *target, char *err, size_t errlen)
{
	ext2_ino_t dir, ino;
	const char *name;
	uint32_t mode;
	union ext4w_inode b;

	int rc = ext4w_resolve(w, target, &ino, &mode, err, errlen);
	if (rc)
		return rc;
	if (S_ISDIR(mode))
		return errf(err, errlen, -EPERM, "'%s': a hard link to a directory", path);
	rc = new_entry(w, path, &dir, &name, err, errlen);
	if (rc)
		return rc;
	errcode_t e = ext4w_get(w, ino, &b);
	if (e)
		return ext4w_fs_err(w, e, path, "reading an inode", err, errlen);
	if (b.small.i_links_count >= EXT2_LINK_MAX)
		return errf(err, errlen, -EMLINK, "'%s': '%s' has too many links", path, target);
	e = add_link(w, dir, name, ino, ext4w_mode_ft(mode));
	if (!e && !(e = ext4w_get(w, ino, &b))) {
		b.small.i_links_count++;
		e = ext4w_put(w, ino, &b);
	}
	return e ? ext4w_fs_err(w, e, path, "linking", err, errlen) : 0;
}

int ext4w_mknod(struct ext4w *w, const char *path, const struct ext4w_attr *a, uint32_t major,
                uint32_t minor, char *err, size_t errlen)
{
	ext2_ino_t dir, ino;
	const char *name;
	union ext4w_inode b;

	int dev = S_ISCHR(a->mode) || S_ISBLK(a->mode);
	if (!dev && !S_ISFIFO(a->mode) && !S_ISSOCK(a->mode))
		return errf(err, errlen, -EINVAL, "'%s': not a device, fifo or socket", path);
	if (dev && (major > 0xfff || minor > 0xfffff))
		return errf(err, errlen, -EINVAL, "'%s': device %u:%u out of range", path, major,
		            minor);
	int rc = new_entry(w, path, &dir, &name, err, errlen);
	if (!rc)
		rc = make_inode(w, path, dir, a, &b, &ino, err, errlen);
	if (rc)
		return rc;
	if (dev && major < 256 && minor < 256) { /* the old encoding, as mke2fs */
		b.small.i_block[0] = major * 256 + minor;
	} else if (dev) {
		b.small.i_block[1] = (minor & 0xff) | (major << 8) | ((minor & ~0xffu) << 12);
	}
	return commit_inode(w, path, dir, name, ino, &b, err, errlen);
}

/* ---- removal -------------------------------------------------------------- */

/* Frees an inode that has no name left: its xattr block, its blocks,
 * the inode itself. */
static errcode_t release(struct ext4w *w, ext2_ino_t ino, union ext4w_inode *b)
{
	int dir = S_ISDIR(b->small.i_mode);
	errcode_t e = ext2fs_free_ext_attr(w->fs, ino, &b->large);
	if (!e && ext2fs_inode_has_valid_blocks2(w->fs, &b->small))
		e = ext2fs_punch(w->fs, ino, &b->small, NULL, 0, ~0ULL);
	if (e)
		return e;
	b->small.i_links_count = 0;
	b->small.i_dtime = (__u32)time(NULL);
	e = ext4w_put(w, ino, b);
	if (!e)
		ext2fs_inode_alloc_stats2(w->fs, ino, -1, dir);
	return e;
}

/* One name of a non-directory goes; the last one frees it. */
static errcode_t drop_link(struct ext4w *w, ext2_ino_t ino)
{
	union ext4w_inode b;
	errcode_t e = ext4w_get(w, ino, &b);
	if (e)
		return e;
	if (b.small.i_links_count > 1) {
		b.small.i_links_count--;
		return ext4w_put(w, ino, &b);
	}
	return release(w, ino, &b);
}

struct tree {
	struct ext4w *w;
	ext2_ino_t *dirs; /* directories still to empty and free */
	size_t n, cap;
	errcode_t e;
};

static int tree_cb(ext2_ino_t dir, int entry, struct ext2_dir_entry *de, int off, int bs, char *buf,
                   void *priv)
{
	struct tree *t = priv;
	int len = ext2fs_dirent_name_len(de);
	(void)dir, (void)off, (void)bs, (void)buf;
	if (entry == DIRENT_DOT_FILE || entry == DIRENT_DOT_DOT_FILE ||
	    (len == 1 && de->name[0] == '.') || (len == 2 && !memcmp(de->name, "..", 2)))
		return 0;
	if (de->inode < EXT2_FIRST_INO(t->w->fs->super) ||
	    de->inode > t->w->fs->super->s_inodes_count)
		return 0; /* not ours to free */
	uint32_t mode = ext4w_ft_mode(ext2fs_dirent_file_type(de));
	if (!mode) {
		union ext4w_inode b;
		t->e = ext4w_get(t->w, de->inode, &b);
		mode = b.small.i_mode & S_IFMT;
	}
	if (!t->e && S_ISDIR(mode)) {
		if (t->n == t->cap) {
			size_t cap = t->cap ? 2 * t->cap : 64;
			ext2_ino_t *d = realloc(t->dirs, cap * sizeof(*d));
			if (!d) {
				t->e = EXT2_ET_NO_MEMORY;
				return DIRENT_ABORT;
			}
			t->dirs = d;
			t->cap = cap;
		}
		t->dirs[t->n++] = de->inode;
	} else if (!t->e) {
		t->e = drop_link(t->w, de->inode);
	}
	return t->e ? DIRENT_ABORT : 0;
}

/* Frees the directory top (already unlinked) and everything below it. */
static errcode_t free_tree(struct ext4w *w, ext2_ino_t top)
{
	struct tree t = { .w = w };
	uint32_t seen = 0;
	ext2_ino_t d = top;

	for (;;) {
		union ext4w_inode b;
		if (++seen > w->fs->super->s_inodes_count) {
			t.e = EXT2_ET_DIR_CORRUPTED; /* a loop */
			break;
		}
		t.e = ext2fs_dir_iterate2(w->fs, d, 0, NULL, tree_cb, &t) ?: t.e;
		if (!t.e)
			t.e = ext4w_get(w, d, &b);
		if (!t.e)
			t.e = release(w, d, &b);
		if (t.e || !t.n)
			break;
		d = t.dirs[--t.n];
	}
	free(t.dirs);
	return t.e;
}

int ext4w_remove(struct ext4w *w, const char *path, char *err, size_t errlen)
{
	ext2_ino_t dir, ino;
	const char *name;
	uint32_t mode;
	union ext4w_inode p;

	int rc = ext4w_parent(w, path, &dir, &name, err, errlen);
	if (!rc)
		rc = ext4w_walk(w, path, strlen(path), &ino, &mode, err, errlen);
	if (rc)
		return rc;
	w->dir_len = 0;
	errcode_t e = ext2fs_unlink(w->fs, dir, name, ino, 0);
	if (S_ISDIR(mode))
		dirindex_reset(&w->idx); /* freed directories' numbers come back */
	else
		dirindex_del(&w->idx, dir, name);
	if (!e && S_ISDIR(mode) && !(e = ext4w_get(w, dir, &p)) && p.small.i_links_count > 2) {
		p.small.i_links_count--; /* its ".." */
		e = ext4w_put(w, dir, &p);
	}
	if (!e)
		e = S_ISDIR(mode) ? free_tree(w, ino) : drop_link(w, ino);
	return e ? ext4w_fs_err(w, e, path, "removing", err, errlen) : 0;
}

/* ---- listing -------------------------------------------------------------- */

struct list {
	struct ext4w *w;
	ext4w_list_fn fn;
	void *ctx;
	int rc;
};

static int list_cb(ext2_ino_t dir, int entry, struct ext2_dir_entry *de, int off, int bs, char *buf,
                   void *priv)
{
	struct list *l = priv;
	char name[EXT2_NAME_LEN + 1];
	int len = ext2fs_dirent_name_len(de);
	(void)dir, (void)entry, (void)off, (void)bs, (void)buf;
	if ((len == 1 && de->name[0] == '.') || (len == 2 && !memcmp(de->name, "..", 2)))
		return 0;
	memcpy(name, de->name, (size_t)len);
	name[len] = 0;
	uint32_t mode = ext4w_ft_mode(ext2fs_dirent_file_type(de));
	if (!mode) {
		union ext4w_inode b;
		mode = ext4w_get(l->w, de->inode, &b) ? 0 : b.small.i_mode & S_IFMT;
	}
	l->rc = l->fn(l->ctx, name, de->inode, mode);
	return l->rc ? DIRENT_ABORT : 0;
}

int ext4w_list(struct ext4w *w, const char *path, ext4w_list_fn fn, void *ctx, char *err,
               size_t errlen)
{
	ext2_ino_t ino;
	uint32_t mode;
	struct list l = { .w = w, .fn = fn, .ctx = ctx };

	int rc = ext4w_resolve(w, path, &ino, &mode, err, errlen);
	if (rc)
		return rc;
	if (!S_ISDIR(mode))
		return errf(err, errlen, -ENOTDIR, "'%s' is not a directory", path);
	errcode_t e = ext2fs_dir_iterate2(w->fs, ino, 0, NULL, list_cb, &l);
	if (e)
		return errf(err, errlen, -EIO, "'%s': %s", path, error_message(e));
	return l.rc;
}
