/* Reading a qcow2 image's metadata, shared by the VMM's backend
 * (vmm/backend/disk_qcow2_open.c) and the host's read-only chain reader
 * (common/qcow2_read.c): the header checked field by field, its
 * extensions, where the L1 and refcount tables lie, the backing file's
 * name, and what an L2 entry means.  Pure: the callers read the bytes,
 * which may be hostile (fuzz_qcow2 goes through here).  libc only. */
#ifndef COVE_QCOW2_HDR_H
#define COVE_QCOW2_HDR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "qcow2_create.h"

/* Files allowed below one image (a raw base counts as one). */
#define QCOW2_MAX_CHAIN 16

#define QCOW2_BACKING_FMT_MAX 16

struct qcow2_hdr {
	unsigned int version;
	unsigned int cluster_bits;
	uint64_t cs;          /* cluster size */
	unsigned int l2_bits; /* log2 of entries per L2 table */
	unsigned int rc_order;
	unsigned int rb_bits; /* log2 of entries per refcount block */
	uint64_t size;        /* the guest disk's size */
	uint32_t l1_size;
	uint64_t l1_off;
	uint64_t rt_off;
	uint64_t rt_bytes;
	uint32_t hlen; /* header length: where the extensions start */
	uint64_t incompat;
	uint64_t autoclear;
	uint64_t backing_off; /* 0: no backing file */
	uint32_t backing_len;
	char backing_fmt[QCOW2_BACKING_FMT_MAX]; /* "" when the header names none */
};

/* The fixed header: `fixed` holds the file's first flen bytes (at most
 * QCOW2_V3_HEADER_LEN; fewer when the file is shorter), file_size the
 * file's length.  A dirty (lazy refcounts) image is refused unless
 * read_only.  Messages start with `path`.  Returns 0 or -errno. */
int qcow2_hdr_fixed(const uint8_t *fixed, size_t flen, uint64_t file_size, bool read_only,
                    const char *path, struct qcow2_hdr *h, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* The header extensions in the first cluster (buf, len: min(cs, file
 * size) bytes); only the backing format is kept.  After qcow2_hdr_fixed. */
int qcow2_hdr_extensions(const uint8_t *buf, size_t len, const char *path, struct qcow2_hdr *h,
                         char *err, size_t errlen) __attribute__((warn_unused_result));

/* Checks the L1 and refcount tables' sizes and placement in a file whose
 * cluster-aligned end is `end`. */
int qcow2_hdr_tables(const struct qcow2_hdr *h, uint64_t end, const char *path, char *err,
                     size_t errlen) __attribute__((warn_unused_result));

/* The backing file's name as stored (NUL-terminated, no NUL inside),
 * read from the first cluster (buf, len).  Only when h->backing_off. */
int qcow2_hdr_backing_name(const struct qcow2_hdr *h, const uint8_t *buf, size_t len,
                           const char *path, char name[QCOW2_MAX_BACKING_NAME + 1], char *err,
                           size_t errlen) __attribute__((warn_unused_result));

/* What an L2 entry says of its guest cluster. */
enum qcow2_cl { QCOW2_CL_UNALLOC, QCOW2_CL_ZERO, QCOW2_CL_DATA };

/* Decodes L2 entry e of an image of `version`: the kind (>= 0) and, for
 * data (and a preallocated zero cluster), the host offset in *host; or
 * -EIO with *why saying what is wrong.  The caller still checks that
 * *host lies inside its file. */
int qcow2_l2_decode(uint64_t e, unsigned int version, uint64_t *host, const char **why);

/* Whether [a, a + alen) and [b, b + blen) meet. */
bool qcow2_overlaps(uint64_t a, uint64_t alen, uint64_t b, uint64_t blen);

/* A cluster some table points to: aligned, past the header, inside a file
 * whose cluster-aligned end is `end`, clear of the L1 and refcount tables. */
bool qcow2_hdr_cluster_ok(const struct qcow2_hdr *h, uint64_t end, uint64_t off);

/* All len bytes at off of fd; past the end of the file, zeros (a qcow2
 * file's clusters may end short of a cluster).  0 or -errno. */
int qcow2_pread_full(int fd, void *buf, size_t len, uint64_t off)
    __attribute__((warn_unused_result));

#endif
