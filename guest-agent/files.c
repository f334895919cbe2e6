/* File requests: FILE_PUT, FILE_GET, STAT, LIST, MKDIR, SYMLINK, REMOVE. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "errf.h"
#include "files.h"
#include "io.h"
#include "proto_json.h"
#include "users.h"

#define GET_CHUNK (256 * 1024)
#define NFTW_FDS  32

static const char *type_name(mode_t m)
{
	if (S_ISREG(m))
		return "file";
	if (S_ISDIR(m))
		return "dir";
	if (S_ISLNK(m))
		return "symlink";
	if (S_ISCHR(m))
		return "char";
	if (S_ISBLK(m))
		return "block";
	if (S_ISFIFO(m))
		return "fifo";
	if (S_ISSOCK(m))
		return "socket";
	return "unknown";
}

static json_t *stat_json(const struct stat *st)
{
	return json_pack("{s:s, s:I, s:i, s:I, s:I, s:I}", "type", type_name(st->st_mode), "size",
	                 (json_int_t)st->st_size, "mode", (int)(st->st_mode & 07777), "uid",
	                 (json_int_t)st->st_uid, "gid", (json_int_t)st->st_gid, "mtime",
	                 (json_int_t)st->st_mtime);
}

/* ---- FILE_PUT ----------------------------------------------------------- */

/* A temp file next to path, so the final rename(2) is atomic. */
static int put_open(const char *path, char *tmp, size_t tmplen)
{
	const char *slash = strrchr(path, '/');
	/* The name is cut so that the temp name stays within NAME_MAX. */
	int n = snprintf(tmp, tmplen, "%.*s.%.200s.cove-XXXXXX", (int)(slash - path + 1), path,
	                 slash + 1);
	if (n < 0 || (size_t)n >= tmplen)
		return -ENAMETOOLONG;
	if (!slash[1])
		return -EISDIR;
	int fd = mkostemp(tmp, O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

/* A request's owner: its "user" resolved in the guest (users.h) over its
 * uid and gid.  0, or -errno with a line in err. */
static int owner(const char *user, int64_t *uid, int64_t *gid, char *err, size_t errlen)
{
	if (!user)
		return 0;
	struct agent_user *u = malloc(sizeof(*u));
	if (!u)
		return errf(err, errlen, -ENOMEM, "out of memory");
	int r = agent_user_resolve(user, AGENT_PASSWD, AGENT_GROUP, u, err, errlen);
	if (r == 0) {
		*uid = u->uid;
		*gid = u->gid;
	}
	free(u);
	return r;
}

static int put_finish(int fd, const char *tmp, const struct agent_req *req, int64_t uid,
                      int64_t gid)
{
	if (fchmod(fd, req->u.put.mode) < 0)
		return -errno;
	if ((uid >= 0 || gid >= 0) && fchown(fd, (uid_t)uid, (gid_t)gid) < 0)
		return -errno;
	if (rename(tmp, req->u.put.path) < 0)
		return -errno;
	return 0;
}

int agent_file_put(struct agent_conn *c, const struct agent_req *req)
{
	char tmp[PATH_MAX], msg[256] = "";
	const char *what = "create";
	int64_t uid = req->u.put.uid, gid = req->u.put.gid;
	int err = owner(req->u.put.user, &uid, &gid, msg, sizeof(msg));
	int fd = err ? -1 : put_open(req->u.put.path, tmp, sizeof(tmp));
	if (fd < 0 && !err)
		err = fd;
	uint64_t size = 0;
	/* Take every DATA frame up to the empty one even after a failure, so
	 * the stream stays in step; the single reply comes at the end. */
	for (;;) {
		struct proto_hdr h;
		uint8_t *data;
		int r = agent_conn_recv(c, &h, &data);
		if (r == -EPROTO || r == -EMSGSIZE)
			r = agent_conn_reject(c, h.id, EPROTO, "malformed frame in a FILE_PUT");
		if (r == 0 && (h.type != PROTO_DATA || h.id != req->id)) {
			free(data);
			r = agent_conn_reject(c, h.id, EPROTO, "frame type %u inside a FILE_PUT",
			                      h.type);
		}
		if (r < 0) {
			if (fd >= 0) {
				close(fd);
				unlink(tmp);
			}
			return r;
		}
		if (h.len == 0)
			break;
		if (!err) {
			err = write_all(fd, data, h.len);
			what = "write";
		}
		size += h.len;
		free(data);
	}
	if (!err) {
		err = put_finish(fd, tmp, req, uid, gid);
		what = "finish";
	}
	if (fd >= 0)
		close(fd);
	if (err) {
		if (fd >= 0)
			unlink(tmp);
		if (msg[0])
			return agent_conn_fail(c, req->id, err, "%s", msg);
		return agent_conn_fail(c, req->id, err, "%s %s: %s", what, req->u.put.path,
		                       strerror(-err));
	}
	return agent_conn_ok(c, req->id, json_pack("{s:I}", "size", (json_int_t)size));
}

/* ---- FILE_GET ----------------------------------------------------------- */

int agent_file_get(struct agent_conn *c, const struct agent_req *req)
{
	const char *path = req->u.file.path;
	/* O_NONBLOCK: opening a fifo must not hang the connection. */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return agent_conn_fail(c, req->id, -errno, "open %s: %s", path, strerror(errno));
	struct stat st;
	int r;
	if (fstat(fd, &st) < 0) {
		r = agent_conn_fail(c, req->id, -errno, "stat %s: %s", path, strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		int e = S_ISDIR(st.st_mode) ? EISDIR : EINVAL;
		r = agent_conn_fail(c, req->id, e, "%s is not a regular file", path);
		goto out;
	}
	uint8_t *buf = malloc(GET_CHUNK);
	if (!buf) {
		r = agent_conn_fail(c, req->id, ENOMEM, "out of memory");
		goto out;
	}
	r = agent_conn_ok(c, req->id, stat_json(&st));
	while (r == 0) {
		ssize_t n = read(fd, buf, GET_CHUNK);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			/* Mid-stream: an ERROR in place of the final DATA. */
			r = agent_conn_fail(c, req->id, -errno, "read %s: %s", path,
			                    strerror(errno));
			break;
		}
		r = proto_send(c->fd, PROTO_DATA, req->id, buf, (uint32_t)n);
		if (n == 0)
			break;
	}
	free(buf);
out:
	close(fd);
	return r;
}

/* ---- STAT, LIST --------------------------------------------------------- */

int agent_stat(struct agent_conn *c, const struct agent_req *req)
{
	const char *path = req->u.file.path;
	struct stat st;
	if (lstat(path, &st) < 0)
		return agent_conn_fail(c, req->id, -errno, "stat %s: %s", path, strerror(errno));
	json_t *o = stat_json(&st);
	if (o && S_ISLNK(st.st_mode)) {
		char target[PATH_MAX];
		ssize_t n = readlink(path, target, sizeof(target) - 1);
		if (n >= 0) {
			target[n] = 0;
			json_object_set_new(o, "target", json_string(target));
		}
	}
	return agent_conn_ok(c, req->id, o);
}

static int entry_cmp(const void *a, const void *b)
{
	const json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
	return strcmp(json_string_value(json_object_get(x, "name")),
	              json_string_value(json_object_get(y, "name")));
}

/* The entries of dir (without . and ..), sorted by name. */
static int list_entries(DIR *d, json_t *out)
{
	size_t n = 0, cap = 0;
	json_t **v = NULL;
	int r = 0;
	struct dirent *de;
	while ((errno = 0, de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		struct stat st;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue; /* removed meanwhile */
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			json_t **nv = realloc(v, cap * sizeof(*v));
			if (!nv) {
				r = -ENOMEM;
				goto out;
			}
			v = nv;
		}
		v[n] = json_pack("{s:s, s:s, s:I, s:i}", "name", de->d_name, "type",
		                 type_name(st.st_mode), "size", (json_int_t)st.st_size, "mode",
		                 (int)(st.st_mode & 07777));
		if (!v[n]) {
			r = -ENOMEM;
			goto out;
		}
		n++;
	}
	if (errno)
		r = -errno;
	if (n)
		qsort(v, n, sizeof(*v), entry_cmp);
	for (size_t i = 0; i < n && r == 0; i++)
		r = json_array_append(out, v[i]) < 0 ? -ENOMEM : 0;
out:
	for (size_t i = 0; i < n; i++)
		json_decref(v[i]);
	free(v);
	return r;
}

int agent_list(struct agent_conn *c, const struct agent_req *req)
{
	const char *path = req->u.file.path;
	DIR *d = opendir(path);
	if (!d)
		return agent_conn_fail(c, req->id, -errno, "opendir %s: %s", path, strerror(errno));
	json_t *entries = json_array();
	int r = entries ? list_entries(d, entries) : -ENOMEM;
	closedir(d);
	if (r < 0) {
		json_decref(entries);
		return agent_conn_fail(c, req->id, r, "list %s: %s", path, strerror(-r));
	}
	return agent_conn_ok(c, req->id, json_pack("{s:o}", "entries", entries));
}

/* ---- MKDIR -------------------------------------------------------------- */

static bool is_dir(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static int own(const char *path, int64_t uid, int64_t gid)
{
	if (uid < 0 && gid < 0)
		return 0;
	return lchown(path, (uid_t)uid, (gid_t)gid) < 0 ? -errno : 0;
}

/* mkdir -p: the folders it makes get uid and gid (-1: unchanged). */
static int mkdir_parents(const char *path, mode_t mode, int64_t uid, int64_t gid)
{
	char buf[PATH_MAX];
	size_t len = strlen(path);
	memcpy(buf, path, len + 1);
	for (size_t i = 1; i <= len; i++) {
		if (buf[i] != '/' && buf[i] != 0)
			continue;
		if (buf[i - 1] == '/')
			continue; /* "//" */
		char saved = buf[i];
		buf[i] = 0;
		if (mkdir(buf, mode) == 0) {
			int r = own(buf, uid, gid);
			if (r < 0)
				return r;
		} else if (!(errno == EEXIST && is_dir(buf))) {
			return -errno;
		}
		buf[i] = saved;
	}
	return 0;
}

int agent_mkdir(struct agent_conn *c, const struct agent_req *req)
{
	const char *path = req->u.mkdir.path;
	mode_t mode = req->u.mkdir.mode;
	int64_t uid = req->u.mkdir.uid, gid = req->u.mkdir.gid;
	char msg[256];
	int r = owner(req->u.mkdir.user, &uid, &gid, msg, sizeof(msg));
	if (r < 0)
		return agent_conn_fail(c, req->id, r, "%s", msg);
	bool existed = is_dir(path);
	if (req->u.mkdir.parents)
		r = mkdir_parents(path, mode, uid, gid);
	else if (mkdir(path, mode) < 0)
		r = -errno;
	/* mkdir(2) applies the umask; the host asked for this mode. */
	if (r == 0 && !existed && chmod(path, mode) < 0)
		r = -errno;
	/* The last folder is the caller's even when it was there, unless
	 * it asked to keep an existing one's owner. */
	bool own_last = !existed || !req->u.mkdir.keep_existing;
	if (r == 0 && own_last && (uid >= 0 || gid >= 0) && chown(path, (uid_t)uid, (gid_t)gid) < 0)
		r = -errno;
	if (r < 0)
		return agent_conn_fail(c, req->id, r, "mkdir %s: %s", path, strerror(-r));
	return agent_conn_ok(c, req->id, NULL);
}

/* ---- SYMLINK ------------------------------------------------------------ */

int agent_symlink(struct agent_conn *c, const struct agent_req *req)
{
	const char *path = req->u.symlink.path, *target = req->u.symlink.target;
	int64_t uid = req->u.symlink.uid, gid = req->u.symlink.gid;
	char msg[256];
	int r = owner(req->u.symlink.user, &uid, &gid, msg, sizeof(msg));
	if (r < 0)
		return agent_conn_fail(c, req->id, r, "%s", msg);
	/* ln -sf: a file or link already there is replaced, a folder is not. */
	if (symlink(target, path) < 0) {
		struct stat st;
		if (errno != EEXIST)
			r = -errno;
		else if (lstat(path, &st) < 0)
			r = -errno;
		else if (S_ISDIR(st.st_mode))
			r = -EISDIR;
		else if (unlink(path) < 0 || symlink(target, path) < 0)
			r = -errno;
	}
	if (r == 0)
		r = own(path, uid, gid);
	if (r < 0)
		return agent_conn_fail(c, req->id, r, "symlink %s: %s", path, strerror(-r));
	return agent_conn_ok(c, req->id, NULL);
}

/* ---- USER --------------------------------------------------------------- */

int agent_user(struct agent_conn *c, const struct agent_req *req)
{
	struct agent_user *u = malloc(sizeof(*u));
	char msg[256];
	if (!u)
		return agent_conn_fail(c, req->id, ENOMEM, "out of memory");
	int r =
	    agent_user_resolve(req->u.user.spec, AGENT_PASSWD, AGENT_GROUP, u, msg, sizeof(msg));
	json_t *groups = r == 0 ? json_array() : NULL;
	for (size_t i = 0; groups && i < u->ngroups; i++)
		json_array_append_new(groups, json_integer(u->groups[i]));
	json_t *o = groups ? json_pack("{s:I, s:I, s:o, s:s}", "uid", (json_int_t)u->uid, "gid",
	                               (json_int_t)u->gid, "groups", groups, "home", u->home)
	                   : NULL;
	free(u);
	if (r < 0)
		return agent_conn_fail(c, req->id, r, "%s", msg);
	if (!o)
		return agent_conn_fail(c, req->id, ENOMEM, "out of memory");
	return agent_conn_ok(c, req->id, o);
}

/* ---- REMOVE ------------------------------------------------------------- */

static __thread int remove_err;

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	int r = flag == FTW_DP || flag == FTW_D || flag == FTW_DNR ? rmdir(path) : unlink(path);
	if (r < 0 && errno != ENOENT) {
		remove_err = errno;
		return 1;
	}
	return 0;
}

static bool is_root(const struct stat *st)
{
	struct stat root;
	return stat("/", &root) == 0 && root.st_dev == st->st_dev && root.st_ino == st->st_ino;
}

int agent_remove(struct agent_conn *c, const struct agent_req *req)
{
	const char *path = req->u.remove.path;
	struct stat st;
	if (lstat(path, &st) < 0)
		return agent_conn_fail(c, req->id, -errno, "remove %s: %s", path, strerror(errno));
	int r = 0;
	if (!S_ISDIR(st.st_mode)) {
		r = unlink(path) < 0 ? -errno : 0;
	} else if (!req->u.remove.recursive) {
		r = rmdir(path) < 0 ? -errno : 0;
	} else if (is_root(&st)) {
		r = -EBUSY;
	} else {
		/* Depth first, not following links, not crossing mounts. */
		remove_err = 0;
		if (nftw(path, remove_one, NFTW_FDS, FTW_DEPTH | FTW_PHYS | FTW_MOUNT) < 0)
			r = -errno;
		if (remove_err)
			r = -remove_err;
	}
	if (r < 0)
		return agent_conn_fail(c, req->id, r, "remove %s: %s", path, strerror(-r));
	return agent_conn_ok(c, req->id, NULL);
}
