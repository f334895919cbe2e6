/* The template memory cache: a copy of a template's memory file on a tmpfs
 * mounted with huge=within_size, which cove-vmm maps instead of the
 * original (--restore-memory).  The copy's page cache is made of 2 MiB
 * pages, so the restore's MAP_PRIVATE mapping (2 MiB aligned, see
 * vmm/base/guest_mem.c) is mapped by the host in 2 MiB steps and KVM maps
 * the guest's RAM the same way: a restored guest takes one nested page
 * fault per 2 MiB it reads instead of one per 4 KiB page (pages it writes
 * are still copied one by one).  Every restore of the template shares the
 * one copy, as they shared the original's page cache.
 *
 * Entries are named by the original's device, inode, size and change time,
 * so a rebuilt template (a new memory file) gets a new copy; each entry's
 * sidecar NAME.src holds the original's path, and entries whose original
 * is gone or changed are removed whenever a copy is made
 * (cove_memcache_prune).  A mapped copy that is removed lives on until the last
 * VMM mapping it exits.
 *
 * The cache is a speed-up only: whatever goes wrong (not root, no tmpfs,
 * full, locked too long), the restore maps the template's own file. */
#include "memcache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/magic.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "cove.h"
#include "io.h"

#define MEMCACHE_DEFAULT   "/run/cove-memcache"
#define MEMCACHE_LOCK_MS   30000 /* a waiter past this maps the original */
#define MEMCACHE_MOUNT_OPT "mode=0700,huge=within_size,size=50%"
#define MEMORY_FILE        "memory" /* vmm/snapshot/snapshot.h */

/* The cache directory, or NULL when there is none: COVE_MEMCACHE_DIR
 * ("off" for none; a directory the operator made, used as it is), else
 * MEMCACHE_DEFAULT for root only.  *managed: ours to mount. */
static const char *cache_dir(bool *managed)
{
	const char *d = getenv("COVE_MEMCACHE_DIR");
	*managed = false;
	if (d && (!strcmp(d, "off") || !*d))
		return NULL;
	if (d)
		return d;
	if (geteuid() != 0)
		return NULL;
	*managed = true;
	return MEMCACHE_DEFAULT;
}

/* Mounts the default cache's tmpfs once per host boot.  Serialized by a
 * lock beside it, so two first users do not stack two mounts. */
static int mount_default(const char *dir, char *why, size_t whylen)
{
	int lk = open(MEMCACHE_DEFAULT ".lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (lk < 0 || flock_wait(lk, LOCK_EX, MEMCACHE_LOCK_MS) < 0) {
		snprintf(why, whylen, "cannot lock %s.lock: %s", dir, strerror(errno));
		if (lk >= 0)
			close(lk);
		return -1;
	}
	int r = 0;
	struct stat st, parent;
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		r = -errno;
	if (r == 0 && (lstat(dir, &st) < 0 || stat("/run", &parent) < 0))
		r = -errno;
	if (r == 0 && (!S_ISDIR(st.st_mode) || st.st_uid != 0 || (st.st_mode & 077)))
		r = -EPERM;
	/* A mount point already (a device of its own): mounted before. */
	if (r == 0 && st.st_dev == parent.st_dev &&
	    mount("cove-memcache", dir, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
	          MEMCACHE_MOUNT_OPT) < 0)
		r = -errno;
	if (r < 0)
		snprintf(why, whylen, "cannot mount a tmpfs with huge pages on %s: %s", dir,
		         strerror(-r));
	close(lk);
	return r;
}

int memcache_prepare(char *why, size_t whylen)
{
	bool managed;
	const char *dir = cache_dir(&managed);
	if (!dir) {
		snprintf(why, whylen, "off (not root, or COVE_MEMCACHE_DIR=off)");
		return 0;
	}
	/* The default cache is mounted once per boot: after this process saw
	 * it mounted, a restore does not check again (a cache unmounted since
	 * costs only the copy: cove-vmm then maps the original). */
	static atomic_bool mounted;
	if (managed && atomic_load(&mounted))
		return 1;
	if (managed && mount_default(dir, why, whylen) < 0)
		return 0;
	struct statfs sf;
	if (statfs(dir, &sf) < 0 || sf.f_type != TMPFS_MAGIC) {
		snprintf(why, whylen, "%s is not a tmpfs", dir);
		return 0;
	}
	if (managed)
		atomic_store(&mounted, true);
	return 1;
}

/* NAME of the copy of the file st describes. */
static void entry_name(const struct stat *st, char name[MEMCACHE_NAME_MAX])
{
	snprintf(name, MEMCACHE_NAME_MAX, "m-%" PRIx64 "-%" PRIx64 "-%" PRIx64 "-%" PRIx64 "-%lx",
	         (uint64_t)st->st_dev, (uint64_t)st->st_ino, (uint64_t)st->st_size,
	         (uint64_t)st->st_ctim.tv_sec, (unsigned long)st->st_ctim.tv_nsec);
}

/* Removes the entries (and sidecars) whose original is gone or changed.
 * The caller holds the directory's lock. */
static void prune_locked(int dfd)
{
	DIR *d = opendir_dup(dfd);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d))) {
		size_t n = strlen(e->d_name);
		if (strncmp(e->d_name, "m-", 2) || n < 5 || n >= MEMCACHE_NAME_MAX ||
		    strcmp(e->d_name + n - 4, ".src"))
			continue;
		char entry[MEMCACHE_NAME_MAX], src[PATH_MAX], want[MEMCACHE_NAME_MAX];
		memcpy(entry, e->d_name, n - 4);
		entry[n - 4] = 0;
		bool keep = false;
		int sfd = openat(dfd, e->d_name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		ssize_t k = sfd >= 0 ? read_full(sfd, src, sizeof(src) - 1) : -1;
		if (sfd >= 0)
			close(sfd);
		struct stat st;
		if (k > 0) {
			src[k] = 0;
			if (stat(src, &st) == 0) {
				entry_name(&st, want);
				keep = !strcmp(want, entry);
			}
		}
		if (!keep) {
			unlinkat(dfd, entry, 0);
			unlinkat(dfd, e->d_name, 0);
		}
	}
	closedir(d);
}

/* Opens and locks the cache directory; -1 when there is none. */
static int open_locked(const char *dir)
{
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0 && flock_wait(dfd, LOCK_EX, MEMCACHE_LOCK_MS) < 0) {
		close(dfd);
		return -1;
	}
	return dfd;
}

void cove_memcache_prune(void)
{
	bool managed;
	const char *dir = cache_dir(&managed);
	int dfd = dir ? open_locked(dir) : -1;
	if (dfd < 0)
		return;
	prune_locked(dfd);
	close(dfd);
}

int memcache_get(const char *snapshot_dir, char *out, size_t outlen, char *why, size_t whylen)
{
	*out = 0;
	if (memcache_prepare(why, whylen) != 1)
		return 0;
	bool managed;
	const char *dir = cache_dir(&managed);
	/* cove_restore passes a resolved path already. */
	char src[PATH_MAX],
	    *abs = snapshot_dir[0] == '/' ? strdup(snapshot_dir) : realpath(snapshot_dir, NULL);
	int n = abs ? snprintf(src, sizeof(src), "%s/%s", abs, MEMORY_FILE) : -1;
	free(abs);
	struct stat st, cs;
	if (n < 0 || (size_t)n >= sizeof(src) || stat(src, &st) < 0 || !S_ISREG(st.st_mode)) {
		snprintf(why, whylen, "no memory file in %s", snapshot_dir);
		return 0;
	}
	if (stat(dir, &cs) == 0 && cs.st_dev == st.st_dev) {
		snprintf(why, whylen, "the snapshot is on the cache's file system already");
		return 0;
	}
	char name[MEMCACHE_NAME_MAX], tmp[MEMCACHE_NAME_MAX + 8], side[MEMCACHE_NAME_MAX + 8];
	entry_name(&st, name);
	if (snprintf(out, outlen, "%s/%s", dir, name) >= (int)outlen) {
		*out = 0;
		snprintf(why, whylen, "the cache's path is too long");
		return 0;
	}
	int dfd = open_locked(dir);
	if (dfd < 0) {
		*out = 0;
		snprintf(why, whylen, "cannot lock %s", dir);
		return 0;
	}
	struct stat have;
	int r = 0;
	if (fstatat(dfd, name, &have, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(have.st_mode) &&
	    have.st_size == st.st_size)
		goto done; /* a hit */
	prune_locked(dfd);
	snprintf(tmp, sizeof(tmp), "%s.tmp", name);
	snprintf(side, sizeof(side), "%s.src", name);
	unlinkat(dfd, tmp, 0);
	unlinkat(dfd, side, 0);
	/* The sidecar first: a copy is never without one (prune finds both). */
	int sfd = openat(dfd, side, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (sfd < 0)
		r = -errno;
	else {
		r = write_all(sfd, src, strlen(src));
		close(sfd);
	}
	if (r == 0)
		r = copy_file_sparse_at(AT_FDCWD, src, dfd, tmp, 0400);
	if (r == 0 && renameat(dfd, tmp, dfd, name) < 0)
		r = -errno;
	if (r < 0) {
		unlinkat(dfd, tmp, 0);
		unlinkat(dfd, side, 0);
		snprintf(why, whylen, "cannot copy %s into %s: %s", src, dir, strerror(-r));
		*out = 0;
	}
done:
	close(dfd);
	return r == 0;
}
