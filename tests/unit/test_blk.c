/* Unit tests: virtio-blk over a raw temp file, driven the way a guest
 * driver would (registers through the bus, rings in guest RAM), and the
 * raw disk backend itself. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "arch/x86_64/layout.h"
#include "backend/disk_open.h"
#include "base/bus.h"
#include "base/guest_mem.h"
#include "unit.h"
#include "virtio/blk.h"
#include "virtio_driver.h"

#define RAM_SIZE   (1024 * 1024)
#define DISK_SIZE  (1024 * 1024) /* 2048 sectors */
#define BASE       0xd0000000ULL
#define QSIZE      16
#define DESC_GPA   0x1000
#define AVAIL_GPA  0x2000
#define USED_GPA   0x3000
#define HDR_GPA    0x8000
#define STATUS_GPA 0x8100
#define SEGS_GPA   0x8200
#define DATA_GPA   0x10000

struct drv {
	struct guest_mem *mem; /* shared by every disk of one "VM" */
	struct bus *bus;
	struct guest_mem own_mem;
	struct bus own_bus;
	struct disk *disk;
	struct vblk *blk;
	char path[64];
	struct vdrv v;
};

static void make_image(char *path, size_t len)
{
	snprintf(path, len, "/tmp/cove-blk-XXXXXX");
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, DISK_SIZE), 0);
	close(fd);
}

static void drv_attach(struct drv *d, struct guest_mem *mem, struct bus *bus, uint64_t base,
                       uint32_t gsi, bool read_only)
{
	d->mem = mem;
	d->bus = bus;
	make_image(d->path, sizeof(d->path));
	ck_assert_int_eq(disk_open(d->path, read_only, &d->disk), 0);
	struct virtio_mmio_cfg cfg = {
		.base = base, .gsi = gsi, .vm_fd = -1, .mem = mem, .bus = bus
	};
	ck_assert_int_eq(vblk_create(&cfg, d->disk, &d->blk), 0);
	vdrv_init(&d->v, mem, bus, base);
	vdrv_ring(&d->v, 0, DESC_GPA, AVAIL_GPA, USED_GPA, QSIZE);
}

static void drv_init(struct drv *d, bool read_only)
{
	memset(d, 0, sizeof(*d));
	d->mem = &d->own_mem;
	d->bus = &d->own_bus;
	ck_assert_int_eq(gmem_create(d->mem, RAM_SIZE, X86_MMIO_HOLE), 0);
	drv_attach(d, d->mem, d->bus, BASE, 5, read_only);
	vdrv_up(&d->v, ~0ULL, VBLK_QUEUE_SIZE);
}

static void drv_detach(struct drv *d)
{
	vblk_destroy(d->blk);
	disk_close(d->disk);
	unlink(d->path);
}

static void drv_fini(struct drv *d)
{
	drv_detach(d);
	gmem_destroy(d->mem);
}

/* Offers the chain at `head`, notifies, and returns the used element. */
static struct virtq_used_elem kick(struct drv *d, uint16_t head)
{
	uint16_t before = vdrv_used_idx(&d->v, 0);
	vdrv_offer(&d->v, 0, head);
	vdrv_wr(&d->v, VIRTIO_MMIO_QUEUE_NOTIFY, 0);
	ck_assert_uint_eq(vdrv_used_idx(&d->v, 0), (uint16_t)(before + 1));
	struct virtq_used_elem e = vdrv_used_elem(&d->v, 0, before);
	ck_assert_uint_eq(e.id, head);
	return e;
}

static uint8_t status_byte(struct drv *d)
{
	uint8_t s;
	ck_assert_int_eq(gmem_read(d->mem, STATUS_GPA, &s, 1), 0);
	return s;
}

/* A request in three descriptors: header, data (if any), status. */
static uint8_t submit(struct drv *d, uint32_t type, uint64_t sector, uint64_t data_gpa,
                      uint32_t data_len, bool device_writes, uint32_t *used_len)
{
	struct virtio_blk_req_hdr h = { .type = type, .sector = sector };
	ck_assert_int_eq(gmem_write(d->mem, HDR_GPA, &h, sizeof(h)), 0);
	uint8_t poison = 0xee;
	ck_assert_int_eq(gmem_write(d->mem, STATUS_GPA, &poison, 1), 0);
	if (data_len) {
		vdrv_put_desc(&d->v, 0, 0, HDR_GPA, sizeof(h), VIRTQ_DESC_F_NEXT, 1);
		vdrv_put_desc(&d->v, 0, 1, data_gpa, data_len,
		              VIRTQ_DESC_F_NEXT | (device_writes ? VIRTQ_DESC_F_WRITE : 0), 2);
	} else {
		vdrv_put_desc(&d->v, 0, 0, HDR_GPA, sizeof(h), VIRTQ_DESC_F_NEXT, 2);
	}
	vdrv_put_desc(&d->v, 0, 2, STATUS_GPA, 1, VIRTQ_DESC_F_WRITE, 0);
	struct virtq_used_elem e = kick(d, 0);
	if (used_len)
		*used_len = e.len;
	return status_byte(d);
}

static void fill(struct drv *d, uint64_t gpa, uint8_t v, size_t len)
{
	memset(gmem_ptr(d->mem, gpa, len), v, len);
}

static void pattern(uint8_t *p, size_t len, uint8_t seed)
{
	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)(seed + i * 7);
}

static bool all_bytes(const uint8_t *p, uint8_t v, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != v)
			return false;
	return true;
}

static void file_bytes(struct drv *d, uint64_t off, void *buf, size_t len)
{
	int fd = open(d->path, O_RDONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pread(fd, buf, len, (off_t)off), (ssize_t)len);
	close(fd);
}

START_TEST(write_then_read)
{
	struct drv d;
	uint32_t len;
	drv_init(&d, false);
	uint8_t *data = gmem_ptr(d.mem, DATA_GPA, 4096);
	pattern(data, 4096, 3);
	ck_assert_uint_eq(submit(&d, VIRTIO_BLK_T_OUT, 8, DATA_GPA, 4096, false, &len),
	                  VIRTIO_BLK_S_OK);
	ck_assert_uint_eq(len, 1);
	uint8_t file[4096], want[4096];
	pattern(want, sizeof(want), 3);
	file_bytes(&d, 8 * 512, file, sizeof(file));
	ck_assert_mem_eq(file, want, sizeof(want));

	fill(&d, DATA_GPA, 0, 4096);
	ck_assert_uint_eq(submit(&d, VIRTIO_BLK_T_IN, 8, DATA_GPA, 4096, true, &len),
	                  VIRTIO_BLK_S_OK);
	ck_assert_uint_eq(len, 4097);
	ck_assert_mem_eq(data, want, sizeof(want));
	/* the guest asked for interrupts (used_event 0), so it got one */
	ck_assert_uint_ge(vblk_transport(d.blk)->irq_count, 1);
	ck_assert(vdrv_rd(&d.v, VIRTIO_MMIO_INTERRUPT_STATUS) & VIRTIO_MMIO_INT_VRING);
	drv_fini(&d);
}
END_TEST

START_TEST(split_header_and_scattered_data)
{
	/* Framing is the driver's business: header in two pieces, data in
	 * three uneven segments, status sharing the last data segment. */
	struct drv d;
	drv_init(&d, false);
	struct virtio_blk_req_hdr h = { .type = VIRTIO_BLK_T_OUT, .sector = 100 };
	ck_assert_int_eq(gmem_write(d.mem, HDR_GPA, &h, sizeof(h)), 0);
	uint8_t *data = gmem_ptr(d.mem, DATA_GPA, 1024);
	pattern(data, 1024, 9);
	vdrv_put_desc(&d.v, 0, 0, HDR_GPA, 5, VIRTQ_DESC_F_NEXT, 1);
	vdrv_put_desc(&d.v, 0, 1, HDR_GPA + 5, 11, VIRTQ_DESC_F_NEXT, 2);
	vdrv_put_desc(&d.v, 0, 2, DATA_GPA, 100, VIRTQ_DESC_F_NEXT, 3);
	vdrv_put_desc(&d.v, 0, 3, DATA_GPA + 100, 924, VIRTQ_DESC_F_NEXT, 4);
	vdrv_put_desc(&d.v, 0, 4, STATUS_GPA, 1, VIRTQ_DESC_F_WRITE, 0);
	kick(&d, 0);
	ck_assert_uint_eq(status_byte(&d), VIRTIO_BLK_S_OK);

	h.type = VIRTIO_BLK_T_IN;
	ck_assert_int_eq(gmem_write(d.mem, HDR_GPA, &h, sizeof(h)), 0);
	fill(&d, DATA_GPA + 4096, 0, 1025);
	vdrv_put_desc(&d.v, 0, 0, HDR_GPA, 16, VIRTQ_DESC_F_NEXT, 1);
	vdrv_put_desc(&d.v, 0, 1, DATA_GPA + 4096, 1000, VIRTQ_DESC_F_NEXT | VIRTQ_DESC_F_WRITE, 2);
	vdrv_put_desc(&d.v, 0, 2, DATA_GPA + 4096 + 1000, 25, VIRTQ_DESC_F_WRITE, 0);
	struct virtq_used_elem e = kick(&d, 0);
	ck_assert_uint_eq(e.len, 1025);
	ck_assert_mem_eq(gmem_ptr(d.mem, DATA_GPA + 4096, 1024), data, 1024);
	ck_assert_uint_eq(*(uint8_t *)gmem_ptr(d.mem, DATA_GPA + 4096 + 1024, 1), VIRTIO_BLK_S_OK);
	drv_fini(&d);
}
END_TEST

START_TEST(flush_and_get_id)
{
	struct drv d;
	uint32_t len;
	drv_init(&d, false);
	ck_assert_uint_eq(submit(&d, VIRTIO_BLK_T_FLUSH, 0, 0, 0, false, &len), VIRTIO_BLK_S_OK);
	ck_assert_uint_eq(len, 1);
	disk_set_id(d.disk, "cove-disk-0");
	fill(&d, DATA_GPA, 0xff, 20);
	ck_assert_uint_eq(submit(&d, VIRTIO_BLK_T_GET_ID, 0, DATA_GPA, 20, true, &len),
	                  VIRTIO_BLK_S_OK);
	ck_assert_uint_eq(len, 21);
	uint8_t want[20] = "cove-disk-0";
	ck_assert_mem_eq(gmem_ptr(d.mem, DATA_GPA, 20), want, 20);
	/* the default id, from the file, is never empty */
	struct disk *other;
	char path[64];
	make_image(path, sizeof(path));
	ck_assert_int_eq(disk_open(path, true, &other), 0);
	ck_assert_uint_gt(strlen(other->id), 0);
	ck_assert_uint_le(strlen(other->id), DISK_ID_LEN);
	disk_close(other);
	unlink(path);
	drv_fini(&d);
}
END_TEST

static uint8_t submit_ranges(struct drv *d, uint32_t type, const struct virtio_blk_discard_seg *s,
                             uint32_t n)
{
	ck_assert_int_eq(gmem_write(d->mem, SEGS_GPA, s, n * sizeof(*s)), 0);
	return submit(d, type, 0, SEGS_GPA, n * (uint32_t)sizeof(*s), false, NULL);
}

START_TEST(discard_and_write_zeroes)
{
	struct drv d;
	drv_init(&d, false);
	pattern(gmem_ptr(d.mem, DATA_GPA, 8192), 8192, 1);
	ck_assert_uint_eq(submit(&d, VIRTIO_BLK_T_OUT, 0, DATA_GPA, 8192, false, NULL),
	                  VIRTIO_BLK_S_OK);

	struct virtio_blk_discard_seg zero[2] = {
		{ .sector = 0, .num_sectors = 4, .flags = 0 },
		{ .sector = 8, .num_sectors = 8, .flags = VIRTIO_BLK_WZ_F_UNMAP },
	};
	ck_assert_uint_eq(submit_ranges(&d, VIRTIO_BLK_T_WRITE_ZEROES, zero, 2), VIRTIO_BLK_S_OK);
	uint8_t buf[8192];
	file_bytes(&d, 0, buf, sizeof(buf));
	ck_assert(all_bytes(buf, 0, 4 * 512));
	ck_assert(!all_bytes(buf + 4 * 512, 0, 4 * 512)); /* untouched */
	ck_assert(all_bytes(buf + 8 * 512, 0, 8 * 512));

	struct virtio_blk_discard_seg disc = { .sector = 4, .num_sectors = 4 };
	ck_assert_uint_eq(submit_ranges(&d, VIRTIO_BLK_T_DISCARD, &disc, 1), VIRTIO_BLK_S_OK);
	/* unmap makes no sense for discard; unknown flags for neither */
	disc.flags = VIRTIO_BLK_WZ_F_UNMAP;
	ck_assert_uint_eq(submit_ranges(&d, VIRTIO_BLK_T_DISCARD, &disc, 1), VIRTIO_BLK_S_UNSUPP);
	disc.flags = 0x80;
	ck_assert_uint_eq(submit_ranges(&d, VIRTIO_BLK_T_WRITE_ZEROES, &disc, 1),
	                  VIRTIO_BLK_S_UNSUPP);
	/* past the end, too long, too many segments, ragged payload */
	disc = (struct virtio_blk_discard_seg){ .sector = 2047, .num_sectors = 2 };
	ck_assert_uint_eq(submit_ranges(&d, VIRTIO_BLK_T_DISCARD, &disc, 1), VIRTIO_BLK_S_IOERR);
	disc = (struct virtio_blk_discard_seg){ .sector = 0, .num_sectors = 0xffffffff };
	ck_assert_uint_eq(submit_ranges(&d, VIRTIO_BLK_T_WRITE_ZEROES, &disc, 1),
	                  VIRTIO_BLK_S_IOERR);
	disc = (struct virtio_blk_discard_seg){ .sector = UINT64_MAX, .num_sectors = 1 };
	ck_assert_uint_eq(submit_ranges(&d, VIRTIO_BLK_T_DISCARD, &disc, 1), VIRTIO_BLK_S_IOERR);
	struct virtio_blk_discard_seg many[VBLK_MAX_DISCARD_SEG + 1] = { 0 };
	ck_assert_uint_eq(submit_ranges(&d, VIRTIO_BLK_T_DISCARD, many, VBLK_MAX_DISCARD_SEG + 1),
	                  VIRTIO_BLK_S_IOERR);
	ck_assert_uint_eq(submit(&d, VIRTIO_BLK_T_DISCARD, 0, SEGS_GPA, 15, false, NULL),
	                  VIRTIO_BLK_S_IOERR);
	drv_fini(&d);
}
END_TEST

START_TEST(read_only_disk)
{
	struct drv d;
	drv_init(&d, true);
	vdrv_wr(&d.v, VIRTIO_MMIO_DEVICE_FEATURES_SEL, 0);
	ck_assert(vdrv_rd(&d.v, VIRTIO_MMIO_DEVICE_FEATURES) & VIRTIO_BIT(VIRTIO_BLK_F_RO));
	ck_assert(!(vdrv_rd(&d.v, VIRTIO_MMIO_DEVICE_FEATURES) & VIRTIO_BIT(VIRTIO_BLK_F_DISCARD)));
	ck_assert_uint_eq(submit(&d, VIRTIO_BLK_T_OUT, 0, DATA_GPA, 512, false, NULL),
	                  VIRTIO_BLK_S_IOERR);
	struct virtio_blk_discard_seg s = { .sector = 0, .num_sectors = 1 };
	ck_assert_uint_eq(submit_ranges(&d, VIRTIO_BLK_T_DISCARD, &s, 1), VIRTIO_BLK_S_IOERR);
	ck_assert_uint_eq(submit_ranges(&d, VIRTIO_BLK_T_WRITE_ZEROES, &s, 1), VIRTIO_BLK_S_IOERR);
	ck_assert_uint_eq(submit(&d, VIRTIO_BLK_T_IN, 0, DATA_GPA, 512, true, NULL),
	                  VIRTIO_BLK_S_OK);
	ck_assert_uint_eq(submit(&d, VIRTIO_BLK_T_FLUSH, 0, 0, 0, false, NULL), VIRTIO_BLK_S_OK);
	drv_fini(&d);
}
END_TEST

START_TEST(bad_requests_fail_alone)
{
	struct drv d;
	drv_init(&d, false);
	const uint64_t cap = DISK_SIZE / 512;
	ck_assert_uint_eq(submit(&d, VIRTIO_BLK_T_IN, cap, DATA_GPA, 512, true, NULL),
	                  VIRTIO_BLK_S_IOERR);
	ck_assert_uint_eq(submit(&d, VIRTIO_BLK_T_IN, cap - 1, DATA_GPA, 1024, true, NULL),
	                  VIRTIO_BLK_S_IOERR);
	ck_assert_uint_eq(submit(&d, VIRTIO_BLK_T_OUT, UINT64_MAX, DATA_GPA, 512, false, NULL),
	                  VIRTIO_BLK_S_IOERR);
	ck_assert_uint_eq(
	    submit(&d, VIRTIO_BLK_T_OUT, UINT64_MAX / 512, DATA_GPA, 512, false, NULL),
	    VIRTIO_BLK_S_IOERR);
	ck_assert_uint_eq(submit(&d, VIRTIO_BLK_T_IN, 0, DATA_GPA, 100, true, NULL),
	                  VIRTIO_BLK_S_IOERR);
	ck_assert_uint_eq(submit(&d, 99, 0, 0, 0, false, NULL), VIRTIO_BLK_S_UNSUPP);
	/* An IN whose only writable byte is the status reads nothing. */
	ck_assert_uint_eq(submit(&d, VIRTIO_BLK_T_IN, 0, DATA_GPA, 512, false, NULL),
	                  VIRTIO_BLK_S_OK);
	/* Short header. */
	vdrv_put_desc(&d.v, 0, 0, HDR_GPA, 8, VIRTQ_DESC_F_NEXT, 2);
	vdrv_put_desc(&d.v, 0, 2, STATUS_GPA, 1, VIRTQ_DESC_F_WRITE, 0);
	kick(&d, 0);
	ck_assert_uint_eq(status_byte(&d), VIRTIO_BLK_S_IOERR);
	/* The last request still works. */
	ck_assert_uint_eq(submit(&d, VIRTIO_BLK_T_IN, cap - 1, DATA_GPA, 512, true, NULL),
	                  VIRTIO_BLK_S_OK);
	drv_fini(&d);
}
END_TEST

START_TEST(malformed_chains_get_ioerr)
{
	struct drv d;
	drv_init(&d, false);
	/* header -> status (writable) -> header again: readable after writable */
	vdrv_put_desc(&d.v, 0, 0, HDR_GPA, 16, VIRTQ_DESC_F_NEXT, 2);
	vdrv_put_desc(&d.v, 0, 2, STATUS_GPA, 1, VIRTQ_DESC_F_WRITE | VIRTQ_DESC_F_NEXT, 0);
	fill(&d, STATUS_GPA, 0xee, 1);
	struct virtq_used_elem e = kick(&d, 0);
	ck_assert_uint_eq(status_byte(&d), VIRTIO_BLK_S_IOERR);
	ck_assert_uint_eq(e.len, 1);
	/* a writable descriptor looping on itself */
	vdrv_put_desc(&d.v, 0, 2, STATUS_GPA, 1, VIRTQ_DESC_F_WRITE | VIRTQ_DESC_F_NEXT, 2);
	fill(&d, STATUS_GPA, 0xee, 1);
	kick(&d, 0);
	ck_assert_uint_eq(status_byte(&d), VIRTIO_BLK_S_IOERR);
	/* no writable byte at all: completed with nothing written */
	vdrv_put_desc(&d.v, 0, 0, HDR_GPA, 16, VIRTQ_DESC_F_NEXT, 0);
	e = kick(&d, 0);
	ck_assert_uint_eq(e.len, 0);
	vdrv_put_desc(&d.v, 0, 0, HDR_GPA, 16, 0, 0);
	e = kick(&d, 0);
	ck_assert_uint_eq(e.len, 0);
	/* data outside RAM */
	ck_assert_uint_eq(submit(&d, VIRTIO_BLK_T_IN, 0, RAM_SIZE - 256, 512, true, NULL),
	                  VIRTIO_BLK_S_IOERR);
	/* a status byte outside RAM: nothing to write, nothing written */
	vdrv_put_desc(&d.v, 0, 0, HDR_GPA, 16, VIRTQ_DESC_F_NEXT, 1);
	vdrv_put_desc(&d.v, 0, 1, DATA_GPA, 512, VIRTQ_DESC_F_NEXT | VIRTQ_DESC_F_WRITE, 2);
	vdrv_put_desc(&d.v, 0, 2, RAM_SIZE, 1, VIRTQ_DESC_F_WRITE, 0);
	fill(&d, DATA_GPA, 0x5a, 512);
	e = kick(&d, 0);
	ck_assert_uint_eq(e.len, 0);
	ck_assert(all_bytes(gmem_ptr(d.mem, DATA_GPA, 512), 0x5a, 512));
	/* and the device is still healthy */
	ck_assert(!(vdrv_rd(&d.v, VIRTIO_MMIO_STATUS) & VIRTIO_STATUS_DEVICE_NEEDS_RESET));
	ck_assert_uint_eq(submit(&d, VIRTIO_BLK_T_FLUSH, 0, 0, 0, false, NULL), VIRTIO_BLK_S_OK);
	drv_fini(&d);
}
END_TEST

START_TEST(broken_ring_needs_reset)
{
	struct drv d;
	drv_init(&d, false);
	vdrv_put16(&d.v, AVAIL_GPA + 2, QSIZE + 5);
	vdrv_wr(&d.v, VIRTIO_MMIO_QUEUE_NOTIFY, 0);
	ck_assert(vdrv_rd(&d.v, VIRTIO_MMIO_STATUS) & VIRTIO_STATUS_DEVICE_NEEDS_RESET);
	ck_assert(vdrv_rd(&d.v, VIRTIO_MMIO_INTERRUPT_STATUS) & VIRTIO_MMIO_INT_CONFIG);
	ck_assert_uint_eq(vdrv_used_idx(&d.v, 0), 0);
	/* The driver resets and starts over. */
	vdrv_wr(&d.v, VIRTIO_MMIO_STATUS, 0);
	memset(gmem_ptr(d.mem, AVAIL_GPA, 0x2000), 0, 0x2000);
	d.v.q[0].avail_idx = 0;
	vdrv_up(&d.v, ~0ULL, VBLK_QUEUE_SIZE);
	ck_assert_uint_eq(submit(&d, VIRTIO_BLK_T_FLUSH, 0, 0, 0, false, NULL), VIRTIO_BLK_S_OK);
	drv_fini(&d);
}
END_TEST

START_TEST(event_idx_suppresses_interrupts)
{
	struct drv d;
	drv_init(&d, false);
	struct virtio_mmio *t = vblk_transport(d.blk);
	ck_assert(virtio_mmio_has_feature(t, VIRTIO_RING_F_EVENT_IDX));
	ck_assert_uint_eq(submit(&d, VIRTIO_BLK_T_FLUSH, 0, 0, 0, false, NULL), VIRTIO_BLK_S_OK);
	uint64_t irqs = t->irq_count;
	ck_assert_uint_eq(irqs, 1);
	vdrv_put16(&d.v, AVAIL_GPA + 4 + 2 * QSIZE, 10); /* used_event: wake me at 10 */
	ck_assert_uint_eq(submit(&d, VIRTIO_BLK_T_FLUSH, 0, 0, 0, false, NULL), VIRTIO_BLK_S_OK);
	ck_assert_uint_eq(t->irq_count, irqs);
	/* the device asked to be notified for the next entry */
	uint16_t avail_event;
	ck_assert_int_eq(gmem_read(d.mem, USED_GPA + 4 + 8 * QSIZE, &avail_event, 2), 0);
	ck_assert_uint_eq(avail_event, d.v.q[0].avail_idx);
	drv_fini(&d);
}
END_TEST

START_TEST(config_space)
{
	struct drv d;
	drv_init(&d, false);
	uint64_t cap = 0;
	ck_assert(bus_access(d.bus, BASE + VIRTIO_MMIO_CONFIG, (uint8_t *)&cap, 8, false));
	ck_assert_uint_eq(cap, DISK_SIZE / 512);
	uint32_t v = vdrv_rd(&d.v, VIRTIO_MMIO_CONFIG + 12); /* seg_max */
	ck_assert_uint_eq(v, VBLK_SEG_MAX);
	v = vdrv_rd(&d.v, VIRTIO_MMIO_CONFIG + 40); /* max_discard_seg */
	ck_assert_uint_eq(v, VBLK_MAX_DISCARD_SEG);
	char buf[64];
	ck_assert_int_gt(vblk_cmdline(d.blk, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "virtio_mmio.device=4K@0xd0000000:5");
	drv_fini(&d);
}
END_TEST

START_TEST(several_disks_per_vm)
{
	struct guest_mem mem;
	struct bus bus = { 0 };
	ck_assert_int_eq(gmem_create(&mem, RAM_SIZE, X86_MMIO_HOLE), 0);
	struct drv a = { 0 }, b = { 0 };
	drv_attach(&a, &mem, &bus, BASE, 5, false);
	drv_attach(&b, &mem, &bus, BASE + VIRTIO_MMIO_SIZE, 6, false);
	/* Both drivers share RAM, so give b its rings elsewhere by running
	 * them one after the other with a reset in between. */
	vdrv_up(&a.v, ~0ULL, VBLK_QUEUE_SIZE);
	pattern(gmem_ptr(&mem, DATA_GPA, 512), 512, 0x40);
	ck_assert_uint_eq(submit(&a, VIRTIO_BLK_T_OUT, 1, DATA_GPA, 512, false, NULL),
	                  VIRTIO_BLK_S_OK);
	vdrv_wr(&a.v, VIRTIO_MMIO_STATUS, 0);
	memset(gmem_ptr(&mem, AVAIL_GPA, 0x2000), 0, 0x2000);
	vdrv_up(&b.v, ~0ULL, VBLK_QUEUE_SIZE);
	pattern(gmem_ptr(&mem, DATA_GPA, 512), 512, 0x80);
	ck_assert_uint_eq(submit(&b, VIRTIO_BLK_T_OUT, 1, DATA_GPA, 512, false, NULL),
	                  VIRTIO_BLK_S_OK);
	uint8_t fa[512], fb[512], want[512];
	file_bytes(&a, 512, fa, sizeof(fa));
	file_bytes(&b, 512, fb, sizeof(fb));
	pattern(want, sizeof(want), 0x40);
	ck_assert_mem_eq(fa, want, sizeof(want));
	pattern(want, sizeof(want), 0x80);
	ck_assert_mem_eq(fb, want, sizeof(want));
	char ca[64], cb[64];
	ck_assert_int_gt(vblk_cmdline(a.blk, ca, sizeof(ca)), 0);
	ck_assert_int_gt(vblk_cmdline(b.blk, cb, sizeof(cb)), 0);
	ck_assert_str_eq(cb, "virtio_mmio.device=4K@0xd0001000:6");
	ck_assert_str_ne(ca, cb);
	drv_detach(&a);
	drv_detach(&b);
	gmem_destroy(&mem);
}
END_TEST

START_TEST(disk_open_locks_and_errors)
{
	char path[64];
	struct disk *w, *r1, *r2, *x;
	make_image(path, sizeof(path));
	ck_assert_int_eq(disk_open(path, false, &w), 0);
	ck_assert_int_eq(disk_open(path, false, &x), -EBUSY);
	ck_assert_ptr_null(x);
	ck_assert_int_eq(disk_open(path, true, &x), -EBUSY);
	disk_close(w);
	ck_assert_int_eq(disk_open(path, true, &r1), 0);
	ck_assert_int_eq(disk_open(path, true, &r2), 0);
	ck_assert_int_eq(disk_open(path, false, &x), -EBUSY);
	ck_assert(r1->read_only);
	ck_assert_uint_eq(r1->size, DISK_SIZE);
	uint8_t buf[512];
	struct iovec v = { .iov_base = buf, .iov_len = sizeof(buf) };
	ck_assert_int_eq(disk_write(r1, 0, &v, 1), -EROFS);
	ck_assert_int_eq(disk_read(r1, DISK_SIZE - 512, &v, 1), 0);
	ck_assert_int_eq(disk_read(r1, DISK_SIZE - 256, &v, 1), -EINVAL);
	ck_assert_int_eq(disk_read(r1, UINT64_MAX - 100, &v, 1), -EINVAL);
	disk_close(r1);
	disk_close(r2);
	disk_close(NULL);
	unlink(path);
	ck_assert_int_eq(disk_open(path, true, &x), -ENOENT);
	ck_assert_int_eq(disk_open("/tmp", true, &x), -EINVAL);
	ck_assert_int_eq(disk_open("", true, &x), -EINVAL);
}
END_TEST

START_TEST(disk_many_iovecs)
{
	/* More iovecs than one preadv window, with empty ones mixed in. */
	char path[64];
	struct disk *d;
	make_image(path, sizeof(path));
	ck_assert_int_eq(disk_open(path, false, &d), 0);
	static uint8_t src[200 * 8], dst[200 * 8];
	struct iovec v[300];
	pattern(src, sizeof(src), 5);
	for (int i = 0, j = 0; i < 300; i++) {
		bool empty = i % 3 == 2;
		v[i].iov_base = src + j * 8;
		v[i].iov_len = empty ? 0 : 8;
		j += !empty;
	}
	ck_assert_int_eq(disk_write(d, 4096, v, 300), 0);
	for (int i = 0; i < 300; i++)
		v[i].iov_base = dst + ((uint8_t *)v[i].iov_base - src);
	ck_assert_int_eq(disk_read(d, 4096, v, 300), 0);
	ck_assert_mem_eq(src, dst, sizeof(src));
	ck_assert_int_eq(disk_flush(d), 0);
	disk_close(d);
	unlink(path);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("virtio-blk");
	TCase *c = tcase_create("requests");
	tcase_add_test(c, write_then_read);
	tcase_add_test(c, split_header_and_scattered_data);
	tcase_add_test(c, flush_and_get_id);
	tcase_add_test(c, discard_and_write_zeroes);
	tcase_add_test(c, read_only_disk);
	tcase_add_test(c, bad_requests_fail_alone);
	tcase_add_test(c, malformed_chains_get_ioerr);
	tcase_add_test(c, broken_ring_needs_reset);
	tcase_add_test(c, event_idx_suppresses_interrupts);
	tcase_add_test(c, config_space);
	tcase_add_test(c, several_disks_per_vm);
	suite_add_tcase(s, c);
	TCase *b = tcase_create("backend");
	tcase_add_test(b, disk_open_locks_and_errors);
	tcase_add_test(b, disk_many_iovecs);
	suite_add_tcase(s, b);
	return s;
}

UNIT_MAIN()
