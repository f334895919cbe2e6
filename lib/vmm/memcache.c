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
 * The cache is bounded: a copy that would not fit (under
 * COVE_MEMCACHE_MAX_MIB, when it is set, and with MEMCACHE_HEADROOM left
 * free on the file system) first evicts the least recently used entries
 * that no VMM maps.  A hit stamps the sidecar's mtime (its last use); a
 * cove-vmm holds a shared flock on the copy it maps for its whole life
 * (vmm/snapshot/restore.c), so an entry whose exclusive flock is refused
 * is in use and stays.  When what is left is all in use, the restore maps
 * the original.
 *
 * The cache is a speed-up only: whatever goes wrong (not root, no tmpfs,
 * full, locked too long), the restore maps the template's own file. */
#include "lib/vmm/memcache.h"

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
#include <time.h>
#include <unistd.h>

#include "io.h"

#define MEMCACHE_DEFAULT   "/run/cove-memcache"
#define MEMCACHE_LOCK_MS   30000 /* a waiter past this maps the original */
#define MEMCACHE_MOUNT_OPT "mode=0700,huge=within_size,size=50%"
#define MEMORY_FILE        "memory"      /* vmm/snapshot/snapshot.h */
#define MEMCACHE_HEADROOM  (64ULL << 20) /* left free on the file system after a copy */
#define MEMCACHE_SCAN_MAX  1024          /* entries an eviction considers */
#define HUGE_PAGE          (2ULL << 20)

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

/* Whether the entry name of length len ends in sfx (".src", ".tmp"). */
static bool has_suffix(const char *name, size_t len, const char *sfx)
{
	size_t k = strlen(sfx);
	return len > k && !strcmp(name + len - k, sfx);
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
		if (strncmp(e->d_name, "m-", 2) || n >= MEMCACHE_NAME_MAX ||
		    !has_suffix(e->d_name, n, ".src"))
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

/* COVE_MEMCACHE_MAX_MIB in bytes (UINT64_MAX when unset); 0 with why
 * filled when it is not a whole number of MiB. */
static uint64_t cache_cap(char *why, size_t whylen)
{
	const char *v = getenv("COVE_MEMCACHE_MAX_MIB");
	if (!v || !*v)
		return UINT64_MAX;
	char *end;
	errno = 0;
	unsigned long long mib = strtoull(v, &end, 10);
	if (errno || *end || v[0] == '-' || mib > (UINT64_MAX >> 20)) {
		snprintf(why, whylen,
		         "COVE_MEMCACHE_MAX_MIB must be a whole number of MiB, got '%s'", v);
		return 0;
	}
	return (uint64_t)mib << 20;
}

/* Whether a VMM maps the copy NAME: each holds a shared flock on its copy,
 * so an exclusive one is refused. */
static bool entry_in_use(int dfd, const char *name)
{
	int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return false;
	bool busy = flock(fd, LOCK_EX | LOCK_NB) < 0;
	close(fd); /* and our lock with it */
	return busy;
}

/* Whether a copy of need bytes fits beside used bytes of copies under cap,
 * with the headroom left of the file system's avail. */
static bool room_for(uint64_t need, uint64_t used, uint64_t cap, uint64_t avail)
{
	return need <= cap && used <= cap - need &&
	       (avail == UINT64_MAX || need + MEMCACHE_HEADROOM <= avail);
}

/* Stamps the sidecar SIDE with now, to the nanosecond (file times are
 * only as fine as the kernel's tick): its entry's last use. */
static void stamp_use(int dfd, const char *side)
{
	struct timespec t[2];
	clock_gettime(CLOCK_REALTIME, &t[0]);
	t[1] = t[0];
	(void)utimensat(dfd, side, t, AT_SYMLINK_NOFOLLOW);
}

struct entry_use {
	char name[MEMCACHE_NAME_MAX];
	struct timespec used; /* the sidecar's mtime: the last restore that took it */
	uint64_t bytes;       /* what the copy holds on the file system */
};

static int by_last_use(const void *a, const void *b)
{
	const struct timespec *x = &((const struct entry_use *)a)->used;
	const struct timespec *y = &((const struct entry_use *)b)->used;
	if (x->tv_sec != y->tv_sec)
		return x->tv_sec < y->tv_sec ? -1 : 1;
	if (x->tv_nsec != y->tv_nsec)
		return x->tv_nsec < y->tv_nsec ? -1 : 1;
	return strcmp(((const struct entry_use *)a)->name, ((const struct entry_use *)b)->name);
}

/* Makes room for a copy of need bytes under cap: evicts the least recently
 * used entries no VMM maps (and any half-made copy, which under the lock
 * is a dead one's).  0, or -ENOSPC with why filled when what is left is in
 * use.  The caller holds the directory's lock. */
static int make_room(int dfd, uint64_t need, uint64_t cap, char *why, size_t whylen)
{
	DIR *d = opendir_dup(dfd);
	if (!d)
		return 0; /* the copy finds out */
	struct entry_use *e = calloc(MEMCACHE_SCAN_MAX, sizeof(*e));
	if (!e) {
		closedir(d);
		return 0;
	}
	size_t n = 0;
	uint64_t used = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		size_t len = strlen(de->d_name);
		if (strncmp(de->d_name, "m-", 2) || len >= MEMCACHE_NAME_MAX - 4)
			continue;
		if (has_suffix(de->d_name, len, ".tmp")) {
			unlinkat(dfd, de->d_name, 0);
			continue;
		}
		struct stat st, side;
		char sname[MEMCACHE_NAME_MAX];
		if (has_suffix(de->d_name, len, ".src") ||
		    fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
			continue;
		used += (uint64_t)st.st_blocks * 512;
		snprintf(sname, sizeof(sname), "%s.src", de->d_name);
		if (n == MEMCACHE_SCAN_MAX || fstatat(dfd, sname, &side, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		snprintf(e[n].name, sizeof(e[n].name), "%s", de->d_name);
		e[n].used = side.st_mtim;
		e[n].bytes = (uint64_t)st.st_blocks * 512;
		n++;
	}
	closedir(d);
	struct statfs sf;
	uint64_t avail = fstatfs(dfd, &sf) == 0 ? (uint64_t)sf.f_bavail * sf.f_bsize : UINT64_MAX;
	qsort(e, n, sizeof(*e), by_last_use);
	uint64_t busy = 0;
	for (size_t i = 0; i < n; i++) {
		if (room_for(need, used, cap, avail))
			break;
		if (entry_in_use(dfd, e[i].name)) {
			busy += e[i].bytes;
			continue;
		}
		char sname[MEMCACHE_NAME_MAX];
		snprintf(sname, sizeof(sname), "%s.src", e[i].name);
		if (unlinkat(dfd, e[i].name, 0) == 0) {
			used -= e[i].bytes; /* counted in used by the walk */
			if (avail != UINT64_MAX)
				avail += e[i].bytes;
		}
		unlinkat(dfd, sname, 0);
	}
	free(e);
	if (room_for(need, used, cap, avail))
		return 0;
	if (need > cap)
		snprintf(why, whylen, "a copy needs %llu MiB, over COVE_MEMCACHE_MAX_MIB",
		         (unsigned long long)(need >> 20));
	else
		snprintf(why, whylen,
		         "the cache is full: a copy needs %llu MiB, %llu MiB are held by running "
		         "sandboxes",
		         (unsigned long long)(need >> 20), (unsigned long long)(busy >> 20));
	return -ENOSPC;
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
	uint64_t cap = cache_cap(why, whylen);
	if (!cap) {
		*out = 0;
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
	snprintf(tmp, sizeof(tmp), "%s.tmp", name);
	snprintf(side, sizeof(side), "%s.src", name);
	if (fstatat(dfd, name, &have, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(have.st_mode) &&
	    have.st_size == st.st_size) {
		stamp_use(dfd, side); /* a hit: its last use, for eviction */
		goto done;
	}
	prune_locked(dfd);
	/* What the copy will hold: the original's data, in huge pages. */
	uint64_t need = ((uint64_t)st.st_blocks * 512 + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
	r = make_room(dfd, need, cap, why, whylen);
	if (r < 0) {
		*out = 0;
		close(dfd);
		return 0;
	}
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
	if (r == 0)
		stamp_use(dfd, side);
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
