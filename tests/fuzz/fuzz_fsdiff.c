/* libFuzzer target: the filesystem diff (lib/image/fsdiff*.c) over a
 * hostile ext4.  A small valid base file system is made once (mkfs.ext4
 * -d); each input is written over the first bytes of a fresh qcow2
 * overlay of it (superblock, group descriptors, bitmaps, inode table,
 * directories, and whatever the journal inode is made to point at), and
 * the overlay is diffed against the base: the diff may fail with a
 * message, never crash, hang or leak. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "backend/disk_qcow2.h"
#include "lib/image/fsdiff.h"
#include "lib/image/fsdiff_out.h"
#include "qcow2_create.h"
#include "qcow2_read.h"

#define MAX_INPUT (128 * 1024)

static char g_dir[64], g_base[96], g_top[96];

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	snprintf(g_dir, sizeof(g_dir), "/tmp/cove-fuzz-fsdiff-XXXXXX");
	if (!mkdtemp(g_dir))
		abort();
	snprintf(g_base, sizeof(g_base), "%s/base.img", g_dir);
	snprintf(g_top, sizeof(g_top), "%s/top.qcow2", g_dir);
	char cmd[512];
	snprintf(cmd, sizeof(cmd),
	         "cd %s && mkdir -p t/d/e && echo a > t/a && echo b > t/d/b && ln -s a t/l && "
	         "E2FSPROGS_FAKE_TIME=1700000000 mkfs.ext4 -q -F -b 1024 -N 64 -J size=1 -U "
	         "4c6f7665-0000-4000-8000-000000000030 "
	         "-E hash_seed=4c6f7665-0000-4000-8000-000000000030 -d t base.img 4M",
	         g_dir);
	if (system(cmd) != 0)
		abort(); /* the harness needs mkfs.ext4 (e2fsprogs) */
	return 0;
}

static void write_top(const uint8_t *data, size_t size)
{
	char err[256];
	unlink(g_top);
	if (qcow2_create_overlay(g_top, g_base, 0, err, sizeof(err)))
		abort();
	if (!size)
		return;
	struct disk *d;
	if (disk_qcow2_open(g_top, false, &d, err, sizeof(err)))
		abort();
	struct iovec v = { .iov_base = (void *)data, .iov_len = size };
	if (d->ops->write(d, 0, &v, 1))
		abort();
	d->ops->close(d);
}

static int sink(void *arg, const void *buf, size_t len)
{
	(void)buf;
	*(size_t *)arg += len;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > MAX_INPUT)
		return 0;
	write_top(data, size);
	char err[256];
	struct qcow2_chain *c;
	if (qcow2_chain_open(g_top, &c, err, sizeof(err)))
		abort();
	struct fsdiff *d;
	if (fsdiff_run(c, 1, &d, err, sizeof(err)) == 0) {
		free(fsdiff_text(d));
		free(fsdiff_json(d));
		for (size_t i = 0; i < fsdiff_count(d); i++) {
			size_t n = 0;
			const struct fsdiff_change *ch = fsdiff_get(d, i);
			if (ch->has_sha256)
				(void)fsdiff_read_file(d, ch, sink, &n, err, sizeof(err));
		}
		fsdiff_free(d);
	}
	qcow2_chain_close(c);
	return 0;
}
