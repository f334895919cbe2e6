/* Whole-buffer I/O on blocking fds, shared by every Cove binary. */
#ifndef COVE_IO_H
#define COVE_IO_H

#include <dirent.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

/* Writes all len bytes (retrying short writes and EINTR); 0 or -errno
 * (-EIO when write returns 0). */
int write_all(int fd, const void *buf, size_t len) __attribute__((warn_unused_result));

/* pwrite of all len bytes at off, as write_all. */
int pwrite_all(int fd, const void *buf, size_t len, off_t off) __attribute__((warn_unused_result));

/* pread of all len bytes at off; 0, -errno, or -EIO at end of file. */
int pread_all(int fd, void *buf, size_t len, off_t off) __attribute__((warn_unused_result));

/* Reads until len bytes are in or the file ends (retrying short reads and
 * EINTR).  Returns how many bytes were read, fewer than len only at end of
 * file, or -errno.  Unlike pread_all an early end is no error: for callers
 * that take what there is (a header that may be short, a pipe whose writer
 * may die). */
ssize_t read_full(int fd, void *buf, size_t len) __attribute__((warn_unused_result));

/* file_slurp() - the regular file @path, at most @max bytes, in memory
 * (malloc'ed, NUL-ended; *@len its length, *@st its stat).  NULL with *@e
 * set: an errno, EINVAL when it is not a regular file, EFBIG when it is
 * over @max.  A buffer given up on is wiped first (callers read secrets).
 * The caller wipes and frees the result. */
char *file_slurp(const char *path, size_t max, size_t *len, struct stat *st, int *e);

/* Copies the regular file src to dst, which must not exist, across file
 * systems too: a reflink (FICLONE) where the file system offers one, else
 * the data ranges only (holes stay holes), then fsync.  dst gets mode.
 * On failure dst is removed and src is untouched.  0 or -errno. */
int copy_file_sparse(const char *src, const char *dst, mode_t mode)
    __attribute__((warn_unused_result));

/* copy_file_sparse() with each name relative to a directory fd (or
 * AT_FDCWD); neither name is followed if it is a symlink. */
int copy_file_sparse_at(int srcdir, const char *src, int dstdir, const char *dst, mode_t mode)
    __attribute__((warn_unused_result));

/* Waits up to ms for fd to become readable (a pidfd: its process exited),
 * through EINTR.  True when it did. */
bool fd_wait_readable(int fd, int ms);

/* A directory stream over a duplicate of the directory fd dfd (which
 * stays open), read from its start, or NULL with errno set. */
DIR *opendir_dup(int dfd);

/* flock(fd, op) (LOCK_SH or LOCK_EX) within ms: tries without blocking,
 * sleeping 5 ms, then doubling up to 200 ms between tries.  0, -ETIMEDOUT,
 * or -errno. */
int flock_wait(int fd, int op, int ms) __attribute__((warn_unused_result));

#endif
