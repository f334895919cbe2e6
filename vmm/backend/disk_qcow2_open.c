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
#include "qcow2_create.h"

/* What open needs from the header beyond the fields kept in struct qcow2. */
struct hdr {
	uint64_t file_size;
	uint8_t *buf; /* the first cluster, or as much of it as the file has */
	size_t len;
	uint32_t hlen;
	uint64_t incompat;
	uint64_t autoclear;
	uint64_t backing_off;
	uint32_t backing_len;
	char backing_fmt[BACKING_FMT_MAX];
};

static int open_chain(const char *path, bool read_only, unsigned int flags, unsigned int depth,
                      struct disk **out, char *err, size_t errlen);

/* Reads the first cluster and checks the fixed header fields. */
static int read_header(struct qcow2 *q, struct hdr *h, bool read_only, char *err, size_t errlen)
{
	uint8_t fixed[QCOW2_V3_HEADER_LEN] = { 0 };
	size_t flen = (size_t)min64(h->file_size, sizeof(fixed));
	int r = qcow2_io_full(q->fd, fixed, flen, 0, false);
	if (r)
		return errf(err, errlen, r, "%s: %s", q->path, strerror(-r));
	if (flen < 4 || qcow2_be32(fixed) != QCOW2_MAGIC)
		return errf(err, errlen, -EINVAL, "%s: not a qcow2 image (bad magic)", q->path);
	if (flen < QCOW2_V2_HEADER_LEN)
		return errf(err, errlen, -EINVAL, "%s: truncated qcow2 header", q->path);
	q->version = qcow2_be32(fixed + QCOW2_H_VERSION);
	if (q->version != 2 && q->version != 3)
		return errf(err, errlen, -ENOTSUP, "%s: unsupported qcow2 version %u", q->path,
		            q->version);
	if (q->version == 3 && flen < QCOW2_V3_HEADER_LEN)
		return errf(err, errlen, -EINVAL, "%s: truncated qcow2 header", q->path);
	q->cluster_bits = qcow2_be32(fixed + QCOW2_H_CLUSTER_BITS);
	if (q->cluster_bits < QCOW2_MIN_CLUSTER_BITS || q->cluster_bits > QCOW2_MAX_CLUSTER_BITS)
		return errf(err, errlen, -ENOTSUP, "%s: cluster_bits %u outside %d..%d", q->path,
		            q->cluster_bits, QCOW2_MIN_CLUSTER_BITS, QCOW2_MAX_CLUSTER_BITS);
	q->cs = 1ULL << q->cluster_bits;
	if (qcow2_be32(fixed + QCOW2_H_CRYPT_METHOD))
		return errf(err, errlen, -ENOTSUP, "%s: encrypted qcow2 images are not supported",
		            q->path);
	if (qcow2_be32(fixed + QCOW2_H_NB_SNAPSHOTS))
		return errf(err, errlen, -ENOTSUP,
		            "%s: qcow2 images with internal snapshots are not supported", q->path);
	h->hlen = QCOW2_V2_HEADER_LEN;
	q->rc_order = 4;
	if (q->version == 3) {
		h->incompat = qcow2_be64(fixed + QCOW2_H_INCOMPAT);
		h->autoclear = qcow2_be64(fixed + QCOW2_H_AUTOCLEAR);
		q->rc_order = qcow2_be32(fixed + QCOW2_H_REFCOUNT_ORDER);
		h->hlen = qcow2_be32(fixed + QCOW2_H_HEADER_LENGTH);
		if (h->hlen < QCOW2_V3_HEADER_LEN || h->hlen > q->cs || h->hlen > h->file_size)
			return errf(err, errlen, -EINVAL, "%s: bad qcow2 header_length %u", q->path,
			            h->hlen);
	}
	uint64_t unknown = h->incompat & ~QCOW2_INCOMPAT_KNOWN;
	if (unknown)
		return errf(err, errlen, -ENOTSUP, "%s: unknown qcow2 incompatible features 0x%llx",
		            q->path, (unsigned long long)unknown);
	if (h->incompat & QCOW2_INCOMPAT_CORRUPT)
		return errf(err, errlen, -EINVAL, "%s: qcow2 image is marked corrupt", q->path);
	if (h->incompat & QCOW2_INCOMPAT_DATA_FILE)
		return errf(err, errlen, -ENOTSUP,
		            "%s: qcow2 external data files are not supported", q->path);
	if (h->incompat & QCOW2_INCOMPAT_EXTL2)
		return errf(err, errlen, -ENOTSUP,
		            "%s: qcow2 extended L2 entries are not supported", q->path);
	if ((h->incompat & QCOW2_INCOMPAT_DIRTY) && !read_only)
		return errf(
		    err, errlen, -ENOTSUP,
		    "%s: qcow2 image is dirty (lazy refcounts); repair it with qemu-img check "
		    "-r all",
		    q->path);
	if (q->rc_order > QCOW2_MAX_REFCOUNT_ORD)
		return errf(err, errlen, -EINVAL, "%s: bad qcow2 refcount_order %u", q->path,
		            q->rc_order);
	q->l2_bits = q->cluster_bits - 3;
	q->rb_bits = q->cluster_bits + 3 - q->rc_order;
	q->d.size = qcow2_be64(fixed + QCOW2_H_SIZE);
	q->l1_size = qcow2_be32(fixed + QCOW2_H_L1_SIZE);
	q->l1_off = qcow2_be64(fixed + QCOW2_H_L1_OFFSET);
	q->rt_off = qcow2_be64(fixed + QCOW2_H_RT_OFFSET);
	q->rt_bytes = (uint64_t)qcow2_be32(fixed + QCOW2_H_RT_CLUSTERS) << q->cluster_bits;
	h->backing_off = qcow2_be64(fixed + QCOW2_H_BACKING_OFFSET);
	h->backing_len = qcow2_be32(fixed + QCOW2_H_BACKING_SIZE);

	h->len = (size_t)min64(q->cs, h->file_size);
	h->buf = malloc(h->len);
	if (!h->buf)
		return errf(err, errlen, -ENOMEM, "out of memory");
	r = qcow2_io_full(q->fd, h->buf, h->len, 0, false);
	return r ? errf(err, errlen, r, "%s: %s", q->path, strerror(-r)) : 0;
}

/* Header extensions: only the backing format matters here. */
static int read_extensions(struct qcow2 *q, struct hdr *h, char *err, size_t errlen)
{
	size_t p = h->hlen;
	while (h->len - p >= 8) {
		uint32_t type = qcow2_be32(h->buf + p);
		uint32_t len = qcow2_be32(h->buf + p + 4);
		p += 8;
		if (type == QCOW2_EXT_END)
			break;
		if (len > h->len - p)
			return errf(err, errlen, -EINVAL, "%s: qcow2 header extension overruns",
			            q->path);
		if (type == QCOW2_EXT_BACKING_FORMAT) {
			if (len == 0 || len >= sizeof(h->backing_fmt))
				return errf(err, errlen, -ENOTSUP, "%s: unsupported backing format",
				            q->path);
			memcpy(h->backing_fmt, h->buf + p, len);
			h->backing_fmt[len] = 0;
		}
		size_t padded = ((size_t)len + 7) & ~(size_t)7;
		if (padded > h->len - p)
			break;
		p += padded;
	}
	return 0;
}

/* Checks the L1 and refcount table placement and loads them. */
static int load_tables(struct qcow2 *q, bool read_only, char *err, size_t errlen)
{
	uint64_t per_l1 = 1ULL << (q->cluster_bits + q->l2_bits);
	uint64_t need = q->d.size / per_l1 + (q->d.size % per_l1 != 0);
	uint64_t l1_bytes = (uint64_t)q->l1_size * 8;
	if (l1_bytes > QCOW2_MAX_L1_BYTES)
		return errf(err, errlen, -EFBIG, "%s: qcow2 L1 table too large", q->path);
	if (need > q->l1_size)
		return errf(err, errlen, -EINVAL, "%s: qcow2 L1 table too small for the disk size",
		            q->path);
	if (!q->rt_bytes || q->rt_bytes > QCOW2_MAX_RT_BYTES)
		return errf(err, errlen, -EINVAL, "%s: bad qcow2 refcount table size", q->path);
	if (!q->rt_off || q->rt_off & (q->cs - 1) || q->rt_off > q->end ||
	    q->end - q->rt_off < q->rt_bytes)
		return errf(err, errlen, -EINVAL,
		            "%s: qcow2 refcount table outside the file or over the header",
		            q->path);
	if (l1_bytes) {
		if (!q->l1_off || q->l1_off & (q->cs - 1) || q->l1_off > q->end ||
		    q->end - q->l1_off < l1_bytes)
			return errf(err, errlen, -EINVAL,
			            "%s: qcow2 L1 table outside the file or over the header",
			            q->path);
		if (qcow2_overlaps(q->l1_off, l1_bytes, q->rt_off, q->rt_bytes))
			return errf(err, errlen, -EINVAL,
			            "%s: qcow2 L1 table overlaps the refcount table", q->path);
	}
	q->l1 = calloc(q->l1_size ? q->l1_size : 1, sizeof(*q->l1));
	if (!q->l1)
		return errf(err, errlen, -ENOMEM, "out of memory");
	int r = qcow2_io_full(q->fd, q->l1, l1_bytes, q->l1_off, false);
	for (uint32_t i = 0; i < q->l1_size; i++)
		q->l1[i] = qcow2_be64((const uint8_t *)&q->l1[i]);
	if (!r && !read_only) {
		q->rt_entries = q->rt_bytes / 8;
		q->rt = malloc(q->rt_bytes);
		r = q->rt ? qcow2_io_full(q->fd, q->rt, q->rt_bytes, q->rt_off, false) : -ENOMEM;
		for (uint64_t i = 0; !r && i < q->rt_entries; i++)
			q->rt[i] = qcow2_be64((const uint8_t *)&q->rt[i]);
	}
	return r ? errf(err, errlen, r, "%s: %s", q->path, strerror(-r)) : 0;
}

static int open_backing(struct qcow2 *q, struct hdr *h, unsigned int depth, char *err,
                        size_t errlen)
{
	if (q->flags & QCOW2_OPEN_NO_BACKING)
		return errf(err, errlen, -EPERM, "%s: backing files are not allowed here", q->path);
	if (!h->backing_len || h->backing_len > QCOW2_MAX_BACKING_NAME ||
	    h->backing_off < h->hlen || h->backing_off > h->len ||
	    h->len - h->backing_off < h->backing_len)
		return errf(err, errlen, -EINVAL, "%s: bad qcow2 backing file name", q->path);
	char name[QCOW2_MAX_BACKING_NAME + 1];
	memcpy(name, h->buf + h->backing_off, h->backing_len);
	name[h->backing_len] = 0;
	if (strlen(name) != h->backing_len)
		return errf(err, errlen, -EINVAL, "%s: bad qcow2 backing file name", q->path);
	char full[PATH_MAX];
	if (qcow2_backing_path(q->path, name, full, sizeof(full)) < 0)
		return errf(err, errlen, -ENAMETOOLONG, "%s: backing file name too long", q->path);
	if (depth + 1 > QCOW2_MAX_CHAIN)
		return errf(err, errlen, -ELOOP, "%s: backing chain longer than %d files", q->path,
		            QCOW2_MAX_CHAIN);
	/* Probed even when the format is named: the probe also refuses what
	 * is neither a file nor a block device (a FIFO would block open). */
	bool is_qcow2;
	char msg[256];
	int r = qcow2_probe(full, &is_qcow2, NULL, msg, sizeof(msg));
	if (r)
		return errf(err, errlen, r, "backing file of %s: %s", q->path, msg);
	if (!strcmp(h->backing_fmt, "qcow2"))
		is_qcow2 = true;
	else if (!strcmp(h->backing_fmt, "raw"))
		is_qcow2 = false;
	else if (h->backing_fmt[0])
		return errf(err, errlen, -ENOTSUP, "%s: unsupported backing format", q->path);
	if (is_qcow2)
		return open_chain(full, true, q->flags, depth + 1, &q->backing, err, errlen);
	r = disk_raw_open(full, true, &q->backing);
	if (r)
		return errf(err, errlen, r, "backing file %s: %s", full,
		            r == -EBUSY ? "in use by a writer" : strerror(-r));
	return 0;
}

static int open_chain(const char *path, bool read_only, unsigned int flags, unsigned int depth,
                      struct disk **out, char *err, size_t errlen)
{
	*out = NULL;
	struct hdr h = { 0 };
	struct qcow2 *q = calloc(1, sizeof(*q));
	if (!q)
		return errf(err, errlen, -ENOMEM, "out of memory");
	q->fd = -1;
	q->flags = flags;
	q->quiet = flags & QCOW2_OPEN_QUIET;
	q->d.ops = &qcow2_ops;
	q->d.read_only = read_only;
	int r = (q->path = strdup(path)) ? 0 : errf(err, errlen, -ENOMEM, "out of memory");
	if (r)
		goto fail;
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
	r = read_extensions(q, &h, err, errlen);
	if (!r)
		r = load_tables(q, read_only, err, errlen);
	if (!r && h.backing_off)
		r = open_backing(q, &h, depth, err, errlen);
	if (r)
		goto fail;
	qcow2_cache_init(&q->l2c, q->cs);
	qcow2_cache_init(&q->rbc, q->cs);
	q->bounce = malloc(q->cs);
	if (!q->bounce || qcow2_reserve_iov(q, 1) < 0) {
		r = errf(err, errlen, -ENOMEM, "out of memory");
		goto fail;
	}
	if (!read_only && h.autoclear) {
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
	return open_chain(path, read_only, flags, 0, out, err, errlen);
}

int disk_qcow2_open(const char *path, bool read_only, struct disk **out, char *err, size_t errlen)
{
	return open_chain(path, read_only, 0, 0, out, err, errlen);
}
