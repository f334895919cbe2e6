/* The sandbox registry: runtime base, names, meta.json, liveness of the
 * recorded process, removal of dead entries.  What the API makes of it
 * (cove_open, cove_list) is in lookup.c. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "errf.h"
#include "io.h"
#include "lib/base/registry.h"

bool registry_name_valid(const char *name)
{
	if (!name || !name[0] || name[0] == '.')
		return false;
	size_t n = 0;
	for (const char *p = name; *p; p++, n++) {
		char c = *p;
		bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		          (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
		if (!ok || n == REGISTRY_NAME_MAX)
			return false;
	}
	return true;
}

int registry_check_base(const char *path, char *err, size_t errlen)
{
	struct stat st;
	if (lstat(path, &st) < 0)
		return errf(err, errlen, -errno, "runtime directory %s: %s", path, strerror(errno));
	const char *what = S_ISLNK(st.st_mode)      ? "is a symbolic link"
	                   : !S_ISDIR(st.st_mode)   ? "is not a directory"
	                   : st.st_uid != geteuid() ? "belongs to another user"
	                   : st.st_mode & 077       ? "is open to other users"
	                                            : NULL;
	if (!what)
		return 0;
	return errf(err, errlen, -EPERM,
	            "runtime directory %s %s (owner uid %u, mode %04o; it must be a "
	            "directory of uid %u with mode 0700): remove it, or set COVE_RUNTIME_DIR "
	            "to a directory of your own",
	            path, what, (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777),
	            (unsigned)geteuid());
}

int registry_base(char *out, size_t len, char *err, size_t errlen)
{
	const char *v = getenv("COVE_RUNTIME_DIR");
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	int n;
	if (v && *v)
		n = snprintf(out, len, "%s", v);
	else if (xdg && *xdg)
		n = snprintf(out, len, "%s/cove", xdg);
	else if (geteuid() == 0)
		n = snprintf(out, len, "/run/cove");
	else
		n = snprintf(out, len, "/tmp/cove-%u", (unsigned)geteuid());
	/* <base>/<name> must fit REGISTRY_DIR_MAX with its terminator. */
	if (n < 0 || (size_t)n >= len || (size_t)n + 1 + REGISTRY_NAME_MAX >= REGISTRY_DIR_MAX)
		return errf(err, errlen, -ENAMETOOLONG,
		            "the runtime directory %s is too long for the sockets in it "
		            "(set COVE_RUNTIME_DIR to a shorter path)",
		            n >= 0 && (size_t)n < len ? out : "(too long)");
	if (mkdir(out, 0700) < 0 && errno != EEXIST)
		return errf(err, errlen, -errno, "cannot create the runtime directory %s: %s", out,
		            strerror(errno));
	return registry_check_base(out, err, errlen);
}

int registry_dir_open(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

int registry_meta_write(const char *dir, const struct registry_meta *m)
{
	json_t *o =
	    json_pack("{s:i, s:s, s:I, s:I, s:b, s:i, s:I, s:I}", "version", 1, "name", m->name,
	              "pid", (json_int_t)m->pid, "pid_start", (json_int_t)m->pid_start, "starting",
	              m->starting, "cpus", (int)m->cpus, "memory_mib", (json_int_t)m->memory_mib,
	              "created", (json_int_t)m->created);
	if (!o)
		return -ENOMEM;
	if (m->image[0])
		json_object_set_new(o, "image", json_string(m->image));
	if (m->restored_from[0])
		json_object_set_new(o, "restored_from", json_string(m->restored_from));
	if (registry_limits_put(o, &m->limits) < 0 || registry_net_put(o, &m->net, true) < 0) {
		json_decref(o);
		return -ENOMEM;
	}
	/* Relative to the entry's fd, never through a symlink, into a temp
	 * file of our own (O_EXCL): nothing planted in the directory is
	 * written through. */
	char tmp[64];
	snprintf(tmp, sizeof(tmp), ".%s.%d.tmp", REGISTRY_META, (int)getpid());
	int dfd = registry_dir_open(dir);
	if (dfd < 0) {
		json_decref(o);
		return dfd;
	}
	(void)unlinkat(dfd, tmp, 0); /* left by a process of ours that died */
	int fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	int r = fd < 0 ? -errno : 0;
	/* One write: json_dump_callback() writes each token on its own, 40
	 * system calls per entry, and every restore writes it twice. */
	char *text = r == 0 ? json_dumps(o, JSON_COMPACT) : NULL;
	if (r == 0)
		r = text ? write_all(fd, text, strlen(text)) : -ENOMEM;
	free(text);
	if (fd >= 0)
		close(fd);
	json_decref(o);
	if (r == 0 && renameat(dfd, tmp, dfd, REGISTRY_META) < 0)
		r = -errno;
	if (r < 0 && fd >= 0)
		unlinkat(dfd, tmp, 0);
	close(dfd);
	return r;
}

/* Copies a JSON string member into a fixed buffer; absent is "". */
static int meta_string(json_t *o, const char *key, char *out, size_t len)
{
	json_t *v = json_object_get(o, key);
	out[0] = 0;
	if (!v)
		return 0;
	if (!json_is_string(v) || json_string_length(v) >= len)
		return -EPROTO;
	memcpy(out, json_string_value(v), json_string_length(v) + 1);
	return 0;
}

/* A non-negative integer member no larger than max; absent is 0. */
static int meta_uint(json_t *o, const char *key, uint64_t max, uint64_t *out)
{
	json_t *v = json_object_get(o, key);
	*out = 0;
	if (!v)
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < 0 ||
	    (uint64_t)json_integer_value(v) > max)
		return -EPROTO;
	*out = (uint64_t)json_integer_value(v);
	return 0;
}

/* The limits' keys, in struct registry_limits' order after cpu_quota. */
static const char *const limit_keys[] = { "pids_max", "disk_size", "disk_bps", "disk_iops",
	                                  "ttl_s" };

static uint64_t *limit_field(struct registry_limits *l, size_t i)
{
	uint64_t *f[] = { &l->pids_max, &l->disk_size, &l->disk_bps, &l->disk_iops, &l->ttl_s };
	return f[i];
}

int registry_limits_put(json_t *o, const struct registry_limits *l)
{
	struct registry_limits c = *l;
	int r = 0;
	if (c.cpu_quota > 0)
		r |= json_object_set_new(o, "cpu_quota", json_real(c.cpu_quota));
	for (size_t i = 0; i < sizeof(limit_keys) / sizeof(limit_keys[0]); i++)
		if (*limit_field(&c, i))
			r |= json_object_set_new(o, limit_keys[i],
			                         json_integer((json_int_t)*limit_field(&c, i)));
	return r ? -ENOMEM : 0;
}

int registry_limits_get(json_t *o, struct registry_limits *l)
{
	memset(l, 0, sizeof(*l));
	json_t *q = json_object_get(o, "cpu_quota");
	if (q) {
		if (!json_is_number(q) || !(json_number_value(q) >= 0) ||
		    json_number_value(q) > 1024)
			return -EPROTO;
		l->cpu_quota = json_number_value(q);
	}
	for (size_t i = 0; i < sizeof(limit_keys) / sizeof(limit_keys[0]); i++) {
		int r = meta_uint(o, limit_keys[i], UINT64_MAX >> 1, limit_field(l, i));
		if (r < 0)
			return r;
	}
	return 0;
}

int registry_net_put(json_t *o, const struct registry_net *n, bool with_index)
{
	if (!n->on)
		return 0;
	json_error_t je;
	json_t *policy = json_loads(n->policy, JSON_REJECT_DUPLICATES, &je);
	json_t *net = json_object();
	int r = !policy || !net;
	if (!r) {
		r |= json_object_set_new(net, "policy", policy);
		policy = NULL;
		if (n->limits[0])
			r |= json_object_set_new(net, "limits", json_string(n->limits));
		if (with_index)
			r |= json_object_set_new(net, "index", json_integer(n->index));
		r |= json_object_set(o, "net", net);
	}
	if (!r && with_index && n->egress_pid > 0) {
		r |= json_object_set_new(o, "egress_pid", json_integer(n->egress_pid));
		r |= json_object_set_new(o, "egress_start",
		                         json_integer((json_int_t)n->egress_start));
	}
	json_decref(policy);
	json_decref(net);
	return r ? -ENOMEM : 0;
}

int registry_net_get(json_t *o, struct registry_net *n)
{
	memset(n, 0, sizeof(*n));
	json_t *net = json_object_get(o, "net");
	if (!net)
		return 0;
	json_t *policy = json_object_get(net, "policy");
	if (!json_is_object(net) || !json_is_object(policy))
		return -EPROTO;
	char *text = json_dumps(policy, JSON_COMPACT);
	size_t len = text ? strlen(text) : 0;
	int r = text && len < sizeof(n->policy) ? 0 : -EPROTO;
	if (!r)
		memcpy(n->policy, text, len + 1);
	free(text);
	uint64_t index = 0, pid = 0;
	if (!r)
		r = meta_string(net, "limits", n->limits, sizeof(n->limits));
	if (!r)
		r = meta_uint(net, "index", 16383, &index);
	if (!r)
		r = meta_uint(o, "egress_pid", INT32_MAX, &pid);
	if (!r)
		r = meta_uint(o, "egress_start", UINT64_MAX >> 1, &n->egress_start);
	n->index = (unsigned int)index;
	n->egress_pid = (pid_t)pid;
	n->on = r == 0;
	return r;
}

int registry_meta_read(const char *dir, struct registry_meta *m)
{
	memset(m, 0, sizeof(*m));
	int dfd = registry_dir_open(dir);
	if (dfd < 0)
		return dfd == -ENOENT ? -ENOENT : -EPROTO;
	int fd = openat(dfd, REGISTRY_META, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	int e = errno;
	close(dfd);
	if (fd < 0)
		return e == ENOENT ? -ENOENT : -EPROTO;
	struct stat st;
	json_error_t je;
	json_t *o = fstat(fd, &st) == 0 && S_ISREG(st.st_mode)
	                ? json_loadfd(fd, JSON_REJECT_DUPLICATES, &je)
	                : NULL;
	close(fd);
	if (!o)
		return -EPROTO;
	uint64_t version, pid, cpus, created;
	int r = json_is_object(o) ? 0 : -EPROTO;
	if (!r)
		r = meta_uint(o, "version", 1000, &version);
	if (!r && version != 1)
		r = -EPROTO;
	if (!r)
		r = meta_string(o, "name", m->name, sizeof(m->name));
	if (!r && !registry_name_valid(m->name))
		r = -EPROTO;
	if (!r)
		r = meta_uint(o, "pid", INT32_MAX, &pid);
	if (!r && pid == 0)
		r = -EPROTO;
	if (!r)
		r = meta_uint(o, "pid_start", UINT64_MAX >> 1, &m->pid_start);
	if (!r)
		r = meta_uint(o, "cpus", 1024, &cpus);
	if (!r)
		r = meta_uint(o, "memory_mib", UINT64_MAX >> 1, &m->memory_mib);
	if (!r)
		r = meta_uint(o, "created", INT64_MAX, &created);
	if (!r)
		r = meta_string(o, "image", m->image, sizeof(m->image));
	if (!r)
		r = meta_string(o, "restored_from", m->restored_from, sizeof(m->restored_from));
	if (!r)
		r = registry_limits_get(o, &m->limits);
	if (!r)
		r = registry_net_get(o, &m->net);
	json_t *starting = json_object_get(o, "starting");
	if (!r && starting && !json_is_boolean(starting))
		r = -EPROTO;
	if (!r) {
		m->pid = (pid_t)pid;
		m->cpus = (unsigned int)cpus;
		m->created = (int64_t)created;
		m->starting = json_is_true(starting);
	}
	json_decref(o);
	return r;
}

int registry_parse_stat(const char *text, char *state, uint64_t *start)
{
	const char *p = strrchr(text, ')');
	if (!p)
		return -EPROTO;
	p++;
	/* Fields 3 to 22 follow: the state, then 18 numbers, then starttime. */
	for (int field = 3; field <= 22; field++) {
		while (*p == ' ')
			p++;
		if (!*p)
			return -EPROTO;
		if (field == 3)
			*state = *p;
		if (field == 22) {
			char *end;
			errno = 0;
			unsigned long long v = strtoull(p, &end, 10);
			if (errno || end == p || (*end != ' ' && *end != '\n' && *end))
				return -EPROTO;
			*start = v;
			return 0;
		}
		p += strcspn(p, " ");
	}
	return -EPROTO;
}

int registry_proc_start(pid_t pid, uint64_t *start)
{
	if (pid <= 0)
		return -ESRCH;
	char path[64], text[1024];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	ssize_t n = read(fd, text, sizeof(text) - 1);
	int e = errno;
	close(fd);
	if (n < 0)
		return e == ESRCH ? -ESRCH : -e;
	text[n] = 0;
	char state;
	int r = registry_parse_stat(text, &state, start);
	if (r < 0)
		return r;
	return state == 'Z' || state == 'X' ? -ESRCH : 0;
}

int registry_parse_status(const char *text, char *name, size_t namelen, uid_t *euid)
{
	bool have_name = false, have_uid = false;
	for (const char *line = text; line && *line;) {
		const char *end = strchr(line, '\n');
		size_t n = end ? (size_t)(end - line) : strlen(line);
		if (n > 5 && !strncmp(line, "Name:", 5)) {
			const char *v = line + 5;
			while (*v == '\t' || *v == ' ')
				v++;
			size_t k = n - (size_t)(v - line);
			if (k >= namelen)
				return -EPROTO;
			memcpy(name, v, k);
			name[k] = 0;
			have_name = true;
		} else if (n > 4 && !strncmp(line, "Uid:", 4)) {
			/* Real, effective, saved, file system: the effective one. */
			unsigned long real, eff;
			if (sscanf(line + 4, "%lu %lu", &real, &eff) != 2)
				return -EPROTO;
			*euid = (uid_t)eff;
			have_uid = true;
		}
		line = end ? end + 1 : NULL;
	}
	return have_name && have_uid ? 0 : -EPROTO;
}

int registry_proc_is_vmm(pid_t pid)
{
	if (pid <= 0)
		return -ESRCH;
	char path[64], text[4096], name[64];
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	ssize_t n = read_full(fd, text, sizeof(text) - 1);
	close(fd);
	if (n < 0)
		return (int)n;
	text[n] = 0;
	uid_t euid;
	if (registry_parse_status(text, name, sizeof(name), &euid) < 0)
		return -EPROTO;
	if (strcmp(name, REGISTRY_VMM_COMM) != 0)
		return -EPERM;
	/* Root's cove-vmm runs jailed under a uid of its own. */
	if (geteuid() != 0 && euid != geteuid())
		return -EPERM;
	return 0;
}

int registry_proc_is_egress(pid_t pid, uint64_t start)
{
	uint64_t now;
	int r = registry_proc_start(pid, &now);
	if (r < 0)
		return r;
	if (now != start)
		return -ESRCH; /* a reused pid */
	/* Its binary, not its comm: started through execveat on an fd, the
	 * comm is the fd's number on kernels before 6.11. */
	char path[64], exe[PATH_MAX];
	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	ssize_t n = readlink(path, exe, sizeof(exe) - 1);
	if (n < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	exe[n] = 0;
	char *del = strstr(exe, " (deleted)");
	if (del && !del[10])
		*del = 0; /* rebuilt since it started */
	const char *base = strrchr(exe, '/');
	return strcmp(base ? base + 1 : exe, REGISTRY_EGRESS_COMM) ? -EPERM : 0;
}

bool registry_alive(const struct registry_meta *m)
{
	uint64_t start;
	return registry_proc_start(m->pid, &start) == 0 && start == m->pid_start;
}

/* Empties the directory fd (consumed) and its subdirectories, never
 * following a symlink: one planted inside is removed, not its target. */
static void remove_contents(int fd)
{
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return;
	}
	struct dirent *e;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (unlinkat(dirfd(d), e->d_name, 0) == 0 || errno != EISDIR)
			continue;
		int sub =
		    openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub >= 0)
			remove_contents(sub);
		(void)unlinkat(dirfd(d), e->d_name, AT_REMOVEDIR);
	}
	closedir(d);
}

int registry_remove_tree(const char *path)
{
	int fd = registry_dir_open(path);
	if (fd < 0)
		return fd == -ENOENT ? 0 : fd;
	remove_contents(fd);
	return rmdir(path) < 0 && errno != ENOENT ? -errno : 0;
}

static bool same_record(const struct registry_meta *a, const struct registry_meta *b)
{
	return a->pid == b->pid && a->pid_start == b->pid_start && a->created == b->created &&
	       !strcmp(a->name, b->name);
}

int registry_remove_dead(const char *base, const char *name, const struct registry_meta *seen)
{
	char dir[PATH_MAX], aside[PATH_MAX];
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	snprintf(dir, sizeof(dir), "%s/%s", base, name);
	snprintf(aside, sizeof(aside), "%s/.dead-%s.%d.%ld", base, name, (int)getpid(),
	         (long)ts.tv_nsec);
	if (rename(dir, aside) < 0)
		return errno == ENOENT ? 0 : -errno; /* another process cleaned it */
	struct registry_meta *now = malloc(sizeof(*now));
	if (!now)
		return -ENOMEM;
	int r = registry_meta_read(aside, now);
	bool same = seen ? r == 0 && same_record(now, seen) : r < 0;
	free(now);
	if (!same) {
		/* Between our look and the rename, the dead entry was removed and
		 * a new sandbox took the name: give it back. */
		if (renameat2(AT_FDCWD, aside, AT_FDCWD, dir, RENAME_NOREPLACE) < 0)
			return -errno;
		return -EBUSY;
	}
	return registry_remove_tree(aside);
}
