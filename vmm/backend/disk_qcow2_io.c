#include "backend/disk_qcow2_io.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* One stderr line per disk, the first time a request meets something this
 * backend refuses, so a guest I/O error can be traced to its cause. */
int qcow2_bad(struct qcow2 *q, int err, uint64_t guest_off, const char *what)
{
	if (!q->warned && !q->quiet) {
		q->warned = true;
		fprintf(stderr, "qcow2 %s: %s at guest offset %llu; failing the request\n", q->path,
		        what, (unsigned long long)guest_off);
	}
	return err;
}

/* Whether the image file may grow to `end` bytes: the host's cap
 * (disk.max_file) bounds how much host storage a guest's writes take.
 * Returns 0 or -ENOSPC (with one stderr line per disk). */
int qcow2_check_cap(struct qcow2 *q, uint64_t end)
{
	if (!q->d.max_file || end <= q->d.max_file)
		return 0;
	if (!q->cap_warned && !q->quiet) {
		q->cap_warned = true;
		fprintf(stderr,
		        "qcow2 %s: the image file reached its cap of %llu bytes; failing writes "
		        "that need more\n",
		        q->path, (unsigned long long)q->d.max_file);
	}
	return -ENOSPC;
}

/* ---- file I/O --------------------------------------------------------- */

/* All of buf at off; reads past the end of the file give zeros. */
int qcow2_io_full(int fd, void *buf, size_t len, uint64_t off, bool write)
{
	if (!write)
		return qcow2_pread_full(fd, buf, len, off);
	uint8_t *p = buf;
	while (len) {
		ssize_t r = pwrite(fd, p, len, (off_t)off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			return -EIO;
		p += r;
		off += (uint64_t)r;
		len -= (size_t)r;
	}
	return 0;
}

/* All of v[0..n) at off; v is scratch and is consumed.  Reads past the end
 * of the file give zeros. */
int qcow2_io_vec(int fd, uint64_t off, struct iovec *v, int n, bool write)
{
	int i = 0;
	while (i < n) {
		if (!v[i].iov_len) {
			i++;
			continue;
		}
		int cnt = n - i < IOV_WINDOW ? n - i : IOV_WINDOW;
		ssize_t r = write ? pwritev(fd, v + i, cnt, (off_t)off)
		                  : preadv(fd, v + i, cnt, (off_t)off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0) {
			if (write)
				return -EIO;
			for (; i < n; i++)
				memset(v[i].iov_base, 0, v[i].iov_len);
			return 0;
		}
		off += (uint64_t)r;
		size_t left = (size_t)r;
		while (left) {
			size_t t = v[i].iov_len < left ? v[i].iov_len : left;
			v[i].iov_base = (uint8_t *)v[i].iov_base + t;
			v[i].iov_len -= t;
			left -= t;
			if (!v[i].iov_len)
				i++;
		}
	}
	return 0;
}

int qcow2_sync(int fd)
{
	while (fdatasync(fd) < 0) {
		if (errno != EINTR)
			return -errno;
	}
	return 0;
}

/* ---- request iovecs --------------------------------------------------- */

int qcow2_reserve_iov(struct qcow2 *q, int n)
{
	if (n <= q->iov_cap)
		return 0;
	struct iovec *v = realloc(q->iov, (size_t)n * sizeof(*v));
	if (!v)
		return -ENOMEM;
	q->iov = v;
	q->iov_cap = n;
	return 0;
}

/* The next len bytes of c as q->iov[0..return); advances c. */
int qcow2_take(struct qcow2 *q, struct cursor *c, size_t len)
{
	int n = 0;
	while (len && c->idx < c->cnt) {
		const struct iovec *s = &c->iov[c->idx];
		size_t t = s->iov_len - c->skip < len ? s->iov_len - c->skip : len;
		if (t) {
			q->iov[n].iov_base = (uint8_t *)s->iov_base + c->skip;
			q->iov[n].iov_len = t;
			n++;
		}
		c->skip += t;
		len -= t;
		if (c->skip == s->iov_len) {
			c->idx++;
			c->skip = 0;
		}
	}
	return n;
}

void qcow2_iov_zero(const struct iovec *v, int n)
{
	for (int i = 0; i < n; i++)
		memset(v[i].iov_base, 0, v[i].iov_len);
}

void qcow2_iov_gather(uint8_t *dst, const struct iovec *v, int n)
{
	for (int i = 0; i < n; i++) {
		memcpy(dst, v[i].iov_base, v[i].iov_len);
		dst += v[i].iov_len;
	}
}

/* ---- table caches ----------------------------------------------------- */

void qcow2_cache_init(struct tcache *c, uint64_t cs, size_t unit)
{
	c->unit = unit < cs ? unit : (size_t)cs;
	if (c->unit < cs) {
		c->nslots = CACHE_SLOTS;
		return;
	}
	uint64_t n = CACHE_BYTES / cs;
	c->nslots = n < 2 ? 2 : n > CACHE_CLUSTERS ? CACHE_CLUSTERS : (unsigned int)n;
}

void qcow2_cache_free(struct tcache *c)
{
	for (unsigned int i = 0; i < CACHE_SLOTS; i++)
		free(c->slot[i].buf);
}

static void cache_forget(struct tcache *c, uint64_t uoff)
{
	for (unsigned int i = 0; i < c->nslots; i++) {
		if (c->slot[i].off == uoff)
			c->slot[i].off = 0;
	}
}

int qcow2_cache_get(struct qcow2 *q, struct tcache *c, uint64_t off, size_t at, bool fresh,
                    uint8_t **out)
{
	if (at >= q->cs || (fresh && c->unit != q->cs))
		return -EINVAL;
	uint64_t uoff = off + at / c->unit * c->unit;
	size_t in = at % c->unit;
	struct tslot *s = NULL;
	for (unsigned int i = 0; i < c->nslots; i++) {
		struct tslot *t = &c->slot[i];
		if (t->off == uoff) {
			t->stamp = ++c->clock;
			if (fresh)
				memset(t->buf, 0, c->unit);
			*out = t->buf + in;
			return 0;
		}
		/* The victim: an empty slot, else the least recently used. */
		if (!s || (s->off && (!t->off || t->stamp < s->stamp)))
			s = t;
	}
	s->off = 0;
	if (!s->buf && !(s->buf = malloc(c->unit)))
		return -ENOMEM;
	if (fresh) {
		memset(s->buf, 0, c->unit);
	} else {
		int r = qcow2_io_full(q->fd, s->buf, c->unit, uoff, false);
		if (r)
			return r;
	}
	s->off = uoff;
	s->stamp = ++c->clock;
	*out = s->buf + in;
	return 0;
}

int qcow2_cache_write(struct qcow2 *q, struct tcache *c, uint64_t off, const uint8_t *p, size_t at,
                      size_t len)
{
	int r = qcow2_io_full(q->fd, (void *)p, len, off + at, true);
	if (r)
		cache_forget(c, off + at / c->unit * c->unit);
	return r;
}

/* ---- validation of offsets found in tables ------------------------------ */

/* A cluster some table points to: aligned, past the header, inside the
 * file, and clear of the L1 and refcount tables. */
bool qcow2_cluster_ok(const struct qcow2 *q, uint64_t off)
{
	if (!off || off & (q->cs - 1) || off >= q->end || q->end - off < q->cs)
		return false;
	if (qcow2_overlaps(off, q->cs, q->l1_off, (uint64_t)q->l1_size * 8))
		return false;
	return !qcow2_overlaps(off, q->cs, q->rt_off, q->rt_bytes);
}
