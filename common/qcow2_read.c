/* A read-only qcow2 backing chain (qcow2_read.h): every layer's header
 * and L1 table are loaded at open, L2 tables on use through a small
 * direct-mapped cache per layer. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/fs.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "errf.h"
#include "qcow2_hdr.h"
#include "qcow2_read.h"

#define L2_SLOTS 32

struct layer {
	int fd;
	char *path;
	bool qcow2;
	uint64_t size; /* guest size */
	uint64_t end;  /* qcow2: the file's cluster-aligned end */
	struct qcow2_hdr h;
	uint64_t *l1; /* host byte order */
	uint64_t slot_off[L2_SLOTS];
	uint8_t *slot[L2_SLOTS];
};

struct qcow2_chain {
	unsigned int n;
	struct layer l[QCOW2_MAX_CHAIN + 1];
	struct qcow2_read_stats st;
};

/* The format of the file below: what the extension names, else "". */
static int load_qcow2(struct layer *l, uint64_t file_size, char *next, char *next_fmt, char *err,
                      size_t errlen)
{
	uint8_t fixed[QCOW2_V3_HEADER_LEN];
	size_t flen = file_size < sizeof(fixed) ? (size_t)file_size : sizeof(fixed);
	int r = qcow2_pread_full(l->fd, fixed, flen, 0);
	if (r)
		return errf(err, errlen, r, "%s: %s", l->path, strerror(-r));
	r = qcow2_hdr_fixed(fixed, flen, file_size, true, l->path, &l->h, err, errlen);
	if (r)
		return r;
	if (file_size > QCOW2_MAX_HOST_OFFSET)
		return errf(err, errlen, -EFBIG, "%s: qcow2 image file too large", l->path);
	l->size = l->h.size;
	l->end = (file_size + l->h.cs - 1) & ~(l->h.cs - 1);
	size_t len = (size_t)(l->h.cs < file_size ? l->h.cs : file_size);
	uint8_t *buf = malloc(len ? len : 1);
	if (!buf)
		return errf(err, errlen, -ENOMEM, "out of memory");
	r = qcow2_pread_full(l->fd, buf, len, 0);
	if (r)
		r = errf(err, errlen, r, "%s: %s", l->path, strerror(-r));
	if (!r)
		r = qcow2_hdr_extensions(buf, len, l->path, &l->h, err, errlen);
	if (!r)
		r = qcow2_hdr_tables(&l->h, l->end, l->path, err, errlen);
	if (!r && l->h.backing_off)
		r = qcow2_hdr_backing_name(&l->h, buf, len, l->path, next, err, errlen);
	free(buf);
	if (r)
		return r;
	memcpy(next_fmt, l->h.backing_fmt, sizeof(l->h.backing_fmt));
	l->l1 = calloc(l->h.l1_size ? l->h.l1_size : 1, sizeof(*l->l1));
	if (!l->l1)
		return errf(err, errlen, -ENOMEM, "out of memory");
	r = qcow2_pread_full(l->fd, l->l1, (size_t)l->h.l1_size * 8, l->h.l1_off);
	if (r)
		return errf(err, errlen, r, "%s: %s", l->path, strerror(-r));
	for (uint32_t i = 0; i < l->h.l1_size; i++)
		l->l1[i] = qcow2_be64((const uint8_t *)&l->l1[i]);
	return 0;
}

/* Opens one layer; fmt is "qcow2", "raw" or "" (probe the magic).  On
 * success *next is the backing file's name ("" for none). */
static int open_layer(struct layer *l, const char *path, const char *fmt, char *next,
                      char *next_fmt, char *err, size_t errlen)
{
	next[0] = next_fmt[0] = 0;
	l->fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (l->fd < 0)
		return errf(err, errlen, -errno, "%s: %s", path, strerror(errno));
	/* The resolved path names the layer (callers find the base by it);
	 * a file with none (a memfd) keeps the name it was opened by. */
	char real[PATH_MAX];
	if (!(l->path = strdup(realpath(path, real) ? real : path)))
		return errf(err, errlen, -ENOMEM, "out of memory");
	struct stat st;
	uint64_t file_size = 0;
	if (fstat(l->fd, &st) < 0)
		return errf(err, errlen, -errno, "%s: %s", path, strerror(errno));
	if (S_ISREG(st.st_mode))
		file_size = (uint64_t)st.st_size;
	else if (!S_ISBLK(st.st_mode) || ioctl(l->fd, BLKGETSIZE64, &file_size) < 0)
		return errf(err, errlen, -EINVAL, "%s: not a regular file or block device", path);
	bool qcow2 = !strcmp(fmt, "qcow2");
	if (!fmt[0]) {
		uint8_t magic[4] = { 0 };
		int r = qcow2_pread_full(l->fd, magic, sizeof(magic), 0);
		if (r)
			return errf(err, errlen, r, "%s: %s", path, strerror(-r));
		qcow2 = file_size >= 4 && qcow2_be32(magic) == QCOW2_MAGIC;
	} else if (!qcow2 && strcmp(fmt, "raw")) {
		return errf(err, errlen, -ENOTSUP, "%s: unsupported backing format", path);
	}
	l->qcow2 = qcow2;
	if (!qcow2) {
		l->size = file_size;
		return 0;
	}
	return load_qcow2(l, file_size, next, next_fmt, err, errlen);
}

int qcow2_chain_open(const char *top, struct qcow2_chain **out, char *err, size_t errlen)
{
	*out = NULL;
	struct qcow2_chain *c = calloc(1, sizeof(*c));
	if (!c)
		return errf(err, errlen, -ENOMEM, "out of memory");
	char path[PATH_MAX], next[QCOW2_MAX_BACKING_NAME + 1], fmt[QCOW2_BACKING_FMT_MAX] = "";
	int r = 0;
	if (strlen(top) >= sizeof(path)) {
		r = errf(err, errlen, -ENAMETOOLONG, "image path too long");
		goto fail;
	}
	strcpy(path, top);
	for (;;) {
		if (c->n > QCOW2_MAX_CHAIN) {
			r = errf(err, errlen, -ELOOP, "%s: backing chain longer than %d files", top,
			         QCOW2_MAX_CHAIN);
			goto fail;
		}
		struct layer *l = &c->l[c->n++];
		char next_fmt[QCOW2_BACKING_FMT_MAX];
		r = open_layer(l, path, fmt, next, next_fmt, err, errlen);
		if (r || !next[0])
			break;
		char full[PATH_MAX];
		if (qcow2_backing_path(l->path, next, full, sizeof(full)) < 0) {
			r = errf(err, errlen, -ENAMETOOLONG, "%s: backing file name too long",
			         l->path);
			break;
		}
		strcpy(path, full);
		memcpy(fmt, next_fmt, sizeof(fmt));
	}
	if (!r) {
		*out = c;
		return 0;
	}
fail:
	qcow2_chain_close(c);
	return r;
}

void qcow2_chain_close(struct qcow2_chain *c)
{
	if (!c)
		return;
	for (unsigned int i = 0; i < c->n; i++) {
		struct layer *l = &c->l[i];
		if (l->fd >= 0)
			close(l->fd);
		free(l->path);
		free(l->l1);
		for (int s = 0; s < L2_SLOTS; s++)
			free(l->slot[s]);
	}
	free(c);
}

unsigned int qcow2_chain_layers(const struct qcow2_chain *c)
{
	return c->n;
}

const char *qcow2_chain_path(const struct qcow2_chain *c, unsigned int i)
{
	return i < c->n ? c->l[i].path : NULL;
}

uint64_t qcow2_chain_size(const struct qcow2_chain *c, unsigned int i)
{
	return i < c->n ? c->l[i].size : 0;
}

void qcow2_chain_stats(const struct qcow2_chain *c, struct qcow2_read_stats *st)
{
	*st = c->st;
}

static int bad(const struct layer *l, uint64_t guest, const char *what, char *err, size_t errlen)
{
	return errf(err, errlen, -EIO, "%s: %s (guest offset %llu)", l->path, what,
	            (unsigned long long)guest);
}

/* The L2 table at host offset off, through the layer's cache. */
static int l2_get(struct qcow2_chain *c, struct layer *l, uint64_t off, const uint8_t **out,
                  char *err, size_t errlen)
{
	unsigned int s = (unsigned int)((off >> l->h.cluster_bits) % L2_SLOTS);
	if (l->slot[s] && l->slot_off[s] == off) {
		*out = l->slot[s];
		return 0;
	}
	if (!l->slot[s] && !(l->slot[s] = malloc(l->h.cs)))
		return errf(err, errlen, -ENOMEM, "out of memory");
	l->slot_off[s] = 0;
	int r = qcow2_pread_full(l->fd, l->slot[s], l->h.cs, off);
	if (r)
		return errf(err, errlen, r, "%s: %s", l->path, strerror(-r));
	for (uint64_t i = 0; i < l->h.cs / 8; i++) {
		uint64_t *e = (uint64_t *)(l->slot[s] + 8 * i);
		*e = qcow2_be64((const uint8_t *)e);
	}
	l->slot_off[s] = off;
	c->st.l2_loads++;
	*out = l->slot[s];
	return 0;
}

/* The kind of layer l's guest cluster vc, and its host offset for data. */
static int lookup(struct qcow2_chain *c, struct layer *l, uint64_t vc, int *kind, uint64_t *host,
                  char *err, size_t errlen)
{
	uint64_t i = vc >> l->h.l2_bits, guest = vc << l->h.cluster_bits;
	*kind = QCOW2_CL_UNALLOC;
	*host = 0;
	if (i >= l->h.l1_size)
		return bad(l, guest, "L1 table too small", err, errlen);
	uint64_t e = l->l1[i], off = e & QCOW2_OFFSET_MASK;
	if (e & QCOW2_L1_RESERVED)
		return bad(l, guest, "bad L1 entry", err, errlen);
	if (!off)
		return 0;
	if (!qcow2_hdr_cluster_ok(&l->h, l->end, off))
		return bad(l, guest, "L1 entry points outside the image", err, errlen);
	const uint8_t *t = NULL;
	int r = l2_get(c, l, off, &t, err, errlen);
	if (r)
		return r;
	uint64_t entry;
	memcpy(&entry, t + 8 * (vc & ((1ULL << l->h.l2_bits) - 1)), sizeof(entry));
	const char *why;
	int k = qcow2_l2_decode(entry, l->h.version, host, &why);
	if (k < 0)
		return bad(l, guest, why, err, errlen);
	if (*host && !qcow2_hdr_cluster_ok(&l->h, l->end, *host))
		return bad(l, guest, "L2 entry points outside the image", err, errlen);
	*kind = k;
	return 0;
}

static int read_layer(struct qcow2_chain *c, unsigned int li, uint8_t *buf, size_t len,
                      uint64_t off, char *err, size_t errlen)
{
	struct layer *l = &c->l[li];
	if (off >= l->size) {
		memset(buf, 0, len);
		return 0;
	}
	if (len > l->size - off) {
		memset(buf + (l->size - off), 0, len - (size_t)(l->size - off));
		len = (size_t)(l->size - off);
	}
	if (!l->qcow2) {
		c->st.reads++;
		c->st.bytes_read += len;
		int r = qcow2_pread_full(l->fd, buf, len, off);
		return r ? errf(err, errlen, r, "%s: %s", l->path, strerror(-r)) : 0;
	}
	while (len) {
		uint64_t in = off & (l->h.cs - 1);
		size_t n = (size_t)(l->h.cs - in < len ? l->h.cs - in : len);
		int kind;
		uint64_t host;
		int r = lookup(c, l, off >> l->h.cluster_bits, &kind, &host, err, errlen);
		if (r)
			return r;
		if (kind == QCOW2_CL_DATA) {
			c->st.reads++;
			c->st.bytes_read += n;
			r = qcow2_pread_full(l->fd, buf, n, host + in);
			if (r)
				return errf(err, errlen, r, "%s: %s", l->path, strerror(-r));
		} else if (kind == QCOW2_CL_ZERO || li + 1 >= c->n) {
			memset(buf, 0, n);
		} else if ((r = read_layer(c, li + 1, buf, n, off, err, errlen))) {
			return r;
		}
		buf += n;
		off += n;
		len -= n;
	}
	return 0;
}

int qcow2_chain_read(struct qcow2_chain *c, unsigned int from, void *buf, size_t len, uint64_t off,
                     char *err, size_t errlen)
{
	if (from >= c->n)
		return errf(err, errlen, -EINVAL, "no layer %u in the chain", from);
	return read_layer(c, from, buf, len, off, err, errlen);
}

int qcow2_chain_allocated(struct qcow2_chain *c, unsigned int i,
                          int (*fn)(void *arg, uint64_t off, uint64_t len), void *arg, char *err,
                          size_t errlen)
{
	if (i >= c->n)
		return errf(err, errlen, -EINVAL, "no layer %u in the chain", i);
	struct layer *l = &c->l[i];
	if (!l->qcow2)
		return l->size ? fn(arg, 0, l->size) : 0;
	uint64_t run = 0, run_len = 0, clusters = (l->size + l->h.cs - 1) >> l->h.cluster_bits;
	for (uint64_t vc = 0; vc < clusters; vc++) {
		if (!(l->l1[vc >> l->h.l2_bits] & QCOW2_OFFSET_MASK) &&
		    !(l->l1[vc >> l->h.l2_bits] & QCOW2_L1_RESERVED)) {
			vc |= (1ULL << l->h.l2_bits) - 1; /* no L2 table: skip its span */
			continue;
		}
		int kind;
		uint64_t host;
		int r = lookup(c, l, vc, &kind, &host, err, errlen);
		if (r)
			return r;
		if (kind == QCOW2_CL_UNALLOC)
			continue;
		uint64_t at = vc << l->h.cluster_bits;
		uint64_t n = l->size - at < l->h.cs ? l->size - at : l->h.cs;
		if (run_len && run + run_len == at) {
			run_len += n;
			continue;
		}
		if (run_len && (r = fn(arg, run, run_len)))
			return r;
		run = at;
		run_len = n;
	}
	return run_len ? fn(arg, run, run_len) : 0;
}
