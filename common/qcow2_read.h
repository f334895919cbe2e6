/* A read-only view of a qcow2 backing chain, for host tools (the
 * filesystem diff, lib/image/fsdiff*): which guest ranges the top layers
 * allocated, and the bytes of any guest range as the whole chain (or the
 * chain below some layer) presents them.  It shares the header and table
 * checks with the VMM's backend (qcow2_hdr.h) but none of its write path.
 *
 * It takes no file locks: it reads images that a running (or paused)
 * cove-vmm holds under its exclusive lock.  A consistent read of a
 * running guest's disk is the caller's business (the agent freezes the
 * file system: docs/diff.md).  Every table entry is checked on use; bad
 * metadata fails the call with -EIO and a one-line message. */
#ifndef COVE_QCOW2_READ_H
#define COVE_QCOW2_READ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct qcow2_chain;

struct qcow2_read_stats {
	uint64_t reads;      /* pread calls for guest data */
	uint64_t bytes_read; /* guest bytes read from files (zeros not counted) */
	uint64_t l2_loads;   /* L2 tables read */
};

/* Opens `top` and every file below it (at most QCOW2_MAX_CHAIN), qcow2 or
 * raw as each backing-format extension (else the magic) says.  Returns 0
 * or -errno with a one-line message. */
int qcow2_chain_open(const char *top, struct qcow2_chain **out, char *err, size_t errlen)
    __attribute__((warn_unused_result));

void qcow2_chain_close(struct qcow2_chain *c);

/* The number of files, and file i's resolved path (0 = top) or NULL. */
unsigned int qcow2_chain_layers(const struct qcow2_chain *c);
const char *qcow2_chain_path(const struct qcow2_chain *c, unsigned int i);

/* The guest size seen from layer i down (its header's size; a raw file's
 * length); 0 for an i out of range. */
uint64_t qcow2_chain_size(const struct qcow2_chain *c, unsigned int i);

/* Calls fn(arg, off, len) for every run of guest bytes that layer i
 * allocates itself (data clusters and zero clusters: both hide what lies
 * below), in ascending order, clipped to that layer's size.  A raw layer
 * allocates everything.  fn returning non-zero stops the walk with that
 * value. */
int qcow2_chain_allocated(struct qcow2_chain *c, unsigned int i,
                          int (*fn)(void *arg, uint64_t off, uint64_t len), void *arg, char *err,
                          size_t errlen) __attribute__((warn_unused_result));

/* Reads guest bytes [off, off + len) as the chain from layer `from` down
 * presents them (0: the whole chain); past that layer's size, zeros. */
int qcow2_chain_read(struct qcow2_chain *c, unsigned int from, void *buf, size_t len, uint64_t off,
                     char *err, size_t errlen) __attribute__((warn_unused_result));

/* What the reads cost so far. */
void qcow2_chain_stats(const struct qcow2_chain *c, struct qcow2_read_stats *st);

#endif
