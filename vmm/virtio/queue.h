/* The split virtqueue (virtio 1.x, 2.7), shared by every device.
 *
 * The ring lives in guest memory, which is hostile: every descriptor is
 * copied once into host memory before any decision is made on it, every
 * address and length goes through gmem_ptr(), chains are bounded by the
 * queue size, and a malformed chain fails only the request it belongs to.
 *
 * Threading: one queue is driven by one thread at a time (the VM's I/O
 * loop); the transport serialises setup and reset against it. */
#ifndef COVE_VIRTIO_QUEUE_H
#define COVE_VIRTIO_QUEUE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include "base/guest_mem.h"

/* Largest queue any device may offer; bounds the segments of one request. */
#define VIRTQ_MAX_SIZE 256

/* Bytes one chain may describe in total (used.len is 32 bits). */
#define VIRTQ_MAX_CHAIN_BYTES 0xffffffffULL

/* Descriptor flags. */
#define VIRTQ_DESC_F_NEXT     1
#define VIRTQ_DESC_F_WRITE    2
#define VIRTQ_DESC_F_INDIRECT 4

#define VIRTQ_AVAIL_F_NO_INTERRUPT 1
#define VIRTQ_USED_F_NO_NOTIFY     1

/* Ring layouts, used to size and offset the rings (never dereferenced
 * across a guest-controlled index without a bounds check). */
struct virtq_desc {
	uint64_t addr;
	uint32_t len;
	uint16_t flags;
	uint16_t next;
};

struct virtq_used_elem {
	uint32_t id;
	uint32_t len;
};

/* Alignment the spec requires of each ring (2.7, table "Alignment"). */
#define VIRTQ_DESC_ALIGN  16
#define VIRTQ_AVAIL_ALIGN 2
#define VIRTQ_USED_ALIGN  4

/* Plain state of one queue: everything a snapshot needs, no pointers. */
struct virtq {
	uint16_t size;  /* queue size chosen by the driver (power of two) */
	bool ready;     /* set by the transport once the rings are validated */
	bool event_idx; /* VIRTIO_RING_F_EVENT_IDX negotiated */
	bool broken;    /* the ring itself is malformed: stop until reset */
	uint64_t desc_gpa;
	uint64_t avail_gpa;      /* "driver area" */
	uint64_t used_gpa;       /* "device area" */
	uint16_t last_avail_idx; /* next avail entry the device will take */
	uint16_t used_idx;       /* shadow of used->idx (the device owns it) */
	uint16_t signalled_used; /* used_idx when the last interrupt decision was made */
};

/* One request: readable segments first, then writable ones (the spec's
 * order, which virtq_pop() enforces), as host iovecs into guest RAM. */
struct virtq_req {
	uint16_t head;    /* descriptor index to hand back to virtq_push() */
	bool has_head;    /* false only when the ring (not the chain) is broken */
	uint32_t n_out;   /* readable segments: iov[0 .. n_out) */
	uint32_t n_in;    /* writable segments: iov[n_out .. n_out + n_in) */
	uint64_t out_len; /* bytes in the readable segments */
	uint64_t in_len;  /* bytes in the writable segments */
	struct iovec iov[VIRTQ_MAX_SIZE];
};

static inline struct iovec *virtq_req_out(struct virtq_req *r)
{
	return r->iov;
}

static inline struct iovec *virtq_req_in(struct virtq_req *r)
{
	return r->iov + r->n_out;
}

/* Bytes of guest memory each ring occupies for a queue of `size`
 * (including used_event / avail_event, which are always reserved). */
uint64_t virtq_desc_bytes(uint16_t size);
uint64_t virtq_avail_bytes(uint16_t size);
uint64_t virtq_used_bytes(uint16_t size);

/* Checks that a queue about to become ready is sane: size a non-zero
 * power of two no larger than max_size (itself <= VIRTQ_MAX_SIZE), each ring
 * aligned and wholly inside guest RAM.  Returns 0 or -EINVAL / -EFAULT.
 * Pure: changes nothing. */
int virtq_check(const struct virtq *q, const struct guest_mem *mem, uint16_t max_size)
    __attribute__((warn_unused_result));

/* Puts the queue back to its reset state (not ready, size 0, no rings). */
void virtq_reset(struct virtq *q);

/* Takes the next available chain.  Call only on a ready queue.
 *   0         nothing available (with event-idx on, avail_event has been
 *             re-armed and the ring re-checked, so no notification is lost);
 *   1         req holds a valid request;
 *   < 0       the chain is malformed: -ELOOP (more descriptors than the
 *             queue size), -EFAULT (outside RAM), -EINVAL (bad index or flags,
 *             writable before readable, nested indirect), -E2BIG (more than
 *             VIRTQ_MAX_CHAIN_BYTES).  If req->has_head the head was
 *             consumed: the device must still virtq_push() it and req
 *             holds the segments validated before the fault.  For -EFAULT
 *             the walk went on to the end of the chain and each buffer
 *             outside RAM is a segment with iov_base NULL, iov_len 0, so
 *             the last writable segment is the chain's own.  If not,
 *             the ring is broken (-EPROTO: avail idx jumped past the queue
 *             size, a head index out of range, rings not in RAM): q->broken
 *             is set, every later call returns -EPROTO until virtq_reset(),
 *             and the device should signal DEVICE_NEEDS_RESET. */
int virtq_pop(struct virtq *q, const struct guest_mem *mem, struct virtq_req *req)
    __attribute__((warn_unused_result));

/* Publishes a used element (head, bytes written) with release ordering
 * before the used index moves.  -EFAULT if the used ring left RAM. */
int virtq_push(struct virtq *q, const struct guest_mem *mem, uint16_t head, uint32_t len)
    __attribute__((warn_unused_result));

/* Whether the driver wants an interrupt for the used entries pushed since
 * the previous call (used_event with event-idx, else the NO_INTERRUPT flag).
 * Call once after a batch of virtq_push(); it records the decision point. */
bool virtq_needs_interrupt(struct virtq *q, const struct guest_mem *mem);

/* Asks the driver to notify at its next available entry (avail_event with
 * event-idx; without it the driver notifies anyway). */
void virtq_want_notify(struct virtq *q, const struct guest_mem *mem);

#endif
