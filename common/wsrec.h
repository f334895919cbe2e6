/* The working-set record of a snapshot (docs/snapshots.md, "Restore
 * fast path", its working-set prefetch): which guest RAM pages the first
 * restore of a snapshot touched up to its first exec's answer, as sorted
 * page ranges, in the file
 * `memory.ws` beside the memory file.  Later restores populate those
 * ranges before the first KVM_RUN (vmm/snapshot/prefetch.c).  Written by
 * cove-vmm into a file libcove passes it, read back and checked by libcove
 * before it is renamed into the snapshot, parsed again by every cove-vmm
 * that restores: a file input, so every field is checked.
 *
 * Layout, little-endian:
 *   [0, 8)   magic "COVEWS1\n"
 *   [8, 16)  u64 guest RAM bytes the record is for (a multiple of 4 KiB)
 *   [16, 20) u32 number of ranges N (1 .. WSREC_MAX_RANGES)
 *   [20, 24) u32 flags, 0
 *   then N times: u32 first page, u32 pages | WSREC_WRITTEN
 * Ranges are ascending and do not overlap (they touch only where the
 * written flag changes), have 1 .. 2^31-1 pages and lie inside RAM; the file is exactly 24 + 8 N bytes. */
#ifndef COVE_WSREC_H
#define COVE_WSREC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define WSREC_FILE       "memory.ws"
#define WSREC_MAGIC      "COVEWS1\n"
#define WSREC_HDR        24
#define WSREC_MAX_RANGES 65536
#define WSREC_MAX_BYTES  (WSREC_HDR + 8 * WSREC_MAX_RANGES)
#define WSREC_PAGE       4096u
#define WSREC_WRITTEN    0x80000000u /* the guest wrote the range: populate it writable */

struct wsrec_range {
	uint32_t first; /* guest RAM page index (RAM offset / 4 KiB) */
	uint32_t pages;
	bool written;
};

struct wsrec {
	uint64_t ram_bytes;
	uint32_t count;
	struct wsrec_range *r; /* malloc'ed; wsrec_free() */
	uint64_t pages;        /* sum over the ranges */
};

/* Parses len bytes at buf.  ram_bytes, when non-zero, must equal the
 * record's.  0, or -EINVAL (-ENOMEM) with a one-line reason in err. */
int wsrec_parse(const uint8_t *buf, size_t len, uint64_t ram_bytes, struct wsrec *out, char *err,
                size_t errlen) __attribute__((warn_unused_result));

/* Encodes n ranges (already in the order and shape above) into out (cap
 * bytes).  Returns the length, or 0 when they do not fit or break a rule. */
size_t wsrec_format(const struct wsrec_range *r, uint32_t n, uint64_t ram_bytes, uint8_t *out,
                    size_t cap);

/* Adds page (ascending calls) to r[*n] (cap entries), merging it into the
 * last range when it follows it with the same written flag.  false when a
 * new range does not fit. */
bool wsrec_add(struct wsrec_range *r, uint32_t *n, uint32_t cap, uint32_t page, bool written);

void wsrec_free(struct wsrec *w);

#endif
