#include "backend/disk_open.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "backend/disk_qcow2.h"
#include "backend/disk_raw.h"
#include "errf.h"
#include "io.h"
#include "qcow2_create.h"

/* Whether the file at path starts with the qcow2 magic.  A file that
 * cannot be read here is left to the raw backend to report. */
static bool looks_qcow2(const char *path)
{
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC); /* a FIFO must not block */
	if (fd < 0)
		return false;
	uint8_t magic[4];
	int r = pread_all(fd, magic, sizeof(magic), 0);
	close(fd);
	return r == 0 && qcow2_be32(magic) == QCOW2_MAGIC;
}

int disk_open_format(const char *path, const char *format, bool read_only, struct disk **out,
                     char *err, size_t errlen)
{
	*out = NULL;
	if (!path || !*path)
		return errf(err, errlen, -EINVAL, "empty disk path");
	if (format && strcmp(format, "raw") && strcmp(format, "qcow2"))
		return errf(err, errlen, -EINVAL, "unknown disk format '%s'", format);
	/* A writable disk's bytes are the guest's: a qcow2 header it wrote
	 * could name any host file as backing.  Without format= it is raw,
	 * never probed (not even read).  Only a read-only one, whose content
	 * the guest cannot change, is looked at. */
	bool qcow2 = format ? !strcmp(format, "qcow2") : read_only && looks_qcow2(path);
	if (qcow2)
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
