/* Unit tests: the template memory cache (lib/memcache.c), in a cache
 * directory on /dev/shm (a tmpfs) for a snapshot directory elsewhere. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cove.h"
#include "memcache.h"
#include "unit.h"

#define MIB (1 << 20)

static char cache[64], snap[64];

static void write_memory(const char *dir, char fill)
{
	char p[PATH_MAX], tmp[PATH_MAX];
	snprintf(p, sizeof(p), "%s/memory", dir);
	snprintf(tmp, sizeof(tmp), "%s/memory.new", dir);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, 4 * MIB), 0);
	char buf[4096];
	memset(buf, fill, sizeof(buf));
	ck_assert_int_eq(pwrite(fd, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
	ck_assert_int_eq(pwrite(fd, buf, sizeof(buf), 3 * MIB), (ssize_t)sizeof(buf));
	close(fd);
	ck_assert_int_eq(rename(tmp, p), 0); /* a new file, as a rebuild makes */
}

static void setup(void)
{
	snprintf(cache, sizeof(cache), "/dev/shm/cove-memcache-test.XXXXXX");
	snprintf(snap, sizeof(snap), "/var/tmp/cove-memcache-snap.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(cache));
	ck_assert_ptr_nonnull(mkdtemp(snap));
	setenv("COVE_MEMCACHE_DIR", cache, 1);
}

static void teardown(void)
{
	char cmd[256];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s' '%s'", cache, snap);
	ck_assert_int_eq(system(cmd), 0);
	unsetenv("COVE_MEMCACHE_DIR");
}

/* Files in the cache directory. */
static int entries(void)
{
	DIR *d = opendir(cache);
	ck_assert_ptr_nonnull(d);
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

START_TEST(copy_is_made_once_and_shared)
{
	write_memory(snap, 'a');
	char path[PATH_MAX], again[PATH_MAX], why[512];
	ck_assert_int_eq(memcache_get(snap, path, sizeof(path), why, sizeof(why)), 1);
	ck_assert(!strncmp(path, cache, strlen(cache)));
	struct stat st, st2;
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_eq(st.st_size, 4 * MIB);
	ck_assert_int_eq(st.st_mode & 0777, 0400);
	/* Holes stay holes: 2 pages of data, not 4 MiB. */
	ck_assert_int_lt(st.st_blocks * 512, 1 * MIB);
	int fd = open(path, O_RDONLY);
	char c = 0;
	ck_assert_int_eq(pread(fd, &c, 1, 3 * MIB + 17), 1);
	ck_assert_int_eq(c, 'a');
	ck_assert_int_eq(pread(fd, &c, 1, 2 * MIB), 1);
	ck_assert_int_eq(c, 0);
	close(fd);
	/* The copy and its sidecar, nothing else. */
	ck_assert_int_eq(entries(), 2);
	ck_assert_int_eq(memcache_get(snap, again, sizeof(again), why, sizeof(why)), 1);
	ck_assert_str_eq(again, path);
	ck_assert_int_eq(stat(again, &st2), 0);
	ck_assert_uint_eq(st2.st_ino, st.st_ino);
}
END_TEST

/* A rebuilt template's memory gets a new copy, and the old one goes; a
 * removed template's copy goes at the next prune. */
START_TEST(changed_or_removed_originals_are_pruned)
{
	write_memory(snap, 'a');
	char first[PATH_MAX], second[PATH_MAX], why[512];
	ck_assert_int_eq(memcache_get(snap, first, sizeof(first), why, sizeof(why)), 1);
	write_memory(snap, 'b');
	ck_assert_int_eq(memcache_get(snap, second, sizeof(second), why, sizeof(why)), 1);
	ck_assert_str_ne(first, second);
	ck_assert_int_eq(access(first, F_OK), -1);
	ck_assert_int_eq(errno, ENOENT);
	int fd = open(second, O_RDONLY);
	char c = 0;
	ck_assert_int_eq(pread(fd, &c, 1, 5), 1);
	ck_assert_int_eq(c, 'b');
	close(fd);
	ck_assert_int_eq(entries(), 2);
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/memory", snap);
	ck_assert_int_eq(unlink(p), 0);
	cove_memcache_prune();
	ck_assert_int_eq(entries(), 0);
}
END_TEST

/* Off, not a tmpfs, or no memory file: no copy, a reason, and the restore
 * maps the original. */
START_TEST(no_cache_means_the_original)
{
	char path[PATH_MAX], why[512] = "";
	ck_assert_int_eq(memcache_get(snap, path, sizeof(path), why, sizeof(why)), 0);
	ck_assert_ptr_nonnull(strstr(why, "no memory file"));
	ck_assert_str_eq(path, "");
	write_memory(snap, 'a');
	setenv("COVE_MEMCACHE_DIR", "off", 1);
	ck_assert_int_eq(memcache_get(snap, path, sizeof(path), why, sizeof(why)), 0);
	ck_assert_ptr_nonnull(strstr(why, "off"));
	setenv("COVE_MEMCACHE_DIR", snap, 1); /* on /var/tmp */
	int r = memcache_get(snap, path, sizeof(path), why, sizeof(why));
	ck_assert_int_eq(r, 0);
	ck_assert_str_eq(path, "");
	ck_assert_int_eq(entries(), 0);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("memcache");
	TCase *tc = tcase_create("memcache");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, copy_is_made_once_and_shared);
	tcase_add_test(tc, changed_or_removed_originals_are_pruned);
	tcase_add_test(tc, no_cache_means_the_original);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN()
