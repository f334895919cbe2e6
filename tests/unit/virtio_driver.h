/* The guest side of a virtio-mmio device for the unit tests: registers
 * reached through the bus, split rings in guest RAM where the test puts
 * them.  Every step checks what it does (Check assertions). */
#ifndef COVE_VIRTIO_DRIVER_H
#define COVE_VIRTIO_DRIVER_H

#include <stdbool.h>
#include <stdint.h>

#include "base/bus.h"
#include "base/guest_mem.h"
#include "virtio/mmio.h"

struct vdrv_ring {
	uint64_t desc, avail, used; /* guest addresses of the three parts */
	uint16_t size;
	uint16_t avail_idx; /* next index the driver publishes */
	uint16_t used_seen; /* used entries taken (vdrv_take_used) */
};

struct vdrv {
	struct guest_mem *mem;
	struct bus *bus;
	uint64_t base; /* the device's register window */
	unsigned int nq;
	struct vdrv_ring q[VIRTIO_MMIO_MAX_QUEUES];
};

/* A driver for the device at base on bus, its rings in mem; no queue yet. */
void vdrv_init(struct vdrv *d, struct guest_mem *mem, struct bus *bus, uint64_t base);

/* Places queue q's rings (size entries each); queues 0..q become live. */
void vdrv_ring(struct vdrv *d, unsigned int q, uint64_t desc, uint64_t avail, uint64_t used,
               uint16_t size);

/* 32-bit register access at reg; the bus must claim it. */
uint32_t vdrv_rd(struct vdrv *d, uint64_t reg);
void vdrv_wr(struct vdrv *d, uint64_t reg, uint32_t v);

/* Brings the device up as the Linux driver does: ACKNOWLEDGE, DRIVER,
 * the offered features that are also in want, FEATURES_OK (checked), then
 * every placed queue (QueueNumMax checked against num_max unless 0, ready
 * read back), then DRIVER_OK. */
void vdrv_up(struct vdrv *d, uint64_t want, uint32_t num_max);

/* Descriptor i of queue q's table, or of the table at gpa table (an
 * indirect one). */
void vdrv_put_desc(struct vdrv *d, unsigned int q, uint16_t i, uint64_t addr, uint32_t len,
                   uint16_t flags, uint16_t next);
void vdrv_put_desc_at(struct vdrv *d, uint64_t table, uint16_t i, uint64_t addr, uint32_t len,
                      uint16_t flags, uint16_t next);

/* 16-bit guest memory access at gpa. */
void vdrv_put16(struct vdrv *d, uint64_t gpa, uint16_t v);
uint16_t vdrv_get16(struct vdrv *d, uint64_t gpa);

/* Makes head available on queue q without notifying. */
void vdrv_offer(struct vdrv *d, unsigned int q, uint16_t head);

/* QueueNotify for q. */
void vdrv_notify(struct vdrv *d, unsigned int q);

/* The used ring's index, and its entry n (modulo the size). */
uint16_t vdrv_used_idx(struct vdrv *d, unsigned int q);
struct virtq_used_elem vdrv_used_elem(struct vdrv *d, unsigned int q, uint16_t n);

/* Takes the next used entry of q not taken yet; false when none. */
bool vdrv_take_used(struct vdrv *d, unsigned int q, struct virtq_used_elem *e);

#endif
