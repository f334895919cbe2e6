/* The qcow2 backend's state and its access to the file: whole reads and
 * writes, request iovecs, the table caches and the checks on offsets
 * found in tables (disk_qcow2_io.c).  Below the data path (disk_qcow2.c)
 * and the opening (disk_qcow2_open.c). */
#ifndef COVE_DISK_QCOW2_IO_H
#define COVE_DISK_QCOW2_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "backend/disk.h"
#include "qcow2_hdr.h"

#define IOV_WINDOW     64
#define CACHE_SLOTS    64 /* of page units; whole clusters: 16 */
#define CACHE_CLUSTERS 16
#define CACHE_BYTES    (8ULL << 20) /* per table cache of whole clusters, at most */
#define CACHE_PAGE     4096u        /* the unit of a read-only image's L2 cache */
#define CLAIM_SKIP_MAX 4096         /* in-use clusters skipped past the file end */

enum cl_kind { CL_UNALLOC, CL_ZERO, CL_DATA };

/* A few units of one kind of table, written through: whole clusters, or
 * for the L2 tables of a read-only image pages of them (a lookup needs 8
 * bytes; a 64 KiB table read for it was private memory in every VMM that
 * shares the image). */
struct tslot {
	uint64_t off; /* host offset of the unit; 0 = empty (cluster 0 is the header) */
	uint64_t stamp;
	uint8_t *buf;
};

struct tcache {
	struct tslot slot[CACHE_SLOTS];
	unsigned int nslots;
	size_t unit; /* bytes per slot: the cluster size, or CACHE_PAGE */
	uint64_t clock;
};

struct qcow2 {
	struct disk d; /* first: the disk_ops get &d */
	int fd;
	unsigned int flags;
	bool quiet; /* QCOW2_OPEN_QUIET: no stderr notes */
	bool warned;
	bool cap_warned; /* the cap's stderr line was written */
	char *path;
	unsigned int version;
	unsigned int cluster_bits;
	uint64_t cs;          /* cluster size */
	unsigned int l2_bits; /* log2 of entries per L2 table */
	unsigned int rc_order;
	unsigned int rb_bits; /* log2 of entries per refcount block */
	uint64_t *l1;         /* host byte order */
	uint32_t l1_size;
	uint64_t l1_off;
	uint64_t rt_off;
	uint64_t rt_bytes;
	uint64_t *rt; /* refcount table, loaded only when writable */
	uint64_t rt_entries;
	uint64_t end; /* cluster-aligned end of the file; new clusters go here */
	struct tcache l2c;
	struct tcache rbc;
	struct disk *backing;
	uint8_t *bounce; /* one cluster */
	struct iovec *iov;
	int iov_cap;
};

/* Where a request stands in the caller's iovec array. */
struct cursor {
	const struct iovec *iov;
	int cnt;
	int idx;
	size_t skip;
};

static inline struct qcow2 *to_q(struct disk *d)
{
	return (struct qcow2 *)d;
}

static inline uint64_t min64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

/* The file I/O of all of it: all of buf at off (reads past the end of the
 * file give zeros), and fdatasync. */
int qcow2_io_full(int fd, void *buf, size_t len, uint64_t off, bool write);
int qcow2_sync(int fd);

/* One stderr line per disk the first time a request meets bad metadata;
 * returns err. */
int qcow2_bad(struct qcow2 *q, int err, uint64_t guest_off, const char *what);

/* Room for n iovecs in q->iov. */
int qcow2_reserve_iov(struct qcow2 *q, int n);

/* Whether the image file may grow to `end` bytes: the host's cap
 * (disk.max_file) bounds how much host storage a guest's writes take.
 * Returns 0 or -ENOSPC (with one stderr line per disk). */
int qcow2_check_cap(struct qcow2 *q, uint64_t end);

/* All of v[0..n) at off; v is scratch and is consumed.  Reads past the end
 * of the file give zeros. */
int qcow2_io_vec(int fd, uint64_t off, struct iovec *v, int n, bool write);

/* The next len bytes of c as q->iov[0..return); advances c. */
int qcow2_take(struct qcow2 *q, struct cursor *c, size_t len);

void qcow2_iov_zero(const struct iovec *v, int n);

void qcow2_iov_gather(uint8_t *dst, const struct iovec *v, int n);

void qcow2_cache_free(struct tcache *c);

/* An empty cache of tables whose units are `unit` bytes (cs: whole clusters;
 * CACHE_PAGE, when smaller than cs: pages, for tables never written). */
void qcow2_cache_init(struct tcache *c, uint64_t cs, size_t unit);

/* Byte `at` (< cs) of the table at `off`, from the cache or the file: *out
 * points at it, and the unit's bytes from it on are there (unit - at %
 * unit of them).  `fresh`: a table being created, zeros (whole-cluster
 * units only: -EINVAL otherwise). */
int qcow2_cache_get(struct qcow2 *q, struct tcache *c, uint64_t off, size_t at, bool fresh,
                    uint8_t **out);

/* Writes len bytes at p, which qcow2_cache_get gave for byte `at` of the
 * table at `off` (inside that unit), through to the file; on failure the
 * cached unit is dropped, as it no longer matches. */
int qcow2_cache_write(struct qcow2 *q, struct tcache *c, uint64_t off, const uint8_t *p, size_t at,
                      size_t len);

/* A cluster some table points to: aligned, past the header, inside the
 * file, and clear of the L1 and refcount tables. */
bool qcow2_cluster_ok(const struct qcow2 *q, uint64_t off);

#endif
