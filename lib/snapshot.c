/* Snapshots: cove_snapshot asks cove-vmm, through its control socket, to
 * save a running sandbox into a new directory and leaves a note beside the
 * snapshot (the CPUs, memory and image `cove ls` shows of what is restored
 * from it; restore.c reads it). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "cove_limits.h"
#include "errf.h"
#include "io.h"
#include "lib/agent/notice.h"
#include "lib/agent/proc.h"
#include "lib/base/cgroup.h"
#include "lib/base/handle.h"
#include "lib/base/jail.h"
#include "lib/base/registry.h"
#include "lib/proxy.h"
#include "lib/sandbox.h"
#include "lib/snapshot.h"
#include "lib/vmm/vmm_api.h"
#include "proto.h"

#define API_SNAPSHOT_MS     (10 * 60 * 1000)
#define SNAPSHOT_NOTE       "cove-sandbox.json"
#define SNAPSHOT_STOP_GRACE 10000

/* Makes path absolute for a directory that must not exist yet: its parent
 * is resolved (symlinks too), its last component kept. */
static int new_dir_path(const char *path, char *out, size_t len, char *err, size_t errlen)
{
	char buf[PATH_MAX], parent[PATH_MAX];
	if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
		return errf(err, errlen, -ENAMETOOLONG, "path '%s' is too long", path);
	size_t n = strlen(buf);
	while (n > 1 && buf[n - 1] == '/')
		buf[--n] = 0;
	char *slash = strrchr(buf, '/');
	const char *leaf = slash ? slash + 1 : buf;
	if (!*leaf || !strcmp(leaf, ".") || !strcmp(leaf, ".."))
		return errf(err, errlen, -EINVAL, "'%s' is not a new directory's path", path);
	if (slash)
		*slash = 0;
	const char *dir = !slash ? "." : slash == buf ? "/" : buf;
	if (!realpath(dir, parent))
		return errf(err, errlen, -errno, "'%s': %s", dir, strerror(errno));
	if (snprintf(out, len, "%s/%s", strcmp(parent, "/") ? parent : "", leaf) >= (int)len)
		return errf(err, errlen, -ENAMETOOLONG, "path '%s' is too long", path);
	struct stat st;
	if (lstat(out, &st) == 0)
		return errf(err, errlen, -EEXIST, "'%s' already exists", out);
	return 0;
}

/* What the VMM does not keep but `cove ls` shows of a restored sandbox:
 * best effort, a restore works without it. */
static void snapshot_note_write(const struct cove_sandbox *sb, const char *snapdir)
{
	struct registry_meta *m = malloc(sizeof(*m));
	if (!m || registry_meta_read(sb->dir, m) < 0) {
		free(m);
		return;
	}
	json_t *o = json_pack("{s:i, s:s, s:i, s:I}", "version", 1, "name", m->name, "cpus",
	                      (int)m->cpus, "memory_mib", (json_int_t)m->memory_mib);
	if (o && m->image[0])
		json_object_set_new(o, "image", json_string(m->image));
	if (o &&
	    (registry_limits_put(o, &m->limits) < 0 || registry_net_put(o, &m->net, false) < 0)) {
		json_decref(o);
		o = NULL;
	}
	/* 0600 from its creation, as the rest of the snapshot (it names the
	 * image); never through a symlink. */
	int dfd = o ? open(snapdir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;
	int fd = dfd >= 0 ? openat(dfd, SNAPSHOT_NOTE,
	                           O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600)
	                  : -1;
	char *text = fd >= 0 ? json_dumps(o, JSON_COMPACT) : NULL;
	if (text)
		(void)!write_all(fd, text, strlen(text));
	free(text);
	if (fd >= 0)
		close(fd);
	if (dfd >= 0)
		close(dfd);
	json_decref(o);
	free(m);
}

void snapshot_note_read(const char *snapdir, unsigned int *cpus, uint64_t *memory_mib,
                        struct registry_limits *limits, struct registry_net *net)
{
	memset(net, 0, sizeof(*net));
	char path[PATH_MAX];
	*cpus = 0;
	*memory_mib = 0;
	memset(limits, 0, sizeof(*limits));
	if (snprintf(path, sizeof(path), "%s/%s", snapdir, SNAPSHOT_NOTE) >= (int)sizeof(path))
		return;
	json_t *o = json_load_file(path, JSON_REJECT_DUPLICATES, NULL);
	json_t *c = o ? json_object_get(o, "cpus") : NULL;
	json_t *mem = o ? json_object_get(o, "memory_mib") : NULL;
	if (json_is_integer(c) && json_integer_value(c) > 0 && json_integer_value(c) <= 1024)
		*cpus = (unsigned int)json_integer_value(c);
	if (json_is_integer(mem) && json_integer_value(mem) > 0)
		*memory_mib = (uint64_t)json_integer_value(mem);
	if (json_is_object(o) && registry_limits_get(o, limits) < 0)
		memset(limits, 0, sizeof(*limits));
	if (json_is_object(o) && registry_net_get(o, net) < 0)
		net->on = true; /* it had a NIC; its policy is unreadable: none */
	if (net->on && !net->policy[0])
		snprintf(net->policy, sizeof(net->policy),
		         "{\"mode\":\"none\",\"allow\":[],\"deny\":[]}");
	json_decref(o);
}

/* Removes every entry of the snapshot directory dfd (it holds no
 * directories). */
static void empty_dir(int dfd)
{
	DIR *d = opendir_dup(dfd);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			(void)unlinkat(dfd, e->d_name, 0);
	closedir(d);
}

/* The snapshot the VMM wrote becomes ours again: every entry must be a
 * regular file with one link (nothing the jail could point elsewhere),
 * owned by us, 0600 (frozen disks 0400), the directory 0700. */
static int take_back(int dfd, const char *abs, char *err, size_t errlen)
{
	DIR *d = opendir_dup(dfd);
	if (!d)
		return errf(err, errlen, -errno, "cannot read '%s': %s", abs, strerror(errno));
	int r = 0;
	struct dirent *e;
	while (r == 0 && (e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		struct stat st;
		if (fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			r = errf(err, errlen, -errno, "%s/%s: %s", abs, e->d_name, strerror(errno));
			break;
		}
		if (!S_ISREG(st.st_mode) || st.st_nlink != 1) {
			r = errf(err, errlen, -EPERM,
			         "the VMM left '%s/%s', which is not a plain file: refused", abs,
			         e->d_name);
			break;
		}
		mode_t mode = strncmp(e->d_name, "disk", 4) ? 0600 : 0400;
		if ((st.st_uid != geteuid() &&
		     fchownat(dfd, e->d_name, geteuid(), getegid(), AT_SYMLINK_NOFOLLOW) < 0) ||
		    fchmodat(dfd, e->d_name, mode, 0) < 0)
			r = errf(err, errlen, -errno, "%s/%s: %s", abs, e->d_name, strerror(errno));
	}
	closedir(d);
	if (r == 0 && (fchown(dfd, geteuid(), getegid()) < 0 || fchmod(dfd, 0700) < 0))
		r = errf(err, errlen, -errno, "%s: %s", abs, strerror(errno));
	return r;
}

int cove_snapshot_sync(struct cove_sandbox *sb, int64_t ms, char *err, size_t errlen)
{
	if (!sb || sb->stopped)
		return errf(err, errlen, -ESRCH, "the sandbox is stopped");
	char e[256];
	int r = cove_agent_call_ms(sb, PROTO_SYNC, json_object(), NULL, ms, e, sizeof(e));
	return r < 0 ? errf(err, errlen, r, "sync: %s", e) : 0;
}

int cove_snapshot(struct cove_sandbox *sb, const char *dir, bool stop_after, char *err,
                  size_t errlen)
{
	if (!sb || sb->stopped)
		return errf(err, errlen, -ESRCH, "the sandbox is stopped");
	if (!dir || !*dir)
		return errf(err, errlen, -EINVAL, "no snapshot directory given");
	/* A snapshot of a restored sandbox holds the notice's effects. */
	int r = notice_settle(sb, err, errlen);
	if (r < 0)
		return r;
	char abs[PATH_MAX];
	r = new_dir_path(dir, abs, sizeof(abs), err, errlen);
	if (r < 0)
		return r;
	/* We make the directory and hand it over open: a jailed VMM has no
	 * path to it, and writes it as the jail's uid, from which it comes
	 * back to us once written. */
	struct stat root;
	if (stat(sb->root, &root) < 0)
		return errf(err, errlen, -errno, "sandbox %s: %s: %s", sb->name, sb->root,
		            strerror(errno));
	if (mkdir(abs, 0700) < 0)
		return errf(err, errlen, -errno, "cannot create snapshot directory '%s': %s", abs,
		            errno == EEXIST ? "it already exists" : strerror(errno));
	int dfd = open(abs, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0) {
		r = errf(err, errlen, -errno, "cannot open '%s': %s", abs, strerror(errno));
		rmdir(abs);
		return r;
	}
	if (root.st_uid != geteuid() && fchown(dfd, root.st_uid, root.st_gid) < 0) {
		r = errf(err, errlen, -errno, "cannot give '%s' to the jail's uid %u: %s", abs,
		         (unsigned)root.st_uid, strerror(errno));
		goto fail;
	}
	/* A VMM with a jail uid gets a copy it cannot walk out of with "..". */
	int vfd = -1;
	if (root.st_uid != geteuid() && (vfd = jail_dirfd_beneath(dfd)) < 0) {
		r = errf(err, errlen, vfd, "cannot make a directory fd for the jail of '%s': %s",
		         abs, strerror(-vfd));
		goto fail;
	}
	struct cgroup_raise mem;
	if ((r = cgroup_memory_raise(sb->name, &mem)) < 0) {
		if (vfd >= 0)
			close(vfd);
		r = errf(err, errlen, r, "cannot make room in the sandbox's memory.max: %s",
		         strerror(-r));
		goto fail;
	}
	json_t *req = json_pack("{s:s, s:s, s:s, s:b}", "op", "snapshot", "dir", abs, "then",
	                        stop_after ? "stop" : "resume", "dirfd", 1);
	r = vmm_api_call_fd(sb->api, req, vfd >= 0 ? vfd : dfd, NULL, API_SNAPSHOT_MS, err, errlen);
	if (vfd >= 0)
		close(vfd);
	if (!stop_after || r < 0)
		cgroup_memory_settle(sb->name, &mem);
	if (r < 0 || (r = take_back(dfd, abs, err, errlen)) < 0)
		goto fail;
	/* The credential rules (references and sources, never values): a
	 * restore or fork reads the secrets again. */
	if ((r = proxy_copy(sb->dir, abs)) < 0) {
		r = errf(err, errlen, r, "cannot copy %s into the snapshot: %s", PROXY_RULES_FILE,
		         strerror(-r));
		goto fail;
	}
	close(dfd);
	snapshot_note_write(sb, abs);
	if (stop_after)
		sandbox_finish(sb, SNAPSHOT_STOP_GRACE);
	return 0;
fail:
	empty_dir(dfd);
	close(dfd);
	rmdir(abs);
	return r;
}
