/* Unit tests: the qcow2 backend (vmm/backend/disk_qcow2.c) and the image
 * creator (common/qcow2_create.c).  Images live in a fresh directory under
 * /tmp per test.  A table walker written here, independent of the backend,
 * checks that every cluster's refcount equals the number of references
 * to it; when qemu-img is installed, `qemu-img check` and `qemu-img
 * compare` judge the images too. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backend/disk_open.h"
#include "backend/disk_qcow2.h"
#include "backend/disk_qcow2_io.h"
#include "backend/disk_raw.h"
#include "qcow2_create.h"
#include "unit.h"

#define MIB (1024ULL * 1024)

/* ---- scratch directory ------------------------------------------------- */

/* Each test gets /tmp/cove-qcow2-<runner pid>-XXXXXX; the runner removes
 * them all at the end, also those of tests that failed (a failed test's
 * own teardown does not run). */
static char g_dir[64];
static pid_t g_runner;

static void remove_dir(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char p[512];
		snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
		unlink(p);
	}
	closedir(d);
	rmdir(dir);
}

static void runner_setup(void)
{
	g_runner = getpid();
}

static void runner_teardown(void)
{
	char prefix[64];
	snprintf(prefix, sizeof(prefix), "cove-qcow2-%d-", (int)g_runner);
	DIR *d = opendir("/tmp");
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (strncmp(e->d_name, prefix, strlen(prefix)) == 0) {
			char p[512];
			snprintf(p, sizeof(p), "/tmp/%s", e->d_name);
			remove_dir(p);
		}
	}
	closedir(d);
}

static void dir_setup(void)
{
	snprintf(g_dir, sizeof(g_dir), "/tmp/cove-qcow2-%d-XXXXXX", (int)g_runner);
	ck_assert_ptr_nonnull(mkdtemp(g_dir));
}

static void dir_teardown(void)
{
	remove_dir(g_dir);
}

/* A path in the scratch directory (one of a few rotating buffers). */
static const char *P(const char *name)
{
	static char buf[8][256];
	static int next;
	char *p = buf[next++ % 8];
	snprintf(p, sizeof(buf[0]), "%s/%s", g_dir, name);
	return p;
}

/* ---- data helpers ------------------------------------------------------ */

static uint64_t g_rng = 0x9e3779b97f4a7c15ULL;

static uint64_t rnd(void)
{
	g_rng ^= g_rng << 13;
	g_rng ^= g_rng >> 7;
	g_rng ^= g_rng << 17;
	return g_rng;
}

static void fill(uint8_t *p, size_t len, uint64_t seed)
{
	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)((i + seed) * 2654435761u >> 13);
}

static void make_raw(const char *path, uint64_t len, uint64_t seed, uint8_t **content)
{
	uint8_t *b = malloc(len ? len : 1);
	ck_assert_ptr_nonnull(b);
	fill(b, len, seed);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pwrite(fd, b, len, 0), (ssize_t)len);
	close(fd);
	if (content)
		*content = b;
	else
		free(b);
}

static void create(const char *path, const char *backing, uint64_t size)
{
	char err[256] = "";
	int r = qcow2_create_overlay(path, backing, size, err, sizeof(err));
	ck_assert_msg(r == 0, "create %s: %d %s", path, r, err);
}

static struct disk *openq(const char *path, bool ro)
{
	char err[256] = "";
	struct disk *d = NULL;
	int r = disk_qcow2_open(path, ro, &d, err, sizeof(err));
	ck_assert_msg(r == 0, "open %s: %d %s", path, r, err);
	ck_assert_str_eq(d->ops->name, "qcow2");
	return d;
}

/* Expects the open to fail with a message containing `want`. */
static void refuse(const char *path, bool ro, const char *want)
{
	char err[256] = "";
	struct disk *d = NULL;
	int r = disk_qcow2_open(path, ro, &d, err, sizeof(err));
	ck_assert_msg(r < 0, "%s opened, expected '%s'", path, want);
	ck_assert_ptr_null(d);
	ck_assert_msg(strstr(err, want), "error '%s' lacks '%s'", err, want);
	ck_assert_ptr_null(strchr(err, '\n'));
}

/* Writes through three iovecs of uneven length. */
static int wr(struct disk *d, uint64_t off, const uint8_t *p, size_t len)
{
	size_t a = len / 3, b = len / 2 - len / 5;
	struct iovec v[3] = {
		{ .iov_base = (void *)p, .iov_len = a },
		{ .iov_base = (void *)(p + a), .iov_len = b },
		{ .iov_base = (void *)(p + a + b), .iov_len = len - a - b },
	};
	return disk_write(d, off, v, 3);
}

static int rd(struct disk *d, uint64_t off, uint8_t *p, size_t len)
{
	size_t a = len / 4 + 1 < len ? len / 4 + 1 : len;
	struct iovec v[2] = {
		{ .iov_base = p, .iov_len = a },
		{ .iov_base = p + a, .iov_len = len - a },
	};
	return disk_read(d, off, v, 2);
}

/* The whole disk equals `want`. */
static void expect_disk(struct disk *d, const uint8_t *want)
{
	uint8_t *got = malloc(d->size);
	ck_assert_ptr_nonnull(got);
	ck_assert_int_eq(rd(d, 0, got, d->size), 0);
	/* One Check assertion per byte would be slow: each reports to the
	 * runner. */
	if (memcmp(got, want, d->size)) {
		uint64_t i = 0;
		while (got[i] == want[i])
			i++;
		ck_abort_msg("byte %llu: got %#x want %#x", (unsigned long long)i, got[i], want[i]);
	}
	free(got);
}

static void patch(const char *path, uint64_t off, const void *p, size_t len)
{
	int fd = open(path, O_WRONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pwrite(fd, p, len, (off_t)off), (ssize_t)len);
	close(fd);
}

static void patch32(const char *path, uint64_t off, uint32_t v)
{
	uint8_t b[4];
	qcow2_put32(b, v);
	patch(path, off, b, 4);
}

static void patch64(const char *path, uint64_t off, uint64_t v)
{
	uint8_t b[8];
	qcow2_put64(b, v);
	patch(path, off, b, 8);
}

static uint64_t peek64(const char *path, uint64_t off)
{
	uint8_t b[8] = { 0 };
	int fd = open(path, O_RDONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pread(fd, b, 8, (off_t)off), 8);
	close(fd);
	return qcow2_be64(b);
}

/* A qcow2 v3 image without backing built here, for cluster sizes and
 * refcount widths that qcow2_create_overlay() does not make: header,
 * one-cluster refcount table, one refcount block, L1. */
static void make_image(const char *path, unsigned cb, unsigned order, uint64_t size)
{
	uint64_t cs = 1ULL << cb, per_l1 = cs * (cs / 8);
	uint64_t l1 = (size + per_l1 - 1) / per_l1, l1c = (l1 * 8 + cs - 1) / cs;
	uint64_t total = 3 + l1c;
	ck_assert_uint_le(total, cs * 8 >> order);
	uint8_t *b = calloc(total, cs);
	ck_assert_ptr_nonnull(b);
	qcow2_put32(b, QCOW2_MAGIC);
	qcow2_put32(b + QCOW2_H_VERSION, 3);
	qcow2_put32(b + QCOW2_H_CLUSTER_BITS, cb);
	qcow2_put64(b + QCOW2_H_SIZE, size);
	qcow2_put32(b + QCOW2_H_L1_SIZE, (uint32_t)l1);
	qcow2_put64(b + QCOW2_H_L1_OFFSET, 3 * cs);
	qcow2_put64(b + QCOW2_H_RT_OFFSET, cs);
	qcow2_put32(b + QCOW2_H_RT_CLUSTERS, 1);
	qcow2_put32(b + QCOW2_H_REFCOUNT_ORDER, order);
	qcow2_put32(b + QCOW2_H_HEADER_LENGTH, QCOW2_V3_HEADER_LEN);
	qcow2_put64(b + cs, 2 * cs);
	unsigned bits = 1u << order;
	for (uint64_t i = 0; i < total; i++) {
		/* Refcount 1: big-endian from a byte up, low bits first below. */
		if (bits < 8)
			b[2 * cs + i * bits / 8] |= (uint8_t)(1u << (i * bits % 8));
		else
			b[2 * cs + (i + 1) * bits / 8 - 1] = 1;
	}
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pwrite(fd, b, total * cs, 0), (ssize_t)(total * cs));
	close(fd);
	free(b);
}

/* ---- the table walker -------------------------------------------------- */

static uint64_t rc_at(const uint8_t *blk, unsigned order, uint64_t i)
{
	unsigned bits = 1u << order;
	if (bits < 8)
		return (blk[i * bits / 8] >> (i * bits % 8)) & ((1u << bits) - 1);
	uint64_t v = 0;
	for (unsigned k = 0; k < bits / 8; k++)
		v = v << 8 | blk[i * bits / 8 + k];
	return v;
}

static void pread_all(int fd, void *buf, size_t len, uint64_t off)
{
	memset(buf, 0, len);
	ck_assert_int_ge(pread(fd, buf, len, (off_t)off), 0);
}

/* Asserts that every cluster's refcount is the number of references to
 * it (header, refcount table and blocks, L1, L2 tables, data), that all of
 * those are 1 with the COPIED flag set, and that nothing past the end of
 * the file is counted.  With leaks_ok, a cluster may also be counted once
 * without references (what a crash may leave).  Returns the number of
 * data clusters. */
static uint64_t check_tables(const char *path, bool leaks_ok)
{
	int fd = open(path, O_RDONLY);
	ck_assert_int_ge(fd, 0);
	struct stat st;
	ck_assert_int_eq(fstat(fd, &st), 0);
	uint8_t h[QCOW2_V3_HEADER_LEN];
	pread_all(fd, h, sizeof(h), 0);
	unsigned cb = qcow2_be32(h + QCOW2_H_CLUSTER_BITS);
	unsigned order =
	    qcow2_be32(h + QCOW2_H_VERSION) == 3 ? qcow2_be32(h + QCOW2_H_REFCOUNT_ORDER) : 4;
	uint64_t cs = 1ULL << cb;
	uint64_t n = ((uint64_t)st.st_size + cs - 1) / cs;
	uint32_t *refs = calloc(n, sizeof(*refs));
	uint8_t *buf = malloc(cs);
	ck_assert(refs && buf);
#define REF(off)                                                                         \
	do {                                                                             \
		uint64_t o_ = (off);                                                     \
		if (o_ % cs || o_ / cs >= n)                                             \
			ck_abort_msg("reference %#llx outside", (unsigned long long)o_); \
		refs[o_ / cs]++;                                                         \
	} while (0)
	REF(0);
	uint64_t rt_off = qcow2_be64(h + QCOW2_H_RT_OFFSET);
	uint64_t rt_n = (uint64_t)qcow2_be32(h + QCOW2_H_RT_CLUSTERS) * cs / 8;
	uint64_t *rt = calloc(rt_n, 8);
	ck_assert_ptr_nonnull(rt);
	for (uint64_t i = 0; i < rt_n * 8 / cs; i++)
		REF(rt_off + i * cs);
	pread_all(fd, rt, rt_n * 8, rt_off);
	for (uint64_t i = 0; i < rt_n; i++) {
		rt[i] = qcow2_be64((uint8_t *)&rt[i]);
		if (rt[i])
			REF(rt[i]);
	}
	uint32_t l1_n = qcow2_be32(h + QCOW2_H_L1_SIZE);
	uint64_t l1_off = qcow2_be64(h + QCOW2_H_L1_OFFSET);
	for (uint64_t o = 0; o < (uint64_t)l1_n * 8; o += cs)
		REF(l1_off + o);
	uint64_t data = 0;
	for (uint32_t i = 0; i < l1_n; i++) {
		uint64_t e = peek64(path, l1_off + 8ULL * i);
		if (!(e & QCOW2_OFFSET_MASK))
			continue;
		if (!(e & QCOW2_COPIED))
			ck_abort_msg("L1 entry %#llx without COPIED", (unsigned long long)e);
		REF(e & QCOW2_OFFSET_MASK);
		pread_all(fd, buf, cs, e & QCOW2_OFFSET_MASK);
		for (uint64_t j = 0; j < cs / 8; j++) {
			uint64_t l2 = qcow2_be64(buf + 8 * j);
			if (l2 & QCOW2_COMPRESSED)
				ck_abort_msg("compressed cluster");
			if (!(l2 & QCOW2_OFFSET_MASK))
				continue;
			if (!(l2 & QCOW2_COPIED))
				ck_abort_msg("L2 entry %#llx without COPIED",
				             (unsigned long long)l2);
			REF(l2 & QCOW2_OFFSET_MASK);
			data++;
		}
	}
#undef REF
	uint64_t per_block = cs * 8 >> order;
	for (uint64_t i = 0; i < rt_n; i++) {
		memset(buf, 0, cs);
		if (rt[i])
			pread_all(fd, buf, cs, rt[i]);
		for (uint64_t j = 0; j < per_block; j++) {
			uint64_t c = i * per_block + j;
			uint64_t want = c < n ? refs[c] : 0;
			uint64_t rc = rc_at(buf, order, j);
			bool leak = leaks_ok && rc == 1 && want == 0;
			if ((rc != want && !leak) || want > 1)
				ck_abort_msg("%s: cluster %llu refcount %llu, %llu references",
				             path, (unsigned long long)c,
				             (unsigned long long)rc_at(buf, order, j),
				             (unsigned long long)want);
		}
	}
	for (uint64_t c = rt_n * per_block; c < n; c++) {
		if (refs[c])
			ck_abort_msg("cluster %llu referenced, not counted", (unsigned long long)c);
	}
	free(rt);
	free(buf);
	free(refs);
	close(fd);
	return data;
}

static uint64_t check_refcounts(const char *path)
{
	return check_tables(path, false);
}

/* ---- qemu-img ---------------------------------------------------------- */

static bool have_qemu(const char *tool)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "command -v %s >/dev/null 2>&1", tool);
	return system(cmd) == 0;
}

/* Runs argv, returns its exit status; its output lands in out. */
static int run(char *const argv[], char *out, size_t outlen)
{
	int p[2];
	ck_assert_int_eq(pipe(p), 0);
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		dup2(p[1], 1);
		dup2(p[1], 2);
		close(p[0]);
		execvp(argv[0], argv);
		_exit(127);
	}
	close(p[1]);
	size_t got = 0;
	ssize_t r;
	while ((r = read(p[0], out + got, outlen - 1 - got)) > 0)
		got += (size_t)r;
	out[got] = 0;
	close(p[0]);
	int st;
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void qemu_check_clean(const char *path)
{
	char out[4096];
	char *argv[] = { "qemu-img", "check", "-f", "qcow2", (char *)path, NULL };
	int st = run(argv, out, sizeof(out));
	printf("qemu-img check %s: %.*s\n", path, (int)strcspn(out, "\n"), out);
	ck_assert_msg(st == 0 && strstr(out, "No errors were found"), "qemu-img check %s: %d %s",
	              path, st, out);
}

static void qemu_compare(const char *qcow2, const char *raw)
{
	char out[4096];
	char *argv[] = { "qemu-img", "compare",     "-f",        "qcow2", "-F",
		         "raw",      (char *)qcow2, (char *)raw, NULL };
	int st = run(argv, out, sizeof(out));
	ck_assert_msg(st == 0, "qemu-img compare %s %s: %d %s", qcow2, raw, st, out);
}

/* ---- tests ------------------------------------------------------------- */

START_TEST(alloc_write_read)
{
	const uint64_t size = 4 * MIB;
	create(P("a.qcow2"), NULL, size);
	struct disk *d = openq(P("a.qcow2"), false);
	ck_assert_uint_eq(d->size, size);
	uint8_t *shadow = calloc(1, size), *buf = malloc(size);
	ck_assert(shadow && buf);
	expect_disk(d, shadow); /* nothing allocated: zeros */
	static const struct {
		uint64_t off, len;
	} w[] = {
		{ 65536 - 100, 200 }, { 3, 150000 }, { MIB, 65536 },          { 4 * MIB - 10, 10 },
		{ 500000, 1 },        { 65535, 2 },  { 2 * MIB - 7, 300001 }, { 1234567, 65536 },
	};
	for (size_t i = 0; i < sizeof(w) / sizeof(w[0]); i++) {
		fill(buf, w[i].len, 1000 + i);
		ck_assert_int_eq(wr(d, w[i].off, buf, w[i].len), 0);
		memcpy(shadow + w[i].off, buf, w[i].len);
		/* Reads at odd offsets, across the write's edges. */
		uint64_t a = w[i].off > 33 ? w[i].off - 33 : 0;
		uint64_t len = w[i].len + 66 < size - a ? w[i].len + 66 : size - a;
		ck_assert_int_eq(rd(d, a, buf, len), 0);
		ck_assert_mem_eq(buf, shadow + a, len);
	}
	expect_disk(d, shadow);
	/* Overwrites of allocated clusters land in place. */
	fill(buf, 70000, 77);
	ck_assert_int_eq(wr(d, 100, buf, 70000), 0);
	memcpy(shadow + 100, buf, 70000);
	ck_assert_int_eq(disk_flush(d), 0);
	expect_disk(d, shadow);
	disk_close(d);
	uint64_t data = check_refcounts(P("a.qcow2"));
	ck_assert_uint_ge(data, 10);
	free(shadow);
	free(buf);
}
END_TEST

START_TEST(backing_raw)
{
	const uint64_t base_len = MIB + 12345;
	uint8_t *base;
	make_raw(P("base.raw"), base_len, 5, &base);
	create(P("o.qcow2"), P("base.raw"), 0);
	struct disk *d = openq(P("o.qcow2"), false);
	uint64_t size = (base_len + 511) / 512 * 512; /* rounded to whole sectors */
	ck_assert_uint_eq(d->size, size);
	uint8_t *shadow = calloc(1, size);
	memcpy(shadow, base, base_len); /* zeros past the end of the base */
	expect_disk(d, shadow);
	/* Partial-cluster writes keep the rest of the cluster from the base. */
	uint8_t buf[300];
	fill(buf, sizeof(buf), 9);
	ck_assert_int_eq(wr(d, 70000, buf, 100), 0);
	memcpy(shadow + 70000, buf, 100);
	ck_assert_int_eq(wr(d, MIB + 12000, buf, 300), 0); /* over the base's end */
	memcpy(shadow + MIB + 12000, buf, 300);
	ck_assert_int_eq(wr(d, 0, buf, 1), 0);
	shadow[0] = buf[0];
	expect_disk(d, shadow);
	disk_close(d);
	/* The base is untouched. */
	uint8_t *now;
	int fd = open(P("base.raw"), O_RDONLY);
	now = malloc(base_len);
	ck_assert_int_eq(pread(fd, now, base_len, 0), (ssize_t)base_len);
	close(fd);
	ck_assert_mem_eq(now, base, base_len);
	check_refcounts(P("o.qcow2"));
	/* A larger overlay reads zeros past the base. */
	create(P("big.qcow2"), P("base.raw"), 3 * MIB);
	d = openq(P("big.qcow2"), true);
	ck_assert_uint_eq(d->size, 3 * MIB);
	uint8_t *want = calloc(1, 3 * MIB);
	memcpy(want, base, base_len);
	expect_disk(d, want);
	disk_close(d);
	free(want);
	free(now);
	free(shadow);
	free(base);
	/* A backing file replaced by a FIFO or a directory is refused, at
	 * once (the open must not block on a FIFO with no writer). */
	ck_assert_int_eq(unlink(P("base.raw")), 0);
	ck_assert_int_eq(mkfifo(P("base.raw"), 0600), 0);
	refuse(P("o.qcow2"), true, "not a regular file or block device");
	ck_assert_int_eq(unlink(P("base.raw")), 0);
	ck_assert_int_eq(mkdir(P("base.raw"), 0700), 0);
	refuse(P("o.qcow2"), true, "not a regular file or block device");
	ck_assert_int_eq(rmdir(P("base.raw")), 0);
	refuse(P("o.qcow2"), true, "No such file");
}
END_TEST

/* A read-only image's L2 tables are cached a page at a time: entries in
 * every page of a table, and of two tables, read back what was written,
 * also once more pages are read than the cache holds. */
START_TEST(read_only_l2_pages)
{
	const uint64_t size = 1200 * MIB; /* two L2 tables of 64 KiB clusters */
	create(P("pg.qcow2"), NULL, size);
	struct disk *d = openq(P("pg.qcow2"), false);
	enum { N = 150 };
	uint64_t offs[N];
	uint8_t buf[600], back[600];
	for (int i = 0; i < N; i++) {
		/* Cluster i * 53 + 7 of a table's 8192: pages 0..15 of each. */
		offs[i] = ((uint64_t)(i * 53 + 7) % 16384) * 65536 + (uint64_t)i * 11;
		fill(buf, sizeof(buf), (uint64_t)i + 100);
		ck_assert_int_eq(wr(d, offs[i], buf, sizeof(buf)), 0);
	}
	disk_close(d);
	d = openq(P("pg.qcow2"), true);
	for (int round = 0; round < 2; round++) {
		for (int i = 0; i < N; i++) {
			fill(buf, sizeof(buf), (uint64_t)i + 100);
			ck_assert_int_eq(rd(d, offs[i], back, sizeof(back)), 0);
			ck_assert_msg(!memcmp(buf, back, sizeof(buf)), "cluster %d at %llu", i,
			              (unsigned long long)offs[i]);
			/* Between them: never written, zeros. */
			ck_assert_int_eq(rd(d, offs[i] + 20000, back, 100), 0);
			for (int k = 0; k < 100; k++)
				ck_assert_int_eq(back[k], 0);
		}
	}
	disk_close(d);
}
END_TEST

/* A writable image's refcount table is read at its first allocation, not
 * at open: reads of an image never written leave it unloaded. */
START_TEST(reftable_loaded_on_first_write)
{
	create(P("rt.qcow2"), NULL, 64 * MIB);
	struct disk *d = openq(P("rt.qcow2"), false);
	struct qcow2 *q = (struct qcow2 *)d;
	uint8_t buf[512];
	ck_assert_int_eq(rd(d, 0, buf, sizeof(buf)), 0);
	ck_assert_int_eq(rd(d, 5 * MIB, buf, sizeof(buf)), 0);
	ck_assert_ptr_null(q->rt);
	fill(buf, sizeof(buf), 7);
	ck_assert_int_eq(wr(d, 5 * MIB, buf, sizeof(buf)), 0);
	ck_assert_ptr_nonnull(q->rt);
	ck_assert_uint_gt(q->rt_entries, 0);
	disk_close(d);
	/* What the lazily loaded table counted is what a reopen reads. */
	d = openq(P("rt.qcow2"), false);
	uint8_t back[512];
	ck_assert_int_eq(rd(d, 5 * MIB, back, sizeof(back)), 0);
	ck_assert(!memcmp(buf, back, sizeof(buf)));
	fill(buf, sizeof(buf), 8);
	ck_assert_int_eq(wr(d, 9 * MIB, buf, sizeof(buf)), 0);
	disk_close(d);
	qemu_check_clean(P("rt.qcow2"));
}
END_TEST

START_TEST(reopen_persists)
{
	create(P("p.qcow2"), NULL, 2 * MIB);
	uint8_t *shadow = calloc(1, 2 * MIB), buf[5000];
	struct disk *d = openq(P("p.qcow2"), false);
	for (int i = 0; i < 20; i++) {
		uint64_t off = rnd() % (2 * MIB - sizeof(buf));
		size_t len = 1 + rnd() % sizeof(buf);
		fill(buf, len, (uint64_t)i);
		ck_assert_int_eq(wr(d, off, buf, len), 0);
		memcpy(shadow + off, buf, len);
	}
	disk_close(d);
	d = openq(P("p.qcow2"), true);
	expect_disk(d, shadow);
	ck_assert_int_eq(wr(d, 0, buf, 1), -EROFS);
	disk_close(d);
	d = openq(P("p.qcow2"), false);
	expect_disk(d, shadow);
	disk_close(d);
	check_refcounts(P("p.qcow2"));
	free(shadow);
}
END_TEST

START_TEST(chain_qcow2_qcow2_raw)
{
	const uint64_t size = 2 * MIB;
	uint8_t *shadow, buf[100000];
	make_raw(P("base.raw"), size, 1, &shadow);
	create(P("mid.qcow2"), P("base.raw"), 0);
	struct disk *d = openq(P("mid.qcow2"), false);
	fill(buf, sizeof(buf), 2);
	ck_assert_int_eq(wr(d, 30000, buf, sizeof(buf)), 0);
	memcpy(shadow + 30000, buf, sizeof(buf));
	disk_close(d);
	uint8_t *mid = malloc(size);
	memcpy(mid, shadow, size);
	/* A relative backing name resolves against the overlay's directory. */
	create(P("top.qcow2"), "mid.qcow2", 0);
	d = openq(P("top.qcow2"), false);
	ck_assert_uint_eq(d->size, size);
	expect_disk(d, shadow);
	fill(buf, 777, 3);
	ck_assert_int_eq(wr(d, 65000, buf, 777), 0);
	memcpy(shadow + 65000, buf, 777);
	ck_assert_int_eq(wr(d, size - 777, buf, 777), 0);
	memcpy(shadow + size - 777, buf, 777);
	expect_disk(d, shadow);
	/* The middle image is shared, read-only, while top is open. */
	struct disk *m = openq(P("mid.qcow2"), true);
	expect_disk(m, mid);
	char err[256];
	struct disk *x;
	ck_assert_int_eq(disk_qcow2_open(P("mid.qcow2"), false, &x, err, sizeof(err)), -EBUSY);
	disk_close(m);
	disk_close(d);
	check_refcounts(P("top.qcow2"));
	check_refcounts(P("mid.qcow2"));
	/* Through disk_open() too. */
	ck_assert_int_eq(disk_open(P("top.qcow2"), true, &d), 0);
	ck_assert_str_eq(d->ops->name, "qcow2");
	expect_disk(d, shadow);
	disk_close(d);
	free(mid);
	free(shadow);
}
END_TEST

START_TEST(chain_depth_limit)
{
	make_raw(P("l0"), 64 * 1024, 1, NULL);
	char prev[8] = "l0", name[8];
	for (int i = 1; i <= QCOW2_MAX_CHAIN + 1; i++) {
		snprintf(name, sizeof(name), "l%d", i);
		create(P(name), prev, 0);
		memcpy(prev, name, sizeof(prev));
	}
	/* l16 has 16 files below it; l17 one too many. */
	snprintf(name, sizeof(name), "l%d", QCOW2_MAX_CHAIN);
	struct disk *d = openq(P(name), false);
	uint8_t want[64 * 1024], got[sizeof(want)];
	fill(want, sizeof(want), 1);
	ck_assert_int_eq(rd(d, 0, got, sizeof(got)), 0);
	ck_assert_mem_eq(got, want, sizeof(want));
	disk_close(d);
	snprintf(name, sizeof(name), "l%d", QCOW2_MAX_CHAIN + 1);
	refuse(P(name), true, "backing chain longer");
	/* An image that is its own backing file. */
	create(P("self"), "l1", 0); /* names a qcow2 backing file: format "qcow2" */
	const char *self = "self";
	uint64_t boff = peek64(P("self"), QCOW2_H_BACKING_OFFSET);
	patch(P("self"), boff, self, 4);
	patch32(P("self"), QCOW2_H_BACKING_SIZE, 4);
	refuse(P("self"), true, "backing chain longer");
	refuse(P("self"), false, "in use");
	/* qcow2_chain_walk() counts the same files from the headers alone. */
	unsigned int depth = 0;
	char err[256];
	ck_assert_int_eq(qcow2_chain_walk(P("l0"), 64, NULL, NULL, &depth, err, sizeof(err)), 0);
	ck_assert_uint_eq(depth, 1);
	ck_assert_int_eq(qcow2_chain_walk(P("l3"), 64, NULL, NULL, &depth, err, sizeof(err)), 0);
	ck_assert_uint_eq(depth, 4);
	ck_assert_int_eq(qcow2_chain_walk(P("l3"), 3, NULL, NULL, &depth, err, sizeof(err)),
	                 -ELOOP);
	ck_assert_int_eq(qcow2_chain_walk(P("self"), 64, NULL, NULL, &depth, err, sizeof(err)),
	                 -ELOOP);
	ck_assert_ptr_nonnull(strstr(err, "more than 64"));
}
END_TEST

START_TEST(zeroes_and_discard)
{
	const uint64_t size = MIB, cs = 65536;
	uint8_t *shadow;
	make_raw(P("base.raw"), size, 4, &shadow);
	create(P("z.qcow2"), P("base.raw"), 0);
	struct disk *d = openq(P("z.qcow2"), false);
	uint8_t buf[3 * 65536];
	fill(buf, sizeof(buf), 8);
	ck_assert_int_eq(wr(d, 2 * cs, buf, sizeof(buf)), 0);
	memcpy(shadow + 2 * cs, buf, sizeof(buf));
	/* Whole clusters: unallocated (zero flag hides the base), allocated
	 * with and without unmapping; partial clusters are written. */
	ck_assert_int_eq(disk_write_zeroes(d, 0, cs, false), 0);
	ck_assert_int_eq(disk_write_zeroes(d, 2 * cs, cs, false), 0);
	ck_assert_int_eq(disk_write_zeroes(d, 3 * cs, cs, true), 0);
	ck_assert_int_eq(disk_discard(d, 4 * cs + 100, cs), 0);
	ck_assert_int_eq(disk_discard(d, 8 * cs - 5, 10), 0);
	memset(shadow, 0, cs);
	memset(shadow + 2 * cs, 0, 2 * cs);
	memset(shadow + 4 * cs + 100, 0, cs);
	memset(shadow + 8 * cs - 5, 0, 10);
	expect_disk(d, shadow);
	/* Writing into a zeroed (preallocated) cluster. */
	ck_assert_int_eq(wr(d, 2 * cs + 10, buf, 20), 0);
	memcpy(shadow + 2 * cs + 10, buf, 20);
	expect_disk(d, shadow);
	disk_close(d);
	check_refcounts(P("z.qcow2"));
	d = openq(P("z.qcow2"), true);
	expect_disk(d, shadow);
	disk_close(d);
	/* Without a backing file, discarding frees clusters. */
	create(P("n.qcow2"), NULL, size);
	d = openq(P("n.qcow2"), false);
	ck_assert_int_eq(wr(d, 0, buf, sizeof(buf)), 0);
	ck_assert_int_eq(disk_discard(d, 0, size), 0);
	disk_close(d);
	ck_assert_uint_eq(check_refcounts(P("n.qcow2")), 0);
	/* Discarding a whole 1 TiB disk only visits its allocated part. */
	create(P("huge.qcow2"), NULL, 1ULL << 40);
	d = openq(P("huge.qcow2"), false);
	ck_assert_int_eq(wr(d, 1ULL << 39, buf, 4096), 0);
	ck_assert_int_eq(disk_discard(d, 0, d->size), 0);
	ck_assert_int_eq(disk_write_zeroes(d, 0, d->size, false), 0);
	ck_assert_int_eq(rd(d, 1ULL << 39, buf, 4096), 0);
	for (int i = 0; i < 4096; i++)
		if (buf[i])
			ck_abort_msg("byte %d not zero", i);
	disk_close(d);
	ck_assert_uint_eq(check_refcounts(P("huge.qcow2")), 0);
	free(shadow);
}
END_TEST

/* Small clusters make the backend add refcount blocks and grow the
 * refcount table; every refcount width is exercised. */
START_TEST(refcount_growth)
{
	static const unsigned orders[] = { 4, 0, 1, 3, 6 };
	const uint64_t size = 16 * MIB;
	uint8_t *shadow = calloc(1, size), *buf = malloc(MIB);
	ck_assert(shadow && buf);
	for (size_t o = 0; o < sizeof(orders) / sizeof(orders[0]); o++) {
		char name[32];
		snprintf(name, sizeof(name), "g%u.qcow2", orders[o]);
		const char *path = P(name);
		make_image(path, 9, orders[o], size);
		memset(shadow, 0, size);
		struct disk *d = openq(path, false);
		uint64_t amount = o == 0 ? 10 * MIB : 2 * MIB;
		for (uint64_t off = 0; off < amount; off += MIB) {
			fill(buf, MIB, off);
			ck_assert_int_eq(wr(d, off + 7, buf, MIB - 7), 0);
			memcpy(shadow + off + 7, buf, MIB - 7);
		}
		for (int i = 0; i < 50; i++) {
			uint64_t off = rnd() % (size - 5000);
			size_t len = 1 + rnd() % 5000;
			fill(buf, len, rnd());
			ck_assert_int_eq(wr(d, off, buf, len), 0);
			memcpy(shadow + off, buf, len);
		}
		expect_disk(d, shadow);
		disk_close(d);
		check_refcounts(path);
		if (orders[o] == 4 || orders[o] == 6) /* more clusters than one table covers */
			ck_assert_uint_gt(peek64(path, QCOW2_H_RT_CLUSTERS) >> 32, 1);
		d = openq(path, true);
		expect_disk(d, shadow);
		disk_close(d);
		if (have_qemu("qemu-img")) {
			qemu_check_clean(path);
			make_raw(P("shadow.raw"), 0, 0, NULL);
			int fd = open(P("shadow.raw"), O_WRONLY);
			ck_assert_int_eq(pwrite(fd, shadow, size, 0), (ssize_t)size);
			close(fd);
			qemu_compare(path, P("shadow.raw"));
		}
	}
	free(shadow);
	free(buf);
}
END_TEST

/* The host's cap on the image file (disk.max_file): a full disk fits
 * under qcow2_overlay_max_file(), and a tighter cap fails the write that
 * would pass it with -ENOSPC, leaving earlier data and the image intact. */
START_TEST(file_cap)
{
	const uint64_t size = 8 * MIB;
	create(P("c.qcow2"), NULL, size);
	struct disk *d = openq(P("c.qcow2"), false);
	uint64_t cap = qcow2_overlay_max_file(size);
	ck_assert_uint_lt(cap, size + 8 * 65536);
	d->max_file = cap;
	uint8_t *buf = malloc(MIB);
	ck_assert(buf);
	for (uint64_t off = 0; off < size; off += MIB) {
		fill(buf, MIB, off);
		ck_assert_int_eq(wr(d, off, buf, MIB), 0);
	}
	disk_close(d);
	struct stat st;
	ck_assert_int_eq(stat(P("c.qcow2"), &st), 0);
	ck_assert_uint_le((uint64_t)st.st_size, cap);
	check_refcounts(P("c.qcow2"));

	create(P("t.qcow2"), NULL, size);
	ck_assert_int_eq(stat(P("t.qcow2"), &st), 0);
	d = openq(P("t.qcow2"), false);
	/* Room for the L2 table and two data clusters. */
	d->max_file = (uint64_t)st.st_size + 3 * 65536;
	fill(buf, 65536, 1);
	ck_assert_int_eq(wr(d, 0, buf, 65536), 0);
	ck_assert_int_eq(wr(d, 65536, buf, 65536), 0);
	ck_assert_int_eq(wr(d, 4 * 65536, buf, 65536), -ENOSPC);
	ck_assert_int_eq(wr(d, 0, buf, 512), 0); /* in place: no growth */
	uint8_t back[512];
	ck_assert_int_eq(rd(d, 0, back, sizeof(back)), 0);
	ck_assert_mem_eq(back, buf, sizeof(back));
	disk_close(d);
	ck_assert_int_eq(stat(P("t.qcow2"), &st), 0);
	ck_assert_uint_le((uint64_t)st.st_size, cap);
	check_refcounts(P("t.qcow2"));
	/* A size that overflows gives no cap to rely on, never a small one. */
	ck_assert_uint_eq(qcow2_overlay_max_file(UINT64_MAX), UINT64_MAX);
	ck_assert_uint_ge(qcow2_overlay_max_file(1ULL << 44), (1ULL << 44) + (1ULL << 31));
	free(buf);
}
END_TEST

START_TEST(refusals)
{
	const char *p = P("r.qcow2");
	struct {
		uint64_t off;
		int width;
		uint64_t val;
		bool ro;
		const char *want;
	} cases[] = {
		{ 0, 4, 0x51464900, true, "bad magic" },
		{ QCOW2_H_VERSION, 4, 4, true, "version 4" },
		{ QCOW2_H_CRYPT_METHOD, 4, 2, true, "encrypted" },
		{ QCOW2_H_NB_SNAPSHOTS, 4, 1, true, "internal snapshots" },
		{ QCOW2_H_INCOMPAT, 8, 1ULL << 5, true,
		  "unknown qcow2 incompatible features 0x20" },
		{ QCOW2_H_INCOMPAT, 8, QCOW2_INCOMPAT_CORRUPT, true, "marked corrupt" },
		{ QCOW2_H_INCOMPAT, 8, QCOW2_INCOMPAT_DATA_FILE, true, "external data" },
		{ QCOW2_H_INCOMPAT, 8, QCOW2_INCOMPAT_EXTL2, true, "extended L2" },
		{ QCOW2_H_INCOMPAT, 8, QCOW2_INCOMPAT_DIRTY, false, "dirty" },
		{ QCOW2_H_CLUSTER_BITS, 4, 8, true, "cluster_bits 8" },
		{ QCOW2_H_CLUSTER_BITS, 4, 22, true, "cluster_bits 22" },
		{ QCOW2_H_L1_OFFSET, 8, 1ULL << 40, true, "L1 table outside" },
		{ QCOW2_H_L1_OFFSET, 8, 0, true, "L1 table outside the file or over the header" },
		{ QCOW2_H_L1_OFFSET, 8, 65536, true, "L1 table overlaps the refcount table" },
		{ QCOW2_H_L1_SIZE, 4, 0, true, "L1 table too small" },
		{ QCOW2_H_L1_SIZE, 4, 0x7fffffff, true, "L1 table too large" },
		{ QCOW2_H_RT_OFFSET, 8, 0, true, "refcount table outside" },
		{ QCOW2_H_RT_OFFSET, 8, 0xfffffffffff0000ULL, true, "refcount table outside" },
		{ QCOW2_H_RT_CLUSTERS, 4, 0, true, "refcount table size" },
		{ QCOW2_H_REFCOUNT_ORDER, 4, 7, true, "refcount_order" },
		{ QCOW2_H_HEADER_LENGTH, 4, 100, true, "header_length" },
		{ QCOW2_H_SIZE, 8, UINT64_MAX, true, "L1 table too small" },
		{ QCOW2_H_BACKING_OFFSET, 8, 100000, true, "backing file name" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		unlink(p);
		create(p, NULL, MIB);
		if (cases[i].width == 4)
			patch32(p, cases[i].off, (uint32_t)cases[i].val);
		else
			patch64(p, cases[i].off, cases[i].val);
		if (cases[i].off == QCOW2_H_BACKING_OFFSET)
			patch32(p, QCOW2_H_BACKING_SIZE, 10);
		refuse(p, cases[i].ro, cases[i].want);
	}
	/* A dirty image still opens read-only. */
	unlink(p);
	create(p, NULL, MIB);
	patch64(p, QCOW2_H_INCOMPAT, QCOW2_INCOMPAT_DIRTY);
	disk_close(openq(p, true));
	/* Truncated headers. */
	unlink(p);
	create(p, NULL, MIB);
	ck_assert_int_eq(truncate(p, 50), 0);
	refuse(p, true, "truncated");
	ck_assert_int_eq(truncate(p, 80), 0);
	refuse(p, true, "truncated");
	ck_assert_int_eq(truncate(p, 3), 0);
	refuse(p, true, "bad magic");
	/* Backing problems. */
	make_raw(P("b.raw"), 4096, 1, NULL);
	unlink(p);
	create(p, P("b.raw"), 0);
	uint64_t ext = QCOW2_V3_HEADER_LEN + 8; /* backing format string "raw" */
	patch(p, ext, "vmd", 3);
	refuse(p, true, "unsupported backing format");
	patch(p, ext, "raw", 3);
	unlink(P("b.raw"));
	refuse(p, true, "b.raw");
	make_raw(P("b.raw"), 4096, 1, NULL);
	char err[256];
	struct disk *d;
	ck_assert_int_eq(
	    disk_qcow2_open_flags(p, true, QCOW2_OPEN_NO_BACKING, &d, err, sizeof(err)), -EPERM);
	ck_assert_ptr_nonnull(strstr(err, "backing files are not allowed"));
	/* A directory, a missing file. */
	refuse(g_dir, true, "");
	refuse(P("missing"), true, "No such file");
}
END_TEST

/* Requests that meet compressed or out-of-file clusters fail alone. */
START_TEST(bad_clusters_fail_requests)
{
	const char *p = P("c.qcow2");
	create(p, NULL, MIB);
	struct disk *d = openq(p, false);
	uint8_t buf[4096] = { 1 };
	ck_assert_int_eq(wr(d, 0, buf, sizeof(buf)), 0);
	disk_close(d);
	uint64_t l2 = peek64(p, 3 * 65536) & QCOW2_OFFSET_MASK;
	uint64_t e = peek64(p, l2);
	patch64(p, l2, e | QCOW2_COMPRESSED);
	d = openq(p, false);
	ck_assert_int_eq(rd(d, 0, buf, sizeof(buf)), -EIO);
	ck_assert_int_eq(wr(d, 100, buf, 10), -EIO);
	ck_assert_int_eq(disk_write_zeroes(d, 0, 65536, true), -EIO);
	ck_assert_int_eq(rd(d, 65536, buf, sizeof(buf)), 0); /* its neighbour is fine */
	disk_close(d);
	patch64(p, l2, QCOW2_COPIED | (1ULL << 40));
	d = openq(p, false);
	ck_assert_int_eq(rd(d, 0, buf, sizeof(buf)), -EIO);
	ck_assert_int_eq(wr(d, 0, buf, sizeof(buf)), -EIO);
	disk_close(d);
	patch64(p, l2, QCOW2_COPIED | 65536); /* the refcount table */
	d = openq(p, true);
	ck_assert_int_eq(rd(d, 0, buf, sizeof(buf)), -EIO);
	disk_close(d);
	patch64(p, 3 * 65536, 1ULL << 45); /* L1 entry past the end */
	d = openq(p, true);
	ck_assert_int_eq(rd(d, 0, buf, sizeof(buf)), -EIO);
	disk_close(d);
}
END_TEST

START_TEST(create_and_probe)
{
	char err[256];
	make_raw(P("b.raw"), 10000, 1, NULL);
	bool q;
	uint64_t size;
	ck_assert_int_eq(qcow2_probe(P("b.raw"), &q, &size, err, sizeof(err)), 0);
	ck_assert(!q);
	ck_assert_uint_eq(size, 10000);
	create(P("o.qcow2"), P("b.raw"), 0);
	ck_assert_int_eq(qcow2_probe(P("o.qcow2"), &q, &size, err, sizeof(err)), 0);
	ck_assert(q);
	ck_assert_uint_eq(size, 10240);
	/* O_EXCL, and nothing left behind after a failure. */
	ck_assert_int_eq(qcow2_create_overlay(P("o.qcow2"), P("b.raw"), 0, err, sizeof(err)),
	                 -EEXIST);
	ck_assert_int_eq(qcow2_create_overlay(P("x.qcow2"), P("none"), 0, err, sizeof(err)),
	                 -ENOENT);
	ck_assert_int_eq(access(P("x.qcow2"), F_OK), -1);
	ck_assert_int_eq(qcow2_create_overlay(P("x.qcow2"), NULL, 0, err, sizeof(err)), -EINVAL);
	ck_assert_int_eq(qcow2_create_overlay(P("x.qcow2"), NULL, 1ULL << 60, err, sizeof(err)),
	                 -EFBIG);
	ck_assert_int_eq(access(P("x.qcow2"), F_OK), -1);
	/* The backing format extension names qcow2 over qcow2. */
	create(P("t.qcow2"), P("o.qcow2"), 0);
	uint8_t h[QCOW2_V3_HEADER_LEN + 16];
	int fd = open(P("t.qcow2"), O_RDONLY);
	ck_assert_int_eq(pread(fd, h, sizeof(h), 0), (ssize_t)sizeof(h));
	close(fd);
	ck_assert_uint_eq(qcow2_be32(h + QCOW2_V3_HEADER_LEN), QCOW2_EXT_BACKING_FORMAT);
	ck_assert_uint_eq(qcow2_be32(h + QCOW2_V3_HEADER_LEN + 4), 5);
	ck_assert_mem_eq(h + QCOW2_V3_HEADER_LEN + 8, "qcow2", 5);
	check_refcounts(P("t.qcow2"));
	/* disk_open() tells the formats apart. */
	struct disk *d;
	ck_assert_int_eq(disk_open(P("b.raw"), true, &d), 0);
	ck_assert_str_eq(d->ops->name, "raw");
	disk_close(d);
	/* Read-only, it is probed; writable without a format, never: raw. */
	ck_assert_int_eq(disk_open_err(P("t.qcow2"), true, &d, err, sizeof(err)), 0);
	ck_assert_str_eq(d->ops->name, "qcow2");
	ck_assert_uint_eq(d->size, 10240);
	disk_close(d);
	ck_assert_int_eq(disk_open_err(P("t.qcow2"), false, &d, err, sizeof(err)), 0);
	ck_assert_str_eq(d->ops->name, "raw");
	disk_close(d);
	ck_assert_int_eq(disk_open_format(P("t.qcow2"), "qcow2", false, &d, err, sizeof(err)), 0);
	ck_assert_str_eq(d->ops->name, "qcow2");
	struct disk *x;
	ck_assert_int_eq(disk_open_format(P("t.qcow2"), "qcow2", false, &x, err, sizeof(err)),
	                 -EBUSY);
	ck_assert_ptr_nonnull(strstr(err, "in use"));
	disk_close(d);
	ck_assert_int_eq(disk_open_err(P("none"), true, &x, err, sizeof(err)), -ENOENT);
	ck_assert_ptr_nonnull(strstr(err, "none"));
}
END_TEST

/* A raw disk whose guest wrote a qcow2 header naming a host file: with
 * the format given, it stays raw, as backing file and as disk. */
START_TEST(explicit_format_beats_probing)
{
	make_raw(P("secret"), 4096, 3, NULL);
	create(P("evil.qcow2"), P("secret"), 0);
	uint8_t *evil;
	make_raw(P("disk.raw"), 65536, 1, &evil);
	int fd = open(P("evil.qcow2"), O_RDONLY);
	ck_assert_int_eq(pread(fd, evil, 4096, 0), 4096); /* the "guest" writes sector 0.. */
	close(fd);
	patch(P("disk.raw"), 0, evil, 4096);
	char err[256];
	struct disk *d;
	ck_assert_int_eq(disk_open_format(P("disk.raw"), "raw", true, &d, err, sizeof(err)), 0);
	ck_assert_str_eq(d->ops->name, "raw");
	disk_close(d);
	ck_assert_int_eq(disk_open_format(P("disk.raw"), "vmdk", true, &d, err, sizeof(err)),
	                 -EINVAL);
	ck_assert_int_eq(
	    qcow2_create_overlay_format(P("o.qcow2"), P("disk.raw"), "raw", 0, err, sizeof(err)),
	    0);
	d = openq(P("o.qcow2"), true);
	ck_assert_uint_eq(d->size, 65536);
	expect_disk(d, evil); /* the raw bytes, header and all */
	disk_close(d);
	ck_assert_int_eq(
	    qcow2_create_overlay_format(P("x.qcow2"), P("secret"), "qcow2", 0, err, sizeof(err)),
	    -EINVAL);
	ck_assert_int_eq(
	    qcow2_create_overlay_format(P("x.qcow2"), P("secret"), "vmdk", 0, err, sizeof(err)),
	    -EINVAL);
	ck_assert_int_eq(access(P("x.qcow2"), F_OK), -1);
	free(evil);
}
END_TEST

/* The same random workload on an overlay and on a raw copy of its base;
 * QEMU must find the overlay clean and equal to the copy. */
START_TEST(qemu_img_agrees)
{
	if (!have_qemu("qemu-img"))
		return;
	const uint64_t size = 8 * MIB;
	make_raw(P("base.raw"), size, 11, NULL);
	make_raw(P("copy.raw"), size, 11, NULL);
	create(P("o.qcow2"), P("base.raw"), 0);
	struct disk *q = openq(P("o.qcow2"), false), *r;
	ck_assert_int_eq(disk_raw_open(P("copy.raw"), false, &r), 0);
	uint8_t *buf = malloc(300000);
	for (int i = 0; i < 400; i++) {
		uint64_t len = 1 + rnd() % (i % 10 ? 9000 : 300000);
		uint64_t off = rnd() % (size - len);
		if (i % 4 == 0)
			off &= ~65535ULL; /* aligned ones meet whole clusters */
		unsigned op = (unsigned)(rnd() % 10);
		if (op < 7) {
			fill(buf, len, rnd());
			ck_assert_int_eq(wr(q, off, buf, len), 0);
			ck_assert_int_eq(wr(r, off, buf, len), 0);
		} else if (op < 9) {
			ck_assert_int_eq(disk_write_zeroes(q, off, len, op == 8), 0);
			ck_assert_int_eq(disk_write_zeroes(r, off, len, false), 0);
		} else {
			ck_assert_int_eq(disk_discard(q, off, len), 0);
			ck_assert_int_eq(disk_write_zeroes(r, off, len, false), 0);
		}
		if (i % 100 == 99)
			ck_assert_int_eq(disk_flush(q), 0);
	}
	disk_close(q);
	disk_close(r);
	free(buf);
	check_refcounts(P("o.qcow2"));
	qemu_check_clean(P("o.qcow2"));
	qemu_compare(P("o.qcow2"), P("copy.raw"));
}
END_TEST

/* A writer killed at random points leaves an image that is consistent:
 * at worst leaked clusters, never a cluster referenced but not counted,
 * or referenced twice.  Small clusters make kills land in refcount block
 * and table growth too. */
START_TEST(killed_writer_leaves_consistent_image)
{
	const char *p = P("k.qcow2");
	make_image(p, 9, 4, 16 * MIB);
	for (int round = 0; round < 8; round++) {
		pid_t pid = fork();
		ck_assert_int_ge(pid, 0);
		if (pid == 0) {
			/* No Check calls here: this process only writes until killed. */
			struct disk *d;
			if (disk_qcow2_open(p, false, &d, NULL, 0))
				_exit(1);
			static uint8_t buf[20000];
			uint64_t x = (uint64_t)round * 7919 + 1;
			for (;;) {
				x = x * 6364136223846793005ULL + 1442695040888963407ULL;
				uint64_t off = (x >> 16) % (16 * MIB - sizeof(buf));
				size_t len = 1 + (size_t)(x >> 48) % sizeof(buf);
				fill(buf, len, x);
				if (wr(d, off, buf, len))
					_exit(2);
			}
		}
		usleep(30000 + 20000 * (useconds_t)round);
		ck_assert_int_eq(kill(pid, SIGKILL), 0);
		int st;
		ck_assert_int_eq(waitpid(pid, &st, 0), pid);
		ck_assert_msg(WIFSIGNALED(st), "writer exited with %d", WEXITSTATUS(st));
		check_tables(p, true);
		struct disk *d = openq(p, false);
		uint8_t *all = malloc(d->size);
		ck_assert_int_eq(rd(d, 0, all, d->size), 0);
		free(all);
		disk_close(d);
	}
	if (have_qemu("qemu-img")) {
		char out[4096];
		char *argv[] = { "qemu-img", "check", "-f", "qcow2", (char *)p, NULL };
		int st = run(argv, out, sizeof(out));
		printf("qemu-img check (after kills) %s: %s", p, out); /* leaks, if any */
		ck_assert_msg(st == 0 || st == 3, "qemu-img check: %d %s", st, out); /* 3: leaks */
		ck_assert_ptr_null(strstr(out, "ERROR"));
	}
}
END_TEST

/* Images QEMU wrote: v2 and v3, other cluster sizes and refcount widths,
 * zero clusters, and a compressed cluster that must fail cleanly. */
START_TEST(qemu_images)
{
	if (!have_qemu("qemu-img") || !have_qemu("qemu-io"))
		return;
	static const char *opts[] = {
		"compat=0.10",
		"compat=1.1,cluster_size=4096,refcount_bits=1",
		"compat=1.1,cluster_size=2M,refcount_bits=64",
		"compat=1.1,lazy_refcounts=on",
	};
	char out[4096];
	for (size_t i = 0; i < sizeof(opts) / sizeof(opts[0]); i++) {
		const char *img = P("q.qcow2"), *raw = P("q.raw");
		unlink(img);
		char *mk[] = { "qemu-img", "create",        "-q",        "-f", "qcow2",
			       "-o",       (char *)opts[i], (char *)img, "6M", NULL };
		ck_assert_msg(run(mk, out, sizeof(out)) == 0, "%s", out);
		char *io[] = { "qemu-io",
			       "-f",
			       "qcow2",
			       "-c",
			       "write -P 0x5a 0 3M",
			       "-c",
			       "write -z 1M 64k",
			       "-c",
			       "write -P 0x17 5000 7",
			       (char *)img,
			       NULL };
		ck_assert_msg(run(io, out, sizeof(out)) == 0, "%s", out);
		uint8_t *want = calloc(1, 6 * MIB);
		memset(want, 0x5a, 3 * MIB);
		memset(want + MIB, 0, 64 * 1024);
		memset(want + 5000, 0x17, 7);
		struct disk *d = openq(img, false);
		expect_disk(d, want);
		uint8_t buf[10000];
		fill(buf, sizeof(buf), i);
		ck_assert_int_eq(wr(d, MIB + 100, buf, sizeof(buf)), 0);
		memcpy(want + MIB + 100, buf, sizeof(buf));
		ck_assert_int_eq(wr(d, 5 * MIB + 3, buf, sizeof(buf)), 0);
		memcpy(want + 5 * MIB + 3, buf, sizeof(buf));
		ck_assert_int_eq(disk_write_zeroes(d, 0, 8192, true), 0);
		memset(want, 0, 8192);
		expect_disk(d, want);
		disk_close(d);
		qemu_check_clean(img);
		make_raw(raw, 0, 0, NULL);
		int fd = open(raw, O_WRONLY);
		ck_assert_int_eq(pwrite(fd, want, 6 * MIB, 0), (ssize_t)(6 * MIB));
		close(fd);
		qemu_compare(img, raw);
		free(want);
	}
	const char *img = P("c.qcow2");
	char *mk[] = { "qemu-img", "create", "-q", "-f", "qcow2", (char *)img, "1M", NULL };
	ck_assert_msg(run(mk, out, sizeof(out)) == 0, "%s", out);
	char *io[] = {
		"qemu-io", "-f", "qcow2", "-c", "write -c -P 0x33 0 64k", (char *)img, NULL
	};
	ck_assert_msg(run(io, out, sizeof(out)) == 0, "%s", out);
	struct disk *d = openq(img, false);
	uint8_t buf[512];
	ck_assert_int_eq(rd(d, 0, buf, sizeof(buf)), -EIO);
	ck_assert_int_eq(rd(d, 65536, buf, sizeof(buf)), 0);
	disk_close(d);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("qcow2");
	TCase *tc = tcase_create("backend");
	tcase_add_unchecked_fixture(tc, runner_setup, runner_teardown);
	tcase_add_checked_fixture(tc, dir_setup, dir_teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, alloc_write_read);
	tcase_add_test(tc, backing_raw);
	tcase_add_test(tc, read_only_l2_pages);
	tcase_add_test(tc, reftable_loaded_on_first_write);
	tcase_add_test(tc, reopen_persists);
	tcase_add_test(tc, chain_qcow2_qcow2_raw);
	tcase_add_test(tc, chain_depth_limit);
	tcase_add_test(tc, zeroes_and_discard);
	tcase_add_test(tc, refcount_growth);
	tcase_add_test(tc, file_cap);
	tcase_add_test(tc, refusals);
	tcase_add_test(tc, bad_clusters_fail_requests);
	tcase_add_test(tc, create_and_probe);
	tcase_add_test(tc, explicit_format_beats_probing);
	tcase_add_test(tc, killed_writer_leaves_consistent_image);
	tcase_add_test(tc, qemu_img_agrees);
	tcase_add_test(tc, qemu_images);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN()
