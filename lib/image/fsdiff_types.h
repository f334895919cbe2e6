/* What a filesystem diff reports (fsdiff.h's types, apart so that the
 * diff's own rooms can share them without its operations). */
#ifndef COVE_IMAGE_FSDIFF_TYPES_H
#define COVE_IMAGE_FSDIFF_TYPES_H

#include <stdbool.h>
#include <stdint.h>

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
	bool unhashed;          /* ... but past the hashing bound (docs/diff.md) */
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
	uint64_t files_unhashed;    /* regular files past the hashing bound */
	uint64_t elapsed_us;
};

#endif
