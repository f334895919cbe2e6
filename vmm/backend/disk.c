#include "backend/disk.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "errf.h"
#include "qcow2_create.h"

/* Whether the file at path starts with the qcow2 magic.  A file that
 * cannot be read here is left to the raw backend to report. */
static bool looks_qcow2(const char *path)
{
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC); /* a FIFO must not block */
	if (fd < 0)
		return false;
	uint8_t magic[4];
	ssize_t n;
	do {
		n = pread(fd, magic, sizeof(magic), 0);
	} while (n < 0 && errno == EINTR);
	close(fd);
	return n == (ssize_t)sizeof(magic) && qcow2_be32(magic) == QCOW2_MAGIC;
}

int disk_open_format(const char *path, const char *format, bool read_only, struct disk **out,
                     char *err, size_t errlen)
{
	*out = NULL;
	if (!path || !*path)
		return errf(err, errlen, -EINVAL, "empty disk path");
	if (format && strcmp(format, "raw") && strcmp(format, "qcow2"))
		return errf(err, errlen, -EINVAL, "unknown disk format '%s'", format);
	if (format ? !strcmp(format, "qcow2") : looks_qcow2(path))
		return disk_qcow2_open(path, read_only, out, err, errlen);
	int r = disk_raw_open(path, read_only, out);
	if (r < 0)
		errf(err, errlen, r, "%s: %s", path,
		     r == -EBUSY    ? "in use by another writer"
		     : r == -EINVAL ? "not a regular file or block device"
		                    : strerror(-r));
	return r;
}

int disk_open_err(const char *path, bool read_only, struct disk **out, char *err, size_t errlen)
{
	return disk_open_format(path, NULL, read_only, out, err, errlen);
}

int disk_open(const char *path, bool read_only, struct disk **out)
{
	return disk_open_format(path, NULL, read_only, out, NULL, 0);
}

void disk_close(struct disk *d)
{
	if (d)
		d->ops->close(d);
}

void disk_set_id(struct disk *d, const char *id)
{
	memset(d->id, 0, sizeof(d->id));
	strncpy(d->id, id, DISK_ID_LEN);
}

uint64_t disk_iov_total(const struct iovec *iov, int iovcnt)
{
	uint64_t total = 0;
	for (int i = 0; i < iovcnt; i++)
		total += iov[i].iov_len;
	return total;
}

static bool in_range(const struct disk *d, uint64_t off, uint64_t len)
{
	return off <= d->size && len <= d->size - off;
}

int disk_read(struct disk *d, uint64_t off, const struct iovec *iov, int iovcnt)
{
	if (iovcnt < 0 || !in_range(d, off, disk_iov_total(iov, iovcnt)))
		return -EINVAL;
	return d->ops->read(d, off, iov, iovcnt);
}

int disk_write(struct disk *d, uint64_t off, const struct iovec *iov, int iovcnt)
{
	if (d->read_only)
		return -EROFS;
	if (iovcnt < 0 || !in_range(d, off, disk_iov_total(iov, iovcnt)))
		return -EINVAL;
	return d->ops->write(d, off, iov, iovcnt);
}

int disk_flush(struct disk *d)
{
	/* Nothing to make durable on a read-only disk. */
	return d->read_only ? 0 : d->ops->flush(d);
}

int disk_discard(struct disk *d, uint64_t off, uint64_t len)
{
	if (d->read_only)
		return -EROFS;
	if (!in_range(d, off, len))
		return -EINVAL;
	return len ? d->ops->discard(d, off, len) : 0;
}

int disk_write_zeroes(struct disk *d, uint64_t off, uint64_t len, bool may_unmap)
{
	if (d->read_only)
		return -EROFS;
	if (!in_range(d, off, len))
		return -EINVAL;
	return len ? d->ops->write_zeroes(d, off, len, may_unmap) : 0;
}
