/* The qcow2 header, its extensions and tables, checked (qcow2_hdr.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "errf.h"
#include "qcow2_hdr.h"

/* The feature bits of a version 3 header: what may not be ignored. */
static int check_features(const struct qcow2_hdr *h, bool read_only, const char *path, char *err,
                          size_t errlen)
{
	uint64_t unknown = h->incompat & ~QCOW2_INCOMPAT_KNOWN;
	if (unknown)
		return errf(err, errlen, -ENOTSUP, "%s: unknown qcow2 incompatible features 0x%llx",
		            path, (unsigned long long)unknown);
	if (h->incompat & QCOW2_INCOMPAT_CORRUPT)
		return errf(err, errlen, -EINVAL, "%s: qcow2 image is marked corrupt", path);
	if (h->incompat & QCOW2_INCOMPAT_DATA_FILE)
		return errf(err, errlen, -ENOTSUP,
		            "%s: qcow2 external data files are not supported", path);
	if (h->incompat & QCOW2_INCOMPAT_EXTL2)
		return errf(err, errlen, -ENOTSUP,
		            "%s: qcow2 extended L2 entries are not supported", path);
	if ((h->incompat & QCOW2_INCOMPAT_DIRTY) && !read_only)
		return errf(
		    err, errlen, -ENOTSUP,
		    "%s: qcow2 image is dirty (lazy refcounts); repair it with qemu-img check "
		    "-r all",
		    path);
	return 0;
}

int qcow2_hdr_fixed(const uint8_t *fixed, size_t flen, uint64_t file_size, bool read_only,
                    const char *path, struct qcow2_hdr *h, char *err, size_t errlen)
{
	memset(h, 0, sizeof(*h));
	if (flen < 4 || qcow2_be32(fixed) != QCOW2_MAGIC)
		return errf(err, errlen, -EINVAL, "%s: not a qcow2 image (bad magic)", path);
	if (flen < QCOW2_V2_HEADER_LEN)
		return errf(err, errlen, -EINVAL, "%s: truncated qcow2 header", path);
	h->version = qcow2_be32(fixed + QCOW2_H_VERSION);
	if (h->version != 2 && h->version != 3)
		return errf(err, errlen, -ENOTSUP, "%s: unsupported qcow2 version %u", path,
		            h->version);
	if (h->version == 3 && flen < QCOW2_V3_HEADER_LEN)
		return errf(err, errlen, -EINVAL, "%s: truncated qcow2 header", path);
	h->cluster_bits = qcow2_be32(fixed + QCOW2_H_CLUSTER_BITS);
	if (h->cluster_bits < QCOW2_MIN_CLUSTER_BITS || h->cluster_bits > QCOW2_MAX_CLUSTER_BITS)
		return errf(err, errlen, -ENOTSUP, "%s: cluster_bits %u outside %d..%d", path,
		            h->cluster_bits, QCOW2_MIN_CLUSTER_BITS, QCOW2_MAX_CLUSTER_BITS);
	h->cs = 1ULL << h->cluster_bits;
	if (qcow2_be32(fixed + QCOW2_H_CRYPT_METHOD))
		return errf(err, errlen, -ENOTSUP, "%s: encrypted qcow2 images are not supported",
		            path);
	if (qcow2_be32(fixed + QCOW2_H_NB_SNAPSHOTS))
		return errf(err, errlen, -ENOTSUP,
		            "%s: qcow2 images with internal snapshots are not supported", path);
	h->hlen = QCOW2_V2_HEADER_LEN;
	h->rc_order = 4;
	if (h->version == 3) {
		h->incompat = qcow2_be64(fixed + QCOW2_H_INCOMPAT);
		h->autoclear = qcow2_be64(fixed + QCOW2_H_AUTOCLEAR);
		h->rc_order = qcow2_be32(fixed + QCOW2_H_REFCOUNT_ORDER);
		h->hlen = qcow2_be32(fixed + QCOW2_H_HEADER_LENGTH);
		if (h->hlen < QCOW2_V3_HEADER_LEN || h->hlen > h->cs || h->hlen > file_size)
			return errf(err, errlen, -EINVAL, "%s: bad qcow2 header_length %u", path,
			            h->hlen);
	}
	int r = check_features(h, read_only, path, err, errlen);
	if (r)
		return r;
	if (h->rc_order > QCOW2_MAX_REFCOUNT_ORD)
		return errf(err, errlen, -EINVAL, "%s: bad qcow2 refcount_order %u", path,
		            h->rc_order);
	h->l2_bits = h->cluster_bits - 3;
	h->rb_bits = h->cluster_bits + 3 - h->rc_order;
	h->size = qcow2_be64(fixed + QCOW2_H_SIZE);
	h->l1_size = qcow2_be32(fixed + QCOW2_H_L1_SIZE);
	h->l1_off = qcow2_be64(fixed + QCOW2_H_L1_OFFSET);
	h->rt_off = qcow2_be64(fixed + QCOW2_H_RT_OFFSET);
	h->rt_bytes = (uint64_t)qcow2_be32(fixed + QCOW2_H_RT_CLUSTERS) << h->cluster_bits;
	h->backing_off = qcow2_be64(fixed + QCOW2_H_BACKING_OFFSET);
	h->backing_len = qcow2_be32(fixed + QCOW2_H_BACKING_SIZE);
	return 0;
}

int qcow2_hdr_extensions(const uint8_t *buf, size_t len, const char *path, struct qcow2_hdr *h,
                         char *err, size_t errlen)
{
	size_t p = h->hlen;
	while (p <= len && len - p >= 8) {
		uint32_t type = qcow2_be32(buf + p);
		uint32_t elen = qcow2_be32(buf + p + 4);
		p += 8;
		if (type == QCOW2_EXT_END)
			break;
		if (elen > len - p)
			return errf(err, errlen, -EINVAL, "%s: qcow2 header extension overruns",
			            path);
		if (type == QCOW2_EXT_BACKING_FORMAT) {
			if (elen == 0 || elen >= sizeof(h->backing_fmt))
				return errf(err, errlen, -ENOTSUP, "%s: unsupported backing format",
				            path);
			memcpy(h->backing_fmt, buf + p, elen);
			h->backing_fmt[elen] = 0;
		}
		size_t padded = ((size_t)elen + 7) & ~(size_t)7;
		if (padded > len - p)
			break;
		p += padded;
	}
	return 0;
}

int qcow2_hdr_tables(const struct qcow2_hdr *h, uint64_t end, const char *path, char *err,
                     size_t errlen)
{
	uint64_t per_l1 = 1ULL << (h->cluster_bits + h->l2_bits);
	uint64_t need = h->size / per_l1 + (h->size % per_l1 != 0);
	uint64_t l1_bytes = (uint64_t)h->l1_size * 8;
	if (l1_bytes > QCOW2_MAX_L1_BYTES)
		return errf(err, errlen, -EFBIG, "%s: qcow2 L1 table too large", path);
	if (need > h->l1_size)
		return errf(err, errlen, -EINVAL, "%s: qcow2 L1 table too small for the disk size",
		            path);
	if (!h->rt_bytes || h->rt_bytes > QCOW2_MAX_RT_BYTES)
		return errf(err, errlen, -EINVAL, "%s: bad qcow2 refcount table size", path);
	if (!h->rt_off || h->rt_off & (h->cs - 1) || h->rt_off > end ||
	    end - h->rt_off < h->rt_bytes)
		return errf(err, errlen, -EINVAL,
		            "%s: qcow2 refcount table outside the file or over the header", path);
	if (!l1_bytes)
		return 0;
	if (!h->l1_off || h->l1_off & (h->cs - 1) || h->l1_off > end || end - h->l1_off < l1_bytes)
		return errf(err, errlen, -EINVAL,
		            "%s: qcow2 L1 table outside the file or over the header", path);
	if (qcow2_overlaps(h->l1_off, l1_bytes, h->rt_off, h->rt_bytes))
		return errf(err, errlen, -EINVAL, "%s: qcow2 L1 table overlaps the refcount table",
		            path);
	return 0;
}

int qcow2_hdr_backing_name(const struct qcow2_hdr *h, const uint8_t *buf, size_t len,
                           const char *path, char name[QCOW2_MAX_BACKING_NAME + 1], char *err,
                           size_t errlen)
{
	if (!h->backing_len || h->backing_len > QCOW2_MAX_BACKING_NAME ||
	    h->backing_off < h->hlen || h->backing_off > len ||
	    len - h->backing_off < h->backing_len)
		return errf(err, errlen, -EINVAL, "%s: bad qcow2 backing file name", path);
	memcpy(name, buf + h->backing_off, h->backing_len);
	name[h->backing_len] = 0;
	if (strlen(name) != h->backing_len)
		return errf(err, errlen, -EINVAL, "%s: bad qcow2 backing file name", path);
	return 0;
}

int qcow2_l2_decode(uint64_t e, unsigned int version, uint64_t *host, const char **why)
{
	*host = e & QCOW2_OFFSET_MASK;
	*why = "bad L2 entry";
	if (e & QCOW2_COMPRESSED) {
		*why = "compressed clusters are not supported";
		return -EIO;
	}
	if (e & QCOW2_L2_RESERVED || (e & QCOW2_ZERO && version < 3))
		return -EIO;
	if (e & QCOW2_ZERO)
		return QCOW2_CL_ZERO;
	if (*host)
		return QCOW2_CL_DATA;
	if (e & QCOW2_COPIED)
		return -EIO;
	return QCOW2_CL_UNALLOC;
}

bool qcow2_overlaps(uint64_t a, uint64_t alen, uint64_t b, uint64_t blen)
{
	return a < b + blen && b < a + alen;
}

bool qcow2_hdr_cluster_ok(const struct qcow2_hdr *h, uint64_t end, uint64_t off)
{
	if (!off || off & (h->cs - 1) || off >= end || end - off < h->cs)
		return false;
	if (qcow2_overlaps(off, h->cs, h->l1_off, (uint64_t)h->l1_size * 8))
		return false;
	return !qcow2_overlaps(off, h->cs, h->rt_off, h->rt_bytes);
}

int qcow2_pread_full(int fd, void *buf, size_t len, uint64_t off)
{
	uint8_t *p = buf;
	while (len) {
		ssize_t r = pread(fd, p, len, (off_t)off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0) {
			memset(p, 0, len);
			return 0;
		}
		p += r;
		off += (uint64_t)r;
		len -= (size_t)r;
	}
	return 0;
}
