/* libcove's side of the jail (jail.h). */
#include "lib/base/jail.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "errf.h"
#include "io.h"
#include "lib/base/cgroup.h"
#include "lib/base/registry.h"

/* $COVE_JAIL_IDS, or the default range. */
static int id_range(uint32_t *first, uint32_t *count, char *err, size_t errlen)
{
	*first = JAIL_IDS_FIRST;
	*count = JAIL_IDS_COUNT;
	const char *v = getenv("COVE_JAIL_IDS");
	if (!v || !*v)
		return 0;
	char *end;
	errno = 0;
	unsigned long long a = strtoull(v, &end, 10), b;
	if (errno || end == v || *end != '-')
		goto bad;
	const char *s = end + 1;
	b = strtoull(s, &end, 10);
	if (errno || end == s || *end || a == 0 || b < a || b >= 0xffffffffULL)
		goto bad;
	*first = (uint32_t)a;
	*count = (uint32_t)(b - a + 1);
	return 0;
bad:
	return errf(err, errlen, -EINVAL,
	            "COVE_JAIL_IDS must be FIRST-LAST, ids from 1 to 4294967294, got '%s'", v);
}

static uint32_t name_hash(const char *s)
{
	uint32_t h = 2166136261u; /* FNV-1a */
	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 16777619u;
	return h;
}

int jail_claim_uid(const char *sbdir, const char *name, uid_t *out, char *claim, size_t claimlen,
                   char *err, size_t errlen)
{
	uint32_t first, count;
	int r = id_range(&first, &count, err, errlen);
	if (r < 0)
		return r;
	char base[REGISTRY_DIR_MAX], ids[REGISTRY_DIR_MAX + 8];
	snprintf(base, sizeof(base), "%s", sbdir);
	char *slash = strrchr(base, '/');
	if (!slash)
		return errf(err, errlen, -EINVAL, "bad sandbox directory %s", sbdir);
	*slash = 0;
	(void)!snprintf(ids, sizeof(ids), "%s/.ids", base);
	if (mkdir(ids, 0700) < 0 && errno != EEXIST)
		return errf(err, errlen, -errno, "cannot create %s: %s", ids, strerror(errno));
	uint32_t start = name_hash(name) % count;
	uint32_t tries = count < 4096 ? count : 4096;
	for (uint32_t i = 0; i < tries; i++) {
		uint32_t uid = first + (start + i) % count;
		char p[sizeof(ids) + 12];
		(void)!snprintf(p, sizeof(p), "%s/%u", ids, uid);
		for (int again = 0; again < 2; again++) {
			int fd =
			    open(p, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
			if (fd >= 0) {
				r = write_all(fd, name, strlen(name));
				close(fd);
				if (r < 0) {
					unlink(p);
					return errf(err, errlen, r, "cannot write %s: %s", p,
					            strerror(-r));
				}
				*out = uid;
				snprintf(claim, claimlen, "%s", p);
				return 0;
			}
			if (errno != EEXIST)
				return errf(err, errlen, -errno, "cannot create %s: %s", p,
				            strerror(errno));
			char owner[REGISTRY_NAME_MAX + 2] = "", dir[REGISTRY_DIR_MAX + 40];
			fd = open(p, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
			if (fd >= 0) {
				ssize_t n = read(fd, owner, sizeof(owner) - 1);
				close(fd);
				owner[n > 0 ? n : 0] = 0;
			}
			(void)!snprintf(dir, sizeof(dir), "%s/%s", base, owner);
			struct stat st;
			/* A pool member's (lib/vmm/pool.c) is ".pool-XXXXXX" until it is
			 * taken, then its sandbox's. */
			bool named = registry_name_valid(owner) || (!strncmp(owner, ".pool-", 6) &&
			                                            registry_name_valid(owner + 1));
			if (owner[0] && named && stat(dir, &st) == 0)
				break; /* in use: the next uid */
			unlink(p);     /* stale: its sandbox is gone */
		}
	}
	return errf(err, errlen, -EUSERS, "no free uid in the jail range %u-%u", first,
	            first + count - 1);
}

int jail_prepare(struct sandbox_jail *j, const char *dir, const char *name, const char *root,
                 const struct cgroup_limits *l, char *err, size_t errlen)
{
	int r;
	/* For measuring what the jail costs (cove bench, docs/benchmarks.md):
	 * no namespaces, pivot_root, uid or cgroup. */
	const char *off = getenv("COVE_NO_JAIL");
	if (off && !strcmp(off, "1")) {
		snprintf(j->note, sizeof(j->note), "COVE_NO_JAIL=1: no namespaces, uid or cgroup");
		return 0;
	}
	j->namespaces = true;
	j->userns = geteuid() != 0;
	j->ids = !j->userns;
	if (j->ids) {
		if ((r = jail_claim_uid(dir, name, &j->uid, j->claim, sizeof(j->claim), err,
		                        errlen)) < 0)
			return r;
		if (chown(root, j->uid, j->uid) < 0)
			return errf(err, errlen, -errno, "cannot give %s to uid %u: %s", root,
			            (unsigned)j->uid, strerror(errno));
	}
	r = cgroup_create(name, l, &j->cgroup_fd, j->cgroup, sizeof(j->cgroup), j->note,
	                  sizeof(j->note), err, errlen);
	return r < 0 ? r : 0;
}

void jail_without_namespaces(struct sandbox_jail *j, int why)
{
	j->namespaces = j->userns = false;
	size_t n = strlen(j->note);
	snprintf(j->note + n, sizeof(j->note) - n,
	         "%sno user namespace for uid %u (%s): no namespaces or pivot_root, only "
	         "seccomp and no_new_privs",
	         n ? "; " : "", (unsigned)geteuid(), strerror(why));
}

void jail_describe(const struct sandbox_jail *j, char *out, size_t len)
{
	char ids[48] = "";
	if (j->ids)
		snprintf(ids, sizeof(ids), ", uid/gid %u", (unsigned)j->uid);
	snprintf(out, len, "confinement: %s%s%s, seccomp, no capabilities, no_new_privs%s%s",
	         j->namespaces ? "namespaces pid mnt ipc uts net, pivot_root" : "no namespaces",
	         j->userns ? ", user namespace" : "", ids, j->cgroup[0] ? ", cgroup " : "",
	         j->cgroup[0] ? j->cgroup : "");
	if (j->note[0]) {
		size_t n = strlen(out);
		snprintf(out + n, len - n, "; %s", j->note);
	}
}

int jail_give(const struct sandbox_jail *j, const char *path)
{
	if (!j->ids)
		return 0;
	return lchown(path, j->uid, j->uid) < 0 ? -errno : 0;
}

void jail_release(struct sandbox_jail *j)
{
	if (j->cgroup_fd >= 0)
		close(j->cgroup_fd);
	j->cgroup_fd = -1;
	cgroup_remove(j->cgroup);
	j->cgroup[0] = 0;
	if (j->claim[0])
		unlink(j->claim);
	j->claim[0] = 0;
}

int jail_userns_probe(void)
{
	pid_t pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0)
		_exit(unshare(CLONE_NEWUSER) == 0 ? 0 : errno & 0x7f);
	int st;
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		return -ECHILD;
	return -WEXITSTATUS(st);
}

void jail_release_named(const char *dir, const char *name)
{
	char base[REGISTRY_DIR_MAX], ids[REGISTRY_DIR_MAX + 8];
	snprintf(base, sizeof(base), "%s", dir);
	char *slash = strrchr(base, '/');
	if (!slash)
		return;
	*slash = 0;
	(void)!snprintf(ids, sizeof(ids), "%s/.ids", base);
	int dfd = open(ids, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return;
	DIR *d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return;
	}
	size_t len = strlen(name);
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char owner[REGISTRY_NAME_MAX + 2] = "";
		int fd = openat(dfd, e->d_name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			continue;
		ssize_t n = read(fd, owner, sizeof(owner) - 1);
		close(fd);
		if (n == (ssize_t)len && !memcmp(owner, name, len))
			(void)unlinkat(dfd, e->d_name, 0);
	}
	closedir(d);
}

int cove_confinement(char *out, size_t len)
{
	if (geteuid() == 0) {
		uint32_t first, count;
		char err[160];
		if (id_range(&first, &count, err, sizeof(err)) < 0) {
			snprintf(out, len, "%s", err);
			return -EINVAL;
		}
		snprintf(out, len,
		         "namespaces pid mnt ipc uts net, pivot_root, a uid per sandbox from "
		         "%u-%u, seccomp, no capabilities, no_new_privs",
		         first, first + count - 1);
		return 0;
	}
	int r = jail_userns_probe();
	if (r == 0) {
		snprintf(out, len,
		         "namespaces user pid mnt ipc uts net, pivot_root, seccomp, no "
		         "capabilities, no_new_privs (uid %u mapped to 0 inside)",
		         (unsigned)geteuid());
		return 0;
	}
	snprintf(out, len,
	         "seccomp and no_new_privs only: no user namespace for uid %u (%s), so no "
	         "namespaces or pivot_root",
	         (unsigned)geteuid(), strerror(-r));
	return 1;
}

int jail_dirfd_beneath(int dfd)
{
	int tree = open_tree(dfd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH);
	if (tree < 0)
		return -errno;
	int fd = openat(tree, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int e = fd < 0 ? -errno : 0;
	close(tree);
	return fd < 0 ? e : fd;
}
