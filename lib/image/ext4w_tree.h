/* Entries made and removed in an ext4w image (ext4w.h has the rules for
 * paths and errors): each kind of entry, a tree's removal, a directory's
 * listing.  New inodes are written whole, then linked. */
#ifndef COVE_IMAGE_EXT4W_TREE_H
#define COVE_IMAGE_EXT4W_TREE_H

#include <stddef.h>
#include <stdint.h>

#include "lib/image/ext4w.h"
#include "lib/image/ext4w_data.h"

/* ext4w_mkdir() - a directory at path; the parent must exist and the name
 * must not (-EEXIST). */
int ext4w_mkdir(struct ext4w *w, const char *path, const struct ext4w_attr *a, char *err,
                size_t errlen) __attribute__((warn_unused_result));

/* ext4w_write() - a regular file of size bytes at path, its contents from
 * rd (see ext4w_data.h): a range rd skips, and every all-zero block, is a
 * hole that takes no space.  The parent must exist and the name must not.
 * Data past size is an error. */
int ext4w_write(struct ext4w *w, const char *path, const struct ext4w_attr *a, uint64_t size,
                ext4w_read_fn rd, void *ctx, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* ext4w_symlink() - a symbolic link at path to target (1..4095 bytes,
 * stored as given, never resolved).  Only a->uid, gid and mtime are used:
 * a link's mode is 0777. */
int ext4w_symlink(struct ext4w *w, const char *path, const char *target, const struct ext4w_attr *a,
                  char *err, size_t errlen) __attribute__((warn_unused_result));

/* ext4w_link() - a hard link at path to the entry at target, which must
 * exist and not be a directory (-EPERM), with fewer than 65000 links
 * (-EMLINK). */
int ext4w_link(struct ext4w *w, const char *path, const char *target, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* ext4w_mknod() - a character or block device (major < 4096, minor <
 * 2^20), a fifo or a socket at path, by a->mode's type. */
int ext4w_mknod(struct ext4w *w, const char *path, const struct ext4w_attr *a, uint32_t major,
                uint32_t minor, char *err, size_t errlen) __attribute__((warn_unused_result));

/* ext4w_remove() - removes the entry at path and, for a directory,
 * everything below it: each inode whose last link goes is freed with its
 * blocks and xattr block.  The root cannot be removed. */
int ext4w_remove(struct ext4w *w, const char *path, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* Called for each entry of a directory but "." and ".." with its name (a
 * NUL-terminated copy), inode and S_IF* type; a non-zero return stops the
 * listing and is returned. */
typedef int (*ext4w_list_fn)(void *ctx, const char *name, uint32_t ino, uint32_t type);

/* ext4w_list() - calls fn for each entry of the directory at path, in
 * on-disk order.  fn must not change the image. */
int ext4w_list(struct ext4w *w, const char *path, ext4w_list_fn fn, void *ctx, char *err,
               size_t errlen) __attribute__((warn_unused_result));

#endif
