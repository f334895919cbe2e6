/* qcow2 images (versions 2 and 3) with backing chains.  docs/qcow2.md
 * lists what is supported and refused; the format is QEMU's
 * docs/interop/qcow2.txt.
 *
 * Every byte of the file is untrusted: header fields are checked once at
 * open, table entries each time they are used, and a request that meets
 * bad metadata fails with -EIO instead of touching anything.
 *
 * Writes are write-through and ordered so that a process killed at any
 * point leaves a consistent image (at worst with leaked clusters):
 * data cluster, then its refcount, then the L2 entry, then (for a new L2
 * table) the L1 entry.  New clusters are only ever taken at the end of
 * the file, so nothing still referenced can be handed out twice. */
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/disk_qcow2_priv.h"
#include "qcow2_hdr.h"

/* ---- L1 and L2 -------------------------------------------------------- */

static uint64_t l2_index(const struct qcow2 *q, uint64_t vc)
{
	return vc & ((1ULL << q->l2_bits) - 1);
}

/* The L2 entry of guest cluster vc, in the cache (8 bytes at *table),
 * and its table's offset; *table is NULL when there is no table. */
static int l2_table(struct qcow2 *q, uint64_t vc, uint8_t **table, uint64_t *table_off)
{
	uint64_t i = vc >> q->l2_bits;
	*table = NULL;
	*table_off = 0;
	if (i >= q->l1_size)
		return -EIO; /* load_tables() made L1 cover the disk */
	uint64_t e = q->l1[i];
	uint64_t off = e & QCOW2_OFFSET_MASK;
	if (e & QCOW2_L1_RESERVED)
		return qcow2_bad(q, -EIO, vc << q->cluster_bits, "bad L1 entry");
	if (!off)
		return 0;
	if (!qcow2_cluster_ok(q, off))
		return qcow2_bad(q, -EIO, vc << q->cluster_bits,
		                 "L1 entry points outside the image");
	*table_off = off;
	return qcow2_cache_get(q, &q->l2c, off, 8 * (size_t)l2_index(q, vc), false, table);
}

/* Looks up and decodes the L2 entry of guest cluster vc. */
static int l2_lookup(struct qcow2 *q, uint64_t vc, uint64_t *entry, enum cl_kind *kind,
                     uint64_t *host)
{
	uint8_t *t;
	uint64_t toff;
	*entry = 0;
	int r = l2_table(q, vc, &t, &toff);
	if (r)
		return r;
	if (t)
		*entry = qcow2_be64(t);
	const char *why;
	int k = qcow2_l2_decode(*entry, q->version, host, &why);
	if (k < 0)
		return qcow2_bad(q, k, vc << q->cluster_bits, why);
	if (*host && !qcow2_cluster_ok(q, *host))
		return qcow2_bad(q, -EIO, vc << q->cluster_bits,
		                 "L2 entry points outside the image");
	*kind = k == QCOW2_CL_ZERO ? CL_ZERO : k == QCOW2_CL_DATA ? CL_DATA : CL_UNALLOC;
	return 0;
}

/* Whether the L2 table of vc may be changed in place (no table, or one
 * with refcount 1: internal snapshots would share them). */
static bool l2_writable(const struct qcow2 *q, uint64_t vc)
{
	uint64_t e = q->l1[vc >> q->l2_bits];
	return !(e & QCOW2_OFFSET_MASK) || (e & QCOW2_COPIED);
}

/* ---- refcounts -------------------------------------------------------- */

static uint64_t rc_get(const uint8_t *b, unsigned int order, uint64_t i)
{
	if (order < 3) {
		unsigned int bits = 1u << order;
		uint64_t bit = i * bits;
		return (uint64_t)(b[bit / 8] >> (bit % 8)) & ((1u << bits) - 1);
	}
	size_t w = (size_t)1 << (order - 3);
	uint64_t v = 0;
	for (size_t k = 0; k < w; k++)
		v = v << 8 | b[i * w + k];
	return v;
}

/* Stores v (0 or 1) as entry i; [*at, *at + *len) are the bytes changed. */
static void rc_put(uint8_t *b, unsigned int order, uint64_t i, uint64_t v, size_t *at, size_t *len)
{
	if (order < 3) {
		unsigned int bits = 1u << order;
		uint64_t bit = i * bits;
		unsigned int mask = ((1u << bits) - 1) << (bit % 8);
		b[bit / 8] = (uint8_t)((b[bit / 8] & ~mask) | ((v << (bit % 8)) & mask));
		*at = (size_t)(bit / 8);
		*len = 1;
		return;
	}
	size_t w = (size_t)1 << (order - 3);
	for (size_t k = 0; k < w; k++)
		b[i * w + k] = (uint8_t)(v >> (8 * (w - 1 - k)));
	*at = (size_t)(i * w);
	*len = w;
}

/* Loads the refcount table, once, before anything reads or changes a
 * refcount (the table's place was checked at open). */
static int reftable(struct qcow2 *q)
{
	if (q->rt)
		return 0;
	uint64_t *rt = malloc(q->rt_bytes ? q->rt_bytes : 1);
	if (!rt)
		return -ENOMEM;
	int r = qcow2_io_full(q->fd, rt, q->rt_bytes, q->rt_off, false);
	if (r) {
		free(rt);
		return r;
	}
	q->rt_entries = q->rt_bytes / 8;
	for (uint64_t i = 0; i < q->rt_entries; i++)
		rt[i] = qcow2_be64((const uint8_t *)&rt[i]);
	q->rt = rt;
	return 0;
}

/* The refcount block covering host cluster c; *blk NULL when none. */
static int refblock(struct qcow2 *q, uint64_t c, uint8_t **blk, uint64_t *blk_off)
{
	int r = reftable(q);
	if (r)
		return r;
	uint64_t ri = c >> q->rb_bits;
	*blk = NULL;
	if (ri >= q->rt_entries || !q->rt[ri])
		return 0;
	uint64_t off = q->rt[ri];
	if (off & QCOW2_RT_RESERVED || !qcow2_cluster_ok(q, off))
		return -EIO;
	*blk_off = off;
	return qcow2_cache_get(q, &q->rbc, off, 0, false, blk);
}

static int refcount_get(struct qcow2 *q, uint64_t c, uint64_t *rc)
{
	uint8_t *b;
	uint64_t boff;
	int r = refblock(q, c, &b, &boff);
	*rc = 0;
	if (!r && b)
		*rc = rc_get(b, q->rc_order, c & ((1ULL << q->rb_bits) - 1));
	return r;
}

static int refcount_set(struct qcow2 *q, uint64_t c, uint64_t v)
{
	uint8_t *b;
	uint64_t boff;
	int r = refblock(q, c, &b, &boff);
	if (r)
		return r;
	if (!b)
		return -EIO; /* claim_cluster() made the block; it cannot vanish */
	size_t at, len;
	rc_put(b, q->rc_order, c & ((1ULL << q->rb_bits) - 1), v, &at, &len);
	return qcow2_cache_write(q, &q->rbc, boff, b + at, at, len);
}

/* A refcount block for index ri, placed at the end of the file, which is
 * inside the range it covers: it counts itself. */
static int new_refblock(struct qcow2 *q, uint64_t ri)
{
	uint64_t off = q->end;
	uint8_t *b;
	int r = qcow2_cache_get(q, &q->rbc, off, 0, true, &b);
	if (r)
		return r;
	size_t at, len;
	rc_put(b, q->rc_order, (off >> q->cluster_bits) & ((1ULL << q->rb_bits) - 1), 1, &at, &len);
	q->end += q->cs;
	r = qcow2_cache_write(q, &q->rbc, off, b, 0, q->cs);
	if (r)
		return r;
	uint8_t e[8];
	qcow2_put64(e, off);
	r = qcow2_io_full(q->fd, e, sizeof(e), q->rt_off + 8 * ri, true);
	if (!r)
		q->rt[ri] = off;
	return r;
}

/* Lays out a larger refcount table at the end of the file: first new
 * refcount blocks for everything from there on (the table included), then
 * the table.  The new table is made durable before the header points to
 * it, and the old one is freed only after. */
static int grow_reftable(struct qcow2 *q)
{
	uint64_t s = q->end >> q->cluster_bits; /* first new cluster */
	uint64_t first = s >> q->rb_bits;       /* its refcount block index */
	uint64_t per_cluster = q->cs / 8;
	uint64_t want = q->rt_entries * 2;
	uint64_t entries, tcl, nb, endc;
	for (;;) {
		entries = want > first + 1 ? want : first + 1;
		entries = (entries + per_cluster - 1) / per_cluster * per_cluster;
		if (entries > QCOW2_MAX_RT_BYTES / 8)
			return -ENOSPC;
		tcl = entries / per_cluster;
		nb = 1;
		for (;;) {
			endc = s + nb + tcl;
			uint64_t need = ((endc - 1) >> q->rb_bits) - first + 1;
			if (need <= nb)
				break;
			nb = need;
		}
		if (first + nb <= entries)
			break;
		want = first + nb;
	}
	if (endc << q->cluster_bits > QCOW2_MAX_HOST_OFFSET)
		return -ENOSPC;
	int cap = qcow2_check_cap(q, endc << q->cluster_bits);
	if (cap)
		return cap;

	uint8_t *blocks = calloc(nb, q->cs);
	uint8_t *table = calloc(tcl, q->cs);
	uint64_t *rt = calloc(entries, sizeof(*rt));
	int r = -ENOMEM;
	if (!blocks || !table || !rt)
		goto out;
	size_t at, len;
	for (uint64_t x = s; x < endc; x++)
		rc_put(blocks + ((x >> q->rb_bits) - first) * q->cs, q->rc_order,
		       x & ((1ULL << q->rb_bits) - 1), 1, &at, &len);
	memcpy(rt, q->rt, q->rt_entries * sizeof(*rt));
	for (uint64_t k = 0; k < nb; k++)
		rt[first + k] = (s + k) << q->cluster_bits;
	for (uint64_t i = 0; i < entries; i++)
		qcow2_put64(table + 8 * i, rt[i]);

	uint64_t new_off = (s + nb) << q->cluster_bits;
	q->end = endc << q->cluster_bits; /* claimed, whatever happens next */
	r = qcow2_io_full(q->fd, blocks, nb * q->cs, s << q->cluster_bits, true);
	if (!r)
		r = qcow2_io_full(q->fd, table, tcl * q->cs, new_off, true);
	if (!r)
		r = qcow2_sync(q->fd);
	uint8_t h[12];
	qcow2_put64(h, new_off);
	qcow2_put32(h + 8, (uint32_t)tcl);
	if (!r)
		r = qcow2_io_full(q->fd, h, sizeof(h), QCOW2_H_RT_OFFSET, true);
	if (!r)
		r = qcow2_sync(q->fd);
	if (r)
		goto out;

	uint64_t old_off = q->rt_off, old_clusters = q->rt_bytes >> q->cluster_bits;
	free(q->rt);
	q->rt = rt;
	rt = NULL;
	q->rt_entries = entries;
	q->rt_off = new_off;
	q->rt_bytes = tcl * q->cs;
	for (uint64_t k = 0; k < old_clusters && !r; k++)
		r = refcount_set(q, (old_off >> q->cluster_bits) + k, 0);
	if (!r)
		(void)fallocate(q->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)old_off,
		                (off_t)(old_clusters * q->cs));
out:
	free(blocks);
	free(table);
	free(rt);
	return r;
}

/* Takes the cluster at the end of the file for new data or a new table,
 * creating refcount structures on the way.  Its refcount is still 0: the
 * caller writes the cluster first and counts it after, so a crash in
 * between leaves only an unreferenced cluster. */
static int claim_cluster(struct qcow2 *q, uint64_t *out)
{
	unsigned int skipped = 0;
	int rl = reftable(q);
	if (rl)
		return rl;
	for (;;) {
		if (q->end > QCOW2_MAX_HOST_OFFSET - q->cs)
			return -ENOSPC;
		uint64_t c = q->end >> q->cluster_bits;
		uint64_t ri = c >> q->rb_bits;
		uint64_t rc = 0;
		/* Every step below takes the cluster at the end (a new refcount
		 * block, or the one claimed); a new table checks for itself. */
		int r = ri < q->rt_entries ? qcow2_check_cap(q, q->end + q->cs) : 0;
		if (r)
			return r;
		if (ri >= q->rt_entries)
			r = grow_reftable(q);
		else if (!q->rt[ri])
			r = new_refblock(q, ri);
		else
			r = refcount_get(q, c, &rc);
		if (r)
			return r;
		if (ri >= q->rt_entries || !q->rt[ri])
			continue;
		if (!rc) {
			*out = q->end;
			q->end += q->cs;
			return 0;
		}
		/* Counted but past the end: a leak from an earlier crash. */
		if (++skipped > CLAIM_SKIP_MAX)
			return -EIO;
		q->end += q->cs;
	}
}

/* Drops a cluster nothing refers to any more. */
static int release_cluster(struct qcow2 *q, uint64_t off)
{
	int r = refcount_set(q, off >> q->cluster_bits, 0);
	if (!r)
		(void)fallocate(q->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)off,
		                (off_t)q->cs);
	return r;
}

/* Points guest cluster vc at `entry`.  Without an L2 table, one is made:
 * written, counted, then linked from the L1 table. */
static int set_l2(struct qcow2 *q, uint64_t vc, uint64_t entry)
{
	uint8_t *t;
	uint64_t toff;
	int r = l2_table(q, vc, &t, &toff);
	if (r)
		return r;
	size_t at = 8 * (size_t)l2_index(q, vc);
	if (t) {
		qcow2_put64(t, entry);
		return qcow2_cache_write(q, &q->l2c, toff, t, at, 8);
	}
	r = claim_cluster(q, &toff);
	if (!r) /* a writable image's units are whole tables: t is the table */
		r = qcow2_cache_get(q, &q->l2c, toff, 0, true, &t);
	if (r)
		return r;
	qcow2_put64(t + at, entry);
	r = qcow2_cache_write(q, &q->l2c, toff, t, 0, q->cs);
	if (!r)
		r = refcount_set(q, toff >> q->cluster_bits, 1);
	if (r)
		return r;
	uint64_t l1i = vc >> q->l2_bits;
	uint8_t e[8];
	qcow2_put64(e, toff | QCOW2_COPIED);
	r = qcow2_io_full(q->fd, e, sizeof(e), q->l1_off + 8 * l1i, true);
	if (!r)
		q->l1[l1i] = toff | QCOW2_COPIED;
	return r;
}

/* ---- reads ------------------------------------------------------------ */

/* len bytes of guest data at off that this image does not hold. */
static int read_backing(struct qcow2 *q, uint64_t off, struct cursor *c, size_t len)
{
	size_t have = 0;
	if (q->backing && off < q->backing->size)
		have = (size_t)min64(len, q->backing->size - off);
	if (have) {
		int r = disk_read(q->backing, off, q->iov, qcow2_take(q, c, have));
		if (r)
			return r;
	}
	if (len > have)
		qcow2_iov_zero(q->iov, qcow2_take(q, c, len - have));
	return 0;
}

/* Extends a run of n bytes at off, all of kind k (data at host), over the
 * following clusters of the same kind; data must also follow on in the
 * file.  One call then serves the whole run.  A cluster that fails to
 * look up ends the run; its own turn reports the error. */
static size_t run_length(struct qcow2 *q, uint64_t off, size_t n, uint64_t left, enum cl_kind k,
                         uint64_t host)
{
	while (n < left) {
		uint64_t e, h;
		enum cl_kind k2;
		if (l2_lookup(q, (off + n) >> q->cluster_bits, &e, &k2, &h) || k2 != k ||
		    (k == CL_DATA && h != host + n))
			break;
		n += (size_t)min64(q->cs, left - n);
	}
	return n;
}

static int qcow2_read(struct disk *d, uint64_t off, const struct iovec *iov, int iovcnt)
{
	struct qcow2 *q = to_q(d);
	int r = qcow2_reserve_iov(q, iovcnt);
	struct cursor c = { .iov = iov, .cnt = iovcnt };
	uint64_t left = disk_iov_total(iov, iovcnt);
	while (!r && left) {
		uint64_t in = off & (q->cs - 1);
		size_t n = (size_t)min64(q->cs - in, left);
		uint64_t e, host;
		enum cl_kind k;
		r = l2_lookup(q, off >> q->cluster_bits, &e, &k, &host);
		if (r)
			break;
		if (k == CL_DATA)
			host += in;
		n = run_length(q, off, n, left, k, host);
		if (k == CL_UNALLOC)
			r = read_backing(q, off, &c, n);
		else if (k == CL_ZERO)
			qcow2_iov_zero(q->iov, qcow2_take(q, &c, n));
		else
			r = qcow2_io_vec(q->fd, host, q->iov, qcow2_take(q, &c, n), false);
		off += n;
		left -= n;
	}
	return r;
}

/* ---- writes ----------------------------------------------------------- */

/* q->bounce := what guest cluster vc reads as now, for copy-on-write. */
static int fill_bounce(struct qcow2 *q, uint64_t vc, enum cl_kind k)
{
	uint64_t start = vc << q->cluster_bits;
	size_t have = 0;
	if (k == CL_UNALLOC && q->backing && start < q->backing->size)
		have = (size_t)min64(q->cs, q->backing->size - start);
	memset(q->bounce + have, 0, q->cs - have);
	if (!have)
		return 0;
	struct iovec v = { .iov_base = q->bounce, .iov_len = have };
	return disk_read(q->backing, start, &v, 1);
}

/* n bytes of c (zeros when c is NULL) to host offset `host`. */
static int put_data(struct qcow2 *q, uint64_t host, size_t n, struct cursor *c)
{
	if (c)
		return qcow2_io_vec(q->fd, host, q->iov, qcow2_take(q, c, n), true);
	memset(q->bounce, 0, n);
	return qcow2_io_full(q->fd, q->bounce, n, host, true);
}

/* Writes n bytes at guest offset off, inside one cluster, from c (zeros
 * when c is NULL). */
static int write_cluster(struct qcow2 *q, uint64_t off, size_t n, struct cursor *c)
{
	uint64_t vc = off >> q->cluster_bits, in = off & (q->cs - 1);
	uint64_t e, host;
	enum cl_kind k;
	int r = l2_lookup(q, vc, &e, &k, &host);
	if (r)
		return r;
	if (k == CL_DATA && (e & QCOW2_COPIED))
		return put_data(q, host + in, n, c);
	if ((host && !(e & QCOW2_COPIED)) || !l2_writable(q, vc))
		return qcow2_bad(q, -EIO, off, "shared clusters (refcount > 1) are not supported");

	/* A preallocated zero cluster is reused; anything else gets a new
	 * cluster, filled completely before anything points to it. */
	uint64_t target = host;
	if (!target) {
		r = claim_cluster(q, &target);
		if (r)
			return r;
	}
	if (n == q->cs && c) {
		r = put_data(q, target, n, c);
	} else {
		r = n < q->cs ? fill_bounce(q, vc, k) : 0;
		if (!r && c)
			qcow2_iov_gather(q->bounce + in, q->iov, qcow2_take(q, c, n));
		else if (!r)
			memset(q->bounce + in, 0, n);
		if (!r)
			r = qcow2_io_full(q->fd, q->bounce, q->cs, target, true);
	}
	if (!r && !host)
		r = refcount_set(q, target >> q->cluster_bits, 1);
	if (!r)
		r = set_l2(q, vc, target | QCOW2_COPIED);
	return r;
}

static int qcow2_write(struct disk *d, uint64_t off, const struct iovec *iov, int iovcnt)
{
	struct qcow2 *q = to_q(d);
	int r = qcow2_reserve_iov(q, iovcnt);
	struct cursor c = { .iov = iov, .cnt = iovcnt };
	uint64_t left = disk_iov_total(iov, iovcnt);
	while (!r && left) {
		size_t n = (size_t)min64(q->cs - (off & (q->cs - 1)), left);
		r = write_cluster(q, off, n, &c);
		off += n;
		left -= n;
	}
	return r;
}

/* Makes n bytes at off (inside one cluster) read as zeros: through the
 * metadata for a whole cluster when the format allows, else by writing
 * zeros. */
static int zero_cluster(struct qcow2 *q, uint64_t off, size_t n, bool unmap)
{
	uint64_t vc = off >> q->cluster_bits;
	uint64_t e, host;
	enum cl_kind k;
	int r = l2_lookup(q, vc, &e, &k, &host);
	if (r)
		return r;
	bool backed = q->backing && (vc << q->cluster_bits) < q->backing->size;
	if (k == CL_ZERO || (k == CL_UNALLOC && !backed))
		return 0;
	bool whole = !(off & (q->cs - 1)) && (n == q->cs || off + n == q->d.size);
	bool own = k == CL_DATA && (e & QCOW2_COPIED);
	if (!whole || !l2_writable(q, vc))
		return write_cluster(q, off, n, NULL);
	if (q->version < 3) {
		if (!own || backed || !unmap)
			return write_cluster(q, off, n, NULL);
		r = set_l2(q, vc, 0);
		return r ? r : release_cluster(q, host);
	}
	if (own && unmap) {
		r = set_l2(q, vc, backed ? QCOW2_ZERO : 0);
		return r ? r : release_cluster(q, host);
	}
	return set_l2(q, vc, e | QCOW2_ZERO); /* keeps any allocation */
}

static int zero_range(struct disk *d, uint64_t off, uint64_t len, bool unmap)
{
	struct qcow2 *q = to_q(d);
	int r = 0;
	while (!r && len) {
		/* Whole L2 ranges that already read as zeros are skipped: a
		 * guest may discard terabytes in one request. */
		uint64_t l1i = off >> (q->cluster_bits + q->l2_bits);
		uint64_t l1e = q->l1[l1i];
		if (!l1e && (!q->backing || off >= q->backing->size)) {
			uint64_t skip = ((l1i + 1) << (q->cluster_bits + q->l2_bits)) - off;
			if (skip >= len)
				break;
			off += skip;
			len -= skip;
			continue;
		}
		size_t n = (size_t)min64(q->cs - (off & (q->cs - 1)), len);
		r = zero_cluster(q, off, n, unmap);
		off += n;
		len -= n;
	}
	return r;
}

static int qcow2_write_zeroes(struct disk *d, uint64_t off, uint64_t len, bool may_unmap)
{
	return zero_range(d, off, len, may_unmap);
}

/* Discarded ranges read as zeros (never as the backing file's data). */
static int qcow2_discard(struct disk *d, uint64_t off, uint64_t len)
{
	return zero_range(d, off, len, true);
}

static int qcow2_flush(struct disk *d)
{
	return qcow2_sync(to_q(d)->fd);
}

void qcow2_close(struct disk *d)
{
	struct qcow2 *q = to_q(d);
	disk_close(q->backing);
	if (q->fd >= 0)
		close(q->fd); /* drops the flock too */
	qcow2_cache_free(&q->l2c);
	qcow2_cache_free(&q->rbc);
	free(q->l1);
	free(q->rt);
	free(q->bounce);
	free(q->iov);
	free(q->path);
	free(q);
}

const struct disk_ops qcow2_ops = {
	.name = "qcow2",
	.read = qcow2_read,
	.write = qcow2_write,
	.flush = qcow2_flush,
	.discard = qcow2_discard,
	.write_zeroes = qcow2_write_zeroes,
	.close = qcow2_close,
};
