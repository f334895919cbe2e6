/* Unit tests: the template memory cache (lib/memcache.c), in a cache
 * directory on /dev/shm (a tmpfs) for a snapshot directory elsewhere. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cove.h"
#include "lib/vmm/memcache.h"
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

/* Snapshot directory K (made under snap) with a memory file of mib MiB of
 * data; its path into dir. */
static void make_snapshot(int k, int mib, char *dir, size_t len)
{
	snprintf(dir, len, "%s/s%d", snap, k);
	ck_assert_int_eq(mkdir(dir, 0700), 0);
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/memory", dir);
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	ck_assert_int_ge(fd, 0);
	static char buf[MIB];
	memset(buf, 'a' + k, sizeof(buf));
	for (int i = 0; i < mib; i++)
		ck_assert_int_eq(write(fd, buf, sizeof(buf)), (ssize_t)sizeof(buf));
	close(fd);
}

static bool cached(const char *path)
{
	return access(path, F_OK) == 0;
}

/* Holds a copy as a running cove-vmm does: open, with a shared flock. */
static int hold(const char *path)
{
	int fd = open(path, O_RDONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(flock(fd, LOCK_SH | LOCK_NB), 0);
	return fd;
}

/* Under COVE_MEMCACHE_MAX_MIB a new copy evicts the least recently used
 * entries (a hit counts as a use), never one a VMM holds; when all that
 * is left is held, the restore maps the original. */
START_TEST(full_cache_evicts_the_least_recently_used)
{
	char d[5][PATH_MAX], c[5][PATH_MAX], again[PATH_MAX], why[512];
	for (int k = 0; k < 5; k++)
		make_snapshot(k, 2, d[k], sizeof(d[k]));
	setenv("COVE_MEMCACHE_MAX_MIB", "7", 1);
	for (int k = 0; k < 3; k++)
		ck_assert_int_eq(memcache_get(d[k], c[k], sizeof(c[k]), why, sizeof(why)), 1);
	/* A hit: 0 is now the most recently used, 1 the least. */
	ck_assert_int_eq(memcache_get(d[0], again, sizeof(again), why, sizeof(why)), 1);
	ck_assert_str_eq(again, c[0]);
	ck_assert_int_eq(memcache_get(d[3], c[3], sizeof(c[3]), why, sizeof(why)), 1);
	ck_assert(!cached(c[1]));
	ck_assert(cached(c[0]) && cached(c[2]) && cached(c[3]));
	ck_assert_int_eq(entries(), 6);
	/* 2 is the least recently used now, but a VMM maps it: 0 goes. */
	int h2 = hold(c[2]);
	ck_assert_int_eq(memcache_get(d[1], c[1], sizeof(c[1]), why, sizeof(why)), 1);
	ck_assert(!cached(c[0]));
	ck_assert(cached(c[1]) && cached(c[2]) && cached(c[3]));
	/* Everything held: no room, no copy, the reason says so. */
	int h1 = hold(c[1]), h3 = hold(c[3]);
	char path[PATH_MAX];
	ck_assert_int_eq(memcache_get(d[4], path, sizeof(path), why, sizeof(why)), 0);
	ck_assert_str_eq(path, "");
	ck_assert_ptr_nonnull(strstr(why, "the cache is full"));
	ck_assert(cached(c[1]) && cached(c[2]) && cached(c[3]));
	ck_assert_int_eq(entries(), 6);
	/* Once one is let go, it makes room. */
	close(h3);
	ck_assert_int_eq(memcache_get(d[4], c[4], sizeof(c[4]), why, sizeof(why)), 1);
	ck_assert(!cached(c[3]) && cached(c[4]));
	close(h1);
	close(h2);
	/* A copy larger than the cap is never made. */
	setenv("COVE_MEMCACHE_MAX_MIB", "1", 1);
	ck_assert_int_eq(memcache_get(d[0], path, sizeof(path), why, sizeof(why)), 0);
	ck_assert_ptr_nonnull(strstr(why, "over COVE_MEMCACHE_MAX_MIB"));
	unsetenv("COVE_MEMCACHE_MAX_MIB");
}
END_TEST

START_TEST(bad_cap_is_named)
{
	write_memory(snap, 'a');
	char path[PATH_MAX], why[512] = "";
	setenv("COVE_MEMCACHE_MAX_MIB", "lots", 1);
	ck_assert_int_eq(memcache_get(snap, path, sizeof(path), why, sizeof(why)), 0);
	ck_assert_ptr_nonnull(strstr(why, "COVE_MEMCACHE_MAX_MIB must be a whole number of MiB"));
	ck_assert_int_eq(entries(), 0);
	unsetenv("COVE_MEMCACHE_MAX_MIB");
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
	tcase_add_test(tc, full_cache_evicts_the_least_recently_used);
	tcase_add_test(tc, bad_cap_is_named);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN()
