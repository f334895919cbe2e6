/* qcow2 on-disk constants, and the two things every Cove binary may need
 * without the VMM's disk layer: telling a qcow2 image from a raw one, and
 * writing a fresh (overlay) image.  libc only: this is linked into
 * cove-vmm, the static guest agent and the cove CLI.
 *
 * The format is QEMU's docs/interop/qcow2.txt; all numbers are big-endian.
 * The VMM's reader and writer is vmm/backend/disk_qcow2.c; docs/qcow2.md
 * says what it supports. */
#ifndef COVE_QCOW2_CREATE_H
#define COVE_QCOW2_CREATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define QCOW2_MAGIC 0x514649fbU /* "QFI\xfb" */

/* Header field offsets (bytes from the start of the file). */
#define QCOW2_H_MAGIC            0
#define QCOW2_H_VERSION          4
#define QCOW2_H_BACKING_OFFSET   8
#define QCOW2_H_BACKING_SIZE     16
#define QCOW2_H_CLUSTER_BITS     20
#define QCOW2_H_SIZE             24
#define QCOW2_H_CRYPT_METHOD     32
#define QCOW2_H_L1_SIZE          36
#define QCOW2_H_L1_OFFSET        40
#define QCOW2_H_RT_OFFSET        48
#define QCOW2_H_RT_CLUSTERS      56
#define QCOW2_H_NB_SNAPSHOTS     60
#define QCOW2_H_SNAPSHOTS_OFFSET 64
#define QCOW2_H_INCOMPAT         72 /* v3 from here on */
#define QCOW2_H_COMPAT           80
#define QCOW2_H_AUTOCLEAR        88
#define QCOW2_H_REFCOUNT_ORDER   96
#define QCOW2_H_HEADER_LENGTH    100
#define QCOW2_V2_HEADER_LEN      72
#define QCOW2_V3_HEADER_LEN      104

/* Incompatible feature bits. */
#define QCOW2_INCOMPAT_DIRTY       (1ULL << 0)
#define QCOW2_INCOMPAT_CORRUPT     (1ULL << 1)
#define QCOW2_INCOMPAT_DATA_FILE   (1ULL << 2)
#define QCOW2_INCOMPAT_COMPRESSION (1ULL << 3)
#define QCOW2_INCOMPAT_EXTL2       (1ULL << 4)
#define QCOW2_INCOMPAT_KNOWN       0x1fULL

/* Header extensions: type, length, data padded to 8 bytes. */
#define QCOW2_EXT_END            0x00000000U
#define QCOW2_EXT_BACKING_FORMAT 0xe2792acaU

#define QCOW2_MAX_BACKING_NAME 1023
#define QCOW2_MIN_CLUSTER_BITS 9
#define QCOW2_MAX_CLUSTER_BITS 21
#define QCOW2_MAX_REFCOUNT_ORD 6
/* QEMU's own limits, kept so that every image Cove writes opens there. */
#define QCOW2_MAX_L1_BYTES (32ULL << 20)
#define QCOW2_MAX_RT_BYTES (8ULL << 20)

/* Table entries. */
#define QCOW2_OFFSET_MASK     0x00fffffffffffe00ULL /* bits 9-55 */
#define QCOW2_COPIED          (1ULL << 63)          /* refcount is exactly 1 */
#define QCOW2_COMPRESSED      (1ULL << 62)
#define QCOW2_ZERO            (1ULL << 0)           /* v3: the cluster reads as zeros */
#define QCOW2_L1_RESERVED     0x7f000000000001ffULL /* bits 0-8, 56-62 */
#define QCOW2_L2_RESERVED     0x3f000000000001feULL /* bits 1-8, 56-61 */
#define QCOW2_RT_RESERVED     0x00000000000001ffULL /* bits 0-8 */
#define QCOW2_MAX_HOST_OFFSET (1ULL << 56)

/* The images qcow2_create_overlay() writes. */
#define QCOW2_CREATE_CLUSTER_BITS 16

static inline uint16_t qcow2_be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static inline uint32_t qcow2_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static inline uint64_t qcow2_be64(const uint8_t *p)
{
	return (uint64_t)qcow2_be32(p) << 32 | qcow2_be32(p + 4);
}

static inline void qcow2_put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static inline void qcow2_put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (24 - 8 * i));
}

static inline void qcow2_put64(uint8_t *p, uint64_t v)
{
	qcow2_put32(p, (uint32_t)(v >> 32));
	qcow2_put32(p + 4, (uint32_t)v);
}

/* Tells whether `path` starts with the qcow2 magic.  *virtual_size is the
 * disk the image presents: the header's size field for qcow2 (version 2
 * or 3 only), the file's length (or a block device's size) for anything
 * else, which is taken as raw.  Either output pointer may be NULL.
 * Returns 0, or -errno with a one-line message in err. */
int qcow2_probe(const char *path, bool *is_qcow2, uint64_t *virtual_size, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* The file a backing name refers to: `name` itself when absolute, else
 * `name` relative to the directory holding `image` (QEMU's rule).
 * Returns 0, or -ENAMETOOLONG when the result does not fit in out. */
int qcow2_backing_path(const char *image, const char *name, char *out, size_t outlen)
    __attribute__((warn_unused_result));

/* Walks the disk at path down its backing chain, calling fn (may be NULL;
 * its -errno stops the walk) with each file's path, path's first; *depth
 * (may be NULL) gets how many files it is made of: 1 for a raw file or a
 * qcow2 without a backing file.  Only the headers are read.  -ELOOP past
 * max files; -errno with a one-line message in err. */
int qcow2_chain_walk(const char *path, unsigned int max, int (*fn)(void *opaque, const char *file),
                     void *opaque, unsigned int *depth, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* Writes a fresh qcow2 version 3 image at `path` (created O_EXCL, mode
 * 0600, removed again on failure): 64 KiB clusters, 16-bit refcounts, no
 * data clusters.  With `backing` non-NULL, the image's backing file is
 * `backing`, stored exactly as given (an absolute path is expected; a
 * relative one is resolved against the directory of `path`, both here for
 * probing and by readers), with a backing-format extension naming "raw"
 * or "qcow2" as probed from its magic; `size` 0 then means the backing
 * file's virtual size.  With `backing` NULL, `size` must be non-zero.
 * The size is rounded up to a multiple of 512 bytes (QEMU counts whole
 * sectors).  Returns 0, or -errno with a one-line message in err. */
int qcow2_create_overlay(const char *path, const char *backing, uint64_t size, char *err,
                         size_t errlen) __attribute__((warn_unused_result));

/* qcow2_create_overlay() with the backing file's format given ("raw" or
 * "qcow2"; NULL probes).  Pass it whenever the format is known: a raw
 * backing file whose first bytes a guest wrote could otherwise be probed
 * as qcow2, with a backing file of the guest's choosing. */
int qcow2_create_overlay_format(const char *path, const char *backing, const char *backing_format,
                                uint64_t size, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* The longest an overlay that qcow2_create_overlay() made for a disk of
 * `size` bytes can grow under the VMM's qcow2 writer, which allocates each
 * guest cluster once, at the end of the file: data, L2 tables, refcount
 * blocks and tables together (the layout is worked out in the function).
 * What libcove gives cove-vmm as a root overlay's max_file.  A guest that
 * discards clusters and writes them again needs more (freed clusters are
 * not reused) and meets the cap. */
uint64_t qcow2_overlay_max_file(uint64_t size);

#endif
