/* Unit tests: layers into ext4 (lib/image/layer.c over ext4w).  Each
 * test writes its layers with libarchive's writer, applies them to a
 * fresh image, reads the image back (ext4w, debugfs) and runs e2fsck -fn
 * on it.  Hostile layers are refused with one line naming the entry,
 * and nothing appears beside the image (a canary directory stays empty). */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "layer_build.h"
#include "lib/image/ext4w.h"
#include "lib/image/ext4w_mkfs.h"
#include "lib/image/ext4w_tree.h"
#include "lib/image/layer.h"
#include "lib/image/layer_path.h"
#include "unit.h"

static char tmp[64], img[128], canary[128];
static char err[1024];

static void setup(void)
{
	snprintf(tmp, sizeof(tmp), "/tmp/cove-ut-layer-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmp));
	snprintf(img, sizeof(img), "%s/img", tmp);
	snprintf(canary, sizeof(canary), "%s/canary", tmp);
	ck_assert_int_eq(mkdir(canary, 0755), 0);
	err[0] = 0;
}

static void teardown(void)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmp);
	ck_assert_int_eq(system(cmd), 0);
}

/* A layer file under tmp: "<tmp>/lN.tar". */
static const char *layer_path(int n)
{
	static char p[4][128];
	snprintf(p[n % 4], sizeof(p[0]), "%s/l%d.tar", tmp, n);
	return p[n % 4];
}

static struct ext4w *fresh(uint64_t bytes, uint64_t inodes)
{
	struct ext4w *w;
	ck_assert_msg(ext4w_mkfs(img, bytes, inodes, "test", err, sizeof(err)) == 0, "%s", err);
	ck_assert_msg(ext4w_open(img, &w, err, sizeof(err)) == 0, "%s", err);
	return w;
}

static void apply_ok(struct ext4w *w, int n, struct layer_opts *o)
{
	int rc = layer_apply_file(w, (unsigned)n, layer_path(n), o, err, sizeof(err));
	ck_assert_msg(rc == 0, "layer %d: %d %s", n, rc, err);
}

static void close_clean(struct ext4w *w)
{
	ck_assert_msg(ext4w_close(w, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(lb_fsck(img), 0);
}

static int exists(struct ext4w *w, const char *path)
{
	struct ext4w_stat st;
	char e[256];
	return ext4w_lookup(w, path, &st, e, sizeof(e)) == 0;
}

static struct ext4w_stat stat_of(struct ext4w *w, const char *path)
{
	struct ext4w_stat st;
	ck_assert_msg(ext4w_lookup(w, path, &st, err, sizeof(err)) == 0, "%s", err);
	return st;
}

static void content_is(struct ext4w *w, const char *path, const char *want)
{
	char buf[256];
	size_t got;
	ck_assert_msg(ext4w_read(w, path, 0, buf, sizeof(buf), &got, err, sizeof(err)) == 0, "%s",
	              err);
	ck_assert_uint_eq(got, strlen(want));
	ck_assert(memcmp(buf, want, got) == 0);
}

/* A refusal: one line, naming layer 1 and the entry, with why in it;
 * the image is still whole and nothing was written beside it. */
static void refused(struct ext4w *w, int rc, const char *entry, const char *why)
{
	char head[256];
	snprintf(head, sizeof(head), "layer 1: entry '%s': ", entry);
	ck_assert_msg(rc < 0, "applied: %s", entry);
	ck_assert_msg(!strncmp(err, head, strlen(head)), "%s", err);
	ck_assert_msg(strstr(err, why) != NULL, "%s", err);
	ck_assert_ptr_null(strchr(err, '\n'));
	close_clean(w);
	ck_assert_int_eq(lb_count(canary), 0);
}

START_TEST(norm_names)
{
	char out[PATH_MAX];
	const char *why;
	ck_assert_int_eq(layer_norm("./a//b/./c/", out, &why), 0);
	ck_assert_str_eq(out, "a/b/c");
	ck_assert_int_eq(layer_norm("./", out, &why), 0);
	ck_assert_str_eq(out, "");
	ck_assert_int_eq(layer_norm(".wh..wh..opq", out, &why), 0);
	ck_assert_int_eq(layer_norm("a/../b", out, &why), -EINVAL);
	ck_assert_str_eq(why, "climbs out of the root");
	ck_assert_int_eq(layer_norm("/etc/passwd", out, &why), -EINVAL);
	ck_assert_str_eq(why, "an absolute name");
	ck_assert_int_eq(layer_norm("", out, &why), -EINVAL);
	char long_name[300];
	memset(long_name, 'x', 299);
	long_name[299] = 0;
	ck_assert_int_eq(layer_norm(long_name, out, &why), -ENAMETOOLONG);
	static char huge[PATH_MAX + 10];
	memset(huge, 'a', sizeof(huge) - 1);
	for (size_t i = 100; i < sizeof(huge) - 1; i += 100)
		huge[i] = '/';
	ck_assert_int_eq(layer_norm(huge, out, &why), -ENAMETOOLONG);
}
END_TEST

/* Three layers: the kinds of entries, a whiteout, an opaque directory
 * whose new entries (before and after the marker) stay. */
START_TEST(three_layers)
{
	static const char cap[] = { 1, 0, 0, 2, 0x20, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 };
	struct lb b;

	lb_open(&b, layer_path(1), LB_GZIP);
	lb_dir(&b, "./", 0755);
	lb_dir(&b, "./etc/", 0755);
	lb_file(&b, "./etc/a", 0644, "a\n", 2);
	lb_file(&b, "./etc/b", 0644, "b\n", 2);
	lb_dir(&b, "./usr/bin/", 0755); /* usr/ made, 0755 root */
	lb_xattr(&b, "security.capability", cap, sizeof(cap));
	lb_xattr(&b, "user.x", "y", 1);
	lb_file(&b, "./usr/bin/su", 04755, "#!su\n", 5);
	lb_file(&b, "./usr/bin/sh", 0755, "#!sh\n", 5);
	lb_hardlink(&b, "./usr/bin/dash", "./usr/bin/sh");
	lb_symlink(&b, "./bin", "usr/bin");
	lb_dir(&b, "./home/", 0755);
	lb_file_owned(&b, "./home/u.txt", 0600, 1000, 1000, "mine", 4);
	lb_dir(&b, "./dev/", 0755);
	lb_dir(&b, "./devs/", 0755);
	lb_node(&b, "./devs/null", AE_IFCHR, 1, 3);
	lb_node(&b, "./dev/sda", AE_IFBLK, 8, 0);
	lb_node(&b, "./devs/big", AE_IFCHR, 300, 70000);
	lb_node(&b, "./run.fifo", AE_IFIFO, 0, 0);
	lb_dir(&b, "./opt/", 0755);
	lb_file(&b, "./opt/old", 0644, "old", 3);
	lb_dir(&b, "./opt/sub/", 0755);
	lb_file(&b, "./opt/sub/old2", 0644, "old", 3);
	lb_close(&b);

	lb_open(&b, layer_path(2), LB_ZSTD);
	lb_file(&b, "dev/new", 0644, "nd", 2); /* before its parent's whiteout: stays */
	lb_file(&b, ".wh.dev", 0644, NULL, 0);
	lb_file(&b, "etc/.wh.a", 0644, NULL, 0);
	lb_file(&b, "opt/new-before", 0644, "nb", 2);
	lb_dir(&b, "opt/sub/", 0700);
	lb_file(&b, "opt/sub/new3", 0644, "n3", 2);
	lb_file(&b, "opt/.wh..wh..opq", 0644, NULL, 0);
	lb_file(&b, "opt/new-after", 0644, "na", 2);
	lb_file(&b, "usr/bin/.wh.never-there", 0644, NULL, 0);
	lb_close(&b);

	lb_open(&b, layer_path(3), LB_PLAIN);
	lb_file(&b, "etc/b", 0600, "B\n", 2); /* replaces */
	lb_dir(&b, "bin/", 0755);             /* a directory over the symlink */
	lb_file(&b, "bin/x", 0755, "x", 1);
	lb_close(&b);

	struct ext4w *w = fresh(64 << 20, 4096);
	struct layer_opts o = { 0 };
	for (int i = 1; i <= 3; i++)
		apply_ok(w, i, &o);
	ck_assert_uint_eq(o.entries, 21 + 9 + 3);

	ck_assert(!exists(w, "etc/a"));
	content_is(w, "etc/b", "B\n");
	ck_assert_uint_eq(stat_of(w, "etc/b").mode, S_IFREG | 0600);
	ck_assert(!exists(w, "opt/old"));
	ck_assert(!exists(w, "opt/sub/old2"));
	content_is(w, "opt/new-before", "nb");
	content_is(w, "opt/new-after", "na");
	content_is(w, "opt/sub/new3", "n3");
	ck_assert_uint_eq(stat_of(w, "opt/sub").mode, S_IFDIR | 0700);
	ck_assert_uint_eq(stat_of(w, "usr").mode, S_IFDIR | 0755);
	content_is(w, "dev/new", "nd");
	ck_assert(!exists(w, "dev/sda"));

	ck_assert_uint_eq(stat_of(w, "usr/bin/su").mode, S_IFREG | 04755);
	struct ext4w_stat sh = stat_of(w, "usr/bin/sh"), dash = stat_of(w, "usr/bin/dash");
	ck_assert_uint_eq(sh.ino, dash.ino);
	ck_assert_uint_eq(sh.nlink, 2);
	struct ext4w_stat u = stat_of(w, "home/u.txt");
	ck_assert_uint_eq(u.uid, 1000);
	ck_assert_uint_eq(u.gid, 1000);
	ck_assert_uint_eq(u.mode, S_IFREG | 0600);
	ck_assert_int_eq(u.mtime, 1700000000);
	struct ext4w_stat n = stat_of(w, "devs/null");
	ck_assert_uint_eq(n.mode, S_IFCHR | 0660);
	ck_assert_uint_eq(n.rdev_major, 1);
	ck_assert_uint_eq(n.rdev_minor, 3);
	n = stat_of(w, "devs/big");
	ck_assert_uint_eq(n.rdev_major, 300);
	ck_assert_uint_eq(n.rdev_minor, 70000);
	ck_assert_uint_eq(stat_of(w, "run.fifo").mode & S_IFMT, S_IFIFO);
	ck_assert_uint_eq(stat_of(w, "bin").mode & S_IFMT, S_IFDIR);
	content_is(w, "bin/x", "x");

	char v[64];
	size_t len = sizeof(v);
	ck_assert_msg(
	    ext4w_get_xattr(w, "usr/bin/su", "security.capability", v, &len, err, sizeof(err)) == 0,
	    "%s", err);
	ck_assert_uint_eq(len, sizeof(cap));
	ck_assert(memcmp(v, cap, len) == 0);
	len = sizeof(v);
	ck_assert_int_eq(ext4w_get_xattr(w, "usr/bin/su", "user.x", v, &len, err, sizeof(err)), 0);
	ck_assert(len == 1 && v[0] == 'y');
	close_clean(w);

	/* and from outside, through debugfs */
	char out[4096];
	lb_stat(img, "/usr/bin/su", out, sizeof(out));
	ck_assert_msg(strstr(out, "Mode:  04755") != NULL, "%s", out);
	lb_stat(img, "/devs/null", out, sizeof(out));
	ck_assert_msg(strstr(out, "Type: character special") != NULL, "%s", out);
	ck_assert_msg(strstr(out, "Device major/minor number: 01:03") != NULL, "%s", out);
	lb_stat(img, "/home/u.txt", out, sizeof(out));
	ck_assert_msg(strstr(out, "User:  1000   Group:  1000") != NULL, "%s", out);
	ck_assert_int_eq(lb_count(canary), 0);
}
END_TEST

/* A whiteout of a directory gives back every block and inode below it. */
START_TEST(whiteout_frees)
{
	static char data[65536];
	struct lb b;
	memset(data, 'd', sizeof(data));

	lb_open(&b, layer_path(1), LB_PLAIN);
	lb_dir(&b, "base/", 0755);
	lb_close(&b);
	lb_open(&b, layer_path(2), LB_PLAIN);
	lb_dir(&b, "base/d/", 0755);
	for (int i = 0; i < 40; i++) {
		char p[64];
		snprintf(p, sizeof(p), "base/d/s%d/", i % 4);
		if (i < 4)
			lb_dir(&b, p, 0755);
		snprintf(p, sizeof(p), "base/d/s%d/f%02d", i % 4, i);
		lb_xattr(&b, "user.big", data, 2000); /* an xattr block */
		lb_file(&b, p, 0644, data, sizeof(data) - (size_t)i);
	}
	lb_hardlink(&b, "base/d/link", "base/d/s0/f00");
	lb_symlink(&b, "base/d/long",
	           "a-target-longer-than-sixty-bytes-so-that-it-takes-a-block-of-its-own");
	lb_close(&b);
	lb_open(&b, layer_path(3), LB_PLAIN);
	lb_file(&b, "base/.wh.d", 0644, NULL, 0);
	lb_close(&b);

	struct ext4w *w = fresh(64 << 20, 4096);
	struct layer_opts o = { 0 };
	struct ext4w_info before, full, after;
	apply_ok(w, 1, &o);
	ext4w_info(w, &before);
	apply_ok(w, 2, &o);
	ext4w_info(w, &full);
	ck_assert_uint_lt(full.free_blocks + 40 * 16, before.free_blocks);
	ck_assert_uint_eq(full.free_inodes + 46, before.free_inodes);
	apply_ok(w, 3, &o);
	ext4w_info(w, &after);
	ck_assert_uint_eq(after.free_blocks, before.free_blocks);
	ck_assert_uint_eq(after.free_inodes, before.free_inodes);
	ck_assert(!exists(w, "base/d"));
	close_clean(w);
}
END_TEST

/* A sparse entry keeps its holes, and so do the zero blocks of a plain
 * one. */
START_TEST(sparse_keeps_holes)
{
	static char zeros[8 << 20];
	struct lb b;

	lb_open(&b, layer_path(1), LB_PLAIN);
	lb_sparse(&b, "sparse", 256ull << 20, 100 << 20, "middle", 6);
	memcpy(zeros + (4 << 20), "data", 4);
	lb_file(&b, "zeros", 0644, zeros, sizeof(zeros));
	lb_close(&b);

	struct ext4w *w = fresh(512 << 20, 1024);
	struct layer_opts o = { 0 };
	apply_ok(w, 1, &o);
	struct ext4w_stat s = stat_of(w, "sparse");
	ck_assert_uint_eq(s.size, 256ull << 20);
	ck_assert_uint_le(s.blocks * 512, 64 << 10);
	char buf[8];
	size_t got;
	ck_assert_int_eq(ext4w_read(w, "sparse", 100 << 20, buf, 6, &got, err, sizeof(err)), 0);
	ck_assert(got == 6 && !memcmp(buf, "middle", 6));
	ck_assert_int_eq(ext4w_read(w, "sparse", 50 << 20, buf, 6, &got, err, sizeof(err)), 0);
	ck_assert(got == 6 && !memcmp(buf, "\0\0\0\0\0\0", 6));
	s = stat_of(w, "zeros");
	ck_assert_uint_eq(s.size, sizeof(zeros));
	ck_assert_uint_le(s.blocks * 512, 64 << 10);
	ck_assert_int_eq(ext4w_read(w, "zeros", 4 << 20, buf, 4, &got, err, sizeof(err)), 0);
	ck_assert(got == 4 && !memcmp(buf, "data", 4));
	close_clean(w);
}
END_TEST

/* ---- hostile layers ------------------------------------------------------- */

static int apply_one(struct ext4w *w, const struct layer_opts *lim)
{
	struct layer_opts o = lim ? *lim : (struct layer_opts){ 0 };
	return layer_apply_file(w, 1, layer_path(1), &o, err, sizeof(err));
}

START_TEST(refuses_climbing)
{
	struct lb b;
	lb_open(&b, layer_path(1), LB_PLAIN);
	lb_file(&b, "ok", 0644, "ok", 2);
	lb_file(&b, "../../x", 0644, "x", 1);
	lb_close(&b);
	struct ext4w *w = fresh(8 << 20, 256);
	refused(w, apply_one(w, NULL), "../../x", "climbs out of the root");
}
END_TEST

START_TEST(refuses_absolute)
{
	struct lb b;
	lb_open(&b, layer_path(1), LB_PLAIN);
	lb_file(&b, "/etc/cron.d/x", 0644, "x", 1);
	lb_close(&b);
	struct ext4w *w = fresh(8 << 20, 256);
	refused(w, apply_one(w, NULL), "/etc/cron.d/x", "an absolute name");
}
END_TEST

/* A symlink to /etc, then an entry through it. */
START_TEST(refuses_symlink_then_write)
{
	struct lb b;
	lb_open(&b, layer_path(1), LB_PLAIN);
	lb_symlink(&b, "dir", "/etc");
	lb_file(&b, "dir/passwd", 0644, "root::0:0::/:/bin/sh\n", 21);
	lb_close(&b);
	struct ext4w *w = fresh(8 << 20, 256);
	int rc = apply_one(w, NULL);
	ck_assert_int_eq(rc, -ELOOP);
	ck_assert(!exists(w, "etc/passwd"));
	refused(w, rc, "dir/passwd", "'dir' is a symbolic link");
}
END_TEST

START_TEST(refuses_hardlink_absolute)
{
	struct lb b;
	lb_open(&b, layer_path(1), LB_PLAIN);
	lb_hardlink(&b, "shadow", "/etc/shadow");
	lb_close(&b);
	struct ext4w *w = fresh(8 << 20, 256);
	refused(w, apply_one(w, NULL), "shadow", "hard link target: an absolute name");
}
END_TEST

START_TEST(refuses_hardlink_climbing)
{
	struct lb b;
	lb_open(&b, layer_path(1), LB_PLAIN);
	lb_hardlink(&b, "out", "../outside");
	lb_close(&b);
	struct ext4w *w = fresh(8 << 20, 256);
	refused(w, apply_one(w, NULL), "out", "hard link target: climbs out of the root");
}
END_TEST

START_TEST(refuses_hardlink_missing)
{
	struct lb b;
	lb_open(&b, layer_path(1), LB_PLAIN);
	lb_symlink(&b, "s", "/etc");
	lb_hardlink(&b, "x", "s/shadow"); /* through a symlink */
	lb_close(&b);
	struct ext4w *w = fresh(8 << 20, 256);
	refused(w, apply_one(w, NULL), "x", "'s' is a symbolic link");
	w = fresh(8 << 20, 256);
	lb_open(&b, layer_path(1), LB_PLAIN);
	lb_hardlink(&b, "x", "nothing");
	lb_close(&b);
	refused(w, apply_one(w, NULL), "x", "'nothing' does not exist");
}
END_TEST

/* 300000 empty files: measuring stops at the default limit (262144)
 * without touching an image, applying at a lowered one. */
START_TEST(refuses_too_many_entries)
{
	struct lb b;
	char name[32];
	lb_open(&b, layer_path(1), LB_ZSTD);
	for (int i = 0; i < 300000; i++) {
		snprintf(name, sizeof(name), "d/%d", i);
		lb_file(&b, name, 0644, NULL, 0);
	}
	lb_close(&b);
	struct layer_size s = { 0 };
	int rc = layer_measure_file(layer_path(1), 1, NULL, &s, err, sizeof(err));
	ck_assert_int_eq(rc, -E2BIG);
	ck_assert_msg(strstr(err, "layer 1: entry 'd/262144': more than 262144 entries"), "%s",
	              err);

	struct ext4w *w = fresh(8 << 20, 2048);
	struct layer_opts lim = { .max_entries = 1000 };
	rc = apply_one(w, &lim);
	ck_assert_int_eq(rc, -E2BIG);
	refused(w, rc, "d/1000", "more than 1000 entries in the image");
}
END_TEST

/* A 10 GB sparse entry into a 1 GB image. */
START_TEST(refuses_larger_than_disk)
{
	struct lb b;
	lb_open(&b, layer_path(1), LB_PLAIN);
	lb_sparse(&b, "huge", 10ull << 30, 1 << 20, "x", 1);
	lb_close(&b);
	struct ext4w *w = fresh(1ull << 30, 1024);
	int rc = apply_one(w, NULL);
	ck_assert_int_eq(rc, -EFBIG);
	ck_assert(!exists(w, "huge"));
	refused(w, rc, "huge", "10737418240 bytes is larger than the disk");
}
END_TEST

/* A full disk is a clean error, and ext4w_close reports it. */
START_TEST(full_disk)
{
	static char data[4 << 20];
	struct lb b;
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (char)(i * 7 + 1);
	lb_open(&b, layer_path(1), LB_PLAIN);
	for (int i = 0; i < 4; i++) {
		char p[8];
		snprintf(p, sizeof(p), "f%d", i);
		lb_file(&b, p, 0644, data, sizeof(data));
	}
	lb_close(&b);
	struct ext4w *w = fresh(16 << 20, 256);
	int rc = apply_one(w, NULL);
	ck_assert_int_eq(rc, -ENOSPC);
	int k = -1;
	ck_assert_msg(sscanf(err, "layer 1: entry 'f%d': the disk is full", &k) == 1 && k >= 1,
	              "%s", err);
	ck_assert_ptr_null(strchr(err, '\n'));
	ck_assert_int_eq(ext4w_close(w, err, sizeof(err)), -ENOSPC);
	ck_assert_int_eq(lb_fsck(img), 0); /* failed, yet whole */
	ck_assert_int_eq(lb_count(canary), 0);
}
END_TEST

/* The sizing pass: an image of the size it asks for (no headroom) takes
 * the layers. */
START_TEST(measure_then_apply)
{
	static char data[300000];
	struct lb b;
	memset(data, 'm', sizeof(data));
	for (int n = 1; n <= 2; n++) {
		lb_open(&b, layer_path(n), n == 1 ? LB_GZIP : LB_PLAIN);
		for (int i = 0; i < 300; i++) {
			char p[64];
			snprintf(p, sizeof(p), "l%d/dir%d/%s-file-%d", n, i / 50,
			         "a-fairly-long-name-of-forty-bytes", i);
			if (i % 50 == 0) {
				char d[32];
				snprintf(d, sizeof(d), "l%d/dir%d/", n, i / 50);
				lb_dir(&b, d, 0755);
			}
			lb_file(&b, p, 0644, data, (size_t)(i * 997) % sizeof(data));
		}
		lb_symlink(&b, "long-link",
		           "a-target-longer-than-sixty-bytes-so-that-it-takes-a-block-of-its-own");
		lb_close(&b);
	}
	struct layer_size s = { 0 };
	for (int n = 1; n <= 2; n++)
		ck_assert_msg(
		    layer_measure_file(layer_path(n), (unsigned)n, NULL, &s, err, sizeof(err)) == 0,
		    "%s", err);
	ck_assert_uint_eq(s.entries, 2 * 307);
	uint64_t bytes, inodes;
	layer_image_size(&s, 0, &bytes, &inodes);
	ck_assert_uint_ge(inodes, s.entries);
	struct ext4w *w = fresh(bytes, inodes);
	struct layer_opts o = { 0 };
	apply_ok(w, 1, &o);
	apply_ok(w, 2, &o);
	close_clean(w);
}
END_TEST

/* Links that point at the canary beside the image: an entry through one
 * is refused, an entry over one replaces the link in the image; the
 * canary stays empty. */
START_TEST(links_to_the_host_stay_links)
{
	char target[192];
	struct lb b;
	snprintf(target, sizeof(target), "%s/f", canary);
	lb_open(&b, layer_path(1), LB_PLAIN);
	lb_symlink(&b, "over", target);
	lb_file(&b, "over", 0644, "in the image", 12);
	lb_symlink(&b, "c", canary);
	lb_file(&b, "c/x", 0644, "x", 1);
	lb_close(&b);
	struct ext4w *w = fresh(8 << 20, 256);
	int rc = apply_one(w, NULL);
	content_is(w, "over", "in the image");
	char got[192];
	ck_assert_int_eq(ext4w_readlink(w, "c", got, sizeof(got), err, sizeof(err)), 0);
	ck_assert_str_eq(got, canary);
	refused(w, rc, "c/x", "'c' is a symbolic link");
}
END_TEST

/* lost+found at the root is the file system's: an opaque root and a
 * whiteout leave it; the root's own entry sets the root's mode. */
START_TEST(root_and_lost_found)
{
	struct lb b;
	lb_open(&b, layer_path(1), LB_PLAIN);
	lb_dir(&b, "./", 0700);
	lb_file(&b, "old", 0644, "o", 1);
	lb_close(&b);
	lb_open(&b, layer_path(2), LB_PLAIN);
	lb_file(&b, "./.wh..wh..opq", 0644, NULL, 0);
	lb_file(&b, ".wh.lost+found", 0644, NULL, 0);
	lb_file(&b, "new", 0644, "n", 1);
	lb_close(&b);
	struct ext4w *w = fresh(8 << 20, 256);
	struct layer_opts o = { 0 };
	apply_ok(w, 1, &o);
	apply_ok(w, 2, &o);
	ck_assert_uint_eq(stat_of(w, "").mode, S_IFDIR | 0700);
	ck_assert(!exists(w, "old"));
	ck_assert(exists(w, "new"));
	ck_assert_uint_eq(stat_of(w, "lost+found").mode & S_IFMT, S_IFDIR);
	close_clean(w);
}
END_TEST

/* A layer in memory; a layer that is not a tar. */
START_TEST(memory_and_garbage)
{
	struct lb b;
	lb_open(&b, layer_path(1), LB_ZSTD);
	lb_file(&b, "m", 0644, "mem", 3);
	lb_close(&b);
	FILE *f = fopen(layer_path(1), "rb");
	ck_assert_ptr_nonnull(f);
	static char buf[1 << 16];
	size_t n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	struct ext4w *w = fresh(8 << 20, 256);
	struct layer_opts o = { 0 };
	ck_assert_msg(layer_apply_mem(w, 1, buf, n, &o, err, sizeof(err)) == 0, "%s", err);
	content_is(w, "m", "mem");
	memset(buf, 'g', 4096);
	int rc = layer_apply_mem(w, 2, buf, 4096, &o, err, sizeof(err));
	ck_assert_int_eq(rc, -EIO);
	ck_assert_msg(!strncmp(err, "layer 2: ", 9) && !strchr(err, '\n'), "%s", err);
	rc = layer_apply_mem(w, 3, buf, n / 2, &o, err, sizeof(err)); /* cut short */
	ck_assert_int_lt(rc, 0);
	close_clean(w);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("image_layer");
	TCase *tc = tcase_create("image_layer");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, norm_names);
	tcase_add_test(tc, three_layers);
	tcase_add_test(tc, whiteout_frees);
	tcase_add_test(tc, sparse_keeps_holes);
	tcase_add_test(tc, refuses_climbing);
	tcase_add_test(tc, refuses_absolute);
	tcase_add_test(tc, refuses_symlink_then_write);
	tcase_add_test(tc, refuses_hardlink_absolute);
	tcase_add_test(tc, refuses_hardlink_climbing);
	tcase_add_test(tc, refuses_hardlink_missing);
	tcase_add_test(tc, refuses_too_many_entries);
	tcase_add_test(tc, refuses_larger_than_disk);
	tcase_add_test(tc, full_disk);
	tcase_add_test(tc, measure_then_apply);
	tcase_add_test(tc, memory_and_garbage);
	tcase_add_test(tc, links_to_the_host_stay_links);
	tcase_add_test(tc, root_and_lost_found);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN()
