/* A regular file's contents into its inode (ext4w's writer): data comes
 * in pieces at increasing offsets, is gathered into a window of whole
 * blocks, and each run of non-zero blocks is allocated as one extent
 * (ext2fs_fallocate) and written with one write.  Ranges never given and
 * all-zero blocks stay holes. */
#ifndef COVE_IMAGE_EXT4W_DATA_H
#define COVE_IMAGE_EXT4W_DATA_H

#include <ext2fs/ext2fs.h>
#include <stddef.h>
#include <stdint.h>

/* The window, the caller's buffer of this many bytes: data is gathered
 * there before it goes to the disk. */
#define EXT4W_DATA_WIN (1u << 20)

/* A source of file contents: the next piece in *data (valid until the
 * next call), *len bytes at file offset *off.  Offsets never go back; a
 * gap between pieces is a hole.  Return: 1 for a piece, 0 at the end,
 * -errno on error (a line in err). */
typedef int (*ext4w_read_fn)(void *ctx, const void **data, size_t *len, uint64_t *off, char *err,
                             size_t errlen);

/* ext4w_data_fill() - writes size bytes from rd into inode ino.
 * @in: the inode, read in full and already linked; its size, blocks and
 *      extents are updated here and it is written back
 * @win: EXT4W_DATA_WIN bytes, all zero; left all zero
 * @fserr: the libext2fs error when one failed (the image is then
 *         damaged), else left alone
 *
 * Return: 0, or -errno with a line in err (-ENOSPC: the disk is full;
 * -EINVAL: the source went back or past size). */
int ext4w_data_fill(ext2_filsys fs, ext2_ino_t ino, struct ext2_inode_large *in, uint64_t size,
                    ext4w_read_fn rd, void *ctx, unsigned char *win, errcode_t *fserr, char *err,
                    size_t errlen) __attribute__((warn_unused_result));

#endif
