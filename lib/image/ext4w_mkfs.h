/* An empty ext4 image file, made by Debian's mkfs.ext4 (e2fsprogs):
 * mke2fs's choices (flex_bg, metadata_csum, journal size, reserved
 * inodes, lost+found) are kept as the kernel expects them, rather than
 * made again by hand through libext2fs.  The child gets an empty
 * environment but PATH and LC_ALL=C, /dev/null for stdin and stdout, and
 * a deadline; past it, it is killed. */
#ifndef COVE_IMAGE_EXT4W_MKFS_H
#define COVE_IMAGE_EXT4W_MKFS_H

#include <stddef.h>
#include <stdint.h>

/* How long mkfs.ext4 may take (it writes little: the file is sparse and
 * taken as zeroed). */
#define EXT4W_MKFS_TIMEOUT_MS (120 * 1000)

/* Smallest and largest image, in bytes. */
#define EXT4W_MKFS_MIN (4ull << 20)
#define EXT4W_MKFS_MAX (16ull << 40)

/* ext4w_mkfs() - makes path (created or truncated; never through a
 * symbolic link) a sparse file of bytes (rounded down to 4 KiB) holding
 * an empty ext4: 4 KiB blocks, 256-byte inodes, at least inodes inodes,
 * no blocks reserved for root (-m 0), the root directory 0755 root:root,
 * the volume label label (at most 16 bytes, printable ASCII; NULL: none).
 * mkfs.ext4 is run as `mkfs.ext4 -q -F -b 4096 -I 256 -m 0 -N INODES
 * -L LABEL -E root_owner=0:0,assume_storage_prezeroed=1 FILE BLOCKS`
 * (assume_storage_prezeroed: e2fsprogs 1.47 or later; the file is new and
 * sparse, so mke2fs need not zero its inode tables and journal).
 *
 * Return: 0, or -errno with a line in err (mkfs.ext4 missing, its first
 * error line, or its deadline). */
int ext4w_mkfs(const char *path, uint64_t bytes, uint64_t inodes, const char *label, char *err,
               size_t errlen) __attribute__((warn_unused_result));

#endif
