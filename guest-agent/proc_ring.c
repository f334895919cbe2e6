/* The output ring of a detached process (proc_ring.h). */
#include "proc_ring.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct proc_chunk {
	uint64_t off;
	size_t len;
	int stream;
	uint8_t data[];
};

void proc_ring_init(struct proc_ring *r, size_t cap)
{
	memset(r, 0, sizeof(*r));
	r->cap = cap ? cap : PROC_RING_BYTES;
}

static void drop_head(struct proc_ring *r)
{
	struct proc_chunk **s = &r->slot[r->head_seq % PROC_RING_SLOTS];
	r->bytes -= (*s)->len;
	r->head_off = (*s)->off + (*s)->len;
	free(*s);
	*s = NULL;
	r->head_seq++;
}

void proc_ring_fini(struct proc_ring *r)
{
	while (r->head_seq < r->next_seq)
		drop_head(r);
}

int proc_ring_append(struct proc_ring *r, int stream, const void *data, size_t len)
{
	if (len == 0 || (stream != 1 && stream != 2) || len > SIZE_MAX - sizeof(struct proc_chunk))
		return -EINVAL;
	struct proc_chunk *c = malloc(sizeof(*c) + len);
	if (!c)
		return -ENOMEM;
	c->off = r->next_off;
	c->len = len;
	c->stream = stream;
	memcpy(c->data, data, len);
	while (r->head_seq < r->next_seq &&
	       (r->next_seq - r->head_seq >= PROC_RING_SLOTS || r->bytes + len > r->cap))
		drop_head(r);
	if (r->head_seq == r->next_seq)
		r->head_off = c->off;
	r->slot[r->next_seq % PROC_RING_SLOTS] = c;
	r->next_seq++;
	r->next_off += len;
	r->bytes += len;
	return 0;
}

size_t proc_ring_get(const struct proc_ring *r, uint64_t offset, int *stream, uint8_t *buf,
                     size_t buflen, uint64_t *at)
{
	if (offset < r->head_off)
		offset = r->head_off;
	if (offset >= r->next_off || buflen == 0)
		return 0;
	/* Chunks are few (at most PROC_RING_SLOTS): a linear walk. */
	for (uint64_t q = r->head_seq; q < r->next_seq; q++) {
		const struct proc_chunk *c = r->slot[q % PROC_RING_SLOTS];
		if (offset >= c->off + c->len)
			continue;
		size_t skip = (size_t)(offset - c->off);
		size_t n = c->len - skip;
		if (n > buflen)
			n = buflen;
		memcpy(buf, c->data + skip, n);
		*stream = c->stream;
		*at = offset;
		return n;
	}
	return 0;
}
