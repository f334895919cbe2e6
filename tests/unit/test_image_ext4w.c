/* Unit tests: the ext4 image writer (lib/image/ext4w*.c) on its own:
 * mkfs's refusals, paths (never through a symbolic link), each kind of
 * entry read back, xattrs, times past 2038, a file of a thousand extents,
 * a directory of thousands of names, removal giving every block and
 * inode back, and e2fsck -fn clean after each. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "layer_build.h"
#include "lib/image/ext4w.h"
#include "lib/image/ext4w_mkfs.h"
#include "lib/image/ext4w_tree.h"
#include "unit.h"

static char tmp[64], img[128];
static char err[1024];

static void setup(void)
{
	snprintf(tmp, sizeof(tmp), "/tmp/cove-ut-ext4w-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmp));
	snprintf(img, sizeof(img), "%s/img", tmp);
}

static void teardown(void)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmp);
	ck_assert_int_eq(system(cmd), 0);
}

static struct ext4w *fresh(uint64_t bytes, uint64_t inodes)
{
	struct ext4w *w;
	ck_assert_msg(ext4w_mkfs(img, bytes, inodes, "t", err, sizeof(err)) == 0, "%s", err);
	ck_assert_msg(ext4w_open(img, &w, err, sizeof(err)) == 0, "%s", err);
	return w;
}

static void close_clean(struct ext4w *w)
{
	ck_assert_msg(ext4w_close(w, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(lb_fsck(img), 0);
}

/* A source of pieces: n pieces of len bytes of byte c, every step bytes. */
struct pieces {
	unsigned char buf[4096];
	size_t len;
	uint64_t step, next;
	int left;
	int back; /* the second piece goes back */
};

static int pieces_rd(void *ctx, const void **data, size_t *len, uint64_t *off, char *e, size_t elen)
{
	struct pieces *p = ctx;
	(void)e, (void)elen;
	if (!p->left)
		return 0;
	p->left--;
	*data = p->buf;
	*len = p->len;
	*off = p->next;
	p->next = p->back ? 0 : p->next + p->step;
	return 1;
}

static int write_pieces(struct ext4w *w, const char *path, uint64_t size, size_t len, uint64_t step,
                        int n)
{
	struct pieces p = { .len = len, .step = step, .left = n };
	memset(p.buf, 0x5a, sizeof(p.buf));
	const struct ext4w_attr a = { .mode = S_IFREG | 0644 };
	return ext4w_write(w, path, &a, size, pieces_rd, &p, err, sizeof(err));
}

static const struct ext4w_attr dir_attr = { .mode = S_IFDIR | 0755 };

START_TEST(mkfs_refusals)
{
	ck_assert_int_eq(ext4w_mkfs(img, 1 << 20, 64, NULL, err, sizeof(err)), -EINVAL);
	ck_assert_int_eq(ext4w_mkfs(img, 8 << 20, 64, "a label far too long", err, sizeof(err)),
	                 -EINVAL);
	ck_assert_int_eq(ext4w_mkfs(img, 8 << 20, 8, NULL, err, sizeof(err)), -EINVAL);
	ck_assert_int_eq(ext4w_mkfs(tmp, 8 << 20, 64, NULL, err, sizeof(err)), -EISDIR);
	char link[160];
	snprintf(link, sizeof(link), "%s/link", tmp);
	ck_assert_int_eq(symlink(img, link), 0);
	ck_assert_int_eq(ext4w_mkfs(link, 8 << 20, 64, NULL, err, sizeof(err)), -ELOOP);
	ck_assert_int_eq(access(img, F_OK), -1); /* not made through the link */
	struct ext4w *w;
	ck_assert_int_eq(ext4w_open(link, &w, err, sizeof(err)), -EINVAL);
}
END_TEST

START_TEST(paths)
{
	struct ext4w *w = fresh(8 << 20, 256);
	struct ext4w_stat st;
	const struct ext4w_attr ln = { .mode = S_IFLNK | 0777 };
	ck_assert_int_eq(ext4w_mkdir(w, "d", &dir_attr, err, sizeof(err)), 0);
	ck_assert_int_eq(ext4w_symlink(w, "s", "/etc", &ln, err, sizeof(err)), 0);
	ck_assert_int_eq(write_pieces(w, "d/f", 1, 1, 1, 1), 0);
	static const char *const bad[] = { "/d", "d/", "d//f", "d/./f", "d/../f", ".", ".." };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_int_eq(ext4w_lookup(w, bad[i], &st, err, sizeof(err)), -EINVAL);
	char longn[300];
	memset(longn, 'x', 256);
	longn[256] = 0;
	ck_assert_int_eq(ext4w_lookup(w, longn, &st, err, sizeof(err)), -ENAMETOOLONG);
	ck_assert_int_eq(ext4w_lookup(w, "s/passwd", &st, err, sizeof(err)), -ELOOP);
	ck_assert_str_eq(err, "'s' is a symbolic link");
	ck_assert_int_eq(ext4w_mkdir(w, "s/x", &dir_attr, err, sizeof(err)), -ELOOP);
	ck_assert_int_eq(ext4w_lookup(w, "d/f/g", &st, err, sizeof(err)), -ENOTDIR);
	ck_assert_int_eq(ext4w_lookup(w, "d/nothing/g", &st, err, sizeof(err)), -ENOENT);
	ck_assert_str_eq(err, "'d/nothing' does not exist");
	ck_assert_int_eq(ext4w_lookup(w, "s", &st, err, sizeof(err)), 0); /* the link itself */
	ck_assert_uint_eq(st.mode, S_IFLNK | 0777);
	ck_assert_int_eq(ext4w_lookup(w, "", &st, err, sizeof(err)), 0);
	ck_assert_uint_eq(st.ino, 2);
	ck_assert_int_eq(ext4w_mkdir(w, "d", &dir_attr, err, sizeof(err)), -EEXIST);
	ck_assert_int_eq(ext4w_remove(w, "", err, sizeof(err)), -EINVAL);
	ck_assert_int_eq(ext4w_link(w, "d2", "d", err, sizeof(err)), -EPERM);
	ck_assert_int_eq(ext4w_set_attr(w, "d", &ln, err, sizeof(err)), -EINVAL);
	ck_assert(!ext4w_failed(w));
	close_clean(w);
}
END_TEST

START_TEST(entries_read_back)
{
	struct ext4w *w = fresh(8 << 20, 256);
	struct ext4w_stat st;
	char buf[4096];
	const struct ext4w_attr ln = { .mode = S_IFLNK | 0777, .uid = 7, .mtime = -5 };
	const struct ext4w_attr late = { .mode = S_IFDIR | 01777,
		                         .uid = 70000,
		                         .gid = 80000,
		                         .mtime = 1LL << 33,
		                         .mtime_nsec = 123 };
	ck_assert_int_eq(ext4w_mkdir(w, "tmp", &late, err, sizeof(err)), 0);
	ck_assert_int_eq(ext4w_lookup(w, "tmp", &st, err, sizeof(err)), 0);
	ck_assert_uint_eq(st.mode, S_IFDIR | 01777);
	ck_assert_uint_eq(st.uid, 70000);
	ck_assert_uint_eq(st.gid, 80000);
	ck_assert_int_eq(st.mtime, 1LL << 33);
	ck_assert_uint_eq(st.mtime_nsec, 123);

	ck_assert_int_eq(ext4w_symlink(w, "short", "t", &ln, err, sizeof(err)), 0);
	memset(buf, 'L', 3000);
	buf[3000] = 0;
	ck_assert_int_eq(ext4w_symlink(w, "long", buf, &ln, err, sizeof(err)), 0);
	char out[4096];
	ck_assert_int_eq(ext4w_readlink(w, "short", out, sizeof(out), err, sizeof(err)), 0);
	ck_assert_str_eq(out, "t");
	ck_assert_int_eq(ext4w_readlink(w, "long", out, sizeof(out), err, sizeof(err)), 0);
	ck_assert_str_eq(out, buf);
	ck_assert_int_eq(ext4w_lookup(w, "short", &st, err, sizeof(err)), 0);
	ck_assert_int_eq(st.mtime, -5);
	ck_assert_uint_eq(st.uid, 7);

	const struct ext4w_attr sock = { .mode = S_IFSOCK | 0755 };
	ck_assert_int_eq(ext4w_mknod(w, "sock", &sock, 0, 0, err, sizeof(err)), 0);
	const struct ext4w_attr blk = { .mode = S_IFBLK | 0600 };
	ck_assert_int_eq(ext4w_mknod(w, "blk", &blk, 4096, 0, err, sizeof(err)), -EINVAL);
	ck_assert_int_eq(ext4w_mknod(w, "blk", &blk, 4095, (1 << 20) - 1, err, sizeof(err)), 0);
	ck_assert_int_eq(ext4w_lookup(w, "blk", &st, err, sizeof(err)), 0);
	ck_assert_uint_eq(st.rdev_major, 4095);
	ck_assert_uint_eq(st.rdev_minor, (1 << 20) - 1);

	ck_assert_int_eq(write_pieces(w, "f", 10, 10, 0, 1), 0);
	ck_assert_int_eq(ext4w_link(w, "tmp/f2", "f", err, sizeof(err)), 0);
	ck_assert_int_eq(ext4w_remove(w, "f", err, sizeof(err)), 0);
	ck_assert_int_eq(ext4w_lookup(w, "tmp/f2", &st, err, sizeof(err)), 0);
	ck_assert_uint_eq(st.nlink, 1);
	size_t got;
	ck_assert_int_eq(ext4w_read(w, "tmp/f2", 0, buf, sizeof(buf), &got, err, sizeof(err)), 0);
	ck_assert_uint_eq(got, 10);

	/* a source that goes back, or past the size: refused, image whole */
	struct pieces p = { .len = 8, .left = 2, .back = 1, .next = 100 };
	const struct ext4w_attr reg = { .mode = S_IFREG | 0644 };
	ck_assert_int_eq(ext4w_write(w, "bad", &reg, 200, pieces_rd, &p, err, sizeof(err)),
	                 -EINVAL);
	ck_assert_int_eq(write_pieces(w, "bad2", 4, 8, 0, 1), -EINVAL);
	ck_assert(!ext4w_failed(w));

	const char *xv = "v";
	size_t xl = 0;
	ck_assert_int_eq(ext4w_set_xattr(w, "tmp", "system.data", xv, 1, err, sizeof(err)),
	                 -EOPNOTSUPP);
	ck_assert_int_eq(ext4w_set_xattr(w, "tmp", "other.x", xv, 1, err, sizeof(err)),
	                 -EOPNOTSUPP);
	ck_assert_int_eq(ext4w_set_xattr(w, "tmp", "trusted.t", xv, 1, err, sizeof(err)), 0);
	ck_assert_int_eq(ext4w_get_xattr(w, "tmp", "trusted.t", buf, &xl, err, sizeof(err)),
	                 -ERANGE);
	ck_assert_uint_eq(xl, 1);
	xl = sizeof(buf);
	ck_assert_int_eq(ext4w_get_xattr(w, "tmp", "user.none", buf, &xl, err, sizeof(err)),
	                 -ENODATA);
	close_clean(w);
}
END_TEST

/* A file of a thousand extents (its tree needs a block), then removed:
 * every block comes back. */
START_TEST(fragmented_file)
{
	struct ext4w *w = fresh(32 << 20, 256);
	struct ext4w_info before, after;
	struct ext4w_stat st;
	ext4w_info(w, &before);
	ck_assert_msg(write_pieces(w, "frag", 2000 * 4096, 4096, 2 * 4096, 1000) == 0, "%s", err);
	ck_assert_int_eq(ext4w_lookup(w, "frag", &st, err, sizeof(err)), 0);
	ck_assert_uint_ge(st.blocks, 1000 * 8 + 8);
	ck_assert_uint_eq(st.size, 2000 * 4096);
	char b[8];
	size_t got;
	ck_assert_int_eq(ext4w_read(w, "frag", 4096, b, 8, &got, err, sizeof(err)), 0);
	ck_assert(got == 8 && b[0] == 0 && b[7] == 0); /* a hole */
	ck_assert_int_eq(ext4w_read(w, "frag", 2 * 4096, b, 8, &got, err, sizeof(err)), 0);
	ck_assert(got == 8 && b[0] == 0x5a);
	ck_assert_int_eq(ext4w_remove(w, "frag", err, sizeof(err)), 0);
	ext4w_info(w, &after);
	ck_assert_uint_eq(after.free_blocks, before.free_blocks);
	ck_assert_uint_eq(after.free_inodes, before.free_inodes);
	/* and a file of 130 MiB in one go: two extents of 128 MiB at most */
	close_clean(w);
	w = fresh(256 << 20, 256);
	ck_assert_msg(write_pieces(w, "big", 130 << 20, 4096, 4096, 130 * 256) == 0, "%s", err);
	ck_assert_int_eq(ext4w_lookup(w, "big", &st, err, sizeof(err)), 0);
	ck_assert_uint_eq(st.blocks, (130 << 20) / 512);
	close_clean(w);
}
END_TEST

static int count_cb(void *ctx, const char *name, uint32_t ino, uint32_t type)
{
	(void)name, (void)ino;
	int *n = ctx;
	*n += type == S_IFREG;
	return 0;
}

/* Thousands of names in one directory: it grows, lookups find each. */
START_TEST(large_directory)
{
	struct ext4w *w = fresh(32 << 20, 4096);
	struct ext4w_stat st;
	char p[64];
	ck_assert_int_eq(ext4w_mkdir(w, "many", &dir_attr, err, sizeof(err)), 0);
	for (int i = 0; i < 3000; i++) {
		snprintf(p, sizeof(p), "many/a-name-of-some-length-%05d", i);
		ck_assert_msg(write_pieces(w, p, 0, 0, 0, 0) == 0, "%s", err);
	}
	for (int i = 0; i < 3000; i += 97) {
		snprintf(p, sizeof(p), "many/a-name-of-some-length-%05d", i);
		ck_assert_int_eq(ext4w_lookup(w, p, &st, err, sizeof(err)), 0);
	}
	int n = 0;
	ck_assert_int_eq(ext4w_list(w, "many", count_cb, &n, err, sizeof(err)), 0);
	ck_assert_int_eq(n, 3000);
	ck_assert_int_eq(ext4w_lookup(w, "many", &st, err, sizeof(err)), 0);
	ck_assert_uint_gt(st.size, 20 * 4096);
	/* names removed and made again: the index follows */
	for (int i = 0; i < 3000; i += 3) {
		snprintf(p, sizeof(p), "many/a-name-of-some-length-%05d", i);
		ck_assert_int_eq(ext4w_remove(w, p, err, sizeof(err)), 0);
	}
	for (int i = 0; i < 3000; i += 7) {
		snprintf(p, sizeof(p), "many/a-name-of-some-length-%05d", i);
		ck_assert_int_eq(ext4w_lookup(w, p, &st, err, sizeof(err)), i % 3 ? 0 : -ENOENT);
	}
	ck_assert_int_eq(
	    ext4w_mkdir(w, "many/a-name-of-some-length-00003", &dir_attr, err, sizeof(err)), 0);
	ck_assert_int_eq(ext4w_lookup(w, "many/a-name-of-some-length-00003", &st, err, sizeof(err)),
	                 0);
	ck_assert_uint_eq(st.mode, S_IFDIR | 0755);
	ck_assert_int_eq(ext4w_lookup(w, "many", &st, err, sizeof(err)), 0);
	ck_assert_uint_eq(st.nlink, 3);
	close_clean(w);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("image_ext4w");
	TCase *tc = tcase_create("image_ext4w");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, mkfs_refusals);
	tcase_add_test(tc, paths);
	tcase_add_test(tc, entries_read_back);
	tcase_add_test(tc, fragmented_file);
	tcase_add_test(tc, large_directory);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN()
