/* PROTO_WATCH: one inotify instance per watch, its folders in a table of
 * watch descriptors and their paths relative to the watched folder. */
#include "watch.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proto_json.h"

#define WATCH_TICK_MS 1000 /* the longest one poll waits; the loop goes on */
#define WATCH_BUF     (64 * 1024)
#define WATCH_EVENTS                                                                   \
	(IN_CREATE | IN_MODIFY | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_ATTRIB | \
	 IN_DELETE_SELF | IN_MOVE_SELF | IN_EXCL_UNLINK)

struct wdir {
	int wd;
	char *rel; /* "" for the watched folder */
};

struct watch {
	struct agent_conn *c;
	uint32_t id;
	int ifd;
	bool recursive;
	const char *root;
	int root_wd;
	struct wdir *dirs;
	size_t n, cap;
	/* A folder moved away inside this batch: its watches get the new
	 * name if the matching IN_MOVED_TO comes, else they are dropped. */
	uint32_t move_cookie;
	char *move_rel;
	/* The last event sent in this batch, to fold repeats (writes). */
	char *last_name;
	const char *last_type;
	char *buf; /* WATCH_BUF bytes for read(), aligned for inotify_event */
	/* Why the watch ended (ERROR), once it must. */
	int err;
	char msg[256];
};

static atomic_int active;

const char *agent_watch_type(uint32_t mask)
{
	if (mask & (IN_CREATE | IN_MOVED_TO))
		return "create";
	if (mask & IN_MODIFY)
		return "write";
	if (mask & (IN_DELETE | IN_DELETE_SELF))
		return "remove";
	if (mask & (IN_MOVED_FROM | IN_MOVE_SELF))
		return "rename";
	if (mask & IN_ATTRIB)
		return "chmod";
	return NULL;
}

__attribute__((format(printf, 3, 4))) static int stop(struct watch *w, int err, const char *fmt,
                                                      ...)
{
	if (!w->err) {
		w->err = err;
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(w->msg, sizeof(w->msg), fmt, ap);
		va_end(ap);
	}
	return -err;
}

/* rel + "/" + name (or name alone at the top), malloc'ed. */
static char *join(const char *rel, const char *name)
{
	char *out;
	if (asprintf(&out, "%s%s%s", rel, rel[0] ? "/" : "", name) < 0)
		return NULL;
	return out;
}

static struct wdir *find(struct watch *w, int wd)
{
	for (size_t i = 0; i < w->n; i++)
		if (w->dirs[i].wd == wd)
			return &w->dirs[i];
	return NULL;
}

static void forget(struct watch *w, struct wdir *d)
{
	free(d->rel);
	*d = w->dirs[--w->n];
}

/* Whether rel is prefix or lies under it. */
static bool under(const char *rel, const char *prefix)
{
	size_t n = strlen(prefix);
	return !strncmp(rel, prefix, n) && (rel[n] == 0 || rel[n] == '/');
}

static size_t depth(const char *rel)
{
	size_t k = rel[0] ? 1 : 0;
	for (const char *p = rel; *p; p++)
		k += *p == '/';
	return k;
}

/* The table entry of wd: added, or renamed (inotify gives a folder seen
 * again its old wd). */
static int table_put(struct watch *w, int wd, const char *rel)
{
	struct wdir *d = find(w, wd);
	char *r = strdup(rel);
	if (!r)
		return stop(w, ENOMEM, "%s", "out of memory");
	if (d) {
		free(d->rel);
		d->rel = r;
		return 0;
	}
	if (w->n == WATCH_DIRS_MAX) {
		free(r);
		return stop(w, ENOSPC, "more than %d folders under %.200s", WATCH_DIRS_MAX,
		            w->root);
	}
	if (w->n == w->cap) {
		size_t cap = w->cap ? w->cap * 2 : 16;
		struct wdir *nd = realloc(w->dirs, cap * sizeof(*nd));
		if (!nd) {
			free(r);
			return stop(w, ENOMEM, "%s", "out of memory");
		}
		w->dirs = nd;
		w->cap = cap;
	}
	w->dirs[w->n++] = (struct wdir){ .wd = wd, .rel = r };
	return 0;
}

/* Watches the folder rel (not the top one), never through a symlink. */
static int dir_add(struct watch *w, const char *rel)
{
	char path[PATH_MAX];
	if ((size_t)snprintf(path, sizeof(path), "%s/%s", w->root, rel) >= sizeof(path))
		return stop(w, ENAMETOOLONG, "a path under %.200s is too long", w->root);
	int wd = inotify_add_watch(w->ifd, path, WATCH_EVENTS | IN_ONLYDIR | IN_DONT_FOLLOW);
	if (wd < 0) {
		if (errno == ENOENT || errno == ENOTDIR || errno == EACCES)
			return 0; /* gone again, or not ours to see: nothing to follow */
		return stop(w, errno, "inotify_add_watch: %s", strerror(errno));
	}
	return table_put(w, wd, rel);
}

/* A JSON string of name: as it is when UTF-8, else with bytes outside
 * ASCII as '?'. */
static json_t *name_string(const char *name)
{
	json_t *v = json_string(name);
	if (v)
		return v;
	char *t = strdup(name);
	if (!t)
		return NULL;
	for (char *p = t; *p; p++)
		if ((unsigned char)*p >= 0x80)
			*p = '?';
	v = json_string(t);
	free(t);
	return v;
}

static int send_event(struct watch *w, const char *name, const char *type)
{
	if (w->last_type == type && w->last_name && !strcmp(w->last_name, name))
		return 0;
	json_t *o = json_pack("{s:I, s:o*, s:s}", "id", (json_int_t)w->id, "name",
	                      name_string(name), "type", type);
	if (!o)
		return stop(w, ENOMEM, "%s", "out of memory");
	int r = proto_send_json(w->c->fd, PROTO_WATCH_EVENT, w->id, o);
	json_decref(o);
	if (r < 0)
		return r; /* the connection broke: nothing more to say on it */
	free(w->last_name);
	w->last_name = strdup(name);
	w->last_type = type;
	return 0;
}

static bool is_dir_entry(int dfd, const struct dirent *e)
{
	if (e->d_type != DT_UNKNOWN)
		return e->d_type == DT_DIR;
	struct stat st;
	return fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
}

/* Watches the folder rel and, recursively, the folders in it; with emit,
 * what is already in them is reported as created (it may have come before
 * the watch did). */
static int tree_add(struct watch *w, const char *rel, bool emit)
{
	if (depth(rel) > WATCH_DEPTH_MAX)
		return stop(w, ELOOP, "folders nest more than %d levels under %.200s",
		            WATCH_DEPTH_MAX, w->root);
	int r = rel[0] ? dir_add(w, rel) : 0;
	if (r < 0)
		return r;
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/%s", w->root, rel);
	DIR *dir = opendir(path);
	if (!dir)
		return 0; /* gone again */
	struct dirent *e;
	while (r == 0 && (e = readdir(dir))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		char *sub = join(rel, e->d_name);
		if (!sub) {
			r = stop(w, ENOMEM, "%s", "out of memory");
			break;
		}
		if (emit)
			r = send_event(w, sub, "create");
		if (r == 0 && is_dir_entry(dirfd(dir), e))
			r = tree_add(w, sub, emit);
		free(sub);
	}
	closedir(dir);
	return r;
}

/* Stops following rel and the folders under it. */
static void tree_drop(struct watch *w, const char *rel)
{
	for (size_t i = 0; i < w->n;) {
		if (w->dirs[i].wd != w->root_wd && under(w->dirs[i].rel, rel)) {
			inotify_rm_watch(w->ifd, w->dirs[i].wd);
			forget(w, &w->dirs[i]);
		} else {
			i++;
		}
	}
}

/* A folder moved within the watch: its watches keep going, renamed. */
static int tree_rename(struct watch *w, const char *from, const char *to)
{
	size_t fl = strlen(from);
	for (size_t i = 0; i < w->n; i++) {
		if (w->dirs[i].wd == w->root_wd || !under(w->dirs[i].rel, from))
			continue;
		char *r = join(to, w->dirs[i].rel[fl] ? w->dirs[i].rel + fl + 1 : "");
		if (!r)
			return stop(w, ENOMEM, "%s", "out of memory");
		size_t n = strlen(r);
		if (n && r[n - 1] == '/')
			r[n - 1] = 0;
		free(w->dirs[i].rel);
		w->dirs[i].rel = r;
	}
	return 0;
}

static void move_settle(struct watch *w)
{
	if (w->move_rel)
		tree_drop(w, w->move_rel);
	free(w->move_rel);
	w->move_rel = NULL;
}

/* A new or moved folder of a recursive watch. */
static int follow_dir(struct watch *w, const struct inotify_event *ev, const char *name)
{
	if (ev->mask & IN_MOVED_FROM) {
		move_settle(w);
		w->move_cookie = ev->cookie;
		w->move_rel = strdup(name);
		return w->move_rel ? 0 : stop(w, ENOMEM, "%s", "out of memory");
	}
	if ((ev->mask & IN_MOVED_TO) && w->move_rel && w->move_cookie == ev->cookie) {
		int r = tree_rename(w, w->move_rel, name);
		free(w->move_rel);
		w->move_rel = NULL;
		return r;
	}
	if (ev->mask & (IN_CREATE | IN_MOVED_TO))
		return tree_add(w, name, true);
	return 0;
}

static int handle(struct watch *w, const struct inotify_event *ev)
{
	if (ev->mask & IN_Q_OVERFLOW)
		return stop(w, EOVERFLOW, "%s", "events were lost: the queue overflowed");
	if (ev->wd == w->root_wd && (ev->mask & (IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF)))
		return stop(w, ENOENT, "%.200s was removed or moved", w->root);
	struct wdir *d = find(w, ev->wd);
	if (!d)
		return 0;
	if (ev->mask & IN_IGNORED) {
		forget(w, d);
		return 0;
	}
	if (!ev->len || !ev->name[0])
		return 0; /* a folder's own events: its parent reports them */
	char *name = join(d->rel, ev->name);
	if (!name)
		return stop(w, ENOMEM, "%s", "out of memory");
	const char *type = agent_watch_type(ev->mask);
	int r = type ? send_event(w, name, type) : 0;
	if (r == 0 && w->recursive && (ev->mask & IN_ISDIR))
		r = follow_dir(w, ev, name);
	free(name);
	return r;
}

/* Reads what inotify has and reports it. */
static int drain(struct watch *w)
{
	char *buf = w->buf;
	ssize_t n = read(w->ifd, buf, WATCH_BUF);
	if (n < 0)
		return errno == EAGAIN || errno == EINTR
		           ? 0
		           : stop(w, errno, "inotify: %s", strerror(errno));
	int r = 0;
	for (ssize_t off = 0; r == 0 && off + (ssize_t)sizeof(struct inotify_event) <= n;) {
		const struct inotify_event *ev = (const void *)(buf + off);
		off += (ssize_t)sizeof(*ev) + ev->len;
		if (off > n)
			break;
		r = handle(w, ev);
	}
	move_settle(w);
	free(w->last_name);
	w->last_name = NULL;
	w->last_type = NULL;
	return r;
}

static int serve(struct watch *w)
{
	for (;;) {
		struct pollfd p[2] = { { .fd = w->ifd, .events = POLLIN },
			               { .fd = w->c->fd, .events = POLLIN | POLLRDHUP } };
		if (poll(p, 2, WATCH_TICK_MS) < 0 && errno != EINTR)
			return stop(w, errno, "poll: %s", strerror(errno));
		if (p[1].revents) {
			int r = agent_conn_check(w->c, "a watch");
			if (r < 0)
				return r;
		}
		if (p[0].revents & POLLIN) {
			int r = drain(w);
			if (r < 0)
				return r;
		}
	}
}

static int watch_start(struct watch *w, const struct agent_req *req)
{
	w->buf = aligned_alloc(__alignof__(struct inotify_event), WATCH_BUF);
	if (!w->buf)
		return stop(w, ENOMEM, "%s", "out of memory");
	w->ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (w->ifd < 0)
		return stop(w, errno, "inotify_init1: %s", strerror(errno));
	w->root_wd = inotify_add_watch(w->ifd, w->root, WATCH_EVENTS | IN_ONLYDIR);
	if (w->root_wd < 0)
		return stop(w, errno, "cannot watch %.200s: %s", req->u.watch.path,
		            strerror(errno));
	int r = table_put(w, w->root_wd, "");
	if (r < 0 || !w->recursive)
		return r;
	return tree_add(w, "", false);
}

int agent_watch(struct agent_conn *c, const struct agent_req *req)
{
	if (atomic_fetch_add(&active, 1) >= WATCH_ACTIVE_MAX) {
		atomic_fetch_sub(&active, 1);
		return agent_conn_fail(c, req->id, EMFILE,
		                       "%d watches are open already: close one first",
		                       WATCH_ACTIVE_MAX);
	}
	struct watch w = { .c = c,
		           .id = req->id,
		           .ifd = -1,
		           .root_wd = -1,
		           .recursive = req->u.watch.recursive,
		           .root = req->u.watch.path };
	int r = watch_start(&w, req);
	if (r == 0) {
		r = agent_conn_ok(c, req->id, json_pack("{s:I}", "id", (json_int_t)req->id));
		if (r == 0)
			r = serve(&w);
	}
	/* An end of its own (not the connection's) is said in an ERROR; the
	 * connection goes on. */
	if (w.err)
		r = agent_conn_fail(c, req->id, w.err, "watch: %s", w.msg);
	else if (r == -ECONNRESET)
		r = 0;
	for (size_t i = 0; i < w.n; i++)
		free(w.dirs[i].rel);
	free(w.dirs);
	free(w.move_rel);
	free(w.last_name);
	free(w.buf);
	if (w.ifd >= 0)
		close(w.ifd);
	atomic_fetch_sub(&active, 1);
	return r;
}
