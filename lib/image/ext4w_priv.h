/* Inside ext4w (ext4w.c, ext4w_tree.c): the image's state and the helpers
 * both halves share.  Not for callers outside lib/image/ext4w*. */
#ifndef COVE_IMAGE_EXT4W_PRIV_H
#define COVE_IMAGE_EXT4W_PRIV_H

#include <ext2fs/ext2_fs.h>
#include <ext2fs/ext2fs.h>
#include <limits.h>

#include "lib/image/ext4w.h"
#include "lib/image/ext4w_data.h"
#include "lib/image/ext4w_dir.h"

/* One inode, read and written at the image's full inode size: libext2fs
 * may write a whole inode from the buffer it is given (extent splits),
 * and what lies past struct ext2_inode_large (in-inode xattrs) must
 * survive. */
union ext4w_inode {
	struct ext2_inode small;
	struct ext2_inode_large large;
	unsigned char raw[1024];
};

struct ext4w {
	ext2_filsys fs;
	unsigned int isize;
	int failed; /* the first failure's -errno, 0 while none */
	char failmsg[512];
	/* The last directory a walk ended on: a walk under it starts there.
	 * dir_len 0: none.  Any removal forgets it. */
	char dir_path[PATH_MAX];
	size_t dir_len;
	ext2_ino_t dir_ino;
	unsigned char *win;  /* EXT4W_DATA_WIN zero bytes for ext4w_data_fill */
	struct dirindex idx; /* the names of the directories looked in */
};

/* Marks the image failed (the first failure is kept for ext4w_close) and
 * formats the line into err; returns code. */
int ext4w_fail(struct ext4w *w, int code, char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* A libext2fs error e while doing what on path: -ENOSPC for a full disk,
 * else -EIO; the image is marked failed. */
int ext4w_fs_err(struct ext4w *w, errcode_t e, const char *path, const char *what, char *err,
                 size_t errlen);

/* 0 when path is a normalized path (ext4w.h), else -EINVAL or
 * -ENAMETOOLONG with a line. */
int ext4w_check_path(const char *path, char *err, size_t errlen);

/* EXT2_FT_* to S_IF* (0 for unknown) and back. */
uint32_t ext4w_ft_mode(int ft);
int ext4w_mode_ft(uint32_t mode);

/* Resolves path[0..len) (checked) to its inode and S_IF* type, following
 * no symbolic link. */
int ext4w_walk(struct ext4w *w, const char *path, size_t len, ext2_ino_t *ino, uint32_t *mode,
               char *err, size_t errlen);

/* Checks path and resolves its parent, which must be a directory; *name:
 * the last component (inside path). */
int ext4w_parent(struct ext4w *w, const char *path, ext2_ino_t *dir, const char **name, char *err,
                 size_t errlen);

/* Checks and resolves the whole path. */
int ext4w_resolve(struct ext4w *w, const char *path, ext2_ino_t *ino, uint32_t *mode, char *err,
                  size_t errlen);

/* Reads or writes an inode in full. */
errcode_t ext4w_get(struct ext4w *w, ext2_ino_t ino, union ext4w_inode *b);
errcode_t ext4w_put(struct ext4w *w, ext2_ino_t ino, union ext4w_inode *b);

/* Sets mode, owner and the times from a. */
void ext4w_put_attr(struct ext4w *w, union ext4w_inode *b, const struct ext4w_attr *a);

/* A new inode: zeroed, the extra fields' size set, a's attributes, one
 * link. */
void ext4w_init_inode(struct ext4w *w, union ext4w_inode *b, const struct ext4w_attr *a);

#endif
