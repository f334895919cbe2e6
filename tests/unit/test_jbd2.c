/* Unit tests: the in-memory jbd2 replay (lib/image/jbd2.c) on journals
 * built here block by block: newest copy wins, revokes of a later
 * transaction hide earlier copies, an uncommitted transaction counts for
 * nothing, escaped blocks, a log that wraps, 64-bit tags with checksum v3,
 * and malformed superblocks. */
#include <errno.h>
#include <string.h>

#include "lib/image/jbd2.h"
#include "unit.h"

#define BS     1024
#define BLOCKS 32

static uint8_t g_j[BLOCKS][BS];

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (24 - 8 * i));
}

static void header(uint32_t jb, uint32_t type, uint32_t seq)
{
	memset(g_j[jb], 0, BS);
	put32(g_j[jb], JBD2_MAGIC);
	put32(g_j[jb] + 4, type);
	put32(g_j[jb] + 8, seq);
}

static void super(uint32_t seq, uint32_t start, uint32_t incompat)
{
	header(0, 4, 0);
	put32(g_j[0] + 0x0c, BS);
	put32(g_j[0] + 0x10, BLOCKS);
	put32(g_j[0] + 0x14, 1);
	put32(g_j[0] + 0x18, seq);
	put32(g_j[0] + 0x1c, start);
	put32(g_j[0] + 0x28, incompat);
}

/* A descriptor at jb naming blocks[0..n) (8-byte tags: no 64-bit, no
 * checksums); flags[i] are added to each tag's. */
static void descriptor(uint32_t jb, uint32_t seq, const uint32_t *blocks, const uint16_t *flags,
                       int n)
{
	header(jb, 1, seq);
	size_t off = 12;
	for (int i = 0; i < n; i++) {
		uint16_t f =
		    (uint16_t)((i ? 2 : 0) | (i == n - 1 ? 8 : 0) | (flags ? flags[i] : 0));
		put32(g_j[jb] + off, blocks[i]);
		g_j[jb][off + 6] = (uint8_t)(f >> 8);
		g_j[jb][off + 7] = (uint8_t)f;
		off += 8 + (i ? 0 : 16); /* the first tag carries the UUID */
	}
}

static void put_revoke(uint32_t jb, uint32_t seq, uint32_t block)
{
	header(jb, 5, seq);
	put32(g_j[jb] + 12, 16 + 4);
	put32(g_j[jb] + 16, block);
}

static int rd(void *arg, uint32_t jb, uint8_t *buf)
{
	(void)arg;
	if (jb >= BLOCKS)
		return -EIO;
	memcpy(buf, g_j[jb], BS);
	return 0;
}

static int scan(struct jbd2_replay *r, uint64_t fs_blocks, char *err)
{
	return jbd2_replay_scan(BS, BLOCKS, fs_blocks, rd, NULL, r, err, 256);
}

START_TEST(newest_copy_revokes_and_uncommitted)
{
	memset(g_j, 0, sizeof(g_j));
	super(5, 3, 0x1); /* revoke feature */
	uint32_t t1[] = { 100, 101 }, t2[] = { 101 }, t3[] = { 102 };
	descriptor(3, 5, t1, NULL, 2); /* data at 4, 5 */
	header(6, 2, 5);
	descriptor(7, 6, t2, NULL, 1); /* data at 8 */
	put_revoke(9, 6, 100);
	header(10, 2, 6);
	descriptor(11, 7, t3, NULL, 1); /* no commit for 7 */
	struct jbd2_replay r;
	char err[256];
	ck_assert_int_eq(scan(&r, 1000, err), 0);
	ck_assert_uint_eq(r.transactions, 2);
	ck_assert_uint_eq(r.n, 1);
	const struct jbd2_copy *c = jbd2_replay_find(&r, 101);
	ck_assert_ptr_nonnull(c);
	ck_assert_uint_eq(c->jblock, 8);
	ck_assert_ptr_null(jbd2_replay_find(&r, 100)); /* revoked by 6 */
	ck_assert_ptr_null(jbd2_replay_find(&r, 102)); /* 7 never committed */
	jbd2_replay_free(&r);
	/* Blocks past the file system are dropped, not trusted. */
	ck_assert_int_eq(scan(&r, 101, err), 0);
	ck_assert_uint_eq(r.n, 0);
	jbd2_replay_free(&r);
}
END_TEST

START_TEST(escape_and_wrap)
{
	memset(g_j, 0, sizeof(g_j));
	super(9, 30, 0);
	uint32_t b[] = { 7, 8 };
	uint16_t f[] = { 1, 0 };    /* the first copy was escaped */
	descriptor(30, 9, b, f, 2); /* data at 31 and, wrapping, at 1 */
	header(2, 2, 9);
	struct jbd2_replay r;
	char err[256];
	ck_assert_int_eq(scan(&r, 1000, err), 0);
	ck_assert_uint_eq(r.n, 2);
	ck_assert_uint_eq(jbd2_replay_find(&r, 7)->jblock, 31);
	ck_assert(jbd2_replay_find(&r, 7)->escaped);
	ck_assert_uint_eq(jbd2_replay_find(&r, 8)->jblock, 1);
	ck_assert(!jbd2_replay_find(&r, 8)->escaped);
	jbd2_replay_free(&r);
	/* Clean: nothing to replay. */
	super(9, 0, 0);
	ck_assert_int_eq(scan(&r, 1000, err), 0);
	ck_assert_uint_eq(r.n, 0);
	jbd2_replay_free(&r);
}
END_TEST

START_TEST(tags_64bit_csum_v3)
{
	memset(g_j, 0, sizeof(g_j));
	super(1, 1, 0x2 | 0x10);
	header(1, 1, 1);
	put32(g_j[1] + 12, 5);     /* low */
	put32(g_j[1] + 16, 2 | 8); /* flags: same UUID, last */
	put32(g_j[1] + 20, 1);     /* high */
	header(3, 2, 1);
	struct jbd2_replay r;
	char err[256];
	ck_assert_int_eq(scan(&r, 1ULL << 33, err), 0);
	ck_assert_uint_eq(r.n, 1);
	ck_assert_uint_eq(jbd2_replay_find(&r, (1ULL << 32) | 5)->jblock, 2);
	jbd2_replay_free(&r);
}
END_TEST

START_TEST(malformed)
{
	struct jbd2_replay r;
	char err[256];
	memset(g_j, 0, sizeof(g_j));
	ck_assert_int_eq(scan(&r, 1000, err), -EINVAL); /* no magic */
	ck_assert_ptr_null(strchr(err, '\n'));
	super(1, 1, 0);
	put32(g_j[0] + 0x10, BLOCKS + 1); /* longer than the journal */
	ck_assert_int_eq(scan(&r, 1000, err), -EINVAL);
	super(1, 40, 0); /* start outside the log */
	ck_assert_int_eq(scan(&r, 1000, err), -EINVAL);
	super(1, 1, 0x20); /* fast commit */
	ck_assert_int_eq(scan(&r, 1000, err), -ENOTSUP);
	super(1, 1, 0x400); /* unknown feature */
	ck_assert_int_eq(scan(&r, 1000, err), -ENOTSUP);
	/* A descriptor whose tags would take more blocks than the log has. */
	super(1, 1, 0);
	header(1, 1, 1);
	for (size_t off = 12; off + 8 <= BS; off += 8) {
		put32(g_j[1] + off, 3);
		g_j[1][off + 7] = 2;
	}
	ck_assert_int_eq(scan(&r, 1000, err), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "overruns"));
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("jbd2");
	TCase *tc = tcase_create("replay");
	tcase_add_test(tc, newest_copy_revokes_and_uncommitted);
	tcase_add_test(tc, escape_and_wrap);
	tcase_add_test(tc, tags_64bit_csum_v3);
	tcase_add_test(tc, malformed);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN()
