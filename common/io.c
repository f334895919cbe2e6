#include "io.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"

enum io_op { IO_WRITE, IO_PWRITE, IO_PREAD };

/* The one whole-buffer loop: retries short transfers and EINTR; a
 * transfer of 0 bytes (end of file, or a full device that says so) is
 * -EIO. */
static int io_all(int fd, char *p, size_t len, off_t off, enum io_op op)
{
	while (len) {
		ssize_t n = op == IO_WRITE    ? write(fd, p, len)
		            : op == IO_PWRITE ? pwrite(fd, p, len, off)
		                              : pread(fd, p, len, off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		p += n;
		len -= (size_t)n;
		off += n;
	}
	return 0;
}

int write_all(int fd, const void *buf, size_t len)
{
	return io_all(fd, (char *)buf, len, 0, IO_WRITE);
}

int pwrite_all(int fd, const void *buf, size_t len, off_t off)
{
	return io_all(fd, (char *)buf, len, off, IO_PWRITE);
}

int pread_all(int fd, void *buf, size_t len, off_t off)
{
	return io_all(fd, buf, len, off, IO_PREAD);
}

/* Copies [off, end) of in to the same offsets of out: copy_file_range
 * where the kernel allows it between these file systems (since Linux 5.19
 * it refuses most cross-file-system pairs with EXDEV), else read/write. */
static int copy_range(int in, int out, off_t off, off_t end, int *use_cfr)
{
	static char buf[1 << 16];
	while (off < end) {
		size_t want = (size_t)(end - off);
		if (*use_cfr) {
			off_t o_in = off, o_out = off;
			ssize_t n = copy_file_range(in, &o_in, out, &o_out, want, 0);
			if (n > 0) {
				off += n;
				continue;
			}
			if (n < 0 && errno == EINTR)
				continue;
			if (n == 0 || (errno != EXDEV && errno != EINVAL && errno != ENOSYS &&
			               errno != EOPNOTSUPP))
				return n < 0 ? -errno : -EIO;
			*use_cfr = 0; /* not between these two: copy by hand */
		}
		if (want > sizeof(buf))
			want = sizeof(buf);
		int r = pread_all(in, buf, want, off);
		if (!r)
			r = pwrite_all(out, buf, want, off);
		if (r)
			return r;
		off += (off_t)want;
	}
	return 0;
}

int copy_file_sparse(const char *src, const char *dst, mode_t mode)
{
	return copy_file_sparse_at(AT_FDCWD, src, AT_FDCWD, dst, mode);
}

int copy_file_sparse_at(int srcdir, const char *src, int dstdir, const char *dst, mode_t mode)
{
	int in = openat(srcdir, src, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (in < 0)
		return -errno;
	int out = openat(dstdir, dst, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
	if (out < 0) {
		int e = -errno;
		close(in);
		return e;
	}
	int r = 0;
	struct stat st;
	if (fstat(in, &st) < 0)
		r = -errno;
	else if (!S_ISREG(st.st_mode))
		r = -EINVAL;
	if (!r && ioctl(out, FICLONE, in) < 0) {
		/* No reflink here: copy the data ranges. */
		if (ftruncate(out, st.st_size) < 0)
			r = -errno;
		int use_cfr = 1;
		off_t pos = 0;
		while (!r && pos < st.st_size) {
			off_t data = lseek(in, pos, SEEK_DATA);
			if (data < 0) {
				if (errno != ENXIO)
					r = -errno;
				break; /* ENXIO: only a hole is left */
			}
			off_t hole = lseek(in, data, SEEK_HOLE);
			if (hole < 0 || hole > st.st_size)
				hole = st.st_size;
			r = copy_range(in, out, data, hole, &use_cfr);
			pos = hole;
		}
	}
	if (!r && fsync(out) < 0)
		r = -errno;
	close(in);
	if (close(out) < 0 && !r)
		r = -errno;
	if (r)
		unlinkat(dstdir, dst, 0);
	return r;
}

ssize_t read_full(int fd, void *buf, size_t len)
{
	char *p = buf;
	size_t done = 0;
	while (done < len) {
		ssize_t n = read(fd, p + done, len - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		done += (size_t)n;
	}
	return (ssize_t)done;
}

bool fd_wait_readable(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	int64_t deadline = mono_ms() + ms;
	for (;;) {
		int64_t left = deadline - mono_ms();
		int n = poll(&p, 1, left > 0 ? (int)left : 0);
		if (n < 0 && errno == EINTR)
			continue;
		return n > 0;
	}
}

int flock_wait(int fd, int op, int ms)
{
	int64_t deadline = mono_ms() + ms;
	for (int step = 5;; step = step < 100 ? step * 2 : 200) {
		if (flock(fd, op | LOCK_NB) == 0)
			return 0;
		if (errno != EWOULDBLOCK && errno != EINTR)
			return -errno;
		int64_t left = deadline - mono_ms();
		if (left <= 0)
			return -ETIMEDOUT;
		usleep((useconds_t)(left < step ? left : step) * 1000);
	}
}

DIR *opendir_dup(int dfd)
{
	int fd = fcntl(dfd, F_DUPFD_CLOEXEC, 0);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d && fd >= 0) {
		int e = errno;
		close(fd);
		errno = e;
	}
	/* The copy shares dfd's offset, which an earlier walk left at the end. */
	if (d)
		rewinddir(d);
	return d;
}

char *file_slurp(const char *path, size_t max, size_t *len, struct stat *st, int *e)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	char *buf = NULL;
	*e = 0;
	if (fd < 0 || fstat(fd, st) < 0) {
		*e = errno;
		goto out;
	}
	if (!S_ISREG(st->st_mode)) {
		*e = EINVAL;
		goto out;
	}
	if ((uint64_t)st->st_size > max) {
		*e = EFBIG;
		goto out;
	}
	buf = malloc(max + 1);
	ssize_t n = buf ? read_full(fd, buf, max + 1) : -1;
	if (n < 0 || (size_t)n > max) {
		*e = n < 0 ? EIO : EFBIG;
		if (buf)
			explicit_bzero(buf, max + 1);
		free(buf);
		buf = NULL;
		goto out;
	}
	buf[n] = 0;
	*len = (size_t)n;
out:
	if (fd >= 0)
		close(fd);
	return buf;
}
