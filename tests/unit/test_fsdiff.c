/* Unit tests: the filesystem diff (lib/image/fsdiff*.c, jbd2.c).  A base
 * ext4 image is made with mkfs.ext4 -d; a copy is changed with debugfs -w
 * (as a guest's kernel would: parents' mtimes set, one inode change only
 * in an un-checkpointed journal transaction); the clusters that differ go
 * into a qcow2 overlay of the base through the VMM's backend; the diff of
 * the overlay must then be exactly those changes. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/base/sha256.h"
#include "lib/image/fsdiff.h"
#include "lib/image/fsdiff_out.h"
#include "qcow2_create.h"
#include "qcow2_fill.h"
#include "qcow2_read.h"
#include "unit.h"

static char g_dir[64];

static void setup(void)
{
	snprintf(g_dir, sizeof(g_dir), "/tmp/cove-fsdiff-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(g_dir));
}

static void teardown(void)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", g_dir);
	ck_assert_int_eq(system(cmd), 0);
}

/* Runs a shell command in g_dir; fails the test unless it succeeds. */
static void sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void sh(const char *fmt, ...)
{
	char cmd[4096];
	int n = snprintf(cmd, sizeof(cmd), "cd %s && (", g_dir);
	va_list ap;
	va_start(ap, fmt);
	n += vsnprintf(cmd + n, sizeof(cmd) - (size_t)n, fmt, ap);
	va_end(ap);
	snprintf(cmd + n, sizeof(cmd) - (size_t)n, ") >>log 2>&1");
	ck_assert_msg(system(cmd) == 0, "failed: %s", cmd);
}

static const char *P(const char *name)
{
	static char p[4][128];
	static int k;
	k = (k + 1) % 4;
	snprintf(p[k], sizeof(p[k]), "%s/%s", g_dir, name);
	return p[k];
}

/* The base tree, `extra` more files in /keep, as base.img (64 MiB). */
static void make_base(int extra)
{
	sh("mkdir -p t/dir/sub t/etc t/keep && printf hello > t/a.txt && echo bye > t/del.txt && "
	   "echo m > t/chmod.txt && echo j > t/jmode.txt && echo x > t/dir/sub/x && "
	   "echo c > t/etc/conf && chmod 644 t/chmod.txt t/jmode.txt");
	if (extra)
		sh("for i in $(seq %d); do echo $i > t/keep/f$i; done", extra);
	sh("mkfs.ext4 -q -F -b 4096 -d t base.img 64M && cp --sparse=always base.img new.img");
}

/* The changed copy's clusters into an overlay; the diff of it. */
static struct fsdiff *diff_overlay(struct qcow2_chain **chain)
{
	char err[256] = "";
	ck_assert_int_eq(qcow2_create_overlay(P("ov.qcow2"), P("base.img"), 0, err, sizeof(err)),
	                 0);
	ck_assert_uint_gt(qcow2_fill_diff(P("ov.qcow2"), P("base.img"), P("new.img")), 0);
	ck_assert_int_eq(qcow2_chain_open(P("ov.qcow2"), chain, err, sizeof(err)), 0);
	struct fsdiff *d = NULL;
	int r = fsdiff_run(*chain, 1, &d, err, sizeof(err));
	ck_assert_msg(r == 0, "fsdiff: %s", err);
	return d;
}

static const struct fsdiff_change *find(const struct fsdiff *d, const char *path)
{
	for (size_t i = 0; i < fsdiff_count(d); i++)
		if (!strcmp(fsdiff_get(d, i)->path, path))
			return fsdiff_get(d, i);
	ck_abort_msg("no change for %s", path);
	return NULL;
}

static void check_sha(const struct fsdiff_change *c, const void *data, size_t len)
{
	uint8_t want[32];
	struct sha256 h;
	sha256_init(&h);
	sha256_update(&h, data, len);
	sha256_final(&h, want);
	ck_assert(c->has_sha256);
	ck_assert_msg(!memcmp(c->sha256, want, 32), "%s: wrong sha256", c->path);
}

START_TEST(agent_session_diff)
{
	make_base(0);
	/* A 3 MiB file of a known pattern, a small new one. */
	size_t big = 3u << 20;
	uint8_t *buf = malloc(big);
	for (size_t i = 0; i < big; i++)
		buf[i] = (uint8_t)(i * 31 + (i >> 16));
	int fd = open(P("big.src"), O_CREAT | O_WRONLY | O_TRUNC, 0600);
	ck_assert_int_eq(write(fd, buf, big), (ssize_t)big);
	close(fd);
	sh("printf 'new file' > new.src");
	FILE *f = fopen(P("cmds"), "w");
	fputs("write new.src new.txt\nwrite big.src big.bin\nrm del.txt\n"
	      "sif chmod.txt mode 0100600\nsymlink link /target/path\nmkdir newdir\n"
	      "write new.src newdir/inner.txt\nln dir/sub dir/sub2\nunlink dir/sub\n"
	      "zap_block -f a.txt -p 0x41 0\nsif a.txt mtime 20300101000000\n"
	      "sif / mtime 20300101000000\nsif dir mtime 20300101000000\n",
	      f);
	fclose(f);
	sh("debugfs -w -f cmds new.img");
	/* Two changes only in the journal: jmode.txt's mode and a new file in
	 * a new directory.  A scratch copy makes them; every block that
	 * differs goes into one committed transaction of new.img's journal. */
	sh("cp --sparse=always new.img scratch.img && printf 'journal only' > j.src && "
	   "printf 'sif jmode.txt mode 0100700\\nmkdir jdir\\nwrite j.src jdir/jnew.txt\\n"
	   "sif / mtime 20300101000001\\n' > scmds && debugfs -w -f scmds scratch.img && "
	   "blks=$(cmp -l new.img scratch.img | awk '{print int(($1 - 1) / 4096)}' | uniq) && "
	   "test -n \"$blks\" && : > jdata && for b in $blks; do "
	   "dd if=scratch.img bs=4096 skip=$b count=1 status=none >> jdata; done && "
	   "printf 'jo\\njw -b %%s jdata\\njc\\n' $(echo $blks | tr ' ' ,) > jcmds && "
	   "debugfs -w -f jcmds new.img");

	struct qcow2_chain *chain;
	struct fsdiff *d = diff_overlay(&chain);
	char *text = fsdiff_text(d);
	ck_assert_str_eq(text, "C /a.txt\nA /big.bin\nC /chmod.txt\nD /del.txt\nC /dir\n"
	                       "D /dir/sub\nA /dir/sub2\nA /dir/sub2/x\nA /jdir\n"
	                       "A /jdir/jnew.txt\nC /jmode.txt\nA /link\nA /new.txt\nA /newdir\n"
	                       "A /newdir/inner.txt\n");
	free(text);
	check_sha(find(d, "/a.txt"), "AAAAA", 5);
	check_sha(find(d, "/big.bin"), buf, big);
	check_sha(find(d, "/new.txt"), "new file", 8);
	check_sha(find(d, "/jdir/jnew.txt"), "journal only", 12);
	const struct fsdiff_change *c = find(d, "/chmod.txt");
	ck_assert_uint_eq(c->now.mode, 0600);
	ck_assert_uint_eq(c->old.mode, 0644);
	ck_assert_str_eq(c->now.type, "file");
	c = find(d, "/jmode.txt");
	ck_assert_uint_eq(c->now.mode, 0700);
	ck_assert_uint_eq(c->old.mode, 0644);
	c = find(d, "/link");
	ck_assert_str_eq(c->now.type, "symlink");
	ck_assert_str_eq(c->target, "/target/path");
	c = find(d, "/del.txt");
	ck_assert_str_eq(c->old.type, "file");
	ck_assert_uint_eq(c->old.size, 4);
	ck_assert_str_eq(find(d, "/dir/sub2")->now.type, "dir");
	ck_assert_uint_ge(fsdiff_stats(d)->journal_copies_new, 1);
	char *json = fsdiff_json(d);
	ck_assert_ptr_nonnull(strstr(json, "\"kind\":\"deleted\""));
	ck_assert_ptr_nonnull(strstr(json, "\"target\":\"/target/path\""));
	free(json);
	/* The tar holds the added and changed files, readable by tar(1). */
	fd = open(P("out.tar"), O_CREAT | O_WRONLY | O_TRUNC, 0600);
	char err[256] = "";
	ck_assert_int_eq(fsdiff_tar(d, fd, err, sizeof(err)), 0);
	close(fd);
	sh("mkdir x && tar -xf out.tar -C x && cmp x/big.bin big.src && test -L x/link && "
	   "test \"$(cat x/a.txt)\" = AAAAA && test ! -e x/del.txt");
	fsdiff_free(d);
	qcow2_chain_close(chain);
	free(buf);
}
END_TEST

/* A file changed in place in a directory that did not change: named by a
 * walk of directories, which does not read the files' inodes. */
START_TEST(orphan_named_by_walk)
{
	make_base(2000);
	sh("debugfs -w -R 'zap_block -f etc/conf -p 0x42 0' new.img && "
	   "debugfs -w -R 'sif etc/conf mtime 20300101000000' new.img");
	struct qcow2_chain *chain;
	struct fsdiff *d = diff_overlay(&chain);
	char *text = fsdiff_text(d);
	ck_assert_str_eq(text, "C /etc/conf\n");
	free(text);
	const struct fsdiff_stats *s = fsdiff_stats(d);
	ck_assert_uint_eq(s->inodes_changed, 1);
	ck_assert_uint_le(s->itable_blocks, 16); /* one cluster's worth */
	ck_assert_uint_ge(s->dirs_walked, 1);
	fsdiff_free(d);
	qcow2_chain_close(chain);
}
END_TEST

/* Not ext4, and an overlay with nothing changed. */
START_TEST(refusals_and_no_change)
{
	make_base(0);
	char err[256] = "";
	struct qcow2_chain *chain;
	ck_assert_int_eq(qcow2_create_overlay(P("ov.qcow2"), P("base.img"), 0, err, sizeof(err)),
	                 0);
	ck_assert_int_eq(qcow2_chain_open(P("ov.qcow2"), &chain, err, sizeof(err)), 0);
	struct fsdiff *d = NULL;
	ck_assert_int_eq(fsdiff_run(chain, 1, &d, err, sizeof(err)), 0);
	ck_assert_uint_eq(fsdiff_count(d), 0);
	fsdiff_free(d);
	ck_assert_int_eq(fsdiff_run(chain, 0, &d, err, sizeof(err)), -EINVAL);
	qcow2_chain_close(chain);
	sh("head -c 1048576 /dev/zero > zero.img");
	ck_assert_int_eq(qcow2_create_overlay(P("z.qcow2"), P("zero.img"), 0, err, sizeof(err)), 0);
	ck_assert_int_eq(qcow2_chain_open(P("z.qcow2"), &chain, err, sizeof(err)), 0);
	ck_assert_int_lt(fsdiff_run(chain, 1, &d, err, sizeof(err)), 0);
	ck_assert_ptr_null(d);
	ck_assert_ptr_null(strchr(err, '\n'));
	qcow2_chain_close(chain);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("fsdiff");
	TCase *tc = tcase_create("diff");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, agent_session_diff);
	tcase_add_test(tc, orphan_named_by_walk);
	tcase_add_test(tc, refusals_and_no_change);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN()
