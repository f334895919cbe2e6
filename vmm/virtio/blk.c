#include "virtio/blk.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "base/ratelimit.h"
#include "virtio/iov.h"

_Static_assert(sizeof(struct virtio_blk_req_hdr) == 16, "blk header is 16 bytes");
_Static_assert(sizeof(struct virtio_blk_discard_seg) == 16, "discard segment is 16 bytes");
_Static_assert(sizeof(struct virtio_blk_config) == 60, "blk config layout");
_Static_assert(VBLK_QUEUE_SIZE <= VIRTQ_MAX_SIZE, "queue fits the shared virtqueue");

#define SECTOR_SHIFT 9

struct vblk {
	struct virtio_mmio t; /* plain state lives in t.st */
	struct disk *disk;
	struct virtio_blk_config config;    /* derived from the disk; not state */
	struct virtq_req req;               /* scratch for the request in hand */
	uint64_t bytes_read, bytes_written; /* guest requests served (atomic) */
	/* Rate limiting (vblk_set_limits); runtime only, not state. */
	struct ratelimit rl;
	int timer_fd;   /* timerfd on the I/O loop that resumes the queue; -1: none */
	bool throttled; /* the timer is armed: the queue waits for it */
	struct evloop *loop;
	uint64_t throttled_events, throttled_ns; /* copies of rl's counters (atomic) */
};

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * RL_NS_PER_S + (uint64_t)ts.tv_nsec;
}

/* Sector + bytes -> byte offset, refusing overflow; capacity is checked by
 * the disk_* wrappers. */
static bool sector_offset(uint64_t sector, uint64_t *off)
{
	if (sector > (UINT64_MAX >> SECTOR_SHIFT))
		return false;
	*off = sector << SECTOR_SHIFT;
	return true;
}

static uint8_t status_of(int err)
{
	return err ? VIRTIO_BLK_S_IOERR : VIRTIO_BLK_S_OK;
}

static uint8_t do_read(struct vblk *b, uint64_t sector, struct iovec *in, uint32_t n_in,
                       uint64_t in_len, uint32_t *written)
{
	uint64_t off;
	if (in_len % VIRTIO_BLK_SECTOR_SIZE || !sector_offset(sector, &off))
		return VIRTIO_BLK_S_IOERR;
	int err = disk_read(b->disk, off, in, (int)n_in);
	if (!err)
		*written = (uint32_t)in_len; /* a chain is < 4 GiB */
	return status_of(err);
}

static uint8_t do_write(struct vblk *b, uint64_t sector, struct iovec *out, uint32_t n_out)
{
	uint64_t off;
	uint64_t len = disk_iov_total(out, (int)n_out);
	if (b->disk->read_only || len % VIRTIO_BLK_SECTOR_SIZE || !sector_offset(sector, &off))
		return VIRTIO_BLK_S_IOERR;
	return status_of(disk_write(b->disk, off, out, (int)n_out));
}

static uint8_t do_get_id(struct vblk *b, struct iovec *in, uint32_t n_in, uint32_t *written)
{
	uint8_t id[VIRTIO_BLK_ID_BYTES] = { 0 };
	memcpy(id, b->disk->id, strnlen(b->disk->id, sizeof(id)));
	*written = (uint32_t)iov_from_buf(in, n_in, id, sizeof(id));
	return VIRTIO_BLK_S_OK;
}

/* DISCARD and WRITE_ZEROES: the data is an array of 16-byte segments. */
static uint8_t do_ranges(struct vblk *b, uint32_t type, struct iovec *out, uint32_t n_out)
{
	bool zeroes = type == VIRTIO_BLK_T_WRITE_ZEROES;
	uint64_t len = disk_iov_total(out, (int)n_out);
	uint64_t nseg = len / sizeof(struct virtio_blk_discard_seg);
	if (b->disk->read_only || len % sizeof(struct virtio_blk_discard_seg) || nseg == 0 ||
	    nseg > (zeroes ? b->config.max_write_zeroes_seg : b->config.max_discard_seg))
		return VIRTIO_BLK_S_IOERR;
	uint32_t max_sectors =
	    zeroes ? b->config.max_write_zeroes_sectors : b->config.max_discard_sectors;

	for (uint64_t i = 0; i < nseg; i++) {
		struct virtio_blk_discard_seg seg;
		(void)iov_to_buf(out, n_out, i * sizeof(seg), &seg, sizeof(seg));
		if (seg.flags & ~(uint32_t)VIRTIO_BLK_WZ_F_UNMAP)
			return VIRTIO_BLK_S_UNSUPP;
		/* Unmap means nothing for a discard; the spec says refuse it. */
		if (!zeroes && (seg.flags & VIRTIO_BLK_WZ_F_UNMAP))
			return VIRTIO_BLK_S_UNSUPP;
		uint64_t off;
		if (seg.num_sectors > max_sectors || !sector_offset(seg.sector, &off))
			return VIRTIO_BLK_S_IOERR;
		uint64_t bytes = (uint64_t)seg.num_sectors << SECTOR_SHIFT;
		int err = zeroes ? disk_write_zeroes(b->disk, off, bytes,
		                                     seg.flags & VIRTIO_BLK_WZ_F_UNMAP)
		                 : disk_discard(b->disk, off, bytes);
		if (err)
			return VIRTIO_BLK_S_IOERR;
	}
	return VIRTIO_BLK_S_OK;
}

/* Runs one well-formed chain whose status byte was already split off.
 * Sets *written to the data bytes put into writable segments. */
static uint8_t handle_request(struct vblk *b, struct virtq_req *r,
                              const struct virtio_blk_req_hdr *h, uint32_t *written)
{
	struct iovec *out = virtq_req_out(r);
	struct iovec *in = virtq_req_in(r);
	uint32_t n_out = r->n_out, n_in = r->n_in;
	const struct virtio_blk_req_hdr hdr = *h;

	*written = 0;
	(void)iov_drop_front(&out, &n_out, sizeof(hdr));
	uint64_t in_len = disk_iov_total(in, (int)n_in);

	switch (hdr.type) {
	case VIRTIO_BLK_T_IN: {
		uint8_t st = do_read(b, hdr.sector, in, n_in, in_len, written);
		if (st == VIRTIO_BLK_S_OK)
			__atomic_add_fetch(&b->bytes_read, in_len, __ATOMIC_RELAXED);
		return st;
	}
	case VIRTIO_BLK_T_OUT: {
		uint8_t st = do_write(b, hdr.sector, out, n_out);
		if (st == VIRTIO_BLK_S_OK)
			__atomic_add_fetch(&b->bytes_written, disk_iov_total(out, (int)n_out),
			                   __ATOMIC_RELAXED);
		return st;
	}
	case VIRTIO_BLK_T_FLUSH:
		return status_of(disk_flush(b->disk));
	case VIRTIO_BLK_T_GET_ID:
		return do_get_id(b, in, n_in, written);
	case VIRTIO_BLK_T_DISCARD:
	case VIRTIO_BLK_T_WRITE_ZEROES:
		return do_ranges(b, hdr.type, out, n_out);
	default:
		return VIRTIO_BLK_S_UNSUPP;
	}
}

/* The request's header, copied out of guest memory once: the rate
 * limiter's cost and the request's handling both decide on this copy, so
 * a guest cannot turn a cheap request into a costly one in between.
 * False for a chain too short to hold one. */
static bool read_header(struct virtq_req *r, struct virtio_blk_req_hdr *hdr)
{
	return iov_to_buf(virtq_req_out(r), r->n_out, 0, hdr, sizeof(*hdr)) == sizeof(*hdr);
}

/* Completes the request in b->req: rc is virtq_pop()'s result (1 for a
 * valid chain, negative for a malformed one), hdr its header when
 * hdr_ok.  Returns virtq_push()'s. */
static int complete_request(struct vblk *b, struct virtq *q, int rc,
                            const struct virtio_blk_req_hdr *hdr, bool hdr_ok)
{
	struct virtq_req *r = &b->req;
	/* The status byte is the last writable byte of the chain.  For a chain
	 * that failed part-way, the last one seen is the best guess there is
	 * (the request failed, so its buffers' contents are undefined anyway),
	 * unless that last segment was itself outside RAM. */
	struct iovec *in = virtq_req_in(r);
	uint8_t *status = NULL;
	if (rc > 0 || (r->n_in && in[r->n_in - 1].iov_base))
		status = iov_pop_last_byte(in, &r->n_in);
	uint32_t written = 0;
	uint32_t used_len = 0;
	if (status) {
		if (rc > 0 && hdr_ok) {
			*status = handle_request(b, r, hdr, &written);
		} else {
			*status = VIRTIO_BLK_S_IOERR;
		}
		used_len = written + 1;
	}
	return virtq_push(q, b->t.cfg.mem, r->head, used_len);
}

/* Data bytes a request moves, for the byte bucket: reads and writes
 * count, flushes, discards and the rest only as operations. */
static uint64_t request_bytes(const struct virtq_req *r, const struct virtio_blk_req_hdr *hdr)
{
	if (hdr->type == VIRTIO_BLK_T_IN)
		return r->in_len ? r->in_len - 1 : 0; /* less the status byte */
	if (hdr->type == VIRTIO_BLK_T_OUT)
		return r->out_len - sizeof(*hdr);
	return 0;
}

/* Gives the request just popped back to the ring: the next virtq_pop()
 * takes (and validates) it again.  Nothing of it was used, and a snapshot
 * taken meanwhile sees it as never taken. */
static void unpop(struct virtq *q)
{
	q->last_avail_idx--;
}

/* Whether the limiter lets the request in b->req run now; if not, the
 * request goes back to the ring and the timer is armed for when it may. */
static bool admit(struct vblk *b, struct virtq *q, const struct virtio_blk_req_hdr *hdr)
{
	uint64_t wait = rl_take(&b->rl, request_bytes(&b->req, hdr), 1, now_ns());
	__atomic_store_n(&b->throttled_events, b->rl.throttled, __ATOMIC_RELAXED);
	__atomic_store_n(&b->throttled_ns, b->rl.throttled_ns, __ATOMIC_RELAXED);
	if (!wait)
		return true;
	struct itimerspec its = {
		.it_value = { .tv_sec = (time_t)(wait / RL_NS_PER_S),
		              .tv_nsec = (long)(wait % RL_NS_PER_S) },
	};
	/* #syscalls: timerfd_settime (I/O thread) */
	if (timerfd_settime(b->timer_fd, 0, &its, NULL) < 0)
		return true; /* cannot wait: serve rather than stall the queue */
	unpop(q);
	b->throttled = true;
	return false;
}

static void vblk_queue_notify(void *dev, uint16_t queue)
{
	struct vblk *b = dev;
	struct virtq *q = &b->t.st.queues[queue];
	const struct guest_mem *mem = b->t.cfg.mem;

	if (!b->disk)
		return; /* between a swap's close and open: requests wait */
	if (b->throttled)
		return; /* the limiter's timer resumes the queue */
	bool limited = b->timer_fd >= 0 && rl_enabled(&b->rl);
	for (;;) {
		int rc = virtq_pop(q, mem, &b->req);
		if (rc == 0)
			break;
		if (rc < 0 && !b->req.has_head) {
			virtio_mmio_needs_reset(&b->t);
			break;
		}
		struct virtio_blk_req_hdr hdr = { 0 };
		bool hdr_ok = rc > 0 && read_header(&b->req, &hdr);
		if (hdr_ok && limited && !admit(b, q, &hdr))
			break;
		if (complete_request(b, q, rc, &hdr, hdr_ok) < 0) {
			virtio_mmio_needs_reset(&b->t);
			break;
		}
	}
	if (virtq_needs_interrupt(q, mem))
		virtio_mmio_signal_used(&b->t);
}

static void vblk_config_read(void *dev, uint32_t offset, uint8_t *data, uint32_t len)
{
	const struct vblk *b = dev;
	/* The transport bounds offset + len by config_size. */
	memcpy(data, (const uint8_t *)&b->config + offset, len);
}

#define VBLK_OPS_COMMON                                                                \
	.name = "virtio-blk", .device_id = VIRTIO_ID_BLOCK, .num_queues = 1,           \
	.queue_max = VBLK_QUEUE_SIZE, .config_size = sizeof(struct virtio_blk_config), \
	.config_read = vblk_config_read, .queue_notify = vblk_queue_notify

/* The writeback byte is not offered (no CONFIG_WCE), so config space is
 * read-only and activate/reset need nothing beyond the transport's work. */
static const struct virtio_dev_ops vblk_ops_rw = {
	VBLK_OPS_COMMON,
	.features = VIRTIO_BIT(VIRTIO_BLK_F_SEG_MAX) | VIRTIO_BIT(VIRTIO_BLK_F_BLK_SIZE) |
	            VIRTIO_BIT(VIRTIO_BLK_F_FLUSH) | VIRTIO_BIT(VIRTIO_BLK_F_DISCARD) |
	            VIRTIO_BIT(VIRTIO_BLK_F_WRITE_ZEROES),
};

static const struct virtio_dev_ops vblk_ops_ro = {
	VBLK_OPS_COMMON,
	.features = VIRTIO_BIT(VIRTIO_BLK_F_SEG_MAX) | VIRTIO_BIT(VIRTIO_BLK_F_BLK_SIZE) |
	            VIRTIO_BIT(VIRTIO_BLK_F_FLUSH) | VIRTIO_BIT(VIRTIO_BLK_F_RO),
};

static void fill_config(struct vblk *b)
{
	struct virtio_blk_config *c = &b->config;
	memset(c, 0, sizeof(*c));
	c->capacity = b->disk->size >> SECTOR_SHIFT;
	c->seg_max = VBLK_SEG_MAX;
	c->blk_size = VIRTIO_BLK_SECTOR_SIZE;
	c->num_queues = 1;
	if (!b->disk->read_only) {
		c->max_discard_sectors = VBLK_MAX_DISCARD_SECTORS;
		c->max_discard_seg = VBLK_MAX_DISCARD_SEG;
		c->discard_sector_alignment = VBLK_DISCARD_ALIGN_SECTORS;
		c->max_write_zeroes_sectors = VBLK_MAX_DISCARD_SECTORS;
		c->max_write_zeroes_seg = VBLK_MAX_DISCARD_SEG;
		c->write_zeroes_may_unmap = 1;
	}
}

/* The limiter's timer fired: enough tokens for the request that waited. */
static void vblk_timer(void *opaque, uint32_t events)
{
	struct vblk *b = opaque;
	uint64_t expirations;
	(void)events;
	/* #syscalls: read (I/O thread, the timerfd) */
	if (read(b->timer_fd, &expirations, sizeof(expirations)) < 0)
		return; /* EAGAIN: a stale wake-up */
	pthread_mutex_lock(&b->t.lock);
	b->throttled = false;
	uint32_t st = b->t.st.status;
	if ((st & VIRTIO_STATUS_DRIVER_OK) && !(st & VIRTIO_STATUS_DEVICE_NEEDS_RESET) &&
	    b->t.st.queues[0].ready)
		vblk_queue_notify(b, 0);
	pthread_mutex_unlock(&b->t.lock);
}

int vblk_set_limits(struct vblk *b, const struct vblk_limits *l)
{
	if (!l->bps && !l->iops)
		return 0;
	if (!b->t.cfg.loop)
		return -EINVAL;
	if (b->timer_fd < 0) {
		/* #syscalls: timerfd_create (main thread, at setup) */
		b->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
		if (b->timer_fd < 0)
			return -errno;
		int r = evloop_add(b->t.cfg.loop, b->timer_fd, EPOLLIN, vblk_timer, b);
		if (r < 0) {
			close(b->timer_fd);
			b->timer_fd = -1;
			return r;
		}
		b->loop = b->t.cfg.loop;
	}
	rl_init(&b->rl, l->bps, l->bps_burst, l->iops, l->iops_burst, now_ns());
	return 0;
}

void vblk_throttle_counts(struct vblk *b, uint64_t *events, uint64_t *ns)
{
	*events = __atomic_load_n(&b->throttled_events, __ATOMIC_RELAXED);
	*ns = __atomic_load_n(&b->throttled_ns, __ATOMIC_RELAXED);
}

int vblk_create(const struct virtio_mmio_cfg *cfg, struct disk *disk, struct vblk **out)
{
	*out = NULL;
	if (!cfg || !disk || disk->size < VIRTIO_BLK_SECTOR_SIZE)
		return -EINVAL;
	struct vblk *b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	b->disk = disk;
	b->timer_fd = -1;
	fill_config(b);
	int err = virtio_mmio_init(&b->t, cfg, disk->read_only ? &vblk_ops_ro : &vblk_ops_rw, b);
	if (err) {
		free(b); /* a failed init has already undone itself */
		return err;
	}
	*out = b;
	return 0;
}

void vblk_destroy(struct vblk *b)
{
	if (!b)
		return;
	if (b->timer_fd >= 0) {
		(void)evloop_del(b->loop, b->timer_fd);
		close(b->timer_fd);
	}
	virtio_mmio_destroy(&b->t);
	free(b);
}

struct virtio_mmio *vblk_transport(struct vblk *b)
{
	return &b->t;
}

int vblk_cmdline(const struct vblk *b, char *buf, size_t len)
{
	return virtio_mmio_cmdline(&b->t, buf, len);
}

struct disk *vblk_swap_disk(struct vblk *b, struct disk *disk)
{
	pthread_mutex_lock(&b->t.lock);
	struct disk *old = b->disk;
	/* The host's cap on the image file holds for the disk that replaces it. */
	if (disk && old)
		disk->max_file = old->max_file;
	b->disk = disk;
	pthread_mutex_unlock(&b->t.lock);
	return old;
}

struct disk *vblk_disk(struct vblk *b)
{
	return b->disk;
}

void vblk_io_counts(struct vblk *b, uint64_t *read, uint64_t *written)
{
	*read = __atomic_load_n(&b->bytes_read, __ATOMIC_RELAXED);
	*written = __atomic_load_n(&b->bytes_written, __ATOMIC_RELAXED);
}

static struct virtio_mmio *blk_vdev_transport(void *dev)
{
	return vblk_transport(dev);
}

/* The device with the disk it serves then (a snapshot may have swapped in
 * a fresh overlay): disk_close() releases its lock, descriptors, tables and
 * caches (writes went through already; durability is the guest's FLUSH). */
static void blk_vdev_destroy(void *dev)
{
	struct disk *d = vblk_swap_disk(dev, NULL);
	vblk_destroy(dev);
	disk_close(d);
}

const struct vdev_ops vblk_vdev_ops = {
	.transport = blk_vdev_transport,
	.destroy = blk_vdev_destroy,
};
