/* Disk backends: where a virtio-blk request lands.  A backend is an ops
 * table; the device only sees `struct disk` and the disk_* wrappers, which
 * check ranges and the read-only flag before any backend runs, so a
 * backend can trust offset + length <= size.  Two backends: raw files
 * (disk_raw.c) and qcow2 images with backing chains (disk_qcow2.c);
 * disk_open.h chooses between them.
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
	/* The most bytes the image file may grow to; 0: no cap.  A backend
	 * that allocates (qcow2) fails a write that would pass it with
	 * -ENOSPC; raw files never grow past their size and ignore it. */
	uint64_t max_file;
};

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
