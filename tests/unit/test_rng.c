/* Unit tests: virtio-rng driven the way a guest driver would (registers
 * through the bus, rings in guest RAM): buffers are filled with fresh bytes,
 * driver-readable and malformed chains come back empty, long buffers and
 * long batches are capped, a broken ring asks for a reset, and the
 * transport state survives save/restore. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "arch/x86_64/layout.h"
#include "base/bus.h"
#include "base/guest_mem.h"
#include "unit.h"
#include "virtio/rng.h"
#include "virtio_driver.h"

#define RAM_SIZE  (4 * 1024 * 1024)
#define BASE      0xd0000000ULL
#define GSI       9
#define QSIZE     32
#define DESC_GPA  0x1000
#define AVAIL_GPA 0x2000
#define USED_GPA  0x3000
#define BUF_GPA   0x10000
#define BUF2_GPA  0x20000
#define BIG_GPA   0x100000 /* 2 MiB of room up to RAM_SIZE - 1 MiB */
#define POISON    0xa5

struct drv {
	struct guest_mem mem;
	struct bus bus;
	struct vrng *rng;
	struct vdrv v;
};

static void drv_init(struct drv *d)
{
	memset(d, 0, sizeof(*d));
	ck_assert_int_eq(gmem_create(&d->mem, RAM_SIZE, X86_MMIO_HOLE), 0);
	struct virtio_mmio_cfg cfg = {
		.base = BASE, .gsi = GSI, .vm_fd = -1, .mem = &d->mem, .bus = &d->bus
	};
	ck_assert_int_eq(vrng_create(&cfg, &d->rng), 0);
	vdrv_init(&d->v, &d->mem, &d->bus, BASE);
	vdrv_ring(&d->v, 0, DESC_GPA, AVAIL_GPA, USED_GPA, QSIZE);
	vdrv_up(&d->v, ~0ULL, VRNG_QUEUE_SIZE);
}

static void drv_fini(struct drv *d)
{
	vrng_destroy(d->rng);
	gmem_destroy(&d->mem);
}

/* Offers the chain at `head`, notifies, and returns its used length. */
static uint32_t kick(struct drv *d, uint16_t head)
{
	uint16_t before = vdrv_used_idx(&d->v, 0);
	vdrv_offer(&d->v, 0, head);
	vdrv_wr(&d->v, VIRTIO_MMIO_QUEUE_NOTIFY, 0);
	ck_assert_uint_eq(vdrv_used_idx(&d->v, 0), (uint16_t)(before + 1));
	struct virtq_used_elem e = vdrv_used_elem(&d->v, 0, before);
	ck_assert_uint_eq(e.id, head);
	return e.len;
}

static uint8_t *poison(struct drv *d, uint64_t gpa, size_t len)
{
	uint8_t *p = gmem_ptr(&d->mem, gpa, len);
	ck_assert_ptr_nonnull(p);
	memset(p, POISON, len);
	return p;
}

static bool all_bytes(const uint8_t *p, uint8_t v, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != v)
			return false;
	return true;
}

/* 256 random bytes are all POISON with probability 2^-2048; a few equal
 * bytes here and there are expected, a long run of them is not. */
static bool looks_random(const uint8_t *p, size_t len)
{
	size_t same = 0;
	for (size_t i = 0; i < len; i++)
		same += p[i] == POISON;
	return same < len / 8;
}

START_TEST(identity_and_config)
{
	struct drv d;
	drv_init(&d);
	ck_assert_uint_eq(vdrv_rd(&d.v, VIRTIO_MMIO_MAGIC_VALUE), VIRTIO_MMIO_MAGIC);
	ck_assert_uint_eq(vdrv_rd(&d.v, VIRTIO_MMIO_DEVICE_ID), VIRTIO_ID_RNG);
	vdrv_wr(&d.v, VIRTIO_MMIO_DEVICE_FEATURES_SEL, 0);
	ck_assert_uint_eq(vdrv_rd(&d.v, VIRTIO_MMIO_DEVICE_FEATURES),
	                  (uint32_t)VIRTIO_TRANSPORT_FEATURES);  /* nothing device-specific */
	ck_assert_uint_eq(vdrv_rd(&d.v, VIRTIO_MMIO_CONFIG), 0); /* no config space */
	char buf[64];
	ck_assert_int_gt(vrng_cmdline(d.rng, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "virtio_mmio.device=4K@0xd0000000:9");
	ck_assert_int_eq(vrng_cmdline(d.rng, buf, 8), -ENOSPC);
	drv_fini(&d);
}
END_TEST

START_TEST(fills_buffers)
{
	struct drv d;
	drv_init(&d);
	uint8_t *a = poison(&d, BUF_GPA, 256);
	vdrv_put_desc(&d.v, 0, 0, BUF_GPA, 256, VIRTQ_DESC_F_WRITE, 0);
	ck_assert_uint_eq(kick(&d, 0), 256);
	ck_assert(looks_random(a, 256));
	ck_assert(!all_bytes(a, 0, 256));

	uint8_t *b = poison(&d, BUF2_GPA, 256);
	vdrv_put_desc(&d.v, 0, 1, BUF2_GPA, 256, VIRTQ_DESC_F_WRITE, 0);
	ck_assert_uint_eq(kick(&d, 1), 256);
	ck_assert(looks_random(b, 256));
	ck_assert(memcmp(a, b, 256) != 0);
	/* the guest asked for interrupts (used_event 0), so it got them */
	ck_assert_uint_ge(vrng_transport(d.rng)->irq_count, 1);
	ck_assert(vdrv_rd(&d.v, VIRTIO_MMIO_INTERRUPT_STATUS) & VIRTIO_MMIO_INT_VRING);
	drv_fini(&d);
}
END_TEST

START_TEST(scattered_writable_chain)
{
	/* Framing is the driver's business: three uneven segments, one of
	 * them empty, all filled, the used length their sum. */
	struct drv d;
	drv_init(&d);
	uint8_t *p = poison(&d, BUF_GPA, 4096);
	vdrv_put_desc(&d.v, 0, 0, BUF_GPA, 7, VIRTQ_DESC_F_WRITE | VIRTQ_DESC_F_NEXT, 1);
	vdrv_put_desc(&d.v, 0, 1, BUF_GPA + 100, 0, VIRTQ_DESC_F_WRITE | VIRTQ_DESC_F_NEXT, 2);
	vdrv_put_desc(&d.v, 0, 2, BUF_GPA + 1000, 1000, VIRTQ_DESC_F_WRITE, 0);
	ck_assert_uint_eq(kick(&d, 0), 1007);
	ck_assert(looks_random(p + 1000, 1000));
	ck_assert(all_bytes(p + 7, POISON, 993)); /* nothing between the segments */
	ck_assert(all_bytes(p + 2000, POISON, 2096));
	drv_fini(&d);
}
END_TEST

START_TEST(readable_descriptor_refused)
{
	struct drv d;
	drv_init(&d);
	/* one driver-readable buffer */
	uint8_t *p = poison(&d, BUF_GPA, 512);
	vdrv_put_desc(&d.v, 0, 0, BUF_GPA, 512, 0, 0);
	ck_assert_uint_eq(kick(&d, 0), 0);
	ck_assert(all_bytes(p, POISON, 512));
	/* readable then writable: the writable part is not touched either */
	vdrv_put_desc(&d.v, 0, 0, BUF_GPA, 16, VIRTQ_DESC_F_NEXT, 1);
	vdrv_put_desc(&d.v, 0, 1, BUF_GPA + 16, 256, VIRTQ_DESC_F_WRITE, 0);
	ck_assert_uint_eq(kick(&d, 0), 0);
	ck_assert(all_bytes(p, POISON, 512));
	/* the device is still healthy and serves the next request */
	ck_assert(!(vdrv_rd(&d.v, VIRTIO_MMIO_STATUS) & VIRTIO_STATUS_DEVICE_NEEDS_RESET));
	vdrv_put_desc(&d.v, 0, 0, BUF_GPA, 64, VIRTQ_DESC_F_WRITE, 0);
	ck_assert_uint_eq(kick(&d, 0), 64);
	drv_fini(&d);
}
END_TEST

START_TEST(malformed_chains_fail_alone)
{
	struct drv d;
	drv_init(&d);
	/* a buffer outside RAM */
	vdrv_put_desc(&d.v, 0, 0, RAM_SIZE - 16, 64, VIRTQ_DESC_F_WRITE, 0);
	ck_assert_uint_eq(kick(&d, 0), 0);
	/* writable, then outside RAM: the good part is not filled either */
	uint8_t *p = poison(&d, BUF_GPA, 64);
	vdrv_put_desc(&d.v, 0, 0, BUF_GPA, 64, VIRTQ_DESC_F_WRITE | VIRTQ_DESC_F_NEXT, 1);
	vdrv_put_desc(&d.v, 0, 1, 1ULL << 40, 64, VIRTQ_DESC_F_WRITE, 0);
	ck_assert_uint_eq(kick(&d, 0), 0);
	ck_assert(all_bytes(p, POISON, 64));
	/* a chain that loops */
	vdrv_put_desc(&d.v, 0, 0, BUF_GPA, 8, VIRTQ_DESC_F_WRITE | VIRTQ_DESC_F_NEXT, 1);
	vdrv_put_desc(&d.v, 0, 1, BUF_GPA, 8, VIRTQ_DESC_F_WRITE | VIRTQ_DESC_F_NEXT, 0);
	ck_assert_uint_eq(kick(&d, 0), 0);
	/* a next index past the table */
	vdrv_put_desc(&d.v, 0, 0, BUF_GPA, 8, VIRTQ_DESC_F_WRITE | VIRTQ_DESC_F_NEXT, QSIZE + 3);
	ck_assert_uint_eq(kick(&d, 0), 0);
	/* an empty buffer: nothing to fill */
	vdrv_put_desc(&d.v, 0, 0, BUF_GPA, 0, VIRTQ_DESC_F_WRITE, 0);
	ck_assert_uint_eq(kick(&d, 0), 0);
	ck_assert(!(vdrv_rd(&d.v, VIRTIO_MMIO_STATUS) & VIRTIO_STATUS_DEVICE_NEEDS_RESET));
	vdrv_put_desc(&d.v, 0, 0, BUF_GPA, 32, VIRTQ_DESC_F_WRITE, 0);
	ck_assert_uint_eq(kick(&d, 0), 32);
	drv_fini(&d);
}
END_TEST

START_TEST(oversized_length_capped)
{
	struct drv d;
	drv_init(&d);
	size_t len = 4 * VRNG_MAX_CHAIN_BYTES;
	uint8_t *p = poison(&d, BIG_GPA, len);
	vdrv_put_desc(&d.v, 0, 0, BIG_GPA, (uint32_t)len, VIRTQ_DESC_F_WRITE, 0);
	ck_assert_uint_eq(kick(&d, 0), VRNG_MAX_CHAIN_BYTES);
	ck_assert(looks_random(p + VRNG_MAX_CHAIN_BYTES - 256, 256));
	ck_assert(all_bytes(p + VRNG_MAX_CHAIN_BYTES, POISON, len - VRNG_MAX_CHAIN_BYTES));
	/* the cap counts across segments too */
	poison(&d, BIG_GPA, len);
	vdrv_put_desc(&d.v, 0, 0, BIG_GPA, VRNG_MAX_CHAIN_BYTES - 10,
	              VIRTQ_DESC_F_WRITE | VIRTQ_DESC_F_NEXT, 1);
	vdrv_put_desc(&d.v, 0, 1, BIG_GPA + VRNG_MAX_CHAIN_BYTES, 100, VIRTQ_DESC_F_WRITE, 0);
	ck_assert_uint_eq(kick(&d, 0), VRNG_MAX_CHAIN_BYTES);
	ck_assert(all_bytes(p + VRNG_MAX_CHAIN_BYTES + 10, POISON, 90));
	drv_fini(&d);
}
END_TEST

START_TEST(batch_capped_per_notification)
{
	/* More full-size chains than one batch allows: without a VM the rest
	 * waits for the next notification, and nothing is lost. */
	struct drv d;
	drv_init(&d);
	const unsigned int per_batch = VRNG_MAX_BATCH_BYTES / VRNG_MAX_CHAIN_BYTES;
	const unsigned int n = per_batch + 4;
	ck_assert_uint_le(n, QSIZE);
	for (unsigned int i = 0; i < n; i++) {
		/* every chain names the same buffer: only the lengths matter */
		vdrv_put_desc(&d.v, 0, (uint16_t)i, BIG_GPA, VRNG_MAX_CHAIN_BYTES,
		              VIRTQ_DESC_F_WRITE, 0);
		vdrv_offer(&d.v, 0, (uint16_t)i);
	}
	vdrv_wr(&d.v, VIRTIO_MMIO_QUEUE_NOTIFY, 0);
	ck_assert_uint_eq(vdrv_used_idx(&d.v, 0), per_batch);
	vdrv_wr(&d.v, VIRTIO_MMIO_QUEUE_NOTIFY, 0);
	ck_assert_uint_eq(vdrv_used_idx(&d.v, 0), n);
	for (unsigned int i = 0; i < n; i++) {
		struct virtq_used_elem e = vdrv_used_elem(&d.v, 0, (uint16_t)i);
		ck_assert_uint_eq(e.id, i);
		ck_assert_uint_eq(e.len, VRNG_MAX_CHAIN_BYTES);
	}
	drv_fini(&d);
}
END_TEST

START_TEST(broken_ring_needs_reset)
{
	struct drv d;
	drv_init(&d);
	vdrv_put16(&d.v, AVAIL_GPA + 2, QSIZE + 5); /* avail idx jumped past the ring */
	vdrv_wr(&d.v, VIRTIO_MMIO_QUEUE_NOTIFY, 0);
	ck_assert(vdrv_rd(&d.v, VIRTIO_MMIO_STATUS) & VIRTIO_STATUS_DEVICE_NEEDS_RESET);
	ck_assert(vdrv_rd(&d.v, VIRTIO_MMIO_INTERRUPT_STATUS) & VIRTIO_MMIO_INT_CONFIG);
	ck_assert_uint_eq(vdrv_used_idx(&d.v, 0), 0);
	/* a head index out of range breaks the ring too */
	vdrv_wr(&d.v, VIRTIO_MMIO_STATUS, 0);
	memset(gmem_ptr(&d.mem, AVAIL_GPA, 0x2000), 0, 0x2000);
	d.v.q[0].avail_idx = 0;
	vdrv_up(&d.v, ~0ULL, VRNG_QUEUE_SIZE);
	vdrv_offer(&d.v, 0, QSIZE + 1);
	vdrv_wr(&d.v, VIRTIO_MMIO_QUEUE_NOTIFY, 0);
	ck_assert(vdrv_rd(&d.v, VIRTIO_MMIO_STATUS) & VIRTIO_STATUS_DEVICE_NEEDS_RESET);
	/* the driver resets and starts over */
	vdrv_wr(&d.v, VIRTIO_MMIO_STATUS, 0);
	memset(gmem_ptr(&d.mem, AVAIL_GPA, 0x2000), 0, 0x2000);
	d.v.q[0].avail_idx = 0;
	vdrv_up(&d.v, ~0ULL, VRNG_QUEUE_SIZE);
	vdrv_put_desc(&d.v, 0, 0, BUF_GPA, 16, VIRTQ_DESC_F_WRITE, 0);
	ck_assert_uint_eq(kick(&d, 0), 16);
	drv_fini(&d);
}
END_TEST

START_TEST(save_restore)
{
	struct drv d;
	drv_init(&d);
	vdrv_put_desc(&d.v, 0, 0, BUF_GPA, 32, VIRTQ_DESC_F_WRITE, 0);
	ck_assert_uint_eq(kick(&d, 0), 32);
	struct virtio_mmio_state st;
	virtio_mmio_save(vrng_transport(d.rng), &st);
	ck_assert_uint_eq(st.queues[0].used_idx, 1);

	/* a second device on the same RAM (another "VM" restored from it) */
	struct bus bus2 = { 0 };
	struct virtio_mmio_cfg cfg = {
		.base = BASE, .gsi = GSI, .vm_fd = -1, .mem = &d.mem, .bus = &bus2
	};
	struct vrng *r2;
	ck_assert_int_eq(vrng_create(&cfg, &r2), 0);
	ck_assert_int_eq(virtio_mmio_restore(vrng_transport(r2), &st), 0);
	vdrv_offer(&d.v, 0, 0);
	uint32_t v = 0;
	ck_assert(bus_access(&bus2, BASE + VIRTIO_MMIO_QUEUE_NOTIFY, (uint8_t *)&v, 4, true));
	ck_assert_uint_eq(vdrv_used_idx(&d.v, 0), 2);
	ck_assert_uint_eq(vdrv_used_elem(&d.v, 0, 1).len, 32);
	/* a state with a second queue does not fit this device */
	st.queues[1] = st.queues[0];
	ck_assert_int_eq(virtio_mmio_restore(vrng_transport(r2), &st), -EINVAL);
	vrng_destroy(r2);
	drv_fini(&d);
}
END_TEST

START_TEST(create_errors)
{
	struct vrng *r = (struct vrng *)1;
	ck_assert_int_eq(vrng_create(NULL, &r), -EINVAL);
	ck_assert_ptr_null(r);
	struct bus bus = { 0 };
	struct virtio_mmio_cfg cfg = { .base = BASE, .gsi = GSI, .vm_fd = -1, .bus = &bus };
	ck_assert_int_eq(vrng_create(&cfg, &r), -EINVAL); /* no guest RAM */
	ck_assert_ptr_null(r);
	vrng_destroy(NULL);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("rng");
	TCase *tc = tcase_create("rng");
	tcase_add_test(tc, identity_and_config);
	tcase_add_test(tc, fills_buffers);
	tcase_add_test(tc, scattered_writable_chain);
	tcase_add_test(tc, readable_descriptor_refused);
	tcase_add_test(tc, malformed_chains_fail_alone);
	tcase_add_test(tc, oversized_length_capped);
	tcase_add_test(tc, batch_capped_per_notification);
	tcase_add_test(tc, broken_ring_needs_reset);
	tcase_add_test(tc, save_restore);
	tcase_add_test(tc, create_errors);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN()
