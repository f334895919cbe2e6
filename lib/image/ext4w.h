/* An ext4 image written through libext2fs, never mounted: the files of a
 * container image's layers go straight into the image file, so owners,
 * setuid bits, xattrs, device nodes and hard links keep their values
 * without root, and nothing is ever written outside the image.
 *
 * Paths are relative to the image's root, already normalized: components
 * joined by one '/', no leading '/', no "." or ".." component, each at
 * most 255 bytes, PATH_MAX in all; "" is the root.  Anything else is
 * refused (-EINVAL).  No call follows a symbolic link: a link in a
 * non-final component is an error naming it (-ELOOP), a final one is the
 * link itself.
 *
 * Errors are negative errno values with one line in the caller's err
 * buffer.  A failure inside libext2fs (an I/O error, a full disk) also
 * marks the image failed: ext4w_close() then reports it.  One thread at a
 * time per image. */
#ifndef COVE_IMAGE_EXT4W_H
#define COVE_IMAGE_EXT4W_H

#include <stddef.h>
#include <stdint.h>

struct ext4w;

/* What a created entry gets.  mode holds the type bits (S_IFREG,
 * S_IFDIR, ...) and the permission bits, setuid, setgid and sticky
 * included; mtime (seconds, nanoseconds) is also its atime and ctime. */
struct ext4w_attr {
	uint32_t mode;
	uint32_t uid;
	uint32_t gid;
	int64_t mtime;
	uint32_t mtime_nsec;
};

/* An entry as lstat(2) would show it; blocks in 512-byte units. */
struct ext4w_stat {
	uint32_t ino;
	uint32_t mode;
	uint32_t uid;
	uint32_t gid;
	uint32_t nlink;
	uint64_t size;
	uint64_t blocks;
	int64_t mtime;
	uint32_t mtime_nsec;
	uint32_t rdev_major;
	uint32_t rdev_minor;
};

struct ext4w_info {
	uint32_t block_size;
	uint64_t blocks;
	uint64_t free_blocks;
	uint32_t inodes;
	uint32_t free_inodes;
};

/* ext4w_open() - opens an ext4 image file for writing.
 * @path: an image made by ext4w_mkfs() (or any ext4 with extents)
 * @out: the image, for every other call; ext4w_close() frees it
 *
 * Return: 0, or -errno with a line in err. */
int ext4w_open(const char *path, struct ext4w **out, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* ext4w_close() - flushes the bitmaps, group descriptors and superblock
 * and frees w (always, whatever it returns).
 *
 * Return: 0; or the first failure the image saw (ENOSPC, EIO, ...) or
 * that of the flush, with its line in err: the image is then unusable. */
int ext4w_close(struct ext4w *w, char *err, size_t errlen);

/* ext4w_failed() - whether a write failed since ext4w_open(). */
int ext4w_failed(const struct ext4w *w);

/* Sizes and free counts (blocks, inodes) as they are now. */
void ext4w_info(const struct ext4w *w, struct ext4w_info *out);

/* ext4w_lookup() - the entry at path.
 *
 * Return: 0; -ENOENT (with a line naming the missing component), -ELOOP
 * (a symbolic link on the way), -ENOTDIR (a non-directory on the way). */
int ext4w_lookup(struct ext4w *w, const char *path, struct ext4w_stat *st, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* ext4w_set_attr() - sets an existing entry's owner, permission bits and
 * times from a (a->mode's type bits must match the entry's: -EINVAL). */
int ext4w_set_attr(struct ext4w *w, const char *path, const struct ext4w_attr *a, char *err,
                   size_t errlen) __attribute__((warn_unused_result));

/* ext4w_set_xattr() - sets one extended attribute ("user.x",
 * "security.capability", "trusted.*", "system.posix_acl_access" in the
 * xattr form the kernel takes) of an existing entry. */
int ext4w_set_xattr(struct ext4w *w, const char *path, const char *name, const void *value,
                    size_t len, char *err, size_t errlen) __attribute__((warn_unused_result));

/* ext4w_get_xattr() - copies an extended attribute into buf (*len: its
 * room in, the value's length out; -ERANGE when it does not fit,
 * -ENODATA when there is none). */
int ext4w_get_xattr(struct ext4w *w, const char *path, const char *name, void *buf, size_t *len,
                    char *err, size_t errlen) __attribute__((warn_unused_result));

/* ext4w_read() - up to len bytes of the regular file at path from off
 * into buf; *got: how many (short only at the end of the file). */
int ext4w_read(struct ext4w *w, const char *path, uint64_t off, void *buf, size_t len, size_t *got,
               char *err, size_t errlen) __attribute__((warn_unused_result));

/* ext4w_readlink() - the target of the symbolic link at path, NUL-
 * terminated in buf (-ENAMETOOLONG when len is too small). */
int ext4w_readlink(struct ext4w *w, const char *path, char *buf, size_t len, char *err,
                   size_t errlen) __attribute__((warn_unused_result));

#endif
