#include "virtio/blk.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

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
};

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
static uint8_t handle_request(struct vblk *b, struct virtq_req *r, uint32_t *written)
{
	struct iovec *out = virtq_req_out(r);
	struct iovec *in = virtq_req_in(r);
	uint32_t n_out = r->n_out, n_in = r->n_in;
	struct virtio_blk_req_hdr hdr;

	*written = 0;
	if (iov_to_buf(out, n_out, 0, &hdr, sizeof(hdr)) != sizeof(hdr))
		return VIRTIO_BLK_S_IOERR;
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

/* Completes the request in b->req: rc is virtq_pop()'s result (1 for a
 * valid chain, negative for a malformed one).  Returns virtq_push()'s. */
static int complete_request(struct vblk *b, struct virtq *q, int rc)
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
		if (rc > 0) {
			*status = handle_request(b, r, &written);
		} else {
			*status = VIRTIO_BLK_S_IOERR;
		}
		used_len = written + 1;
	}
	return virtq_push(q, b->t.cfg.mem, r->head, used_len);
}

static void vblk_queue_notify(void *dev, uint16_t queue)
{
	struct vblk *b = dev;
	struct virtq *q = &b->t.st.queues[queue];
	const struct guest_mem *mem = b->t.cfg.mem;

	if (!b->disk)
		return; /* between a swap's close and open: requests wait */
	for (;;) {
		int rc = virtq_pop(q, mem, &b->req);
		if (rc == 0)
			break;
		if (rc < 0 && !b->req.has_head) {
			virtio_mmio_needs_reset(&b->t);
			break;
		}
		if (complete_request(b, q, rc) < 0) {
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

int vblk_create(const struct virtio_mmio_cfg *cfg, struct disk *disk, struct vblk **out)
{
	*out = NULL;
	if (!cfg || !disk || disk->size < VIRTIO_BLK_SECTOR_SIZE)
		return -EINVAL;
	struct vblk *b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	b->disk = disk;
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
