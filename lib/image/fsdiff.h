/* The filesystem diff of an ext4 disk against its base (docs/diff.md):
 * what a qcow2 chain's top layers changed, as paths added, changed and
 * deleted.  Only what the top layers allocated is compared (mapped to
 * ext4 blocks, then to inode-table entries and directories), plus what
 * naming the changed paths needs; both file systems are read through
 * libext2fs over the chain (fsdiff_io.h), each with its journal replayed
 * in memory (jbd2.h).  Everything read is hostile: a malformed file
 * system fails the call with a one-line message. */
#ifndef COVE_IMAGE_FSDIFF_H
#define COVE_IMAGE_FSDIFF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "qcow2_read.h"

enum fsdiff_kind { FSDIFF_ADDED, FSDIFF_CHANGED, FSDIFF_DELETED };

/* One side of a path: type ("file", "dir", "symlink", "char", "block",
 * "fifo", "socket"), size, permission bits (with setuid/setgid/sticky),
 * owner. */
struct fsdiff_attr {
	const char *type;
	uint64_t size;
	uint32_t mode;
	uint32_t uid, gid;
};

struct fsdiff_change {
	char *path; /* absolute, "/" separated */
	enum fsdiff_kind kind;
	struct fsdiff_attr now; /* added, changed */
	struct fsdiff_attr old; /* changed, deleted */
	char *target;           /* symlinks added or changed */
	bool has_sha256;        /* regular files added or changed */
	uint8_t sha256[32];
	uint32_t ino;     /* in the new file system; 0 for deleted */
	uint32_t old_ino; /* in the base; 0 for added */
};

struct fsdiff_stats {
	uint64_t bytes_allocated; /* guest bytes the top layers allocate */
	uint64_t blocks_changed;  /* file system blocks in them */
	uint64_t itable_blocks;   /* inode-table blocks compared */
	uint64_t inodes_examined; /* inodes compared */
	uint64_t inodes_changed;
	uint64_t dirs_read;   /* directories listed (both sides) */
	uint64_t dirs_walked; /* directories read to name changed files */
	uint64_t journal_copies_new, journal_copies_old;
	uint64_t reads, bytes_read; /* qcow2_read's counters */
	uint64_t elapsed_us;
};

struct fsdiff;

/* Diffs the file system the chain presents from layer 0 against the one
 * it presents from layer base (1 <= base < layers): layers [0, base) are
 * the changes.  The chain must stay open until fsdiff_free.  The result
 * is sorted by path.  Returns 0 or -errno with a one-line message. */
int fsdiff_run(struct qcow2_chain *chain, unsigned int base, struct fsdiff **out, char *err,
               size_t errlen) __attribute__((warn_unused_result));

size_t fsdiff_count(const struct fsdiff *d);
const struct fsdiff_change *fsdiff_get(const struct fsdiff *d, size_t i);
const struct fsdiff_stats *fsdiff_stats(const struct fsdiff *d);

/* Streams the new contents of change c (a regular file added or changed)
 * to sink, in order; sink returning non-zero stops with that value. */
int fsdiff_read_file(struct fsdiff *d, const struct fsdiff_change *c,
                     int (*sink)(void *arg, const void *buf, size_t len), void *arg, char *err,
                     size_t errlen) __attribute__((warn_unused_result));

void fsdiff_free(struct fsdiff *d);

/* docker diff's text: "A /path", "C /path", "D /path", one a line; a
 * malloc'd string. */
char *fsdiff_text(const struct fsdiff *d);

/* The JSON object docs/diff.md describes ("changes", "stats"); malloc'd. */
char *fsdiff_json(const struct fsdiff *d);

/* A tar (pax) of the added and changed paths (regular files with their
 * contents, directories, symlinks) written to fd. */
int fsdiff_tar(struct fsdiff *d, int fd, char *err, size_t errlen)
    __attribute__((warn_unused_result));

#endif
