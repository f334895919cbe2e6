/* Unit tests: the working-set record (common/wsrec.c) and its VMM side
 * (vmm/snapshot/prefetch.c): the format round-trips and refuses what breaks
 * a rule; a record made from this process's own page tables lists exactly
 * the pages touched (read or written) of a MAP_PRIVATE file mapping, and
 * applying it maps them before anything touches them. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/guest_mem.h"
#include "snapshot/prefetch.h"
#include "unit.h"
#include "wsrec.h"

#define RAM (64 * WSREC_PAGE)

static size_t two_ranges(uint8_t *buf, size_t cap)
{
	struct wsrec_range r[2] = { { .first = 3, .pages = 2 },
		                    { .first = 5, .pages = 4, .written = true } };
	return wsrec_format(r, 2, RAM, buf, cap);
}

START_TEST(round_trip)
{
	uint8_t buf[64];
	size_t len = two_ranges(buf, sizeof(buf));
	ck_assert_uint_eq(len, WSREC_HDR + 16);
	struct wsrec w;
	char err[128];
	ck_assert_int_eq(wsrec_parse(buf, len, RAM, &w, err, sizeof(err)), 0);
	ck_assert_uint_eq(w.count, 2);
	ck_assert_uint_eq(w.pages, 6);
	ck_assert_uint_eq(w.r[0].first, 3);
	ck_assert(!w.r[0].written);
	ck_assert_uint_eq(w.r[1].pages, 4);
	ck_assert(w.r[1].written);
	wsrec_free(&w);
	ck_assert_int_eq(wsrec_parse(buf, len, 0, &w, err, sizeof(err)), 0); /* any RAM size */
	wsrec_free(&w);
}
END_TEST

static void refused(const uint8_t *buf, size_t len, uint64_t ram)
{
	struct wsrec w;
	char err[128] = "";
	ck_assert_int_eq(wsrec_parse(buf, len, ram, &w, err, sizeof(err)), -EINVAL);
	ck_assert(err[0] && !strchr(err, '\n'));
	ck_assert_ptr_null(w.r);
}

START_TEST(refusals)
{
	uint8_t buf[64], bad[64];
	size_t len = two_ranges(buf, sizeof(buf));
	refused(buf, len, 2 * RAM);     /* recorded for other RAM */
	refused(buf, len - 1, RAM);     /* short */
	refused(buf, WSREC_HDR - 1, 0); /* no header */
	memcpy(bad, buf, len);
	bad[0] ^= 1;
	refused(bad, len, RAM); /* magic */
	memcpy(bad, buf, len);
	bad[20] = 1;
	refused(bad, len, RAM); /* flags */
	memcpy(bad, buf, len);
	bad[16] = 0;
	refused(bad, WSREC_HDR, RAM); /* no ranges */
	memcpy(bad, buf, len);
	bad[WSREC_HDR + 8] = 2; /* second range starts inside the first */
	refused(bad, len, RAM);
	memcpy(bad, buf, len);
	bad[WSREC_HDR + 8] = 62; /* 62 + 4 pages > 64 */
	refused(bad, len, RAM);
	memcpy(bad, buf, len);
	memset(bad + WSREC_HDR + 4, 0, 4); /* zero pages */
	refused(bad, len, RAM);
	memcpy(bad, buf, len);
	memset(bad + 8, 0xff, 8); /* absurd RAM size */
	refused(bad, len, 0);
	/* The encoder refuses what the parser would. */
	struct wsrec_range r[2] = { { .first = 3, .pages = 2 }, { .first = 4, .pages = 1 } };
	ck_assert_uint_eq(wsrec_format(r, 2, RAM, buf, sizeof(buf)), 0);
	ck_assert_uint_eq(wsrec_format(r, 1, RAM, buf, WSREC_HDR), 0);
}
END_TEST

START_TEST(add_merges)
{
	struct wsrec_range r[3];
	uint32_t n = 0;
	ck_assert(wsrec_add(r, &n, 3, 1, false));
	ck_assert(wsrec_add(r, &n, 3, 2, false));
	ck_assert(wsrec_add(r, &n, 3, 3, true)); /* flag changes: new range */
	ck_assert(wsrec_add(r, &n, 3, 7, true));
	ck_assert_uint_eq(n, 3);
	ck_assert_uint_eq(r[0].pages, 2);
	ck_assert(!wsrec_add(r, &n, 3, 9, true));
	ck_assert(wsrec_add(r, &n, 3, 8, true)); /* extends the last */
	ck_assert_uint_eq(r[2].pages, 2);
}
END_TEST

static bool present(const uint8_t *p)
{
	int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	uint64_t e = 0;
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pread(fd, &e, 8, (off_t)((uintptr_t)p / WSREC_PAGE * 8)), 8);
	close(fd);
	return (e >> 63) & 1;
}

static int memory_file(void)
{
	int fd = memfd_create("cove-wsrec", MFD_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, RAM), 0);
	uint8_t page[WSREC_PAGE];
	memset(page, 0x5a, sizeof(page));
	for (int i = 0; i < 64; i++)
		ck_assert_int_eq(pwrite(fd, page, sizeof(page), (off_t)i * WSREC_PAGE),
		                 (ssize_t)sizeof(page));
	return fd;
}

START_TEST(record_and_apply)
{
	int mem = memory_file();
	struct guest_mem m = { .ram_size = RAM, .fd = -1 };
	m.base = mmap(NULL, RAM, PROT_READ | PROT_WRITE, MAP_PRIVATE, mem, 0);
	ck_assert(m.base != MAP_FAILED);
	prefetch_restore(&m, -1); /* no record: only opens the pagemap */
	volatile uint8_t sink = m.base[3 * WSREC_PAGE];
	(void)sink;
	for (int i = 10; i < 13; i++)
		m.base[i * WSREC_PAGE + 1] = 1;
	int out = memfd_create("cove-wsrec-out", MFD_CLOEXEC);
	uint32_t ranges = 0;
	uint64_t pages = 0;
	char err[128];
	ck_assert_int_eq(prefetch_record(&m, out, &ranges, &pages, err, sizeof(err)), 0);
	/* A read fault also maps the page-cache pages around it (the
	 * kernel's fault-around, a 16-page window aligned in the address space):
	 * those are in the record too.  A write fault copies one page.  Nothing
	 * past the window around page 3 and the written pages was mapped. */
	ck_assert_uint_ge(ranges, 2);
	ck_assert_uint_ge(pages, 4);
	size_t len = WSREC_HDR + (size_t)ranges * 8;
	uint8_t *buf = malloc(len);
	ck_assert_int_eq(pread(out, buf, len, 0), (ssize_t)len);
	struct wsrec w;
	ck_assert_int_eq(wsrec_parse(buf, len, RAM, &w, err, sizeof(err)), 0);
	free(buf);
	bool saw3 = false, saw_written = false;
	for (uint32_t i = 0; i < w.count; i++) {
		ck_assert_uint_le(w.r[i].first + w.r[i].pages, 32);
		if (w.r[i].first <= 3 && w.r[i].first + w.r[i].pages > 3)
			saw3 = !w.r[i].written;
		if (w.r[i].written) {
			ck_assert_uint_eq(w.r[i].first, 10);
			ck_assert_uint_eq(w.r[i].pages, 3);
			saw_written = true;
		}
	}
	ck_assert(saw3 && saw_written);
	uint32_t want_ranges = w.count;
	uint64_t want_pages = w.pages;
	wsrec_free(&w);
	munmap(m.base, RAM);

	/* A new mapping with the record applied: those pages are mapped
	 * before anything reads them, the rest is not. */
	m.base = mmap(NULL, RAM, PROT_READ | PROT_WRITE, MAP_PRIVATE, mem, 0);
	ck_assert(m.base != MAP_FAILED);
	prefetch_restore(&m, out); /* closes out */
	struct prefetch_stats st;
	prefetch_get_stats(&st);
	ck_assert_int_eq(st.error, 0);
	ck_assert_uint_eq(st.ranges, want_ranges);
	ck_assert_uint_eq(st.pages, want_pages);
	ck_assert(present(m.base + 3 * WSREC_PAGE));
	ck_assert(present(m.base + 12 * WSREC_PAGE));
	ck_assert(!present(m.base + 60 * WSREC_PAGE));
	munmap(m.base, RAM);

	/* A broken record costs the prefetch, not the restore. */
	out = memfd_create("cove-wsrec-bad", MFD_CLOEXEC);
	ck_assert_int_eq(write(out, "COVEWS1\n", 8), 8);
	m.base = mmap(NULL, RAM, PROT_READ | PROT_WRITE, MAP_PRIVATE, mem, 0);
	prefetch_restore(&m, out);
	prefetch_get_stats(&st);
	ck_assert_int_eq(st.error, -EINVAL);
	ck_assert_uint_eq(st.pages, 0);
	munmap(m.base, RAM);
	close(mem);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("wsrec");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, round_trip);
	tcase_add_test(tc, refusals);
	tcase_add_test(tc, add_merges);
	tcase_add_test(tc, record_and_apply);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN()
