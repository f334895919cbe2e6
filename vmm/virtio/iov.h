/* Helpers over the host iovecs a virtqueue request is made of.  Devices
 * never assume how the driver split a request into descriptors (2.6.4), so
 * headers are gathered and trailers found with these. */
#ifndef COVE_VIRTIO_IOV_H
#define COVE_VIRTIO_IOV_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

/* Copies up to len bytes starting `skip` bytes into iov out to buf.
 * Returns the bytes copied (less than len when iov runs out). */
size_t iov_to_buf(const struct iovec *iov, uint32_t n, uint64_t skip, void *buf, size_t len);

/* Copies up to len bytes from buf into iov.  Returns the bytes copied. */
size_t iov_from_buf(const struct iovec *iov, uint32_t n, const void *buf, size_t len);

/* Drops `bytes` from the front of the array in place: *iov and *n advance
 * past whole segments, a partial one is shortened.  Returns the bytes
 * actually dropped (less when the array is shorter). */
uint64_t iov_drop_front(struct iovec **iov, uint32_t *n, uint64_t bytes);

/* Removes the last byte of the array in place (trailing empty segments are
 * dropped too) and returns a pointer to it, or NULL when there is none. */
uint8_t *iov_pop_last_byte(struct iovec *iov, uint32_t *n);

#endif
