/* A detached process's output history: a bounded ring of output chunks,
 * addressed by byte offset since the process started (stdout and stderr
 * share one offset space, in the order the agent read them).  Pure; no
 * locking (proc.c holds the process's lock). */
#ifndef COVE_AGENT_PROC_RING_H
#define COVE_AGENT_PROC_RING_H

#include <stddef.h>
#include <stdint.h>

#define PROC_RING_SLOTS 1024
#define PROC_RING_BYTES (1u << 20) /* output kept for a late attach */

struct proc_chunk;

struct proc_ring {
	struct proc_chunk *slot[PROC_RING_SLOTS];
	uint64_t head_seq, next_seq; /* chunks [head_seq, next_seq) are kept */
	uint64_t head_off, next_off; /* the bytes they hold: [head_off, next_off) */
	size_t bytes, cap;           /* bytes held, at most cap (or one chunk) */
};

/* cap 0 means PROC_RING_BYTES. */
void proc_ring_init(struct proc_ring *r, size_t cap);
void proc_ring_fini(struct proc_ring *r);

/* Appends len bytes (1 .. any) of stream (1 stdout, 2 stderr), dropping the
 * oldest chunks to stay within cap and PROC_RING_SLOTS.  -ENOMEM, -EINVAL. */
int proc_ring_append(struct proc_ring *r, int stream, const void *data, size_t len)
    __attribute__((warn_unused_result));

/* Copies up to buflen bytes of one chunk: the first byte at or after
 * offset that is still kept.  Returns the count (0 when nothing at or past
 * offset is there yet) with *stream and *at (the offset of the first byte
 * copied; at > offset when older bytes were dropped). */
size_t proc_ring_get(const struct proc_ring *r, uint64_t offset, int *stream, uint8_t *buf,
                     size_t buflen, uint64_t *at);

#endif
