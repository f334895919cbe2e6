/* Raw disk images: the file's bytes are the disk's bytes. */
#include "backend/disk_raw.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

/* iovecs handed to one preadv/pwritev; longer arrays go in several calls. */
#define RAW_IOV_WINDOW 64
/* Chunk for writing zeros where fallocate cannot. */
#define RAW_ZERO_CHUNK (64 * 1024)

struct disk_raw {
	struct disk d; /* first: the disk_ops get &d */
	int fd;
};

static struct disk_raw *to_raw(struct disk *d)
{
	return (struct disk_raw *)d;
}

/* Moves every byte of iov at `off`, retrying short transfers and EINTR. */
static int raw_xfer(int fd, uint64_t off, const struct iovec *iov, int iovcnt, bool write)
{
	struct iovec win[RAW_IOV_WINDOW];
	int idx = 0;
	size_t skip = 0; /* bytes of iov[idx] already done */

	while (idx < iovcnt) {
		if (skip == iov[idx].iov_len) {
			idx++;
			skip = 0;
			continue;
		}
		int n = 0;
		for (int i = idx; i < iovcnt && n < RAW_IOV_WINDOW; i++, n++) {
			size_t s = i == idx ? skip : 0;
			win[n].iov_base = (uint8_t *)iov[i].iov_base + s;
			win[n].iov_len = iov[i].iov_len - s;
		}
		ssize_t r =
		    write ? pwritev(fd, win, n, (off_t)off) : preadv(fd, win, n, (off_t)off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			return -EIO; /* the file shrank under us */
		off += (uint64_t)r;
		size_t left = (size_t)r;
		while (left) {
			size_t take = iov[idx].iov_len - skip;
			if (take > left)
				take = left;
			skip += take;
			left -= take;
			if (skip == iov[idx].iov_len) {
				idx++;
				skip = 0;
			}
		}
	}
	return 0;
}

static int raw_read(struct disk *d, uint64_t off, const struct iovec *iov, int iovcnt)
{
	return raw_xfer(to_raw(d)->fd, off, iov, iovcnt, false);
}

static int raw_write(struct disk *d, uint64_t off, const struct iovec *iov, int iovcnt)
{
	return raw_xfer(to_raw(d)->fd, off, iov, iovcnt, true);
}

static int raw_flush(struct disk *d)
{
	while (fdatasync(to_raw(d)->fd) < 0) {
		if (errno != EINTR)
			return -errno;
	}
	return 0;
}

static int raw_fallocate(int fd, int mode, uint64_t off, uint64_t len)
{
	while (fallocate(fd, mode, (off_t)off, (off_t)len) < 0) {
		if (errno != EINTR)
			return -errno;
	}
	return 0;
}

static bool unsupported(int err)
{
	return err == -EOPNOTSUPP || err == -ENOSYS || err == -ENODEV;
}

static int raw_discard(struct disk *d, uint64_t off, uint64_t len)
{
	int err =
	    raw_fallocate(to_raw(d)->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, off, len);
	/* Discard is a hint: a file system without holes just keeps the data. */
	return unsupported(err) ? 0 : err;
}

static int raw_write_zero_bytes(int fd, uint64_t off, uint64_t len)
{
	static const uint8_t zeros[RAW_ZERO_CHUNK];
	while (len) {
		size_t n = len < sizeof(zeros) ? (size_t)len : sizeof(zeros);
		struct iovec v = { .iov_base = (void *)zeros, .iov_len = n };
		int err = raw_xfer(fd, off, &v, 1, true);
		if (err)
			return err;
		off += n;
		len -= n;
	}
	return 0;
}

static int raw_write_zeroes(struct disk *d, uint64_t off, uint64_t len, bool may_unmap)
{
	int fd = to_raw(d)->fd;
	int err = -EOPNOTSUPP;
	/* A hole reads as zeros and frees the space, when that is allowed. */
	if (may_unmap)
		err = raw_fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, off, len);
	if (err)
		err = raw_fallocate(fd, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE, off, len);
	if (unsupported(err) || err == -EINVAL)
		err = raw_write_zero_bytes(fd, off, len);
	return err;
}

static void raw_close(struct disk *d)
{
	struct disk_raw *r = to_raw(d);
	if (r->fd >= 0)
		close(r->fd); /* drops the flock too */
	free(r);
}

static const struct disk_ops raw_ops = {
	.name = "raw",
	.read = raw_read,
	.write = raw_write,
	.flush = raw_flush,
	.discard = raw_discard,
	.write_zeroes = raw_write_zeroes,
	.close = raw_close,
};

static int raw_size(int fd, uint64_t *size)
{
	struct stat st;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (S_ISREG(st.st_mode)) {
		*size = (uint64_t)st.st_size;
		return 0;
	}
	if (S_ISBLK(st.st_mode))
		return ioctl(fd, BLKGETSIZE64, size) < 0 ? -errno : 0;
	return -EINVAL;
}

int disk_raw_open(const char *path, bool read_only, struct disk **out)
{
	*out = NULL;
	int fd = open(path, (read_only ? O_RDONLY : O_RDWR) | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	return disk_raw_open_fd(fd, read_only, out);
}

int disk_raw_open_fd(int fd, bool read_only, struct disk **out)
{
	*out = NULL;
	struct disk_raw *r = calloc(1, sizeof(*r));
	if (!r) {
		close(fd);
		return -ENOMEM;
	}
	r->fd = fd;
	int err = 0;
	if (flock(r->fd, (read_only ? LOCK_SH : LOCK_EX) | LOCK_NB) < 0) {
		err = errno == EWOULDBLOCK ? -EBUSY : -errno;
		goto fail;
	}
	err = raw_size(r->fd, &r->d.size);
	if (err)
		goto fail;
	struct stat st;
	if (fstat(r->fd, &st) < 0) {
		err = -errno;
		goto fail;
	}
	r->d.ops = &raw_ops;
	r->d.read_only = read_only;
	snprintf(r->d.id, sizeof(r->d.id), "cove%llx-%llx", (unsigned long long)st.st_dev,
	         (unsigned long long)st.st_ino);
	*out = &r->d;
	return 0;
fail:
	raw_close(&r->d);
	return err;
}
