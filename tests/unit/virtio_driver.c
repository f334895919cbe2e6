#include "virtio_driver.h"

#include <string.h>

#include "unit.h"

void vdrv_init(struct vdrv *d, struct guest_mem *mem, struct bus *bus, uint64_t base)
{
	memset(d, 0, sizeof(*d));
	d->mem = mem;
	d->bus = bus;
	d->base = base;
}

void vdrv_ring(struct vdrv *d, unsigned int q, uint64_t desc, uint64_t avail, uint64_t used,
               uint16_t size)
{
	ck_assert_uint_lt(q, VIRTIO_MMIO_MAX_QUEUES);
	d->q[q] = (struct vdrv_ring){ .desc = desc, .avail = avail, .used = used, .size = size };
	if (q >= d->nq)
		d->nq = q + 1;
}

uint32_t vdrv_rd(struct vdrv *d, uint64_t reg)
{
	uint32_t v = 0xdeadbeef;
	ck_assert(bus_access(d->bus, d->base + reg, (uint8_t *)&v, 4, false));
	return v;
}

void vdrv_wr(struct vdrv *d, uint64_t reg, uint32_t v)
{
	ck_assert(bus_access(d->bus, d->base + reg, (uint8_t *)&v, 4, true));
}

void vdrv_up(struct vdrv *d, uint64_t want, uint32_t num_max)
{
	vdrv_wr(d, VIRTIO_MMIO_STATUS, VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER);
	for (uint32_t sel = 0; sel < 2; sel++) {
		vdrv_wr(d, VIRTIO_MMIO_DEVICE_FEATURES_SEL, sel);
		uint32_t f =
		    vdrv_rd(d, VIRTIO_MMIO_DEVICE_FEATURES) & (uint32_t)(want >> (32 * sel));
		vdrv_wr(d, VIRTIO_MMIO_DRIVER_FEATURES_SEL, sel);
		vdrv_wr(d, VIRTIO_MMIO_DRIVER_FEATURES, f);
	}
	uint32_t st = VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER | VIRTIO_STATUS_FEATURES_OK;
	vdrv_wr(d, VIRTIO_MMIO_STATUS, st);
	ck_assert(vdrv_rd(d, VIRTIO_MMIO_STATUS) & VIRTIO_STATUS_FEATURES_OK);
	for (uint32_t q = 0; q < d->nq; q++) {
		const struct vdrv_ring *r = &d->q[q];
		vdrv_wr(d, VIRTIO_MMIO_QUEUE_SEL, q);
		if (num_max)
			ck_assert_uint_eq(vdrv_rd(d, VIRTIO_MMIO_QUEUE_NUM_MAX), num_max);
		vdrv_wr(d, VIRTIO_MMIO_QUEUE_NUM, r->size);
		vdrv_wr(d, VIRTIO_MMIO_QUEUE_DESC_LOW, (uint32_t)r->desc);
		vdrv_wr(d, VIRTIO_MMIO_QUEUE_DRIVER_LOW, (uint32_t)r->avail);
		vdrv_wr(d, VIRTIO_MMIO_QUEUE_DEVICE_LOW, (uint32_t)r->used);
		vdrv_wr(d, VIRTIO_MMIO_QUEUE_READY, 1);
		ck_assert_uint_eq(vdrv_rd(d, VIRTIO_MMIO_QUEUE_READY), 1);
	}
	vdrv_wr(d, VIRTIO_MMIO_STATUS, st | VIRTIO_STATUS_DRIVER_OK);
}

void vdrv_put_desc_at(struct vdrv *d, uint64_t table, uint16_t i, uint64_t addr, uint32_t len,
                      uint16_t flags, uint16_t next)
{
	struct virtq_desc v = { .addr = addr, .len = len, .flags = flags, .next = next };
	ck_assert_int_eq(gmem_write(d->mem, table + 16ULL * i, &v, sizeof(v)), 0);
}

void vdrv_put_desc(struct vdrv *d, unsigned int q, uint16_t i, uint64_t addr, uint32_t len,
                   uint16_t flags, uint16_t next)
{
	vdrv_put_desc_at(d, d->q[q].desc, i, addr, len, flags, next);
}

void vdrv_put16(struct vdrv *d, uint64_t gpa, uint16_t v)
{
	ck_assert_int_eq(gmem_write(d->mem, gpa, &v, sizeof(v)), 0);
}

uint16_t vdrv_get16(struct vdrv *d, uint64_t gpa)
{
	uint16_t v;
	ck_assert_int_eq(gmem_read(d->mem, gpa, &v, sizeof(v)), 0);
	return v;
}

void vdrv_offer(struct vdrv *d, unsigned int q, uint16_t head)
{
	struct vdrv_ring *r = &d->q[q];
	vdrv_put16(d, r->avail + 4 + 2 * (r->avail_idx % r->size), head);
	r->avail_idx++;
	vdrv_put16(d, r->avail + 2, r->avail_idx);
}

void vdrv_notify(struct vdrv *d, unsigned int q)
{
	vdrv_wr(d, VIRTIO_MMIO_QUEUE_NOTIFY, q);
}

uint16_t vdrv_used_idx(struct vdrv *d, unsigned int q)
{
	return vdrv_get16(d, d->q[q].used + 2);
}

struct virtq_used_elem vdrv_used_elem(struct vdrv *d, unsigned int q, uint16_t n)
{
	struct virtq_used_elem e;
	uint64_t gpa = d->q[q].used + 4 + 8 * (n % d->q[q].size);
	ck_assert_int_eq(gmem_read(d->mem, gpa, &e, sizeof(e)), 0);
	return e;
}

bool vdrv_take_used(struct vdrv *d, unsigned int q, struct virtq_used_elem *e)
{
	struct vdrv_ring *r = &d->q[q];
	if (vdrv_used_idx(d, q) == r->used_seen)
		return false;
	*e = vdrv_used_elem(d, q, r->used_seen);
	r->used_seen++;
	return true;
}
