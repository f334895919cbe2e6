/* A sandbox's cgroup v2 (cgroup.h). */
#include "lib/base/cgroup.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "errf.h"
#include "io.h"

static const char *const controllers[] = { "cpu", "memory", "pids" };

int cgroup_mount(char *mnt, size_t len)
{
	FILE *f = fopen("/proc/self/mounts", "re");
	if (!f)
		return -errno;
	char dev[256], dir[4096], type[64];
	int r = -ENOENT;
	while (fscanf(f, "%255s %4095s %63s %*[^\n]", dev, dir, type) == 3) {
		if (!strcmp(type, "cgroup2")) {
			r = (size_t)snprintf(mnt, len, "%s", dir) < len ? 0 : -ENAMETOOLONG;
			break;
		}
	}
	fclose(f);
	return r;
}

/* The caller's own cgroup ("0::/path" in /proc/self/cgroup). */
static int own_cgroup(char *out, size_t len)
{
	FILE *f = fopen("/proc/self/cgroup", "re");
	if (!f)
		return -errno;
	char *line = NULL;
	size_t cap = 0;
	int r = -ENOENT;
	while (getline(&line, &cap, f) > 0) {
		if (strncmp(line, "0::", 3))
			continue;
		line[strcspn(line, "\n")] = 0;
		r = (size_t)snprintf(out, len, "%s", line + 3) < len ? 0 : -ENAMETOOLONG;
		break;
	}
	free(line);
	fclose(f);
	return r;
}

static int write_file(const char *dir, const char *name, const char *val)
{
	char p[4096];
	if ((size_t)snprintf(p, sizeof(p), "%s/%s", dir, name) >= sizeof(p))
		return -ENAMETOOLONG;
	int fd = open(p, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int r = write_all(fd, val, strlen(val));
	close(fd);
	return r < 0 ? r : 0;
}

/* Whether dir's cgroup.controllers (or subtree_control) lists c. */
static bool lists(const char *dir, const char *file, const char *c)
{
	char p[4096], buf[512];
	snprintf(p, sizeof(p), "%s/%s", dir, file);
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = 0;
	for (char *t = strtok(buf, " \n"); t; t = strtok(NULL, " \n"))
		if (!strcmp(t, c))
			return true;
	return false;
}

/* Makes the controllers available to dir's children; the controllers
 * missing from dir itself are named in missing. */
static int enable_below(const char *dir, char *missing, size_t len)
{
	missing[0] = 0;
	for (size_t i = 0; i < sizeof(controllers) / sizeof(controllers[0]); i++) {
		const char *c = controllers[i];
		if (!lists(dir, "cgroup.controllers", c)) {
			size_t n = strlen(missing);
			snprintf(missing + n, len - n, "%s%s", n ? " " : "", c);
			continue;
		}
		if (lists(dir, "cgroup.subtree_control", c))
			continue;
		char v[16];
		snprintf(v, sizeof(v), "+%s", c);
		int r = write_file(dir, "cgroup.subtree_control", v);
		if (r < 0)
			return r;
	}
	return missing[0] ? -ENOTSUP : 0;
}

/* The parent directory for sandboxes, made and enabled; 1 with a note
 * when this user has none. */
static int find_parent(char *parent, size_t len, char *note, size_t notelen)
{
	char mnt[4096], own[4096];
	if (cgroup_mount(mnt, sizeof(mnt)) < 0) {
		snprintf(note, notelen,
		         "cgroup v2 is not mounted: cpu, memory and pids limits "
		         "are not applied");
		return 1;
	}
	const char *env = getenv("COVE_CGROUP_PARENT");
	int n;
	if (env && *env) {
		n = snprintf(parent, len, "%s", env);
	} else if (geteuid() == 0) {
		n = snprintf(parent, len, "%s/cove", mnt);
	} else {
		if (own_cgroup(own, sizeof(own)) < 0) {
			snprintf(note, notelen,
			         "no cgroup v2 of our own: cpu, memory and pids "
			         "limits are not applied");
			return 1;
		}
		n = snprintf(parent, len, "%s%s", mnt, strcmp(own, "/") ? own : "");
	}
	if (n < 0 || (size_t)n >= len) {
		snprintf(note, notelen, "the cgroup path is too long: limits are not applied");
		return 1;
	}
	if ((mkdir(parent, 0755) < 0 && errno != EEXIST) ||
	    (geteuid() != 0 && access(parent, W_OK) < 0)) {
		snprintf(note, notelen,
		         "cgroups are not delegated to uid %u (cannot create %s: %s): cpu, "
		         "memory and pids limits are not applied",
		         (unsigned)geteuid(), parent, strerror(errno));
		return 1;
	}
	char missing[64];
	/* Root's own parent is the mount's root, which may lack the
	 * controllers in its subtree_control still. */
	if (geteuid() == 0 && !(env && *env)) {
		int r = enable_below(mnt, missing, sizeof(missing));
		if (r == -ENOTSUP) {
			snprintf(note, notelen,
			         "cgroup v2 at %s has no %s controller (cgroup v1 holds it): "
			         "cpu, memory and pids limits are not applied",
			         mnt, missing);
			return 1;
		}
	}
	int r = enable_below(parent, missing, sizeof(missing));
	if (r < 0) {
		snprintf(note, notelen,
		         "cgroups are not delegated to uid %u (%s: %s%s): cpu, memory and "
		         "pids limits are not applied",
		         (unsigned)geteuid(), parent,
		         r == -ENOTSUP ? "no controller " : strerror(-r),
		         r == -ENOTSUP ? missing : "");
		return 1;
	}
	return 0;
}

int cgroup_create(const char *name, const struct cgroup_limits *l, int *fd, char *path,
                  size_t pathlen, char *note, size_t notelen, char *err, size_t errlen)
{
	*fd = -1;
	path[0] = 0;
	note[0] = 0;
	char parent[4096];
	int r = find_parent(parent, sizeof(parent), note, notelen);
	if (r != 0)
		return r;
	if ((size_t)snprintf(path, pathlen, "%s/%s", parent, name) >= pathlen)
		return errf(err, errlen, -ENAMETOOLONG, "cgroup path %s/%s is too long", parent,
		            name);
	/* A leftover of a sandbox of this name that died goes first. */
	(void)rmdir(path);
	if (mkdir(path, 0755) < 0) {
		int e = errno;
		path[0] = 0;
		return errf(err, errlen, -e, "cannot create the cgroup %s/%s: %s", parent, name,
		            strerror(e));
	}
	char v[64];
	if (l->cpu_quota > 0)
		snprintf(v, sizeof(v), "%llu 100000",
		         (unsigned long long)(l->cpu_quota * 100000.0 + 0.5));
	else
		snprintf(v, sizeof(v), "max 100000");
	const char *what = "cpu.max";
	if ((r = write_file(path, what, v)) == 0 && l->memory_bytes) {
		snprintf(v, sizeof(v), "%llu", (unsigned long long)l->memory_bytes);
		what = "memory.max";
		r = write_file(path, what, v);
		/* Without swap accounting the file is absent: nothing to swap. */
		if (r == 0 && (r = write_file(path, "memory.swap.max", "0")) == -ENOENT)
			r = 0;
		what = "memory.swap.max";
	}
	if (r == 0 && l->pids_max) {
		snprintf(v, sizeof(v), "%llu", (unsigned long long)l->pids_max);
		what = "pids.max";
		r = write_file(path, what, v);
	}
	if (r == 0) {
		*fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (*fd < 0)
			r = -errno, what = "the directory";
	}
	if (r < 0) {
		(void)rmdir(path);
		path[0] = 0;
		return errf(err, errlen, r, "cannot set %s of the cgroup %s/%s: %s", what, parent,
		            name, strerror(-r));
	}
	return 0;
}

int cgroup_move(const char *path, pid_t pid)
{
	char v[24];
	snprintf(v, sizeof(v), "%d", (int)pid);
	return write_file(path, "cgroup.procs", v);
}

void cgroup_remove(const char *path)
{
	if (!path || !path[0])
		return;
	/* The kernel may still hold the exited VMM for a moment: EBUSY. */
	for (int i = 0; i < 200; i++) {
		if (rmdir(path) == 0 || errno != EBUSY)
			return;
		struct timespec ts = { 0, 10 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
}

/* The cgroup a sandbox of this name was given, found the way cgroup_create
 * finds it: 0, or -1 when there is none to find. */
static int cgroup_path_named(const char *name, char *path, size_t len)
{
	char mnt[4096], own[4096];
	if (cgroup_mount(mnt, sizeof(mnt)) < 0)
		return -1;
	const char *env = getenv("COVE_CGROUP_PARENT");
	int n;
	if (env && *env)
		n = snprintf(path, len, "%s/%s", env, name);
	else if (geteuid() == 0)
		n = snprintf(path, len, "%s/cove/%s", mnt, name);
	else if (own_cgroup(own, sizeof(own)) == 0)
		n = snprintf(path, len, "%s%s/%s", mnt, own, name);
	else
		return -1;
	return n > 0 && (size_t)n < len ? 0 : -1;
}

void cgroup_remove_named(const char *name)
{
	char path[8192];
	if (cgroup_path_named(name, path, sizeof(path)) == 0)
		cgroup_remove(path);
}

int kfile_u64_parse(const char *text, uint64_t *v)
{
	uint64_t n = 0;
	const char *p = text;
	for (; *p >= '0' && *p <= '9'; p++) {
		uint64_t d = (uint64_t)(*p - '0');
		if (n > UINT64_MAX / 10 || (n == UINT64_MAX / 10 && d > UINT64_MAX % 10))
			return -EINVAL;
		n = n * 10 + d;
	}
	if (p == text || (*p && strcmp(p, "\n") != 0))
		return -EINVAL;
	*v = n;
	return 0;
}

int kfile_u64(const char *path, uint64_t *v)
{
	char buf[32];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	int e = errno;
	close(fd);
	if (n < 0)
		return -e;
	buf[n] = 0;
	return kfile_u64_parse(buf, v);
}

/* Reads one number from the cgroup file at dir/file: 0 and *v, or -1
 * ("max", absent, unreadable). */
static int cg_read_u64(const char *dir, const char *file, uint64_t *v)
{
	char path[8192 + 32];
	snprintf(path, sizeof(path), "%s/%s", dir, file);
	return kfile_u64(path, v) < 0 ? -1 : 0;
}

static int cg_write_u64(const char *dir, const char *file, uint64_t v)
{
	char path[8192 + 32], buf[32];
	snprintf(path, sizeof(path), "%s/%s", dir, file);
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int len = snprintf(buf, sizeof(buf), "%llu\n", (unsigned long long)v);
	int r = write(fd, buf, (size_t)len) == len ? 0 : -errno;
	close(fd);
	return r;
}

int cgroup_memory_raise(const char *name, struct cgroup_raise *cr)
{
	*cr = (struct cgroup_raise){ 0 };
	char path[8192];
	if (cgroup_path_named(name, path, sizeof(path)) < 0 ||
	    cg_read_u64(path, "memory.max", &cr->max) < 0 || !cr->max || cr->max > UINT64_MAX / 2 ||
	    cg_read_u64(path, "memory.current", &cr->current) < 0)
		return 0; /* no limit to raise */
	int r = cg_write_u64(path, "memory.max", cr->max * 2);
	if (r == 0)
		cr->raised = true;
	return r;
}

void cgroup_memory_settle(const char *name, const struct cgroup_raise *cr)
{
	char path[8192];
	uint64_t now;
	if (!cr->raised || cgroup_path_named(name, path, sizeof(path)) < 0 ||
	    cg_read_u64(path, "memory.current", &now) < 0)
		return;
	(void)cg_write_u64(path, "memory.max",
	                   cr->max + (now > cr->current ? now - cr->current : 0));
}

int cgroup_keyed_u64(const char *text, const char *key, uint64_t *v)
{
	size_t kl = strlen(key);
	for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		if (strncmp(l, key, kl) != 0 || l[kl] != ' ')
			continue;
		char *end;
		errno = 0;
		unsigned long long x = strtoull(l + kl + 1, &end, 10);
		if (errno || end == l + kl + 1 || (*end && *end != '\n'))
			return -ENOENT;
		*v = x;
		return 0;
	}
	return -ENOENT;
}

/* One keyed value of the cgroup file dir/file. */
static int cg_read_keyed(const char *dir, const char *file, const char *key, uint64_t *v)
{
	char path[8192 + 32], buf[4096];
	snprintf(path, sizeof(path), "%s/%s", dir, file);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = 0;
	return cgroup_keyed_u64(buf, key, v);
}

int cgroup_usage_named(const char *name, struct cgroup_usage *u)
{
	char path[8192];
	*u = (struct cgroup_usage){ 0 };
	if (cgroup_path_named(name, path, sizeof(path)) < 0 ||
	    cg_read_keyed(path, "cpu.stat", "usage_usec", &u->cpu_usec) < 0 ||
	    cg_read_u64(path, "memory.current", &u->mem_bytes) < 0)
		return -ENOENT;
	if (cg_read_keyed(path, "memory.stat", "file", &u->file_bytes) < 0)
		u->file_bytes = 0;
	return 0;
}
