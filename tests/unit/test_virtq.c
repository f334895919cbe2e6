/* Unit tests: the split virtqueue — chain walking (including hostile
 * chains), the used ring and event-idx interrupt suppression. */
#include <errno.h>
#include <string.h>

#include "arch/x86_64/layout.h"
#include "base/guest_mem.h"
#include "unit.h"
#include "virtio/queue.h"
#include "virtio_driver.h"

#define RAM_SIZE   (1024 * 1024)
#define DESC_GPA   0x1000
#define AVAIL_GPA  0x2000
#define USED_GPA   0x3000
#define TABLE_GPA  0x4000 /* indirect tables */
#define TABLE2_GPA 0x5000
#define BUF_GPA    0x10000
#define QSIZE      16

struct ring {
	struct guest_mem mem;
	struct virtq q;
	struct vdrv v; /* the driver's side of the ring */
};

static void ring_init(struct ring *r, uint64_t ram, uint16_t size, bool event_idx)
{
	memset(r, 0, sizeof(*r));
	ck_assert_int_eq(gmem_create(&r->mem, ram, X86_MMIO_HOLE), 0);
	r->q = (struct virtq){ .size = size,
		               .desc_gpa = DESC_GPA,
		               .avail_gpa = AVAIL_GPA,
		               .used_gpa = USED_GPA,
		               .event_idx = event_idx };
	ck_assert_int_eq(virtq_check(&r->q, &r->mem, VIRTQ_MAX_SIZE), 0);
	r->q.ready = true;
	vdrv_init(&r->v, &r->mem, NULL, 0);
	vdrv_ring(&r->v, 0, DESC_GPA, AVAIL_GPA, USED_GPA, size);
}

static void ring_fini(struct ring *r)
{
	gmem_destroy(&r->mem);
}

static uint64_t used_event_gpa(const struct ring *r)
{
	return AVAIL_GPA + 4 + 2ULL * r->q.size;
}

static uint64_t avail_event_gpa(const struct ring *r)
{
	return USED_GPA + 4 + 8ULL * r->q.size;
}

START_TEST(pops_simple_chain)
{
	struct ring r;
	struct virtq_req req;
	ring_init(&r, RAM_SIZE, QSIZE, false);
	ck_assert_int_eq(virtq_pop(&r.q, &r.mem, &req), 0);
	vdrv_put_desc_at(&r.v, DESC_GPA, 3, BUF_GPA, 16, VIRTQ_DESC_F_NEXT, 7);
	vdrv_put_desc_at(&r.v, DESC_GPA, 7, BUF_GPA + 16, 512,
	                 VIRTQ_DESC_F_NEXT | VIRTQ_DESC_F_WRITE, 9);
	vdrv_put_desc_at(&r.v, DESC_GPA, 9, BUF_GPA + 1024, 1, VIRTQ_DESC_F_WRITE, 0);
	vdrv_offer(&r.v, 0, 3);
	ck_assert_int_eq(virtq_pop(&r.q, &r.mem, &req), 1);
	ck_assert(req.has_head);
	ck_assert_uint_eq(req.head, 3);
	ck_assert_uint_eq(req.n_out, 1);
	ck_assert_uint_eq(req.n_in, 2);
	ck_assert_uint_eq(req.out_len, 16);
	ck_assert_uint_eq(req.in_len, 513);
	ck_assert_ptr_eq(virtq_req_out(&req)[0].iov_base, gmem_ptr(&r.mem, BUF_GPA, 16));
	ck_assert_ptr_eq(virtq_req_in(&req)[1].iov_base, gmem_ptr(&r.mem, BUF_GPA + 1024, 1));
	ck_assert_int_eq(virtq_pop(&r.q, &r.mem, &req), 0);
	ck_assert_uint_eq(r.q.last_avail_idx, 1);
	ring_fini(&r);
}
END_TEST

START_TEST(loop_via_next_fails_the_request)
{
	struct ring r;
	struct virtq_req req;
	ring_init(&r, RAM_SIZE, QSIZE, false);
	vdrv_put_desc_at(&r.v, DESC_GPA, 0, BUF_GPA, 16, VIRTQ_DESC_F_NEXT, 1);
	vdrv_put_desc_at(&r.v, DESC_GPA, 1, BUF_GPA, 16, VIRTQ_DESC_F_NEXT, 0);
	vdrv_offer(&r.v, 0, 0);
	ck_assert_int_eq(virtq_pop(&r.q, &r.mem, &req), -ELOOP);
	ck_assert(req.has_head);
	ck_assert_uint_eq(req.head, 0);
	ck_assert(!r.q.broken);
	/* The head was consumed and can be completed; the queue goes on. */
	ck_assert_int_eq(virtq_push(&r.q, &r.mem, req.head, 0), 0);
	vdrv_put_desc_at(&r.v, DESC_GPA, 2, BUF_GPA, 16, 0, 0);
	vdrv_offer(&r.v, 0, 2);
	ck_assert_int_eq(virtq_pop(&r.q, &r.mem, &req), 1);
	ck_assert_uint_eq(req.head, 2);
	ring_fini(&r);
}
END_TEST

START_TEST(self_loop_and_bad_next)
{
	struct ring r;
	struct virtq_req req;
	ring_init(&r, RAM_SIZE, QSIZE, false);
	vdrv_put_desc_at(&r.v, DESC_GPA, 5, BUF_GPA, 1, VIRTQ_DESC_F_NEXT, 5);
	vdrv_offer(&r.v, 0, 5);
	ck_assert_int_eq(virtq_pop(&r.q, &r.mem, &req), -ELOOP);
	/* at most queue-size segments were ever collected */
	ck_assert_uint_le(req.n_out + req.n_in, QSIZE);
	vdrv_put_desc_at(&r.v, DESC_GPA, 6, BUF_GPA, 1, VIRTQ_DESC_F_NEXT, QSIZE);
	vdrv_offer(&r.v, 0, 6);
	ck_assert_int_eq(virtq_pop(&r.q, &r.mem, &req), -EINVAL);
	ck_assert_uint_eq(req.head, 6);
	ring_fini(&r);
}
END_TEST

START_TEST(buffer_outside_ram_or_wrapping)
{
	struct ring r;
	struct virtq_req req;
	ring_init(&r, RAM_SIZE, QSIZE, false);
	vdrv_put_desc_at(&r.v, DESC_GPA, 0, RAM_SIZE - 8, 16, 0, 0); /* straddles the end */
	vdrv_offer(&r.v, 0, 0);
	ck_assert_int_eq(virtq_pop(&r.q, &r.mem, &req), -EFAULT);
	vdrv_put_desc_at(&r.v, DESC_GPA, 1, UINT64_MAX - 15, 0xffffffff, 0, 0); /* wraps 2^64 */
	vdrv_offer(&r.v, 0, 1);
	ck_assert_int_eq(virtq_pop(&r.q, &r.mem, &req), -EFAULT);
	vdrv_put_desc_at(&r.v, DESC_GPA, 2, X86_MMIO_HOLE_START, 4, 0, 0);
	vdrv_offer(&r.v, 0, 2);
	ck_assert_int_eq(virtq_pop(&r.q, &r.mem, &req), -EFAULT);
	/* The walk goes on past a bad buffer, leaving a placeholder, so the
	 * chain's real last writable byte is still known. */
	vdrv_put_desc_at(&r.v, DESC_GPA, 3, BUF_GPA, 16, VIRTQ_DESC_F_NEXT, 4);
	vdrv_put_desc_at(&r.v, DESC_GPA, 4, RAM_SIZE, 512, VIRTQ_DESC_F_NEXT | VIRTQ_DESC_F_WRITE,
	                 5);
	vdrv_put_desc_at(&r.v, DESC_GPA, 5, BUF_GPA + 100, 1, VIRTQ_DESC_F_WRITE, 0);
	vdrv_offer(&r.v, 0, 3);
	ck_assert_int_eq(virtq_pop(&r.q, &r.mem, &req), -EFAULT);
	ck_assert(req.has_head);
	ck_assert_uint_eq(req.n_in, 2);
	ck_assert_ptr_null(virtq_req_in(&req)[0].iov_base);
	ck_assert_uint_eq(virtq_req_in(&req)[0].iov_len, 0);
	ck_assert_ptr_eq(virtq_req_in(&req)[1].iov_base, gmem_ptr(&r.mem, BUF_GPA + 100, 1));
	ck_assert_uint_eq(req.in_len, 1);
	ring_fini(&r);
}
END_TEST

START_TEST(write_then_read_is_refused)
{
	struct ring r;
	struct virtq_req req;
	ring_init(&r, RAM_SIZE, QSIZE, false);
	vdrv_put_desc_at(&r.v, DESC_GPA, 0, BUF_GPA, 16, VIRTQ_DESC_F_NEXT | VIRTQ_DESC_F_WRITE, 1);
	vdrv_put_desc_at(&r.v, DESC_GPA, 1, BUF_GPA + 16, 16, 0, 0);
	vdrv_offer(&r.v, 0, 0);
	ck_assert_int_eq(virtq_pop(&r.q, &r.mem, &req), -EINVAL);
	/* The writable part seen before the fault is reported. */
	ck_assert_uint_eq(req.n_in, 1);
	ring_fini(&r);
}
END_TEST

START_TEST(indirect_table)
{
	struct ring r;
	struct virtq_req req;
	ring_init(&r, RAM_SIZE, QSIZE, false);
	vdrv_put_desc_at(&r.v, TABLE_GPA, 0, BUF_GPA, 16, VIRTQ_DESC_F_NEXT, 2);
	vdrv_put_desc_at(&r.v, TABLE_GPA, 2, BUF_GPA + 16, 4096,
	                 VIRTQ_DESC_F_NEXT | VIRTQ_DESC_F_WRITE, 1);
	vdrv_put_desc_at(&r.v, TABLE_GPA, 1, BUF_GPA + 8192, 1, VIRTQ_DESC_F_WRITE, 0);
	/* a direct descriptor may precede the table */
	vdrv_put_desc_at(&r.v, DESC_GPA, 4, BUF_GPA + 9000, 8, VIRTQ_DESC_F_NEXT, 5);
	vdrv_put_desc_at(&r.v, DESC_GPA, 5, TABLE_GPA, 3 * 16, VIRTQ_DESC_F_INDIRECT, 0);
	vdrv_offer(&r.v, 0, 4);
	ck_assert_int_eq(virtq_pop(&r.q, &r.mem, &req), 1);
	ck_assert_uint_eq(req.head, 4);
	ck_assert_uint_eq(req.n_out, 2);
	ck_assert_uint_eq(req.n_in, 2);
	ck_assert_uint_eq(req.out_len, 24);
	ck_assert_uint_eq(req.in_len, 4097);
	ring_fini(&r);
}
END_TEST

START_TEST(malicious_indirect_tables)
{
	struct ring r;
	struct virtq_req req;
	ring_init(&r, RAM_SIZE, QSIZE, false);
	/* table pointing out of RAM */
	vdrv_put_desc_at(&r.v, DESC_GPA, 0, RAM_SIZE - 16, 64, VIRTQ_DESC_F_INDIRECT, 0);
	vdrv_offer(&r.v, 0, 0);
	ck_assert_int_eq(virtq_pop(&r.q, &r.mem, &req), -EFAULT);
	/* indirect inside indirect */
	vdrv_put_desc_at(&r.v, TABLE_GPA, 0, TABLE2_GPA, 16, VIRTQ_DESC_F_INDIRECT, 0);
	vdrv_put_desc_at(&r.v, DESC_GPA, 1, TABLE_GPA, 16, VIRTQ_DESC_F_INDIRECT, 0);
	vdrv_offer(&r.v, 0, 1);
	ck_assert_int_eq(virtq_pop(&r.q, &r.mem, &req), -EINVAL);
	/* INDIRECT together with NEXT */
	vdrv_put_desc_at(&r.v, DESC_GPA, 2, TABLE_GPA, 16,
	                 VIRTQ_DESC_F_INDIRECT | VIRTQ_DESC_F_NEXT, 3);
	vdrv_offer(&r.v, 0, 2);
	ck_assert_int_eq(virtq_pop(&r.q, &r.mem, &req), -EINVAL);
	/* table length not a whole number of descriptors, or empty */
	vdrv_put_desc_at(&r.v, DESC_GPA, 3, TABLE_GPA, 24, VIRTQ_DESC_F_INDIRECT, 0);
	vdrv_offer(&r.v, 0, 3);
	ck_assert_int_eq(virtq_pop(&r.q, &r.mem, &req), -EINVAL);
	vdrv_put_desc_at(&r.v, DESC_GPA, 4, TABLE_GPA, 0, VIRTQ_DESC_F_INDIRECT, 0);
	vdrv_offer(&r.v, 0, 4);
	ck_assert_int_eq(virtq_pop(&r.q, &r.mem, &req), -EINVAL);
	/* next past the end of the table */
	vdrv_put_desc_at(&r.v, TABLE_GPA, 0, BUF_GPA, 1, VIRTQ_DESC_F_NEXT, 2);
	vdrv_put_desc_at(&r.v, DESC_GPA, 5, TABLE_GPA, 32, VIRTQ_DESC_F_INDIRECT, 0);
	vdrv_offer(&r.v, 0, 5);
	ck_assert_int_eq(virtq_pop(&r.q, &r.mem, &req), -EINVAL);
	/* a loop inside the table */
	vdrv_put_desc_at(&r.v, TABLE_GPA, 0, BUF_GPA, 1, VIRTQ_DESC_F_NEXT, 1);
	vdrv_put_desc_at(&r.v, TABLE_GPA, 1, BUF_GPA, 1, VIRTQ_DESC_F_NEXT, 0);
	vdrv_put_desc_at(&r.v, DESC_GPA, 6, TABLE_GPA, 32, VIRTQ_DESC_F_INDIRECT, 0);
	vdrv_offer(&r.v, 0, 6);
	ck_assert_int_eq(virtq_pop(&r.q, &r.mem, &req), -ELOOP);
	ring_fini(&r);
}
END_TEST

START_TEST(more_descriptors_than_queue_size)
{
	struct ring r;
	struct virtq_req req;
	ring_init(&r, RAM_SIZE, QSIZE, false);
	/* A loop-free indirect chain of QSIZE + 1 descriptors. */
	for (uint16_t i = 0; i <= QSIZE; i++)
		vdrv_put_desc_at(&r.v, TABLE_GPA, i, BUF_GPA, 8, i < QSIZE ? VIRTQ_DESC_F_NEXT : 0,
		                 i + 1);
	vdrv_put_desc_at(&r.v, DESC_GPA, 0, TABLE_GPA, 16 * (QSIZE + 1), VIRTQ_DESC_F_INDIRECT, 0);
	vdrv_offer(&r.v, 0, 0);
	ck_assert_int_eq(virtq_pop(&r.q, &r.mem, &req), -ELOOP);
	/* Exactly QSIZE is allowed. */
	vdrv_put_desc_at(&r.v, TABLE_GPA, QSIZE - 1, BUF_GPA, 8, 0, 0);
	vdrv_put_desc_at(&r.v, DESC_GPA, 1, TABLE_GPA, 16 * QSIZE, VIRTQ_DESC_F_INDIRECT, 0);
	vdrv_offer(&r.v, 0, 1);
	ck_assert_int_eq(virtq_pop(&r.q, &r.mem, &req), 1);
	ck_assert_uint_eq(req.n_out, QSIZE);
	ring_fini(&r);
}
END_TEST

START_TEST(chain_over_4gib_is_refused)
{
	/* 256 descriptors of 16 MiB, all over the same RAM: 4 GiB in total. */
	struct ring r;
	struct virtq_req req;
	const uint64_t ram = 32ULL << 20, chunk = 16ULL << 20, table = 0x8000;
	ring_init(&r, ram, 256, false);
	for (uint16_t i = 0; i < 256; i++)
		vdrv_put_desc_at(&r.v, table, i, 1ULL << 20, (uint32_t)chunk,
		                 i < 255 ? VIRTQ_DESC_F_NEXT : 0, i + 1);
	vdrv_put_desc_at(&r.v, DESC_GPA, 0, table, 16 * 256, VIRTQ_DESC_F_INDIRECT, 0);
	vdrv_offer(&r.v, 0, 0);
	ck_assert_int_eq(virtq_pop(&r.q, &r.mem, &req), -E2BIG);
	ring_fini(&r);
}
END_TEST

START_TEST(avail_jump_breaks_the_ring)
{
	struct ring r;
	struct virtq_req req;
	ring_init(&r, RAM_SIZE, QSIZE, false);
	vdrv_put16(&r.v, AVAIL_GPA + 2, QSIZE + 1);
	ck_assert_int_eq(virtq_pop(&r.q, &r.mem, &req), -EPROTO);
	ck_assert(!req.has_head);
	ck_assert(r.q.broken);
	ck_assert_int_eq(virtq_pop(&r.q, &r.mem, &req), -EPROTO);
	ck_assert_uint_eq(r.q.last_avail_idx, 0);
	virtq_reset(&r.q);
	ck_assert(!r.q.broken);
	ck_assert(!r.q.ready);
	ring_fini(&r);
}
END_TEST

START_TEST(head_out_of_range_breaks_the_ring)
{
	struct ring r;
	struct virtq_req req;
	ring_init(&r, RAM_SIZE, QSIZE, false);
	vdrv_offer(&r.v, 0, QSIZE);
	ck_assert_int_eq(virtq_pop(&r.q, &r.mem, &req), -EPROTO);
	ck_assert(!req.has_head);
	ring_fini(&r);
}
END_TEST

START_TEST(exactly_queue_size_outstanding_is_fine)
{
	struct ring r;
	struct virtq_req req;
	ring_init(&r, RAM_SIZE, QSIZE, false);
	for (uint16_t i = 0; i < QSIZE; i++) {
		vdrv_put_desc_at(&r.v, DESC_GPA, i, BUF_GPA + i, 1, 0, 0);
		vdrv_offer(&r.v, 0, i);
	}
	for (uint16_t i = 0; i < QSIZE; i++) {
		ck_assert_int_eq(virtq_pop(&r.q, &r.mem, &req), 1);
		ck_assert_uint_eq(req.head, i);
	}
	ck_assert_int_eq(virtq_pop(&r.q, &r.mem, &req), 0);
	ring_fini(&r);
}
END_TEST

START_TEST(index_wraps_at_65536)
{
	struct ring r;
	struct virtq_req req;
	ring_init(&r, RAM_SIZE, QSIZE, false);
	r.q.last_avail_idx = 65534;
	r.v.q[0].avail_idx = 65534;
	vdrv_put_desc_at(&r.v, DESC_GPA, 0, BUF_GPA, 1, 0, 0);
	for (int i = 0; i < 4; i++)
		vdrv_offer(&r.v, 0, 0);
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(virtq_pop(&r.q, &r.mem, &req), 1);
	ck_assert_uint_eq(r.q.last_avail_idx, 2);
	ck_assert_int_eq(virtq_pop(&r.q, &r.mem, &req), 0);
	ring_fini(&r);
}
END_TEST

START_TEST(check_rejects_bad_layouts)
{
	struct guest_mem mem;
	ck_assert_int_eq(gmem_create(&mem, RAM_SIZE, X86_MMIO_HOLE), 0);
	struct virtq q = {
		.size = 16, .desc_gpa = 0x1000, .avail_gpa = 0x2000, .used_gpa = 0x3000
	};
	ck_assert_int_eq(virtq_check(&q, &mem, 256), 0);
	q.size = 12;
	ck_assert_int_eq(virtq_check(&q, &mem, 256), -EINVAL);
	q.size = 0;
	ck_assert_int_eq(virtq_check(&q, &mem, 256), -EINVAL);
	q.size = 32;
	ck_assert_int_eq(virtq_check(&q, &mem, 16), -EINVAL);
	q.size = 16;
	q.desc_gpa = 0x1008;
	ck_assert_int_eq(virtq_check(&q, &mem, 256), -EINVAL);
	q.desc_gpa = 0x1000;
	q.used_gpa = 0x3002;
	ck_assert_int_eq(virtq_check(&q, &mem, 256), -EINVAL);
	q.used_gpa = RAM_SIZE - 16; /* runs off the end */
	ck_assert_int_eq(virtq_check(&q, &mem, 256), -EFAULT);
	q.used_gpa = 0x3000;
	q.avail_gpa = UINT64_MAX - 1;
	ck_assert_int_eq(virtq_check(&q, &mem, 256), -EFAULT);
	gmem_destroy(&mem);
}
END_TEST

START_TEST(push_publishes_used_entries)
{
	struct ring r;
	ring_init(&r, RAM_SIZE, QSIZE, false);
	ck_assert_int_eq(virtq_push(&r.q, &r.mem, 5, 513), 0);
	ck_assert_int_eq(virtq_push(&r.q, &r.mem, 9, 1), 0);
	ck_assert_uint_eq(vdrv_get16(&r.v, USED_GPA + 2), 2);
	struct virtq_used_elem e[2];
	ck_assert_int_eq(gmem_read(&r.mem, USED_GPA + 4, e, sizeof(e)), 0);
	ck_assert_uint_eq(e[0].id, 5);
	ck_assert_uint_eq(e[0].len, 513);
	ck_assert_uint_eq(e[1].id, 9);
	ck_assert_int_eq(virtq_push(&r.q, &r.mem, QSIZE, 0), -EINVAL);
	ring_fini(&r);
}
END_TEST

START_TEST(interrupt_without_event_idx)
{
	struct ring r;
	ring_init(&r, RAM_SIZE, QSIZE, false);
	ck_assert(!virtq_needs_interrupt(&r.q, &r.mem)); /* nothing used yet */
	ck_assert_int_eq(virtq_push(&r.q, &r.mem, 0, 0), 0);
	ck_assert(virtq_needs_interrupt(&r.q, &r.mem));
	ck_assert(!virtq_needs_interrupt(&r.q, &r.mem)); /* already told */
	vdrv_put16(&r.v, AVAIL_GPA, VIRTQ_AVAIL_F_NO_INTERRUPT);
	ck_assert_int_eq(virtq_push(&r.q, &r.mem, 0, 0), 0);
	ck_assert(!virtq_needs_interrupt(&r.q, &r.mem));
	ring_fini(&r);
}
END_TEST

START_TEST(interrupt_with_event_idx)
{
	struct ring r;
	ring_init(&r, RAM_SIZE, QSIZE, true);
	/* The driver wants to hear once used idx passes 2. */
	vdrv_put16(&r.v, used_event_gpa(&r), 2);
	vdrv_put16(&r.v, AVAIL_GPA, VIRTQ_AVAIL_F_NO_INTERRUPT); /* ignored with event idx */
	ck_assert_int_eq(virtq_push(&r.q, &r.mem, 0, 0), 0);     /* used idx 1 */
	ck_assert(!virtq_needs_interrupt(&r.q, &r.mem));
	ck_assert_int_eq(virtq_push(&r.q, &r.mem, 0, 0), 0); /* 2 */
	ck_assert(!virtq_needs_interrupt(&r.q, &r.mem));
	ck_assert_int_eq(virtq_push(&r.q, &r.mem, 0, 0), 0); /* 3: crosses used_event 2 */
	ck_assert(virtq_needs_interrupt(&r.q, &r.mem));
	/* A batch that jumps over used_event still interrupts once. */
	vdrv_put16(&r.v, used_event_gpa(&r), 4);
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(virtq_push(&r.q, &r.mem, 0, 0), 0); /* 3 -> 7 */
	ck_assert(virtq_needs_interrupt(&r.q, &r.mem));
	/* A stale used_event (behind) means the driver is not waiting. */
	ck_assert_int_eq(virtq_push(&r.q, &r.mem, 0, 0), 0);
	ck_assert(!virtq_needs_interrupt(&r.q, &r.mem));
	ring_fini(&r);
}
END_TEST

START_TEST(event_idx_rearms_avail_event)
{
	struct ring r;
	struct virtq_req req;
	ring_init(&r, RAM_SIZE, QSIZE, true);
	vdrv_put_desc_at(&r.v, DESC_GPA, 0, BUF_GPA, 1, 0, 0);
	vdrv_offer(&r.v, 0, 0);
	vdrv_offer(&r.v, 0, 0);
	ck_assert_int_eq(virtq_pop(&r.q, &r.mem, &req), 1);
	ck_assert_int_eq(virtq_pop(&r.q, &r.mem, &req), 1);
	ck_assert_int_eq(virtq_pop(&r.q, &r.mem, &req), 0);
	/* The driver is asked to notify when it makes entry 2 available. */
	ck_assert_uint_eq(vdrv_get16(&r.v, avail_event_gpa(&r)), 2);
	ring_fini(&r);
}
END_TEST

START_TEST(not_ready_queue_has_nothing)
{
	struct ring r;
	struct virtq_req req;
	ring_init(&r, RAM_SIZE, QSIZE, false);
	vdrv_offer(&r.v, 0, 0);
	r.q.ready = false;
	ck_assert_int_eq(virtq_pop(&r.q, &r.mem, &req), 0);
	ring_fini(&r);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("virtq");
	TCase *c = tcase_create("chains");
	tcase_add_test(c, pops_simple_chain);
	tcase_add_test(c, loop_via_next_fails_the_request);
	tcase_add_test(c, self_loop_and_bad_next);
	tcase_add_test(c, buffer_outside_ram_or_wrapping);
	tcase_add_test(c, write_then_read_is_refused);
	tcase_add_test(c, indirect_table);
	tcase_add_test(c, malicious_indirect_tables);
	tcase_add_test(c, more_descriptors_than_queue_size);
	tcase_add_test(c, chain_over_4gib_is_refused);
	tcase_add_test(c, avail_jump_breaks_the_ring);
	tcase_add_test(c, head_out_of_range_breaks_the_ring);
	tcase_add_test(c, exactly_queue_size_outstanding_is_fine);
	tcase_add_test(c, index_wraps_at_65536);
	tcase_add_test(c, check_rejects_bad_layouts);
	tcase_add_test(c, not_ready_queue_has_nothing);
	suite_add_tcase(s, c);
	TCase *u = tcase_create("used");
	tcase_add_test(u, push_publishes_used_entries);
	tcase_add_test(u, interrupt_without_event_idx);
	tcase_add_test(u, interrupt_with_event_idx);
	tcase_add_test(u, event_idx_rearms_avail_event);
	suite_add_tcase(s, u);
	return s;
}

UNIT_MAIN()
