/* Unit tests: the read-only qcow2 chain reader (common/qcow2_read.c):
 * allocated ranges per layer and reads through a raw <- qcow2 <- qcow2
 * chain written by the VMM's backend, and bad tables failing calls. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "qcow2_create.h"
#include "qcow2_fill.h"
#include "qcow2_read.h"
#include "unit.h"

#define MIB  (1024ULL * 1024)
#define SIZE (8 * MIB)

static char g_dir[64];

static void setup(void)
{
	snprintf(g_dir, sizeof(g_dir), "/tmp/cove-q2r-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(g_dir));
}

static void teardown(void)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", g_dir);
	ck_assert_int_eq(system(cmd), 0);
}

static const char *P(const char *name)
{
	static char p[4][128];
	static int k;
	k = (k + 1) % 4;
	snprintf(p[k], sizeof(p[k]), "%s/%s", g_dir, name);
	return p[k];
}

/* The expected guest bytes, kept beside the images. */
static uint8_t g_top[SIZE], g_mid[SIZE];

struct runs {
	uint64_t off[16], len[16];
	int n;
};

static int collect(void *arg, uint64_t off, uint64_t len)
{
	struct runs *r = arg;
	ck_assert_int_lt(r->n, 16);
	r->off[r->n] = off;
	r->len[r->n++] = len;
	return 0;
}

static void make_chain(void)
{
	for (size_t i = 0; i < SIZE; i++)
		g_mid[i] = (uint8_t)(i * 7 + (i >> 12));
	int fd = open(P("base.img"), O_CREAT | O_WRONLY | O_EXCL, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, g_mid, SIZE), (ssize_t)SIZE);
	close(fd);
	char err[256] = "";
	ck_assert_int_eq(qcow2_create_overlay(P("mid.qcow2"), P("base.img"), 0, err, sizeof(err)),
	                 0);
	uint8_t buf[100000];
	memset(buf, 0xa1, sizeof(buf));
	qcow2_fill_write(P("mid.qcow2"), 3 * MIB + 100, buf, sizeof(buf));
	memcpy(g_mid + 3 * MIB + 100, buf, sizeof(buf));
	ck_assert_int_eq(qcow2_create_overlay(P("top.qcow2"), P("mid.qcow2"), 0, err, sizeof(err)),
	                 0);
	memcpy(g_top, g_mid, SIZE);
	memset(buf, 0xb2, sizeof(buf));
	qcow2_fill_write(P("top.qcow2"), 65536, buf, 10);
	memcpy(g_top + 65536, buf, 10);
	qcow2_fill_write(P("top.qcow2"), SIZE - 5, buf, 5);
	memcpy(g_top + SIZE - 5, buf, 5);
}

START_TEST(chain_reads_and_allocations)
{
	make_chain();
	char err[256] = "";
	struct qcow2_chain *c = NULL;
	ck_assert_int_eq(qcow2_chain_open(P("top.qcow2"), &c, err, sizeof(err)), 0);
	ck_assert_uint_eq(qcow2_chain_layers(c), 3);
	ck_assert_ptr_nonnull(strstr(qcow2_chain_path(c, 2), "/base.img"));
	ck_assert_ptr_null(qcow2_chain_path(c, 3));
	ck_assert_uint_eq(qcow2_chain_size(c, 0), SIZE);

	struct runs top = { 0 }, mid = { 0 }, base = { 0 };
	ck_assert_int_eq(qcow2_chain_allocated(c, 0, collect, &top, err, sizeof(err)), 0);
	ck_assert_int_eq(top.n, 2);
	ck_assert_uint_eq(top.off[0], 65536);
	ck_assert_uint_eq(top.len[0], 65536);
	ck_assert_uint_eq(top.off[1], SIZE - 65536);
	ck_assert_int_eq(qcow2_chain_allocated(c, 1, collect, &mid, err, sizeof(err)), 0);
	ck_assert_int_eq(mid.n, 1); /* 3 MiB + 100 .. + 100000: two clusters, one run */
	ck_assert_uint_eq(mid.off[0], 3 * MIB);
	ck_assert_uint_eq(mid.len[0], 2 * 65536);
	ck_assert_int_eq(qcow2_chain_allocated(c, 2, collect, &base, err, sizeof(err)), 0);
	ck_assert_int_eq(base.n, 1);
	ck_assert_uint_eq(base.len[0], SIZE);

	uint8_t *got = malloc(SIZE);
	ck_assert_ptr_nonnull(got);
	ck_assert_int_eq(qcow2_chain_read(c, 0, got, SIZE, 0, err, sizeof(err)), 0);
	ck_assert(!memcmp(got, g_top, SIZE));
	ck_assert_int_eq(qcow2_chain_read(c, 1, got, SIZE, 0, err, sizeof(err)), 0);
	ck_assert(!memcmp(got, g_mid, SIZE));
	/* An unaligned read across the layers' borders, and one past the end. */
	ck_assert_int_eq(qcow2_chain_read(c, 0, got, 200000, 3 * MIB - 7, err, sizeof(err)), 0);
	ck_assert(!memcmp(got, g_top + 3 * MIB - 7, 200000));
	memset(got, 1, 100);
	ck_assert_int_eq(qcow2_chain_read(c, 0, got, 100, SIZE - 50, err, sizeof(err)), 0);
	ck_assert(!memcmp(got, g_top + SIZE - 50, 50));
	for (int i = 50; i < 100; i++)
		ck_assert_int_eq(got[i], 0);
	ck_assert_int_eq(qcow2_chain_read(c, 3, got, 1, 0, err, sizeof(err)), -EINVAL);
	struct qcow2_read_stats st;
	qcow2_chain_stats(c, &st);
	ck_assert_uint_gt(st.reads, 0);
	free(got);
	qcow2_chain_close(c);
}
END_TEST

/* An L2 entry pointing past the end of the file fails reads, one line. */
START_TEST(bad_l2_fails_the_read)
{
	make_chain();
	char err[256] = "";
	struct qcow2_chain *c = NULL;
	ck_assert_int_eq(qcow2_chain_open(P("top.qcow2"), &c, err, sizeof(err)), 0);
	/* Find top's L2 table and point its first used entry far away. */
	int fd = open(P("top.qcow2"), O_RDWR);
	uint8_t h[QCOW2_V3_HEADER_LEN], e[8];
	ck_assert_int_eq(pread(fd, h, sizeof(h), 0), (ssize_t)sizeof(h));
	ck_assert_int_eq(pread(fd, e, 8, (off_t)qcow2_be64(h + QCOW2_H_L1_OFFSET)), 8);
	uint64_t l2 = qcow2_be64(e) & QCOW2_OFFSET_MASK;
	qcow2_put64(e, QCOW2_COPIED | (1ULL << 40));
	ck_assert_int_eq(pwrite(fd, e, 8, (off_t)(l2 + 8)), 8);
	close(fd);
	qcow2_chain_close(c);
	ck_assert_int_eq(qcow2_chain_open(P("top.qcow2"), &c, err, sizeof(err)), 0);
	uint8_t b[16];
	ck_assert_int_eq(qcow2_chain_read(c, 0, b, sizeof(b), 65536, err, sizeof(err)), -EIO);
	ck_assert_ptr_nonnull(strstr(err, "outside the image"));
	ck_assert_ptr_null(strchr(err, '\n'));
	struct runs r = { 0 };
	ck_assert_int_eq(qcow2_chain_allocated(c, 0, collect, &r, err, sizeof(err)), -EIO);
	qcow2_chain_close(c);
	/* Not an image at all, and a missing file. */
	ck_assert_int_lt(qcow2_chain_open(P("nothing"), &c, err, sizeof(err)), 0);
	ck_assert_ptr_null(c);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("qcow2_read");
	TCase *tc = tcase_create("chain");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, chain_reads_and_allocations);
	tcase_add_test(tc, bad_l2_fails_the_read);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN()
