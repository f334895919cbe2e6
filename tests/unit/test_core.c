/* Unit tests: the address-range bus and the guest-memory bounds checks. */
#include <errno.h>
#include <string.h>

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include "arch/x86_64/layout.h"
#include "base/bus.h"
#include "base/evloop.h"
#include "base/guest_mem.h"
#include "unit.h"

struct probe {
	uint64_t last_offset;
	uint32_t last_len;
	int calls;
};

static void probe_fn(void *opaque, uint64_t offset, uint8_t *data, uint32_t len, bool is_write)
{
	struct probe *p = opaque;
	p->last_offset = offset;
	p->last_len = len;
	p->calls++;
	if (!is_write)
		data[0] = 0xab;
}

START_TEST(bus_rejects_overlap)
{
	struct bus b = { 0 };
	struct probe p = { 0 };
	ck_assert_int_eq(bus_register(&b, 0x1000, 0x100, probe_fn, &p, "a"), 0);
	ck_assert_int_eq(bus_register(&b, 0x2000, 0x100, probe_fn, &p, "b"), 0);
	/* Overlaps of every shape are refused. */
	ck_assert_int_eq(bus_register(&b, 0x10ff, 1, probe_fn, &p, "end"), -EEXIST);
	ck_assert_int_eq(bus_register(&b, 0x0fff, 2, probe_fn, &p, "start"), -EEXIST);
	ck_assert_int_eq(bus_register(&b, 0x0f00, 0x2000, probe_fn, &p, "cover"), -EEXIST);
	ck_assert_int_eq(bus_register(&b, 0x1010, 0x10, probe_fn, &p, "inside"), -EEXIST);
	ck_assert_int_eq(bus_register(&b, 0x1fff, 2, probe_fn, &p, "b-start"), -EEXIST);
	/* Adjacent ranges are fine; empty and wrapping ones are not. */
	ck_assert_int_eq(bus_register(&b, 0x1100, 0xf00, probe_fn, &p, "between"), 0);
	ck_assert_int_eq(bus_register(&b, 0x5000, 0, probe_fn, &p, "empty"), -EINVAL);
	ck_assert_int_eq(bus_register(&b, UINT64_MAX - 1, 4, probe_fn, &p, "wrap"), -EINVAL);
	ck_assert_uint_eq(b.n, 3);
	for (size_t i = 1; i < b.n; i++)
		ck_assert_uint_lt(b.ranges[i - 1].base, b.ranges[i].base);
}
END_TEST

START_TEST(bus_dispatch_offsets_and_zero_fill)
{
	struct bus b = { 0 };
	struct probe p = { 0 };
	ck_assert_int_eq(bus_register(&b, 0x3f8, 8, probe_fn, &p, "uart"), 0);
	uint8_t data[4] = { 0xff, 0xff, 0xff, 0xff };
	ck_assert(bus_access(&b, 0x3fa, data, 2, false));
	ck_assert_uint_eq(p.last_offset, 2);
	ck_assert_uint_eq(data[0], 0xab);
	ck_assert_uint_eq(data[1], 0); /* zero-filled before dispatch */
	/* An access that runs past the end of a range is not claimed. */
	ck_assert(!bus_access(&b, 0x3fe, data, 4, false));
	ck_assert(!bus_access(&b, 0x3f7, data, 1, true));
	memset(data, 0xff, sizeof(data));
	ck_assert(!bus_access(&b, 0x80, data, 4, false));
	ck_assert_uint_eq(data[3], 0);
	ck_assert_int_eq(p.calls, 1);
}
END_TEST

START_TEST(bus_fills_up)
{
	struct bus b = { 0 };
	struct probe p = { 0 };
	for (uint64_t i = 0; i < BUS_MAX_RANGES; i++)
		ck_assert_int_eq(bus_register(&b, i * 16, 16, probe_fn, &p, "x"), 0);
	ck_assert_int_eq(bus_register(&b, 0x100000, 16, probe_fn, &p, "x"), -ENOSPC);
	for (uint64_t i = 0; i < BUS_MAX_RANGES; i++)
		ck_assert_ptr_nonnull(bus_find(&b, i * 16 + 15, 1));
}
END_TEST

START_TEST(gmem_layout_splits_around_hole)
{
	struct guest_mem m;
	gmem_layout(&m, 256ULL << 20, X86_MMIO_HOLE);
	ck_assert_uint_eq(m.nregions, 1);
	ck_assert_uint_eq(m.regions[0].size, 256ULL << 20);
	gmem_layout(&m, 4ULL << 30, X86_MMIO_HOLE);
	ck_assert_uint_eq(m.nregions, 2);
	ck_assert_uint_eq(m.regions[0].size, X86_MMIO_HOLE_START);
	ck_assert_uint_eq(m.regions[1].gpa, X86_MMIO_HOLE_END);
	ck_assert_uint_eq(m.regions[1].size, (4ULL << 30) - X86_MMIO_HOLE_START);
	ck_assert_uint_eq(m.regions[1].offset, X86_MMIO_HOLE_START);
}
END_TEST

START_TEST(gmem_checks_bounds)
{
	struct guest_mem m;
	ck_assert_int_eq(gmem_create(&m, 1 << 20, X86_MMIO_HOLE), 0);
	ck_assert_ptr_nonnull(gmem_ptr(&m, 0, 1 << 20));
	ck_assert_ptr_nonnull(gmem_ptr(&m, (1 << 20) - 1, 1));
	ck_assert_ptr_null(gmem_ptr(&m, (1 << 20) - 1, 2));
	ck_assert_ptr_null(gmem_ptr(&m, 1 << 20, 0));
	ck_assert_ptr_null(gmem_ptr(&m, UINT64_MAX, 2));
	ck_assert_ptr_null(gmem_ptr(&m, 16, UINT64_MAX));
	ck_assert_ptr_null(gmem_ptr(&m, X86_MMIO_HOLE_START, 4));
	uint32_t v = 0x12345678, r = 0;
	ck_assert_int_eq(gmem_write(&m, 0x1000, &v, sizeof(v)), 0);
	ck_assert_int_eq(gmem_read(&m, 0x1000, &r, sizeof(r)), 0);
	ck_assert_uint_eq(r, v);
	ck_assert_int_eq(gmem_read(&m, (1 << 20) - 2, &r, sizeof(r)), -EFAULT);
	gmem_destroy(&m);
	ck_assert_int_eq(gmem_create(&m, 1000, X86_MMIO_HOLE), -EINVAL);
}
END_TEST

/* Both kinds of guest RAM start on a 2 MiB boundary (what lets the host and
 * KVM use huge pages), and a snapshot's file is mapped copy-on-write: the
 * guest sees its bytes, and its writes never reach the file. */
START_TEST(gmem_maps_aligned_and_private)
{
	struct guest_mem m;
	ck_assert_int_eq(gmem_create(&m, 3 << 20, X86_MMIO_HOLE), 0);
	ck_assert_uint_eq((uintptr_t)m.base % GMEM_HUGE_PAGE, 0);
	gmem_destroy(&m);

	const uint64_t ram = 4 << 20;
	int fd = memfd_create("cove-gmem-test", MFD_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, (off_t)ram), 0);
	uint32_t v = 0xc0ffee, r = 0;
	ck_assert_int_eq(pwrite(fd, &v, sizeof(v), 0x201000), (ssize_t)sizeof(v));
	ck_assert_int_eq(gmem_map_private(&m, fd, ram, X86_MMIO_HOLE), 0);
	ck_assert_uint_eq((uintptr_t)m.base % GMEM_HUGE_PAGE, 0);
	ck_assert_int_eq(gmem_read(&m, 0x201000, &r, sizeof(r)), 0);
	ck_assert_uint_eq(r, v);
	uint32_t w = 7;
	ck_assert_int_eq(gmem_write(&m, 0x201000, &w, sizeof(w)), 0);
	ck_assert_int_eq(pread(fd, &r, sizeof(r), 0x201000), (ssize_t)sizeof(r));
	ck_assert_uint_eq(r, v);
	ck_assert_ptr_null(gmem_ptr(&m, ram, 1));
	gmem_destroy(&m);
	close(fd);
	ck_assert_int_eq(gmem_map_private(&m, -1, ram, X86_MMIO_HOLE), -EBADF);
}
END_TEST

struct ev_probe {
	struct evloop *l;
	int fds[2];
	int calls[2];
};

/* Whichever of the two runs first removes the other, whose event is
 * already in the same batch: its callback must not run (nor touch freed
 * memory, which ASan would catch). */
static void ev_cb(struct ev_probe *p, int me)
{
	uint64_t v;
	p->calls[me]++;
	ck_assert_int_eq(read(p->fds[me], &v, sizeof(v)), sizeof(v));
	ck_assert_int_eq(evloop_del(p->l, p->fds[!me]), 0);
}

static void ev_cb0(void *o, uint32_t e)
{
	(void)e;
	ev_cb(o, 0);
}

static void ev_cb1(void *o, uint32_t e)
{
	(void)e;
	ev_cb(o, 1);
}

START_TEST(evloop_del_within_a_batch)
{
	struct evloop l;
	ck_assert_int_eq(evloop_init(&l), 0);
	struct ev_probe p = { .l = &l };
	for (int i = 0; i < 2; i++)
		p.fds[i] = eventfd(1, EFD_CLOEXEC | EFD_NONBLOCK);
	ck_assert_int_eq(evloop_add(&l, p.fds[0], EPOLLIN, ev_cb0, &p), 0);
	ck_assert_int_eq(evloop_add(&l, p.fds[1], EPOLLIN, ev_cb1, &p), 0);
	ck_assert_int_eq(evloop_run_once(&l, 100), 1);
	ck_assert_int_eq(p.calls[0] + p.calls[1], 1);
	ck_assert_int_eq(evloop_del(&l, p.fds[0]), (p.calls[0] ? 0 : -ENOENT));
	ck_assert_int_eq(evloop_run_once(&l, 0), 0);
	evloop_destroy(&l);
	close(p.fds[0]);
	close(p.fds[1]);
}
END_TEST

START_TEST(evloop_thread_start_stop)
{
	struct evloop l;
	ck_assert_int_eq(evloop_init(&l), 0);
	ck_assert_int_eq(evloop_start(&l), 0);
	evloop_stop(&l);
	evloop_stop(&l);
	evloop_destroy(&l);
}
END_TEST

static void park_cb(void *opaque, uint32_t events)
{
	int *fd_calls = opaque;
	uint64_t n;
	(void)events;
	if (read(fd_calls[0], &n, sizeof(n)) == sizeof(n))
		__atomic_add_fetch(&fd_calls[1], 1, __ATOMIC_SEQ_CST);
}

/* A parked loop runs no callback until unparked; then it catches up. */
START_TEST(evloop_park_holds_callbacks)
{
	struct evloop l;
	ck_assert_int_eq(evloop_init(&l), 0);
	int fd_calls[2] = { eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK), 0 };
	ck_assert_int_eq(evloop_add(&l, fd_calls[0], EPOLLIN, park_cb, fd_calls), 0);
	ck_assert_int_eq(evloop_park(&l, 100), 0); /* no thread: nothing to wait for */
	ck_assert_int_eq(evloop_start(&l), 0);
	ck_assert_int_eq(evloop_park(&l, 5000), 0);
	ck_assert_int_eq(evloop_park(&l, 100), -EBUSY);
	ck_assert_int_eq(eventfd_write(fd_calls[0], 1), 0);
	usleep(100 * 1000);
	ck_assert_int_eq(__atomic_load_n(&fd_calls[1], __ATOMIC_SEQ_CST), 0);
	evloop_unpark(&l);
	for (int i = 0; i < 500 && !__atomic_load_n(&fd_calls[1], __ATOMIC_SEQ_CST); i++)
		usleep(10 * 1000);
	ck_assert_int_eq(__atomic_load_n(&fd_calls[1], __ATOMIC_SEQ_CST), 1);
	/* Parked again, the loop still stops. */
	ck_assert_int_eq(evloop_park(&l, 5000), 0);
	evloop_stop(&l);
	evloop_destroy(&l);
	close(fd_calls[0]);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("core");
	TCase *tc = tcase_create("bus");
	tcase_add_test(tc, bus_rejects_overlap);
	tcase_add_test(tc, bus_dispatch_offsets_and_zero_fill);
	tcase_add_test(tc, bus_fills_up);
	suite_add_tcase(s, tc);
	tc = tcase_create("guest_mem");
	tcase_add_test(tc, gmem_layout_splits_around_hole);
	tcase_add_test(tc, gmem_checks_bounds);
	tcase_add_test(tc, gmem_maps_aligned_and_private);
	suite_add_tcase(s, tc);
	tc = tcase_create("evloop");
	tcase_add_test(tc, evloop_del_within_a_batch);
	tcase_add_test(tc, evloop_thread_start_stop);
	tcase_add_test(tc, evloop_park_holds_callbacks);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN()
