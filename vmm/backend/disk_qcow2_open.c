/* Opening a qcow2 image: the header (checked field by field), its
 * extensions, the L1 and refcount tables, and the backing chain.  Every
 * byte comes from a file that may be hostile (a fuzz target opens it). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend/disk_qcow2_priv.h"
#include "backend/disk_raw.h"
#include "errf.h"
#include "qcow2_hdr.h"

/* What open needs from the header beyond the fields kept in struct qcow2. */
struct hdr {
	uint64_t file_size;
	uint8_t *buf; /* the first cluster, or as much of it as the file has */
	size_t len;
	struct qcow2_hdr f; /* the fields, checked (common/qcow2_hdr.c) */
};

static int open_chain(const char *path, int fd, bool read_only, unsigned int flags,
                      unsigned int depth, struct disk **out, char *err, size_t errlen);

/* The first read of an image: the whole first cluster of the usual size
 * (64 KiB), header and extensions in one call. */
#define FIRST_READ 65536u

/* Reads the first cluster and checks the fixed header fields. */
static int read_header(struct qcow2 *q, struct hdr *h, bool read_only, char *err, size_t errlen)
{
	size_t got = (size_t)min64(h->file_size, FIRST_READ);
	h->buf = malloc(got ? got : 1);
	if (!h->buf)
		return errf(err, errlen, -ENOMEM, "out of memory");
	int r = qcow2_io_full(q->fd, h->buf, got, 0, false);
	if (r)
		return errf(err, errlen, r, "%s: %s", q->path, strerror(-r));
	size_t flen = (size_t)min64(got, QCOW2_V3_HEADER_LEN);
	r = qcow2_hdr_fixed(h->buf, flen, h->file_size, read_only, q->path, &h->f, err, errlen);
	if (r)
		return r;
	q->version = h->f.version;
	q->cluster_bits = h->f.cluster_bits;
	q->cs = h->f.cs;
	q->rc_order = h->f.rc_order;
	q->l2_bits = h->f.l2_bits;
	q->rb_bits = h->f.rb_bits;
	q->d.size = h->f.size;
	q->l1_size = h->f.l1_size;
	q->l1_off = h->f.l1_off;
	q->rt_off = h->f.rt_off;
	q->rt_bytes = h->f.rt_bytes;

	h->len = (size_t)min64(q->cs, h->file_size);
	if (h->len <= got)
		return 0;
	/* A cluster larger than the first read: the rest of it. */
	uint8_t *b = realloc(h->buf, h->len);
	if (!b)
		return errf(err, errlen, -ENOMEM, "out of memory");
	h->buf = b;
	r = qcow2_io_full(q->fd, h->buf + got, h->len - got, got, false);
	return r ? errf(err, errlen, r, "%s: %s", q->path, strerror(-r)) : 0;
}

/* Checks the L1 and refcount table placement and loads them. */
static int load_tables(struct qcow2 *q, const struct hdr *h, char *err, size_t errlen)
{
	int r = qcow2_hdr_tables(&h->f, q->end, q->path, err, errlen);
	if (r)
		return r;
	uint64_t l1_bytes = (uint64_t)q->l1_size * 8;
	q->l1 = calloc(q->l1_size ? q->l1_size : 1, sizeof(*q->l1));
	if (!q->l1)
		return errf(err, errlen, -ENOMEM, "out of memory");
	r = qcow2_io_full(q->fd, q->l1, l1_bytes, q->l1_off, false);
	for (uint32_t i = 0; i < q->l1_size; i++)
		q->l1[i] = qcow2_be64((const uint8_t *)&q->l1[i]);
	/* A writable image's refcount table is read on its first allocation
	 * (disk_qcow2.c, reftable()): a fork that never writes its disk keeps
	 * neither its cluster of memory nor the read. */
	return r ? errf(err, errlen, r, "%s: %s", q->path, strerror(-r)) : 0;
}

static int open_backing(struct qcow2 *q, struct hdr *h, unsigned int depth, char *err,
                        size_t errlen)
{
	if (q->flags & QCOW2_OPEN_NO_BACKING)
		return errf(err, errlen, -EPERM, "%s: backing files are not allowed here", q->path);
	char name[QCOW2_MAX_BACKING_NAME + 1];
	int r = qcow2_hdr_backing_name(&h->f, h->buf, h->len, q->path, name, err, errlen);
	if (r)
		return r;
	char full[PATH_MAX];
	if (qcow2_backing_path(q->path, name, full, sizeof(full)) < 0)
		return errf(err, errlen, -ENAMETOOLONG, "%s: backing file name too long", q->path);
	if (depth + 1 > QCOW2_MAX_CHAIN)
		return errf(err, errlen, -ELOOP, "%s: backing chain longer than %d files", q->path,
		            QCOW2_MAX_CHAIN);
	/* Opened once, for the probe and the backend: O_NONBLOCK so that a
	 * FIFO cannot block the open, which is refused (as everything that is
	 * neither a file nor a block device) before anything is read. */
	int fd = open(full, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return errf(err, errlen, -errno, "backing file of %s: %s: %s", q->path, full,
		            strerror(errno));
	struct stat st;
	r = fstat(fd, &st) < 0 ? -errno : 0;
	if (r == 0 && !S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode))
		r = -EINVAL;
	if (r == 0 && S_ISBLK(st.st_mode) && fcntl(fd, F_SETFL, 0) < 0) /* blocking reads */
		r = -errno;
	if (r) {
		close(fd);
		return errf(err, errlen, r, "backing file of %s: %s: %s", q->path, full,
		            r == -EINVAL ? "not a regular file or block device" : strerror(-r));
	}
	bool is_qcow2;
	if (!strcmp(h->f.backing_fmt, "qcow2")) {
		is_qcow2 = true;
	} else if (!strcmp(h->f.backing_fmt, "raw")) {
		is_qcow2 = false;
	} else if (h->f.backing_fmt[0]) {
		close(fd);
		return errf(err, errlen, -ENOTSUP, "%s: unsupported backing format", q->path);
	} else {
		uint8_t magic[4];
		is_qcow2 = pread(fd, magic, sizeof(magic), 0) == (ssize_t)sizeof(magic) &&
		           qcow2_be32(magic) == QCOW2_MAGIC;
	}
	if (is_qcow2)
		return open_chain(full, fd, true, q->flags, depth + 1, &q->backing, err, errlen);
	r = disk_raw_open_fd(fd, true, &q->backing);
	if (r)
		return errf(err, errlen, r, "backing file %s: %s", full,
		            r == -EBUSY ? "in use by a writer" : strerror(-r));
	return 0;
}

/* Opens the qcow2 image at path (fd: already open for it, taken over;
 * -1: opened here). */
static int open_chain(const char *path, int fd, bool read_only, unsigned int flags,
                      unsigned int depth, struct disk **out, char *err, size_t errlen)
{
	*out = NULL;
	struct hdr h = { 0 };
	struct qcow2 *q = calloc(1, sizeof(*q));
	if (!q) {
		if (fd >= 0)
			close(fd);
		return errf(err, errlen, -ENOMEM, "out of memory");
	}
	q->fd = fd;
	q->flags = flags;
	q->quiet = flags & QCOW2_OPEN_QUIET;
	q->d.ops = &qcow2_ops;
	q->d.read_only = read_only;
	int r = (q->path = strdup(path)) ? 0 : errf(err, errlen, -ENOMEM, "out of memory");
	if (r)
		goto fail;
	if (q->fd < 0)
		q->fd = open(path, (read_only ? O_RDONLY : O_RDWR) | O_CLOEXEC);
	if (q->fd < 0) {
		r = errf(err, errlen, -errno, "%s: %s", path, strerror(errno));
		goto fail;
	}
	if (flock(q->fd, (read_only ? LOCK_SH : LOCK_EX) | LOCK_NB) < 0) {
		r = errno == EWOULDBLOCK ? -EBUSY : -errno;
		errf(err, errlen, r, "%s: %s", path,
		     r == -EBUSY ? "in use by another writer" : strerror(-r));
		goto fail;
	}
	struct stat st;
	if (fstat(q->fd, &st) < 0) {
		r = errf(err, errlen, -errno, "%s: %s", path, strerror(errno));
		goto fail;
	}
	if (S_ISREG(st.st_mode)) {
		h.file_size = (uint64_t)st.st_size;
	} else if (!S_ISBLK(st.st_mode) || ioctl(q->fd, BLKGETSIZE64, &h.file_size) < 0) {
		r = errf(err, errlen, -EINVAL, "%s: not a regular file or block device", path);
		goto fail;
	}
	r = read_header(q, &h, read_only, err, errlen);
	if (r)
		goto fail;
	if (h.file_size > QCOW2_MAX_HOST_OFFSET) {
		r = errf(err, errlen, -EFBIG, "%s: qcow2 image file too large", path);
		goto fail;
	}
	q->end = (h.file_size + q->cs - 1) & ~(q->cs - 1);
	r = qcow2_hdr_extensions(h.buf, h.len, path, &h.f, err, errlen);
	if (!r)
		r = load_tables(q, &h, err, errlen);
	if (!r && h.f.backing_off)
		r = open_backing(q, &h, depth, err, errlen);
	if (r)
		goto fail;
	/* A read-only image's L2 tables are read a page at a time (shared
	 * images: the memory is each VMM's); a writable one's are whole
	 * clusters, which its writes create and change. */
	qcow2_cache_init(&q->l2c, q->cs, read_only ? CACHE_PAGE : q->cs);
	qcow2_cache_init(&q->rbc, q->cs, q->cs);
	q->bounce = malloc(q->cs);
	if (!q->bounce || qcow2_reserve_iov(q, 1) < 0) {
		r = errf(err, errlen, -ENOMEM, "out of memory");
		goto fail;
	}
	if (!read_only && h.f.autoclear) {
		/* Autoclear features we do not maintain must be dropped before
		 * the first change (bitmaps would go stale). */
		uint8_t zero[8] = { 0 };
		r = qcow2_io_full(q->fd, zero, sizeof(zero), QCOW2_H_AUTOCLEAR, true);
		if (!r)
			r = qcow2_sync(q->fd);
		if (r) {
			errf(err, errlen, r, "%s: %s", path, strerror(-r));
			goto fail;
		}
	}
	snprintf(q->d.id, sizeof(q->d.id), "cove%llx-%llx", (unsigned long long)st.st_dev,
	         (unsigned long long)st.st_ino);
	free(h.buf);
	*out = &q->d;
	return 0;
fail:
	free(h.buf);
	qcow2_close(&q->d);
	return r;
}

int disk_qcow2_open_flags(const char *path, bool read_only, unsigned int flags, struct disk **out,
                          char *err, size_t errlen)
{
	return open_chain(path, -1, read_only, flags, 0, out, err, errlen);
}

int disk_qcow2_open(const char *path, bool read_only, struct disk **out, char *err, size_t errlen)
{
	return open_chain(path, -1, read_only, 0, 0, out, err, errlen);
}
