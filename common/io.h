/* Whole-buffer I/O on blocking fds, shared by every Cove binary. */
#ifndef COVE_IO_H
#define COVE_IO_H

#include <stddef.h>

/* Writes all len bytes (retrying short writes and EINTR); 0 or -errno
 * (-EIO when write returns 0). */
int write_all(int fd, const void *buf, size_t len) __attribute__((warn_unused_result));

#endif
