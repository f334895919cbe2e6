/* The raw disk backend: a regular file or block device, read and written
 * in place. */
#ifndef COVE_DISK_RAW_H
#define COVE_DISK_RAW_H

#include "backend/disk.h"

/* Opens path as a raw disk: O_CLOEXEC, O_RDONLY when read_only, and a
 * non-blocking flock (shared when read_only, exclusive otherwise).
 * Returns 0 and *out, or -errno (-EBUSY: another writer holds it, -EINVAL:
 * neither a regular file nor a block device). */
int disk_raw_open(const char *path, bool read_only, struct disk **out)
    __attribute__((warn_unused_result));

/* The same for a file already open (for reading when read_only), whose
 * fd it takes over (closed on failure too). */
int disk_raw_open_fd(int fd, bool read_only, struct disk **out) __attribute__((warn_unused_result));

#endif
