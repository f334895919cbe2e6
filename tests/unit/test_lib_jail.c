/* Unit tests: lib/jail.c's directory fd for a jailed process
 * (jail_dirfd_beneath): ".." from it is the directory itself, so a
 * process holding it cannot climb to the host's "/"; files are made and
 * renamed under it as before.  Needs root (open_tree). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/base/jail.h"
#include "unit.h"

START_TEST(dirfd_beneath)
{
	if (geteuid() != 0)
		return; /* open_tree needs CAP_SYS_ADMIN */
	char base[] = "/tmp/cove-jail-XXXXXX", sub[64], secret[64];
	ck_assert_ptr_nonnull(mkdtemp(base));
	snprintf(sub, sizeof(sub), "%s/snap", base);
	snprintf(secret, sizeof(secret), "%s/secret", base);
	ck_assert_int_eq(mkdir(sub, 0700), 0);
	int s = open(secret, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	ck_assert_int_ge(s, 0);
	close(s);
	int dfd = open(sub, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_ge(dfd, 0);
	/* The plain fd walks out: the hole this closes. */
	ck_assert_int_eq(faccessat(dfd, "../secret", F_OK, 0), 0);
	int fd = jail_dirfd_beneath(dfd);
	ck_assert_int_ge(fd, 0);
	struct stat self, up, root;
	ck_assert_int_eq(fstat(fd, &self), 0);
	ck_assert_int_eq(fstatat(fd, "..", &up, 0), 0);
	ck_assert_int_eq(fstatat(fd, "../../../../..", &root, 0), 0);
	ck_assert(self.st_ino == up.st_ino && self.st_dev == up.st_dev);
	ck_assert(self.st_ino == root.st_ino);
	ck_assert_int_eq(faccessat(fd, "../secret", F_OK, 0), -1);
	ck_assert_int_eq(errno, ENOENT);
	/* A snapshot's files are made, renamed and seen from outside. */
	int m = openat(fd, "memory", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	ck_assert_int_ge(m, 0);
	ck_assert_int_eq(write(m, "x", 1), 1);
	close(m);
	ck_assert_int_eq(renameat(fd, "memory", fd, "memory.done"), 0);
	ck_assert_int_eq(faccessat(dfd, "memory.done", F_OK, 0), 0);
	/* Into it from another mount: EXDEV (freeze_disk_into copies then). */
	ck_assert_int_eq(renameat(AT_FDCWD, secret, fd, "disk0.img"), -1);
	ck_assert_int_eq(errno, EXDEV);
	close(fd);
	ck_assert_int_eq(jail_dirfd_beneath(-1), -EBADF);
	ck_assert_int_eq(unlinkat(dfd, "memory.done", 0), 0);
	close(dfd);
	ck_assert_int_eq(rmdir(sub), 0);
	ck_assert_int_eq(unlink(secret), 0);
	ck_assert_int_eq(rmdir(base), 0);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("lib_jail");
	TCase *t = tcase_create("jail");
	tcase_add_test(t, dirfd_beneath);
	suite_add_tcase(s, t);
	return s;
}

UNIT_MAIN()
