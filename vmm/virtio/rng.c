#include "virtio/rng.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <sys/random.h>

_Static_assert(VRNG_QUEUE_SIZE <= VIRTQ_MAX_SIZE, "queue fits the shared virtqueue");
_Static_assert(VRNG_MAX_CHAIN_BYTES <= VRNG_MAX_BATCH_BYTES, "a batch holds a whole chain");

struct vrng {
	struct virtio_mmio t; /* plain state lives in t.st */
	struct virtq_req req; /* scratch for the request in hand */
};

/* Fills [p, p + len) from the host's entropy pool.  getrandom() may return
 * less than asked (a signal, or more than it hands out at once), so it is
 * called until the buffer is full.  Returns the bytes filled. */
static size_t fill_random(void *p, size_t len)
{
	size_t done = 0;
	while (done < len) {
		ssize_t n = getrandom((char *)p + done, len - done, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		done += (size_t)n;
	}
	return done;
}

/* Fills the writable segments of a valid request, at most `budget` bytes.
 * Returns the bytes written, which is the used length. */
static uint32_t fill_request(struct virtq_req *r, size_t budget)
{
	struct iovec *in = virtq_req_in(r);
	size_t written = 0;
	for (uint32_t i = 0; i < r->n_in && written < budget; i++) {
		size_t want = in[i].iov_len;
		if (want > budget - written)
			want = budget - written;
		size_t got = fill_random(in[i].iov_base, want);
		written += got;
		if (got < want)
			break; /* the host pool failed: report what is there */
	}
	return (uint32_t)written; /* <= VRNG_MAX_CHAIN_BYTES */
}

/* Completes the request in r->req: rc is virtq_pop()'s result.  Only a
 * valid chain of device-writable buffers gets bytes; anything else is
 * handed back empty.  Adds the bytes written to *spent.  Returns
 * virtq_push()'s result. */
static int complete_request(struct vrng *r, struct virtq *q, int rc, size_t *spent)
{
	struct virtq_req *req = &r->req;
	uint32_t used_len = 0;
	if (rc > 0 && req->n_out == 0) {
		size_t budget = VRNG_MAX_BATCH_BYTES - *spent;
		if (budget > VRNG_MAX_CHAIN_BYTES)
			budget = VRNG_MAX_CHAIN_BYTES;
		used_len = fill_request(req, budget);
	}
	*spent += used_len;
	return virtq_push(q, r->t.cfg.mem, req->head, used_len);
}

/* Asks the I/O loop to call queue_notify again on a later pass, after the
 * other file descriptors it watches had their turn.  The same eventfd a
 * QueueNotify write lands on, so it is handled exactly like one.  Without a
 * VM there is no loop: the rest waits for the driver's next notification. */
static void requeue(struct vrng *r, uint16_t queue)
{
	int fd = r->t.notifiers[queue].fd;
	if (fd >= 0)
		(void)eventfd_write(fd, 1);
}

static void vrng_queue_notify(void *dev, uint16_t queue)
{
	struct vrng *r = dev;
	struct virtq *q = &r->t.st.queues[queue];
	const struct guest_mem *mem = r->t.cfg.mem;
	size_t spent = 0;
	unsigned int chains = 0;

	for (;;) {
		/* A guest refilling the ring as fast as it drains must not keep
		 * this thread: one queue's worth of chains, or the byte budget,
		 * per pass. */
		if (spent >= VRNG_MAX_BATCH_BYTES || chains >= q->size) {
			requeue(r, queue);
			break;
		}
		int rc = virtq_pop(q, mem, &r->req);
		if (rc == 0)
			break;
		if (rc < 0 && !r->req.has_head) {
			virtio_mmio_needs_reset(&r->t);
			break;
		}
		chains++;
		if (complete_request(r, q, rc, &spent) < 0) {
			virtio_mmio_needs_reset(&r->t);
			break;
		}
	}
	if (virtq_needs_interrupt(q, mem))
		virtio_mmio_signal_used(&r->t);
}

/* No config space and no feature bits of its own; activate and reset need
 * nothing beyond the transport's work. */
static const struct virtio_dev_ops vrng_ops = {
	.name = "virtio-rng",
	.device_id = VIRTIO_ID_RNG,
	.num_queues = 1,
	.queue_max = VRNG_QUEUE_SIZE,
	.features = 0,
	.config_size = 0,
	.queue_notify = vrng_queue_notify,
};

int vrng_create(const struct virtio_mmio_cfg *cfg, struct vrng **out)
{
	*out = NULL;
	if (!cfg)
		return -EINVAL;
	struct vrng *r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	int err = virtio_mmio_init(&r->t, cfg, &vrng_ops, r);
	if (err) {
		free(r); /* a failed init has already undone itself */
		return err;
	}
	*out = r;
	return 0;
}

void vrng_destroy(struct vrng *r)
{
	if (!r)
		return;
	virtio_mmio_destroy(&r->t);
	free(r);
}

struct virtio_mmio *vrng_transport(struct vrng *r)
{
	return &r->t;
}

int vrng_cmdline(const struct vrng *r, char *buf, size_t len)
{
	return virtio_mmio_cmdline(&r->t, buf, len);
}

static struct virtio_mmio *rng_vdev_transport(void *dev)
{
	return vrng_transport(dev);
}

static void rng_vdev_destroy(void *dev)
{
	vrng_destroy(dev);
}

const struct vdev_ops vrng_vdev_ops = {
	.transport = rng_vdev_transport,
	.destroy = rng_vdev_destroy,
};
