/* Probing and creating qcow2 images (see qcow2_create.h).  A fresh image
 * is laid out in whole 64 KiB clusters:
 *
 *   cluster 0      header, backing-format extension, end marker, backing name
 *   cluster 1      refcount table (one entry: the block below)
 *   cluster 2      refcount block (16-bit counts; 1 for clusters 0 .. 3+L1)
 *   cluster 3..    L1 table, all zero: nothing is allocated yet */
#include "qcow2_create.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "errf.h"
#include "io.h"

#define CREATE_CLUSTER    (1ULL << QCOW2_CREATE_CLUSTER_BITS)
#define CREATE_L2_ENTRIES (CREATE_CLUSTER / 8)
#define SECTOR            512ULL

int qcow2_probe(const char *path, bool *is_qcow2, uint64_t *virtual_size, char *err, size_t errlen)
{
	/* O_NONBLOCK: a FIFO must not hang the probe; it is refused below. */
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return errf(err, errlen, -errno, "%s: %s", path, strerror(errno));
	uint8_t h[QCOW2_H_SIZE + 8];
	size_t got = 0;
	struct stat st;
	int r = fstat(fd, &st) < 0 ? -errno : 0;
	if (!r && !S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode))
		r = -EINVAL;
	if (!r) {
		ssize_t n = read_full(fd, h, sizeof(h));
		if (n < 0)
			r = (int)n;
		else
			got = (size_t)n;
	}
	if (r == -EINVAL) {
		errf(err, errlen, r, "%s: not a regular file or block device", path);
		goto out;
	}
	if (r < 0) {
		errf(err, errlen, r, "%s: %s", path, strerror(-r));
		goto out;
	}
	bool q = got >= 4 && qcow2_be32(h) == QCOW2_MAGIC;
	uint64_t size = 0;
	if (q) {
		if (got < sizeof(h)) {
			r = errf(err, errlen, -EINVAL, "%s: truncated qcow2 header", path);
			goto out;
		}
		uint32_t v = qcow2_be32(h + QCOW2_H_VERSION);
		if (v != 2 && v != 3) {
			r = errf(err, errlen, -ENOTSUP, "%s: unsupported qcow2 version %u", path,
			         v);
			goto out;
		}
		size = qcow2_be64(h + QCOW2_H_SIZE);
	} else if (S_ISREG(st.st_mode)) {
		size = (uint64_t)st.st_size;
	} else if (ioctl(fd, BLKGETSIZE64, &size) < 0) {
		r = errf(err, errlen, -errno, "%s: %s", path, strerror(errno));
		goto out;
	}
	if (is_qcow2)
		*is_qcow2 = q;
	if (virtual_size)
		*virtual_size = size;
out:
	close(fd);
	return r;
}

int qcow2_backing_path(const char *image, const char *name, char *out, size_t outlen)
{
	const char *slash = strrchr(image, '/');
	size_t dirlen = name[0] == '/' || !slash ? 0 : (size_t)(slash - image) + 1;
	size_t namelen = strlen(name);
	if (dirlen + namelen + 1 > outlen)
		return -ENAMETOOLONG;
	memcpy(out, image, dirlen);
	memcpy(out + dirlen, name, namelen + 1);
	return 0;
}

/* Fills the first cluster: header, extensions, backing name. */
/* path's backing file name into name (NUL-terminated, "" when none). */
static int backing_name(const char *path, char *name, size_t namelen, char *err, size_t errlen)
{
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return errf(err, errlen, -errno, "%s: %s", path, strerror(errno));
	uint8_t h[QCOW2_H_BACKING_SIZE + 4];
	int r = 0;
	name[0] = 0;
	if (read_full(fd, h, sizeof(h)) != (ssize_t)sizeof(h)) {
		r = errf(err, errlen, -EINVAL, "%s: truncated qcow2 header", path);
	} else {
		uint64_t off = qcow2_be64(h + QCOW2_H_BACKING_OFFSET);
		uint32_t len = qcow2_be32(h + QCOW2_H_BACKING_SIZE);
		if (off && (len == 0 || len >= namelen || len > 1023))
			r = errf(err, errlen, -EINVAL, "%s: backing file name of %u bytes", path,
			         len);
		else if (off && pread(fd, name, len, (off_t)off) != (ssize_t)len)
			r = errf(err, errlen, -EINVAL, "%s: backing file name past the end", path);
		else if (off)
			name[len] = 0;
		if (r == 0 && memchr(name, 0, off ? len : 0))
			r = errf(err, errlen, -EINVAL, "%s: NUL in the backing file name", path);
	}
	close(fd);
	return r;
}

int qcow2_chain_walk(const char *path, unsigned int max, int (*fn)(void *opaque, const char *file),
                     void *opaque, unsigned int *depth, char *err, size_t errlen)
{
	char cur[PATH_MAX], name[1024];
	if (snprintf(cur, sizeof(cur), "%s", path) >= (int)sizeof(cur))
		return errf(err, errlen, -ENAMETOOLONG, "%s: path too long", path);
	for (unsigned int n = 1; n <= max; n++) {
		bool q;
		int r = qcow2_probe(cur, &q, NULL, err, errlen);
		if (r < 0)
			return r;
		if (q && (r = backing_name(cur, name, sizeof(name), err, errlen)) < 0)
			return r;
		if (fn && (r = fn(opaque, cur)) < 0)
			return errf(err, errlen, r, "%s: %s", cur, strerror(-r));
		if (!q || !name[0]) {
			if (depth)
				*depth = n;
			return 0;
		}
		char next[PATH_MAX];
		if (qcow2_backing_path(cur, name, next, sizeof(next)) < 0)
			return errf(err, errlen, -ENAMETOOLONG, "%s: backing path too long", cur);
		memcpy(cur, next, sizeof(cur));
	}
	return errf(err, errlen, -ELOOP, "%s: more than %u images in the backing chain", path, max);
}

static void build_header(uint8_t *h, uint64_t size, uint32_t l1_size, uint64_t l1_off,
                         const char *backing, const char *format)
{
	qcow2_put32(h + QCOW2_H_MAGIC, QCOW2_MAGIC);
	qcow2_put32(h + QCOW2_H_VERSION, 3);
	qcow2_put32(h + QCOW2_H_CLUSTER_BITS, QCOW2_CREATE_CLUSTER_BITS);
	qcow2_put64(h + QCOW2_H_SIZE, size);
	qcow2_put32(h + QCOW2_H_L1_SIZE, l1_size);
	qcow2_put64(h + QCOW2_H_L1_OFFSET, l1_off);
	qcow2_put64(h + QCOW2_H_RT_OFFSET, CREATE_CLUSTER);
	qcow2_put32(h + QCOW2_H_RT_CLUSTERS, 1);
	qcow2_put32(h + QCOW2_H_REFCOUNT_ORDER, 4);
	qcow2_put32(h + QCOW2_H_HEADER_LENGTH, QCOW2_V3_HEADER_LEN);
	size_t p = QCOW2_V3_HEADER_LEN;
	if (backing) {
		size_t flen = strlen(format);
		qcow2_put32(h + p, QCOW2_EXT_BACKING_FORMAT);
		qcow2_put32(h + p + 4, (uint32_t)flen);
		memcpy(h + p + 8, format, flen);
		p += 8 + ((flen + 7) & ~(size_t)7);
	}
	p += 8; /* QCOW2_EXT_END: type and length 0, already zero */
	if (backing) {
		size_t blen = strlen(backing);
		qcow2_put64(h + QCOW2_H_BACKING_OFFSET, p);
		qcow2_put32(h + QCOW2_H_BACKING_SIZE, (uint32_t)blen);
		memcpy(h + p, backing, blen);
	}
}

int qcow2_create_overlay(const char *path, const char *backing, uint64_t size, char *err,
                         size_t errlen)
{
	return qcow2_create_overlay_format(path, backing, NULL, size, err, errlen);
}

int qcow2_create_overlay_format(const char *path, const char *backing, const char *backing_format,
                                uint64_t size, char *err, size_t errlen)
{
	const char *format = NULL;
	if (backing_format && strcmp(backing_format, "raw") && strcmp(backing_format, "qcow2"))
		return errf(err, errlen, -EINVAL, "unknown backing format '%s'", backing_format);
	if (backing) {
		if (!*backing || strlen(backing) > QCOW2_MAX_BACKING_NAME)
			return errf(err, errlen, -EINVAL, "backing file name must be 1 to %d bytes",
			            QCOW2_MAX_BACKING_NAME);
		char resolved[4096];
		if (qcow2_backing_path(path, backing, resolved, sizeof(resolved)) < 0)
			return errf(err, errlen, -ENAMETOOLONG, "backing file name too long");
		bool q;
		uint64_t vsize;
		int r = qcow2_probe(resolved, &q, &vsize, err, errlen);
		if (r < 0)
			return r;
		if (backing_format && !strcmp(backing_format, "raw") && q) {
			/* A raw file that starts with the magic: its size is its length. */
			struct stat st;
			if (stat(resolved, &st) < 0)
				return errf(err, errlen, -errno, "%s: %s", resolved,
				            strerror(errno));
			if (!S_ISREG(st.st_mode))
				return errf(err, errlen, -EINVAL, "%s: not a regular file",
				            resolved);
			vsize = (uint64_t)st.st_size;
			q = false;
		} else if (backing_format && !strcmp(backing_format, "qcow2") && !q) {
			return errf(err, errlen, -EINVAL, "%s: not a qcow2 image", resolved);
		}
		format = q ? "qcow2" : "raw";
		if (!size)
			size = vsize;
	} else if (!size) {
		return errf(err, errlen, -EINVAL, "an image without a backing file needs a size");
	}
	if (size > UINT64_MAX - SECTOR)
		return errf(err, errlen, -EFBIG, "virtual size %llu is too large",
		            (unsigned long long)size);
	size = (size + SECTOR - 1) & ~(SECTOR - 1);
	uint64_t per_l1 = CREATE_CLUSTER * CREATE_L2_ENTRIES;
	uint64_t l1_size = size / per_l1 + (size % per_l1 != 0);
	if (l1_size * 8 > QCOW2_MAX_L1_BYTES)
		return errf(err, errlen, -EFBIG, "virtual size %llu is too large",
		            (unsigned long long)size);
	uint64_t l1_clusters = (l1_size * 8 + CREATE_CLUSTER - 1) / CREATE_CLUSTER;
	if (!l1_clusters)
		l1_clusters = 1;
	uint64_t total = 3 + l1_clusters; /* clusters; far below one refcount block */

	uint8_t *buf = calloc(3, CREATE_CLUSTER);
	if (!buf)
		return errf(err, errlen, -ENOMEM, "out of memory");
	build_header(buf, size, (uint32_t)l1_size, 3 * CREATE_CLUSTER, backing, format);
	qcow2_put64(buf + CREATE_CLUSTER, 2 * CREATE_CLUSTER);
	for (uint64_t i = 0; i < total; i++)
		qcow2_put16(buf + 2 * CREATE_CLUSTER + 2 * i, 1);

	int r = 0;
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0) {
		r = errf(err, errlen, -errno, "cannot create %s: %s", path, strerror(errno));
		free(buf);
		return r;
	}
	r = pwrite_all(fd, buf, 3 * CREATE_CLUSTER, 0);
	if (!r && ftruncate(fd, (off_t)(total * CREATE_CLUSTER)) < 0)
		r = -errno;
	if (!r && fsync(fd) < 0)
		r = -errno;
	if (close(fd) < 0 && !r)
		r = -errno;
	free(buf);
	if (r < 0) {
		unlink(path);
		return errf(err, errlen, r, "cannot write %s: %s", path, strerror(-r));
	}
	return 0;
}

static uint64_t div_up(uint64_t a, uint64_t b)
{
	return a / b + (a % b != 0);
}

uint64_t qcow2_overlay_max_file(uint64_t size)
{
	/* Counted in 64 KiB clusters, for an image qcow2_create_overlay()
	 * made and the VMM's writer filled (docs/vmm.md, "Host-enforced
	 * limits in cove-vmm"): it allocates every guest cluster at most
	 * once, always at the end of the file, so the file ends after
	 *   the header, the refcount table, the first refcount block and the
	 *   L1 table (what creation wrote),
	 *   one data cluster per guest cluster,
	 *   one L2 table per 512 MiB of guest disk (8192 entries of 64 KiB),
	 *   one refcount block per 32768 clusters of file (16-bit counts),
	 *   and, past 16 TiB of file, refcount tables: grown by doubling, each
	 *   old one left behind, so at most twice the last one, plus the
	 *   refcount blocks that cover them. */
	if (size > UINT64_MAX / 2)
		return UINT64_MAX;
	size = (size + SECTOR - 1) & ~(SECTOR - 1);
	uint64_t data = div_up(size, CREATE_CLUSTER);
	uint64_t l2 = div_up(size, CREATE_CLUSTER * CREATE_L2_ENTRIES);
	uint64_t l1 = div_up(l2 * 8, CREATE_CLUSTER);
	uint64_t fixed = 3 + (l1 ? l1 : 1);
	uint64_t per_block = CREATE_CLUSTER * 8 / 16; /* 16-bit refcounts */
	uint64_t per_table = CREATE_CLUSTER / 8;      /* refcount blocks one cluster lists */
	uint64_t blocks = 1, tables = 0;
	for (int i = 0; i < 8; i++) { /* a fixed point, reached in two or three rounds */
		uint64_t total = fixed + data + l2 + blocks + tables;
		uint64_t b = div_up(total, per_block);
		uint64_t t = b > per_table ? 2 * div_up(b, per_table) : 0;
		if (b <= blocks && t <= tables)
			break;
		blocks = b > blocks ? b : blocks;
		tables = t > tables ? t : tables;
	}
	return (fixed + data + l2 + blocks + tables) * CREATE_CLUSTER;
}
