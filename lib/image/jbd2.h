/* An ext4 journal (jbd2) replayed in memory: which file system blocks the
 * journal's committed, un-checkpointed transactions hold newer copies of,
 * and where in the journal each copy is.  The filesystem diff reads an
 * overlay's file system as a mount would see it after recovery, without
 * writing anything (docs/diff.md).
 *
 * The journal is hostile input (a guest wrote it): every field is checked,
 * the scan visits each journal block at most once, and a malformed
 * journal fails with a one-line message (fuzz_jbd2).  The format is the
 * Linux kernel's include/linux/jbd2.h: big-endian, a superblock in
 * journal block 0, then a circular log of descriptor, data, revoke and
 * commit blocks.  Checksums are not verified: a transaction counts once
 * its commit block is there, as for a journal without them.  Fast-commit
 * journals are refused. */
#ifndef COVE_IMAGE_JBD2_H
#define COVE_IMAGE_JBD2_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define JBD2_MAGIC 0xc03b3998U

struct jbd2_copy {
	uint64_t block;  /* file system block */
	uint32_t jblock; /* journal block (logical) holding its newest copy */
	bool escaped;    /* the copy's first 4 bytes were JBD2_MAGIC */
};

struct jbd2_replay {
	struct jbd2_copy *copy; /* sorted by block, one per block */
	size_t n;
	uint32_t transactions; /* committed transactions found */
};

/* Reads journal block jblock (block_size bytes) into buf; 0 or -errno. */
typedef int (*jbd2_read_fn)(void *arg, uint32_t jblock, uint8_t *buf);

/* Scans a journal of journal_blocks blocks of block_size bytes (the file
 * system's) for a file system of fs_blocks blocks.  A clean journal
 * gives an empty replay.  Returns 0 or -errno with a message. */
int jbd2_replay_scan(uint32_t block_size, uint32_t journal_blocks, uint64_t fs_blocks,
                     jbd2_read_fn read, void *arg, struct jbd2_replay *out, char *err,
                     size_t errlen) __attribute__((warn_unused_result));

/* The newest copy of block, or NULL. */
const struct jbd2_copy *jbd2_replay_find(const struct jbd2_replay *r, uint64_t block);

void jbd2_replay_free(struct jbd2_replay *r);

#endif
