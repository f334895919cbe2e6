/* Unit tests: common/io.c, the whole-buffer helpers and copy_file_sparse
 * across file systems (/dev/shm is tmpfs; the other side is $TMPDIR or
 * /var/tmp): content equal, holes kept, refusals leave nothing behind. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "io.h"
#include "unit.h"

#define MIB (1024 * 1024)

static char a[96], b[96];

static void setup(void)
{
	snprintf(a, sizeof(a), "/dev/shm/cove-io-XXXXXX");
	const char *t = getenv("TMPDIR");
	snprintf(b, sizeof(b), "%s/cove-io-XXXXXX", t && *t ? t : "/var/tmp");
	ck_assert_ptr_nonnull(mkdtemp(a));
	ck_assert_ptr_nonnull(mkdtemp(b));
}

static void teardown(void)
{
	char cmd[256];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s' '%s'", a, b);
	ck_assert_int_eq(system(cmd), 0);
}

static void fill(uint8_t *p, size_t n, uint8_t seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(seed + i * 7);
}

START_TEST(pread_pwrite_all)
{
	char path[128];
	snprintf(path, sizeof(path), "%s/f", a);
	int fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
	ck_assert_int_ge(fd, 0);
	uint8_t w[9000], r[9000];
	fill(w, sizeof(w), 3);
	ck_assert_int_eq(pwrite_all(fd, w, sizeof(w), 4096), 0);
	ck_assert_int_eq(pread_all(fd, r, sizeof(r), 4096), 0);
	ck_assert_mem_eq(r, w, sizeof(w));
	/* Past the end is an error, not a short read. */
	ck_assert_int_eq(pread_all(fd, r, sizeof(r), 8192), -EIO);
	close(fd);
	ck_assert_int_eq(pwrite_all(-1, w, 1, 0), -EBADF);
}
END_TEST

/* read_full takes what there is: all of it, the rest of a file that ends
 * early, or what a pipe's writer sent before it closed. */
START_TEST(read_full_until_end)
{
	char path[128];
	snprintf(path, sizeof(path), "%s/r", a);
	int fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
	ck_assert_int_ge(fd, 0);
	uint8_t w[5000], r[8000];
	fill(w, sizeof(w), 9);
	ck_assert_int_eq(write_all(fd, w, sizeof(w)), 0);
	ck_assert_int_eq(lseek(fd, 0, SEEK_SET), 0);
	ck_assert_int_eq(read_full(fd, r, 1000), 1000);
	ck_assert_mem_eq(r, w, 1000);
	ck_assert_int_eq(read_full(fd, r, sizeof(r)), 4000);
	ck_assert_mem_eq(r, w + 1000, 4000);
	ck_assert_int_eq(read_full(fd, r, sizeof(r)), 0);
	close(fd);

	int p[2];
	ck_assert_int_eq(pipe(p), 0);
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		/* Two writes, so the reader sees two short reads. */
		close(p[0]);
		if (write_all(p[1], w, 10) < 0)
			_exit(1);
		usleep(20000);
		_exit(write_all(p[1], w + 10, 20) < 0);
	}
	close(p[1]);
	ck_assert_int_eq(read_full(p[0], r, sizeof(r)), 30);
	ck_assert_mem_eq(r, w, 30);
	close(p[0]);
	int status;
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_int_eq(status, 0);
	ck_assert_int_eq(read_full(-1, r, 1), -EBADF);
}
END_TEST

START_TEST(copy_across_file_systems)
{
	char src[128], dst[128];
	snprintf(src, sizeof(src), "%s/disk.qcow2", a);
	snprintf(dst, sizeof(dst), "%s/disk.qcow2", b);
	int fd = open(src, O_RDWR | O_CREAT | O_EXCL, 0600);
	ck_assert_int_ge(fd, 0);
	static uint8_t d1[64 * 1024], d2[4096], back[64 * 1024];
	fill(d1, sizeof(d1), 1);
	fill(d2, sizeof(d2), 9);
	ck_assert_int_eq(pwrite_all(fd, d1, sizeof(d1), 0), 0);
	ck_assert_int_eq(pwrite_all(fd, d2, sizeof(d2), 40 * MIB), 0);
	ck_assert_int_eq(ftruncate(fd, 64 * MIB), 0);
	close(fd);
	struct stat sa, sb;
	ck_assert_int_eq(stat(src, &sa), 0);

	ck_assert_int_eq(copy_file_sparse(src, dst, 0444), 0);
	ck_assert_int_eq(stat(dst, &sb), 0);
	if (sa.st_dev == sb.st_dev)
		fprintf(stderr, "note: %s and %s share a file system here\n", a, b);
	ck_assert_int_eq(sb.st_size, 64 * MIB);
	ck_assert_int_eq(sb.st_mode & 0777, 0444);
	ck_assert_int_lt(sb.st_blocks * 512, 4 * MIB); /* holes stayed holes */
	fd = open(dst, O_RDONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pread_all(fd, back, sizeof(d1), 0), 0);
	ck_assert_mem_eq(back, d1, sizeof(d1));
	ck_assert_int_eq(pread_all(fd, back, sizeof(d2), 40 * MIB), 0);
	ck_assert_mem_eq(back, d2, sizeof(d2));
	ck_assert_int_eq(pread_all(fd, back, 4096, 20 * MIB), 0);
	for (int i = 0; i < 4096; i++)
		ck_assert_int_eq(back[i], 0);
	close(fd);
}
END_TEST

START_TEST(copy_refusals)
{
	char src[128], dst[128];
	snprintf(src, sizeof(src), "%s/src", a);
	snprintf(dst, sizeof(dst), "%s/dst", b);
	int fd = open(src, O_WRONLY | O_CREAT | O_EXCL, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write_all(fd, "abc", 3), 0);
	close(fd);
	fd = open(dst, O_WRONLY | O_CREAT | O_EXCL, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write_all(fd, "keep", 4), 0);
	close(fd);
	/* An existing destination is never overwritten. */
	ck_assert_int_eq(copy_file_sparse(src, dst, 0644), -EEXIST);
	struct stat st;
	ck_assert_int_eq(stat(dst, &st), 0);
	ck_assert_int_eq(st.st_size, 4);
	/* A directory is no file to copy, and nothing is left behind. */
	char dst2[128];
	snprintf(dst2, sizeof(dst2), "%s/dst2", b);
	ck_assert_int_eq(copy_file_sparse(a, dst2, 0644), -EINVAL);
	ck_assert_int_eq(access(dst2, F_OK), -1);
	ck_assert_int_eq(copy_file_sparse("/nonexistent", dst2, 0644), -ENOENT);
	ck_assert_int_eq(access(src, F_OK), 0);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("io");
	TCase *tc = tcase_create("core");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, pread_pwrite_all);
	tcase_add_test(tc, read_full_until_end);
	tcase_add_test(tc, copy_across_file_systems);
	tcase_add_test(tc, copy_refusals);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN()
