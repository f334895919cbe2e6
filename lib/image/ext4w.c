/* An ext4 image written through libext2fs; see ext4w.h.  This file: open
 * and close, paths (walked one component at a time, never through a
 * symbolic link), inodes and their attributes, lookups and reads.
 * Creating and removing entries is in ext4w_tree.c. */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/errf.h"
#include "lib/image/ext4w.h"
#include "lib/image/ext4w_priv.h"

static pthread_once_t g_tables = PTHREAD_ONCE_INIT;

static void tables_init(void)
{
	initialize_ext2_error_table();
}

int ext4w_fs_err(struct ext4w *w, errcode_t e, const char *path, const char *what, char *err,
                 size_t errlen)
{
	int code = -EIO;
	if (e == EXT2_ET_BLOCK_ALLOC_FAIL || e == EXT2_ET_INODE_ALLOC_FAIL ||
	    e == EXT2_ET_DIR_NO_SPACE)
		code = -ENOSPC;
	return ext4w_fail(w, code, err, errlen,
	                  code == -ENOSPC ? "'%s': the disk is full" : "'%s': %s: %s", path, what,
	                  error_message(e));
}

int ext4w_fail(struct ext4w *w, int code, char *err, size_t errlen, const char *fmt, ...)
{
	char line[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (!w->failed) {
		w->failed = code;
		snprintf(w->failmsg, sizeof(w->failmsg), "%s", line);
	}
	return errf(err, errlen, code, "%s", line);
}

int ext4w_failed(const struct ext4w *w)
{
	return w->failed;
}

int ext4w_open(const char *path, struct ext4w **out, char *err, size_t errlen)
{
	ext2_filsys fs = NULL;

	*out = NULL;
	pthread_once(&g_tables, tables_init);
	errcode_t e =
	    ext2fs_open2(path, NULL, EXT2_FLAG_RW | EXT2_FLAG_64BITS, 0, 0, unix_io_manager, &fs);
	if (e)
		return errf(err, errlen, -EINVAL, "'%s' is not an ext4 image: %s", path,
		            error_message(e));
	const char *why = NULL;
	if (!ext2fs_has_feature_extents(fs->super))
		why = "it has no extents (ext2 or ext3)";
	else if (ext2fs_has_feature_casefold(fs->super))
		why = "it folds case";
	else if (EXT2_INODE_SIZE(fs->super) > sizeof(union ext4w_inode))
		why = "its inodes are too large";
	if (!why && (e = ext2fs_read_bitmaps(fs)) != 0)
		why = error_message(e);
	struct ext4w *w = why ? NULL : calloc(1, sizeof(*w));
	unsigned char *win = w ? calloc(1, EXT4W_DATA_WIN) : NULL;
	if (!win) {
		free(w);
		ext2fs_close_free(&fs);
		return errf(err, errlen, why ? -EINVAL : -ENOMEM, "'%s': %s", path,
		            why ? why : "out of memory");
	}
	fs->umask = 0;
	w->fs = fs;
	w->isize = EXT2_INODE_SIZE(fs->super);
	w->win = win;
	*out = w;
	return 0;
}

int ext4w_close(struct ext4w *w, char *err, size_t errlen)
{
	dirindex_reset(&w->idx);
	errcode_t e = ext2fs_close_free(&w->fs);
	int rc = 0;
	if (w->failed)
		rc = errf(err, errlen, w->failed, "%s", w->failmsg);
	else if (e)
		rc = errf(err, errlen, -EIO, "flushing the image: %s", error_message(e));
	free(w->win);
	free(w);
	return rc;
}

void ext4w_info(const struct ext4w *w, struct ext4w_info *out)
{
	const struct ext2_super_block *s = w->fs->super;
	*out = (struct ext4w_info){
		.block_size = w->fs->blocksize,
		.blocks = ext2fs_blocks_count(w->fs->super),
		.free_blocks = ext2fs_free_blocks_count(w->fs->super),
		.inodes = s->s_inodes_count,
		.free_inodes = s->s_free_inodes_count,
	};
}

/* ---- paths ---------------------------------------------------------------- */

int ext4w_check_path(const char *path, char *err, size_t errlen)
{
	size_t n = strnlen(path, PATH_MAX);
	if (n >= PATH_MAX)
		return errf(err, errlen, -ENAMETOOLONG, "a path longer than PATH_MAX");
	if (n && path[n - 1] == '/')
		return errf(err, errlen, -EINVAL, "'%s' is not a normalized path", path);
	for (size_t i = 0; i < n;) {
		size_t j = i;
		while (j < n && path[j] != '/')
			j++;
		size_t c = j - i;
		if (c == 0 || (c == 1 && path[i] == '.') || (c == 2 && !memcmp(path + i, "..", 2)))
			return errf(err, errlen, -EINVAL, "'%s' is not a normalized path", path);
		if (c > EXT2_NAME_LEN)
			return errf(err, errlen, -ENAMETOOLONG,
			            "'%s': a name longer than 255 bytes", path);
		i = j + 1;
	}
	return 0;
}

uint32_t ext4w_ft_mode(int ft)
{
	switch (ft) {
	case EXT2_FT_REG_FILE:
		return S_IFREG;
	case EXT2_FT_DIR:
		return S_IFDIR;
	case EXT2_FT_CHRDEV:
		return S_IFCHR;
	case EXT2_FT_BLKDEV:
		return S_IFBLK;
	case EXT2_FT_FIFO:
		return S_IFIFO;
	case EXT2_FT_SOCK:
		return S_IFSOCK;
	case EXT2_FT_SYMLINK:
		return S_IFLNK;
	}
	return 0;
}

int ext4w_mode_ft(uint32_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG:
		return EXT2_FT_REG_FILE;
	case S_IFDIR:
		return EXT2_FT_DIR;
	case S_IFCHR:
		return EXT2_FT_CHRDEV;
	case S_IFBLK:
		return EXT2_FT_BLKDEV;
	case S_IFIFO:
		return EXT2_FT_FIFO;
	case S_IFSOCK:
		return EXT2_FT_SOCK;
	case S_IFLNK:
		return EXT2_FT_SYMLINK;
	}
	return EXT2_FT_UNKNOWN;
}

struct find {
	const char *name;
	int len;
	ext2_ino_t ino;
	int ft;
};

static int find_cb(ext2_ino_t dir, int entry, struct ext2_dir_entry *de, int off, int bs, char *buf,
                   void *priv)
{
	struct find *f = priv;
	(void)dir, (void)entry, (void)off, (void)bs, (void)buf;
	if (ext2fs_dirent_name_len(de) != f->len || memcmp(de->name, f->name, (size_t)f->len))
		return 0;
	f->ino = de->inode;
	f->ft = ext2fs_dirent_file_type(de);
	return DIRENT_ABORT;
}

/* The entry name[0..len) of directory dir: *ino 0 when there is none;
 * *mode its S_IF* type.  From the index (the directory read once), else
 * by a scan when the index is out of memory. */
static errcode_t find(struct ext4w *w, ext2_ino_t dir, const char *name, size_t len,
                      ext2_ino_t *ino, uint32_t *mode)
{
	struct find f = { .name = name, .len = (int)len };
	uint32_t i = 0;
	int ft = 0;
	int r = dirindex_find(&w->idx, dir, name, len, &i, &ft);
	errcode_t e = 0;
	if (r < 0 && !(e = dirindex_load(&w->idx, w->fs, dir)))
		r = dirindex_find(&w->idx, dir, name, len, &i, &ft);
	if (r >= 0) {
		f.ino = r ? i : 0;
		f.ft = ft;
	} else if (e == EXT2_ET_NO_MEMORY) {
		e = ext2fs_dir_iterate2(w->fs, dir, 0, NULL, find_cb, &f);
	}
	*ino = e ? 0 : f.ino;
	*mode = ext4w_ft_mode(f.ft);
	if (!e && f.ino && !*mode) { /* no file type in the entry: ask the inode */
		union ext4w_inode b;
		e = ext4w_get(w, f.ino, &b);
		*mode = e ? 0 : b.small.i_mode & S_IFMT;
	}
	return e;
}

int ext4w_walk(struct ext4w *w, const char *path, size_t len, ext2_ino_t *ino, uint32_t *mode,
               char *err, size_t errlen)
{
	ext2_ino_t cur = EXT2_ROOT_INO;
	uint32_t type = S_IFDIR;
	size_t i = 0;

	if (w->dir_len && len >= w->dir_len && !memcmp(path, w->dir_path, w->dir_len) &&
	    (len == w->dir_len || path[w->dir_len] == '/')) {
		cur = w->dir_ino;
		i = len == w->dir_len ? len : w->dir_len + 1;
	}
	while (i < len) {
		if (type != S_IFDIR)
			return errf(err, errlen, type == S_IFLNK ? -ELOOP : -ENOTDIR,
			            type == S_IFLNK ? "'%.*s' is a symbolic link"
			                            : "'%.*s' is not a directory",
			            (int)i - 1, path);
		size_t j = i;
		while (j < len && path[j] != '/')
			j++;
		errcode_t e = find(w, cur, path + i, j - i, &cur, &type);
		if (e)
			return ext4w_fs_err(w, e, path, "reading a directory", err, errlen);
		if (!cur)
			return errf(err, errlen, -ENOENT, "'%.*s' does not exist", (int)j, path);
		i = j + 1;
	}
	if (type == S_IFDIR && len && len < sizeof(w->dir_path)) {
		memcpy(w->dir_path, path, len);
		w->dir_len = len;
		w->dir_ino = cur;
	}
	*ino = cur;
	*mode = type;
	return 0;
}

int ext4w_parent(struct ext4w *w, const char *path, ext2_ino_t *dir, const char **name, char *err,
                 size_t errlen)
{
	int rc = ext4w_check_path(path, err, errlen);
	if (rc)
		return rc;
	if (!*path)
		return errf(err, errlen, -EINVAL, "the root has no parent");
	const char *slash = strrchr(path, '/');
	size_t plen = slash ? (size_t)(slash - path) : 0;
	uint32_t mode;
	rc = ext4w_walk(w, path, plen, dir, &mode, err, errlen);
	if (rc)
		return rc;
	if (mode != S_IFDIR)
		return errf(err, errlen, mode == S_IFLNK ? -ELOOP : -ENOTDIR,
		            mode == S_IFLNK ? "'%.*s' is a symbolic link"
		                            : "'%.*s' is not a directory",
		            (int)plen, path);
	*name = slash ? slash + 1 : path;
	return 0;
}

int ext4w_resolve(struct ext4w *w, const char *path, ext2_ino_t *ino, uint32_t *mode, char *err,
                  size_t errlen)
{
	int rc = ext4w_check_path(path, err, errlen);
	return rc ? rc : ext4w_walk(w, path, strlen(path), ino, mode, err, errlen);
}

/* ---- inodes --------------------------------------------------------------- */

errcode_t ext4w_get(struct ext4w *w, ext2_ino_t ino, union ext4w_inode *b)
{
	memset(b, 0, sizeof(*b));
	return ext2fs_read_inode_full(w->fs, ino, &b->small, w->isize);
}

errcode_t ext4w_put(struct ext4w *w, ext2_ino_t ino, union ext4w_inode *b)
{
	return ext2fs_write_inode_full(w->fs, ino, &b->small, w->isize);
}

/* Whether the inode has room for the extra time fields (through crtime). */
static int has_extra(const struct ext4w *w, const union ext4w_inode *b)
{
	return w->isize > EXT2_GOOD_OLD_INODE_SIZE && b->large.i_extra_isize >= 24;
}

/* The earliest and latest seconds the 34-bit ext4 time holds. */
#define TIME_MIN ((int64_t)INT32_MIN)
#define TIME_MAX ((int64_t)INT32_MIN + (INT64_C(4) << 32) - 1)

static void put_time(__u32 *t, __u32 *extra, int64_t sec, uint32_t nsec)
{
	sec = sec < TIME_MIN ? TIME_MIN : sec > TIME_MAX ? TIME_MAX : sec;
	*t = (__u32)(int32_t)sec;
	if (extra)
		*extra = (__u32)(((sec - (int32_t)sec) >> 32) & EXT4_EPOCH_MASK) |
		         ((nsec < 1000000000u ? nsec : 0) << EXT4_EPOCH_BITS);
}

void ext4w_put_attr(struct ext4w *w, union ext4w_inode *b, const struct ext4w_attr *a)
{
	struct ext2_inode_large *l = &b->large;
	int x = has_extra(w, b);

	b->small.i_mode = (__u16)a->mode;
	b->small.i_uid = (__u16)a->uid;
	ext2fs_set_i_uid_high(b->small, a->uid >> 16);
	b->small.i_gid = (__u16)a->gid;
	ext2fs_set_i_gid_high(b->small, a->gid >> 16);
	put_time(&l->i_mtime, x ? &l->i_mtime_extra : NULL, a->mtime, a->mtime_nsec);
	put_time(&l->i_atime, x ? &l->i_atime_extra : NULL, a->mtime, a->mtime_nsec);
	put_time(&l->i_ctime, x ? &l->i_ctime_extra : NULL, a->mtime, a->mtime_nsec);
	if (x)
		put_time(&l->i_crtime, &l->i_crtime_extra, a->mtime, a->mtime_nsec);
}

void ext4w_init_inode(struct ext4w *w, union ext4w_inode *b, const struct ext4w_attr *a)
{
	memset(b, 0, sizeof(*b));
	if (w->isize > EXT2_GOOD_OLD_INODE_SIZE)
		b->large.i_extra_isize = sizeof(struct ext2_inode_large) - EXT2_GOOD_OLD_INODE_SIZE;
	ext4w_put_attr(w, b, a);
	b->small.i_links_count = 1;
}

static void fill_stat(struct ext4w *w, ext2_ino_t ino, union ext4w_inode *b, struct ext4w_stat *st)
{
	struct ext2_inode *i = &b->small;
	*st = (struct ext4w_stat){
		.ino = ino,
		.mode = i->i_mode,
		.uid = inode_uid(*i),
		.gid = inode_gid(*i),
		.nlink = i->i_links_count,
		.size = EXT2_I_SIZE(i),
		.blocks = ext2fs_get_stat_i_blocks(w->fs, i),
		.mtime = (int32_t)i->i_mtime,
	};
	if (has_extra(w, b)) {
		st->mtime += (int64_t)(b->large.i_mtime_extra & EXT4_EPOCH_MASK) << 32;
		st->mtime_nsec = b->large.i_mtime_extra >> EXT4_EPOCH_BITS;
	}
	if (S_ISCHR(i->i_mode) || S_ISBLK(i->i_mode)) {
		uint32_t old = i->i_block[0], new = i->i_block[1];
		st->rdev_major = old ? (old >> 8) & 0xff : (new >> 8) & 0xfff;
		st->rdev_minor = old ? old & 0xff : (new & 0xff) | ((new >> 12) & 0xfff00);
	}
}

int ext4w_lookup(struct ext4w *w, const char *path, struct ext4w_stat *st, char *err, size_t errlen)
{
	ext2_ino_t ino;
	uint32_t mode;
	union ext4w_inode b;
	int rc = ext4w_resolve(w, path, &ino, &mode, err, errlen);
	if (rc)
		return rc;
	errcode_t e = ext4w_get(w, ino, &b);
	if (e)
		return ext4w_fs_err(w, e, path, "reading an inode", err, errlen);
	fill_stat(w, ino, &b, st);
	return 0;
}

int ext4w_set_attr(struct ext4w *w, const char *path, const struct ext4w_attr *a, char *err,
                   size_t errlen)
{
	ext2_ino_t ino;
	uint32_t mode;
	union ext4w_inode b;
	int rc = ext4w_resolve(w, path, &ino, &mode, err, errlen);
	if (rc)
		return rc;
	if ((a->mode & S_IFMT) != mode)
		return errf(err, errlen, -EINVAL, "'%s' is of another type", path);
	errcode_t e = ext4w_get(w, ino, &b);
	if (!e) {
		struct ext4w_attr x = *a;
		if (S_ISLNK(mode))
			x.mode = S_IFLNK | 0777;
		ext4w_put_attr(w, &b, &x);
		e = ext4w_put(w, ino, &b);
	}
	return e ? ext4w_fs_err(w, e, path, "writing an inode", err, errlen) : 0;
}

/* ---- extended attributes -------------------------------------------------- */

/* The names the kernel takes; "system.data" (inline data) is not one. */
static int xattr_name_ok(const char *name)
{
	static const char *const prefix[] = { "user.", "trusted.", "security." };
	size_t n = strlen(name);
	if (n == 0 || n > XATTR_NAME_MAX)
		return 0;
	for (size_t i = 0; i < sizeof(prefix) / sizeof(prefix[0]); i++)
		if (!strncmp(name, prefix[i], strlen(prefix[i])) && n > strlen(prefix[i]))
			return 1;
	return !strcmp(name, "system.posix_acl_access") ||
	       !strcmp(name, "system.posix_acl_default");
}

int ext4w_set_xattr(struct ext4w *w, const char *path, const char *name, const void *value,
                    size_t len, char *err, size_t errlen)
{
	ext2_ino_t ino;
	uint32_t mode;
	struct ext2_xattr_handle *h = NULL;
	int rc = ext4w_resolve(w, path, &ino, &mode, err, errlen);
	if (rc)
		return rc;
	if (!xattr_name_ok(name))
		return errf(err, errlen, -EOPNOTSUPP, "'%s': xattr '%.64s' is not supported", path,
		            name);
	if (len > XATTR_SIZE_MAX || len > w->fs->blocksize)
		return errf(err, errlen, -E2BIG, "'%s': xattr '%s' of %zu bytes is too large", path,
		            name, len);
	errcode_t e = ext2fs_xattrs_open(w->fs, ino, &h);
	if (!e)
		e = ext2fs_xattrs_read(h);
	if (!e)
		e = ext2fs_xattr_set(h, name, value, len);
	if (h) {
		errcode_t c = ext2fs_xattrs_close(&h);
		e = e ? e : c;
	}
	if (e == EXT2_ET_EA_NO_SPACE)
		return errf(err, errlen, -ENOSPC, "'%s': no room for xattr '%s'", path, name);
	return e ? ext4w_fs_err(w, e, path, "setting an xattr", err, errlen) : 0;
}

int ext4w_get_xattr(struct ext4w *w, const char *path, const char *name, void *buf, size_t *len,
                    char *err, size_t errlen)
{
	ext2_ino_t ino;
	uint32_t mode;
	struct ext2_xattr_handle *h = NULL;
	void *v = NULL;
	size_t n = 0;
	int rc = ext4w_resolve(w, path, &ino, &mode, err, errlen);
	if (rc)
		return rc;
	errcode_t e = ext2fs_xattrs_open(w->fs, ino, &h);
	if (!e)
		e = ext2fs_xattrs_read(h);
	if (!e)
		e = ext2fs_xattr_get(h, name, &v, &n);
	if (h)
		ext2fs_xattrs_close(&h);
	if (e == EXT2_ET_EA_KEY_NOT_FOUND)
		return errf(err, errlen, -ENODATA, "'%s' has no xattr '%s'", path, name);
	if (e)
		return errf(err, errlen, -EIO, "'%s': reading xattrs: %s", path, error_message(e));
	rc = n > *len ? errf(err, errlen, -ERANGE, "'%s': xattr '%s' is %zu bytes", path, name, n)
	              : 0;
	if (!rc)
		memcpy(buf, v, n);
	*len = n;
	ext2fs_free_mem(&v);
	return rc;
}

/* ---- reading -------------------------------------------------------------- */

int ext4w_read(struct ext4w *w, const char *path, uint64_t off, void *buf, size_t len, size_t *got,
               char *err, size_t errlen)
{
	ext2_ino_t ino;
	uint32_t mode;
	ext2_file_t f = NULL;
	*got = 0;
	int rc = ext4w_resolve(w, path, &ino, &mode, err, errlen);
	if (rc)
		return rc;
	if (mode != S_IFREG)
		return errf(err, errlen, -EINVAL, "'%s' is not a regular file", path);
	errcode_t e = ext2fs_file_open2(w->fs, ino, NULL, 0, &f);
	if (!e)
		e = ext2fs_file_llseek(f, off, EXT2_SEEK_SET, NULL);
	while (!e && *got < len) {
		unsigned int n = 0,
		             want = len - *got > (1u << 30) ? 1u << 30 : (unsigned)(len - *got);
		e = ext2fs_file_read(f, (char *)buf + *got, want, &n);
		if (!e && n == 0)
			break;
		*got += n;
	}
	if (f)
		ext2fs_file_close(f);
	return e ? errf(err, errlen, -EIO, "'%s': %s", path, error_message(e)) : 0;
}

int ext4w_readlink(struct ext4w *w, const char *path, char *buf, size_t len, char *err,
                   size_t errlen)
{
	ext2_ino_t ino;
	uint32_t mode;
	union ext4w_inode b;
	int rc = ext4w_resolve(w, path, &ino, &mode, err, errlen);
	if (rc)
		return rc;
	if (mode != S_IFLNK)
		return errf(err, errlen, -EINVAL, "'%s' is not a symbolic link", path);
	errcode_t e = ext4w_get(w, ino, &b);
	if (e)
		return errf(err, errlen, -EIO, "'%s': %s", path, error_message(e));
	uint64_t size = EXT2_I_SIZE(&b.small);
	if (size >= len || size >= w->fs->blocksize)
		return errf(err, errlen, -ENAMETOOLONG, "'%s': a target of %llu bytes", path,
		            (unsigned long long)size);
	if (b.small.i_flags & EXT4_INLINE_DATA_FL) {
		size_t n = 0;
		e = ext2fs_inline_data_get(w->fs, ino, &b.small, buf, &n);
	} else if (ext2fs_is_fast_symlink(&b.small)) {
		memcpy(buf, b.small.i_block, size);
	} else {
		size_t got;
		buf[0] = 0;
		ext2_file_t f = NULL;
		e = ext2fs_file_open2(w->fs, ino, &b.small, 0, &f);
		unsigned int n = 0;
		if (!e)
			e = ext2fs_file_read(f, buf, (unsigned int)size, &n);
		got = n;
		if (f)
			ext2fs_file_close(f);
		if (!e && got != size)
			e = EXT2_ET_SHORT_READ;
	}
	if (e)
		return errf(err, errlen, -EIO, "'%s': %s", path, error_message(e));
	buf[size] = 0;
	return 0;
}
