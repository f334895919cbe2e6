/* Disk backends: where a virtio-blk request lands.  A backend is an ops
 * table; the device only sees `struct disk` and the disk_* wrappers, which
 * check ranges and the read-only flag before any backend runs, so a
 * backend can trust offset + length <= size.  Two backends: raw files
 * (disk_raw.c) and qcow2 images with backing chains (disk_qcow2.c).
 *
 * Calls are synchronous and made from one thread at a time per disk. */
#ifndef COVE_DISK_H
#define COVE_DISK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#define DISK_ID_LEN 20 /* virtio-blk GET_ID answers exactly this many bytes */

struct disk;

struct disk_ops {
	const char *name;
	/* Transfer iov_total(iov) bytes at byte offset `off`; all of them or
	 * an error.  Return 0 or -errno. */
	int (*read)(struct disk *d, uint64_t off, const struct iovec *iov, int iovcnt);
	int (*write)(struct disk *d, uint64_t off, const struct iovec *iov, int iovcnt);
	/* Make completed writes durable. */
	int (*flush)(struct disk *d);
	/* Drop [off, off + len); later reads return zeros or old data. */
	int (*discard)(struct disk *d, uint64_t off, uint64_t len);
	/* [off, off + len) reads as zeros afterwards; `may_unmap` allows
	 * deallocating the blocks. */
	int (*write_zeroes)(struct disk *d, uint64_t off, uint64_t len, bool may_unmap);
	/* Frees backend resources and `d` itself. */
	void (*close)(struct disk *d);
};

struct disk {
	const struct disk_ops *ops;
	uint64_t size; /* bytes */
	bool read_only;
	char id[DISK_ID_LEN + 1]; /* serial for GET_ID, NUL-padded */
};

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
 * Format probing trusts the file's first bytes: a raw image whose first
 * sector a guest could write must not be probed again later (use
 * disk_open_format() with "raw"), or that guest could turn it into a
 * qcow2 image naming any host file as its backing file. */
int disk_open(const char *path, bool read_only, struct disk **out)
    __attribute__((warn_unused_result));

/* disk_open() that also formats a one-line reason into err. */
int disk_open_err(const char *path, bool read_only, struct disk **out, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* disk_open_err() with the format given: "raw", "qcow2", or NULL to
 * probe.  -EINVAL for any other name. */
int disk_open_format(const char *path, const char *format, bool read_only, struct disk **out,
                     char *err, size_t errlen) __attribute__((warn_unused_result));

/* The raw backend itself. */
int disk_raw_open(const char *path, bool read_only, struct disk **out)
    __attribute__((warn_unused_result));

/* The qcow2 backend itself (versions 2 and 3; docs/qcow2.md): the disk's
 * size is the header's, unallocated clusters read from the backing chain
 * (or as zeros), writes allocate clusters at the end of the file. */
int disk_qcow2_open(const char *path, bool read_only, struct disk **out, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* Closes a disk from disk_open(); NULL is fine. */
void disk_close(struct disk *d);

/* Replaces the GET_ID serial (truncated to DISK_ID_LEN bytes). */
void disk_set_id(struct disk *d, const char *id);

/* Total bytes an iovec array describes. */
uint64_t disk_iov_total(const struct iovec *iov, int iovcnt);

/* Range- and permission-checked entry points.  -EINVAL when the range
 * overflows or runs past the end of the disk, -EROFS for a change to a
 * read-only disk, otherwise the backend's result. */
int disk_read(struct disk *d, uint64_t off, const struct iovec *iov, int iovcnt)
    __attribute__((warn_unused_result));
int disk_write(struct disk *d, uint64_t off, const struct iovec *iov, int iovcnt)
    __attribute__((warn_unused_result));
int disk_flush(struct disk *d) __attribute__((warn_unused_result));
int disk_discard(struct disk *d, uint64_t off, uint64_t len) __attribute__((warn_unused_result));
int disk_write_zeroes(struct disk *d, uint64_t off, uint64_t len, bool may_unmap)
    __attribute__((warn_unused_result));

#endif
