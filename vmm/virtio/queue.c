#include "virtio/queue.h"

#include <errno.h>
#include <string.h>

/* Offsets inside the driver (avail) and device (used) areas. */
#define AVAIL_FLAGS 0
#define AVAIL_IDX   2
#define AVAIL_RING  4
#define USED_FLAGS  0
#define USED_IDX    2
#define USED_RING   4

/* A descriptor's next field is 16 bits, so no table can use more entries. */
#define VIRTQ_MAX_TABLE_ENTRIES 65536ULL

uint64_t virtq_desc_bytes(uint16_t size)
{
	return sizeof(struct virtq_desc) * (uint64_t)size;
}

uint64_t virtq_avail_bytes(uint16_t size)
{
	/* flags, idx, ring[size], used_event */
	return AVAIL_RING + 2ULL * size + 2;
}

uint64_t virtq_used_bytes(uint16_t size)
{
	/* flags, idx, ring[size], avail_event */
	return USED_RING + sizeof(struct virtq_used_elem) * (uint64_t)size + 2;
}

int virtq_check(const struct virtq *q, const struct guest_mem *mem, uint16_t max_size)
{
	if (max_size > VIRTQ_MAX_SIZE)
		max_size = VIRTQ_MAX_SIZE;
	if (q->size == 0 || q->size > max_size || (q->size & (q->size - 1)))
		return -EINVAL;
	if (q->desc_gpa % VIRTQ_DESC_ALIGN || q->avail_gpa % VIRTQ_AVAIL_ALIGN ||
	    q->used_gpa % VIRTQ_USED_ALIGN)
		return -EINVAL;
	if (!gmem_ptr(mem, q->desc_gpa, virtq_desc_bytes(q->size)) ||
	    !gmem_ptr(mem, q->avail_gpa, virtq_avail_bytes(q->size)) ||
	    !gmem_ptr(mem, q->used_gpa, virtq_used_bytes(q->size)))
		return -EFAULT;
	return 0;
}

void virtq_reset(struct virtq *q)
{
	memset(q, 0, sizeof(*q));
}

/* Ring fields are 2-byte aligned (virtq_check() enforced it), so they can be
 * read and written as single atomic 16-bit accesses the guest cannot tear. */
static uint16_t ring_load16(const uint8_t *p, int order)
{
	return __atomic_load_n((const uint16_t *)(const void *)p, order);
}

static void ring_store16(uint8_t *p, uint16_t v, int order)
{
	__atomic_store_n((uint16_t *)(void *)p, v, order);
}

static int mark_broken(struct virtq *q)
{
	q->broken = true;
	return -EPROTO;
}

static void req_clear(struct virtq_req *req)
{
	req->has_head = false;
	req->head = 0;
	req->n_out = req->n_in = 0;
	req->out_len = req->in_len = 0;
}

/* Walks the chain starting at head.  Each descriptor is copied once into
 * `d` and only the copy is looked at, so a guest rewriting the table under
 * us changes nothing after the copy. */
static int walk_chain(const struct virtq *q, const struct guest_mem *mem, const uint8_t *table,
                      uint16_t head, struct virtq_req *req)
{
	uint64_t table_entries = q->size;
	uint64_t idx = head;
	uint32_t count = 0;
	bool in_indirect = false;
	int fault = 0; /* a buffer outside RAM: reported once the chain ends */

	for (;;) {
		struct virtq_desc d;
		if (idx >= table_entries)
			return -EINVAL;
		memcpy(&d, table + idx * sizeof(d), sizeof(d));

		if (d.flags & VIRTQ_DESC_F_INDIRECT) {
			/* One table per chain, ending the direct part (2.7.5.3). */
			if (in_indirect || (d.flags & VIRTQ_DESC_F_NEXT))
				return -EINVAL;
			if (d.len == 0 || d.len % sizeof(d) ||
			    d.len / sizeof(d) > VIRTQ_MAX_TABLE_ENTRIES)
				return -EINVAL;
			table = gmem_ptr(mem, d.addr, d.len);
			if (!table)
				return -EFAULT;
			table_entries = d.len / sizeof(d);
			idx = 0;
			in_indirect = true;
			continue;
		}

		/* The spec bounds a chain by the queue size; past that it loops. */
		if (++count > q->size)
			return -ELOOP;
		bool writable = d.flags & VIRTQ_DESC_F_WRITE;
		if (!writable && req->n_in)
			return -EINVAL; /* readable after writable */
		void *p = gmem_ptr(mem, d.addr, d.len);
		if (!p) {
			/* Keep walking so the device still finds the chain's
			 * last writable byte (blk's status); the segment stays
			 * as a NULL placeholder holding its position. */
			fault = -EFAULT;
			d.len = 0;
		}
		/* count <= VIRTQ_MAX_SIZE descriptors of < 2^32 bytes: no overflow. */
		if (req->out_len + req->in_len + d.len > VIRTQ_MAX_CHAIN_BYTES)
			return -E2BIG;
		struct iovec *v = &req->iov[req->n_out + req->n_in];
		v->iov_base = p;
		v->iov_len = d.len;
		if (writable) {
			req->n_in++;
			req->in_len += d.len;
		} else {
			req->n_out++;
			req->out_len += d.len;
		}
		if (!(d.flags & VIRTQ_DESC_F_NEXT))
			return fault ? fault : 1;
		idx = d.next;
	}
}

int virtq_pop(struct virtq *q, const struct guest_mem *mem, struct virtq_req *req)
{
	req_clear(req);
	if (q->broken)
		return -EPROTO;
	if (!q->ready)
		return 0;
	uint8_t *avail = gmem_ptr(mem, q->avail_gpa, virtq_avail_bytes(q->size));
	uint8_t *used = gmem_ptr(mem, q->used_gpa, virtq_used_bytes(q->size));
	const uint8_t *table = gmem_ptr(mem, q->desc_gpa, virtq_desc_bytes(q->size));
	if (!avail || !used || !table || q->size == 0 || q->size > VIRTQ_MAX_SIZE)
		return mark_broken(q);

	/* Acquire: the ring entry and descriptors are read after the index. */
	uint16_t avail_idx = ring_load16(avail + AVAIL_IDX, __ATOMIC_ACQUIRE);
	if (avail_idx == q->last_avail_idx) {
		if (!q->event_idx)
			return 0;
		/* Ask for a notification at the next entry, then look again:
		 * the guest may have added one before it saw avail_event. */
		ring_store16(used + USED_RING + sizeof(struct virtq_used_elem) * q->size,
		             q->last_avail_idx, __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		avail_idx = ring_load16(avail + AVAIL_IDX, __ATOMIC_ACQUIRE);
		if (avail_idx == q->last_avail_idx)
			return 0;
	}
	if ((uint16_t)(avail_idx - q->last_avail_idx) > q->size)
		return mark_broken(q);

	uint16_t slot = q->last_avail_idx % q->size;
	uint16_t head = ring_load16(avail + AVAIL_RING + 2 * slot, __ATOMIC_RELAXED);
	if (head >= q->size)
		return mark_broken(q);
	q->last_avail_idx++;
	req->head = head;
	req->has_head = true;
	return walk_chain(q, mem, table, head, req);
}

int virtq_push(struct virtq *q, const struct guest_mem *mem, uint16_t head, uint32_t len)
{
	if (q->size == 0 || head >= q->size)
		return -EINVAL;
	uint8_t *used = gmem_ptr(mem, q->used_gpa, virtq_used_bytes(q->size));
	if (!used)
		return -EFAULT;
	struct virtq_used_elem e = { .id = head, .len = len };
	uint16_t slot = q->used_idx % q->size;
	memcpy(used + USED_RING + sizeof(e) * slot, &e, sizeof(e));
	q->used_idx++;
	/* Release: the element is visible before the index that covers it. */
	ring_store16(used + USED_IDX, q->used_idx, __ATOMIC_RELEASE);
	return 0;
}

void virtq_want_notify(struct virtq *q, const struct guest_mem *mem)
{
	if (!q->event_idx || q->broken)
		return;
	const uint8_t *avail = gmem_ptr(mem, q->avail_gpa, virtq_avail_bytes(q->size));
	uint8_t *used = gmem_ptr(mem, q->used_gpa, virtq_used_bytes(q->size));
	if (!avail || !used || q->size == 0 || q->size > VIRTQ_MAX_SIZE)
		return;
	uint16_t avail_idx = ring_load16(avail + AVAIL_IDX, __ATOMIC_ACQUIRE);
	ring_store16(used + USED_RING + sizeof(struct virtq_used_elem) * q->size, avail_idx,
	             __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}

bool virtq_needs_interrupt(struct virtq *q, const struct guest_mem *mem)
{
	/* The used index store must be visible before we read the driver's
	 * suppression fields, or both sides can decide to wait (2.7.7). */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	uint16_t old = q->signalled_used;
	uint16_t new = q->used_idx;
	q->signalled_used = new;
	if (old == new || q->size == 0)
		return false;
	const uint8_t *avail = gmem_ptr(mem, q->avail_gpa, virtq_avail_bytes(q->size));
	if (!avail)
		return true; /* cannot read the driver's wishes: do not strand it */
	if (q->event_idx) {
		uint16_t used_event =
		    ring_load16(avail + AVAIL_RING + 2 * q->size, __ATOMIC_RELAXED);
		/* Interrupt iff used_event lies in [old, new). */
		return (uint16_t)(new - used_event - 1) < (uint16_t)(new - old);
	}
	return !(ring_load16(avail + AVAIL_FLAGS, __ATOMIC_RELAXED) & VIRTQ_AVAIL_F_NO_INTERRUPT);
}
