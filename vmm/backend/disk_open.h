/* The disk factory: which backend opens an image (the format given, or
 * probed from the file's first bytes), and the one-line errors of opening.
 * It stands above the backends (disk_raw.h, disk_qcow2.h), which do not
 * include it. */
#ifndef COVE_DISK_OPEN_H
#define COVE_DISK_OPEN_H

#include "backend/disk.h"

/* Opens the image at `path`: a qcow2 image when the file starts with the
 * qcow2 magic ("QFI\xfb"), else a raw disk.  O_CLOEXEC, O_RDONLY when
 * read_only, and a non-blocking flock (shared when read_only, exclusive
 * otherwise) so two VMs cannot write one image; a qcow2 image's backing
 * files are opened read-only with shared locks.  The id defaults to one
 * derived from the file's device and inode.  Returns 0 and *out, or
 * -ENOENT/-EACCES/... from open, -EBUSY when another writer (or, for a
 * writer, any user) holds the image, -EINVAL for something that is
 * neither a regular file nor a block device, or a qcow2 image that is
 * malformed, -ENOTSUP, -EFBIG or -ELOOP for qcow2 features, sizes or
 * backing chains this backend refuses.
 *
 * Only a read-only disk is probed: a writable one without a format is
 * raw, its bytes never read here, since a guest that wrote a qcow2 header
 * into it could otherwise name any host file as its backing file. */
int disk_open(const char *path, bool read_only, struct disk **out)
    __attribute__((warn_unused_result));

/* disk_open() that also formats a one-line reason into err. */
int disk_open_err(const char *path, bool read_only, struct disk **out, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* disk_open_err() with the format given: "raw", "qcow2", or NULL to
 * probe (read-only disks; a writable one is then raw).  -EINVAL for any
 * other name. */
int disk_open_format(const char *path, const char *format, bool read_only, struct disk **out,
                     char *err, size_t errlen) __attribute__((warn_unused_result));

#endif
