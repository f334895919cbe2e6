#include "backend/disk.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

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
