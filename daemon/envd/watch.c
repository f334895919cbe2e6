/* filesystem.Filesystem's watches over the agent's PROTO_WATCH
 * (lib/agent/watch.h).  WatchDir is a server stream: an MHD callback
 * reader turns each event into a Connect frame, waiting at most until the
 * next keepalive (and the call's Connect-Timeout-Ms).  A polled watcher
 * keeps its agent connection in a table until RemoveWatcher, its sandbox
 * ends, or it is not polled for ENVD_WATCHER_IDLE_MS; meanwhile its events
 * wait in the connection (the agent stops reading inotify when that is
 * full, and inotify's own bounded queue ends the watch with "events were
 * lost" when it overflows). */
#include "daemon/envd/watch.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "clock.h"
#include "cove.h"
#include "daemon/envd/messages.h"
#include "daemon/http/connect.h"
#include "daemon/sandboxes/sandbox.h"
#include "daemon/sandboxes/table.h"

/* An event as filesystem.proto's FilesystemEvent {name, type}. */
static json_t *fs_event(const struct cove_watch_event *ev)
{
	static const char *const types[] = {
		[COVE_WATCH_CREATE] = "EVENT_TYPE_CREATE",
		[COVE_WATCH_WRITE] = "EVENT_TYPE_WRITE",
		[COVE_WATCH_REMOVE] = "EVENT_TYPE_REMOVE",
		[COVE_WATCH_RENAME] = "EVENT_TYPE_RENAME",
		[COVE_WATCH_CHMOD] = "EVENT_TYPE_CHMOD",
	};
	return json_pack("{s:s, s:s}", "name", ev->name, "type", types[ev->kind]);
}

/* ---- WatchDir ----------------------------------------------------------- */

struct wstream {
	struct coved_sb *sb; /* a reference of its own */
	int fd;              /* the agent's watch */
	struct envd_out o;
	int64_t deadline, next_keepalive; /* mono_ms(); deadline 0 = none */
	int keepalive_ms;
};

static void finish(struct wstream *s, const char *code, const char *msg)
{
	s->o.finished = true;
	s->o.off = 0;
	s->o.buf = connect_end_frame(code, msg, &s->o.len);
	if (!s->o.buf)
		s->o.len = 0;
}

/* The next frame into s->o.buf, waiting for the agent (not at all when
 * nowait). */
static void next_frame(struct wstream *s, bool nowait)
{
	int64_t now = mono_ms();
	if (s->deadline && now >= s->deadline) {
		finish(s, "deadline_exceeded", "the call's timeout has passed");
		return;
	}
	int64_t until = s->next_keepalive;
	if (s->deadline && s->deadline < until)
		until = s->deadline;
	int wait = until > now && !nowait ? (int)(until - now) : 0;
	struct cove_watch_event ev;
	char err[256];
	int r = cove_watch_next(s->fd, wait, &ev, err, sizeof(err));
	if (r < 0) {
		finish(s, r == -ENOENT ? "not_found" : "unavailable", err);
		return;
	}
	json_t *m = NULL;
	if (ev.kind) {
		m = json_pack("{s:o}", "filesystem", fs_event(&ev));
	} else if (mono_ms() >= s->next_keepalive) {
		s->next_keepalive = mono_ms() + s->keepalive_ms;
		m = json_pack("{s:{}}", "keepalive");
	}
	cove_watch_event_free(&ev);
	if (m) {
		s->o.buf = connect_frame(m, 0, &s->o.len);
		s->o.off = 0;
		if (!s->o.buf)
			finish(s, "resource_exhausted", "out of memory");
	}
}

static void next_cb(void *cls, bool nowait)
{
	next_frame(cls, nowait);
}

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	(void)pos;
	struct wstream *s = cls;
	return envd_out_read(&s->o, next_cb, s, buf, max);
}

static void stream_free(void *cls)
{
	struct wstream *s = cls;
	close(s->fd); /* ends the agent's watch */
	free(s->o.buf);
	coved_sb_unref(s->sb);
	free(s);
}

/* Opens the agent's watch named by body: its fd, or -1 with a Connect
 * code and message. */
static int watch_open(struct envd_req *r, json_t *body, const char **code, char *msg, size_t msglen)
{
	char path[ENVD_PATH_MAX + 1];
	bool recursive;
	if (envd_parse_watch(body, path, sizeof(path), &recursive, msg, msglen) < 0) {
		*code = "invalid_argument";
		return -1;
	}
	struct cove_sandbox *sb = envd_cove(r, code, msg, msglen);
	if (!sb)
		return -1;
	int fd = cove_watch_begin(sb, path, recursive, msg, msglen);
	if (fd < 0) {
		*code = connect_code_from_errno(fd);
		return -1;
	}
	return fd;
}

enum MHD_Result envd_fs_watch_dir(struct envd_req *r, struct MHD_Connection *c, json_t *body)
{
	const char *code = NULL;
	char msg[512];
	int fd = watch_open(r, body, &code, msg, sizeof(msg));
	if (fd < 0)
		return envd_stream_error(c, code, msg);
	struct wstream *s = calloc(1, sizeof(*s));
	if (!s) {
		close(fd);
		return MHD_NO;
	}
	s->fd = fd;
	s->sb = coved_sb_find(r->d, coved_sb_id(r->sb)); /* the stream outlives the request */
	if (!s->sb) {
		close(fd);
		free(s);
		return envd_stream_error(c, "unavailable", "the sandbox went away");
	}
	s->keepalive_ms = envd_keepalive_ms(c);
	s->next_keepalive = mono_ms() + s->keepalive_ms;
	int64_t timeout = envd_header_ms(c, "Connect-Timeout-Ms");
	s->deadline = timeout ? mono_ms() + timeout : 0;
	s->o.buf = connect_frame(json_pack("{s:{}}", "start"), 0, &s->o.len);
	if (!s->o.buf) {
		stream_free(s);
		return MHD_NO;
	}
	struct MHD_Response *resp = MHD_create_response_from_callback(
	    MHD_SIZE_UNKNOWN, ENVD_STREAM_BLOCK, stream_read, s, stream_free);
	if (!resp) {
		stream_free(s);
		return MHD_NO;
	}
	MHD_add_response_header(resp, "Content-Type", "application/connect+json");
	enum MHD_Result ret = MHD_queue_response(c, MHD_HTTP_OK, resp);
	MHD_destroy_response(resp);
	return ret;
}

/* ---- polled watchers ---------------------------------------------------- */

struct watcher {
	char id[ENVD_WATCHER_ID_MAX + 1];
	char sb_id[COVED_ID_LEN + 1];
	int fd;
	int64_t used; /* mono_ms() of its last poll */
	bool busy;    /* a GetWatcherEvents reads it (outside the lock) */
	int ended;    /* -errno once the watch ended with events still to give */
	char why[256];
};

static pthread_mutex_t wmu = PTHREAD_MUTEX_INITIALIZER;
static struct watcher watchers[ENVD_WATCHERS_MAX];
static size_t nwatchers;

/* Takes watchers[i] out of the table (wmu held); closes its fd unless a
 * reader has it. */
static void unlist(size_t i)
{
	if (!watchers[i].busy)
		close(watchers[i].fd);
	/* else the reader finds it gone and closes the fd it holds */
	watchers[i] = watchers[--nwatchers];
}

/* Drops idle watchers and those of sandboxes no longer running (wmu
 * held; the sandbox lookups take the table's own lock). */
static void sweep(struct coved *d)
{
	int64_t now = mono_ms();
	for (size_t i = 0; i < nwatchers;) {
		struct coved_sb *sb = coved_sb_find(d, watchers[i].sb_id);
		bool live = sb && coved_sb_cove(sb);
		if (sb)
			coved_sb_unref(sb);
		if (!watchers[i].busy && (!live || now - watchers[i].used > ENVD_WATCHER_IDLE_MS))
			unlist(i);
		else
			i++;
	}
}

static struct watcher *wfind(const char *id, const char *sb_id)
{
	for (size_t i = 0; i < nwatchers; i++)
		if (!strcmp(watchers[i].id, id) && !strcmp(watchers[i].sb_id, sb_id))
			return &watchers[i];
	return NULL;
}

static int new_watcher_id(char *out)
{
	uint8_t raw[10];
	if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw))
		return -EIO;
	for (size_t i = 0; i < sizeof(raw); i++)
		snprintf(out + 2 * i, 3, "%02x", raw[i]);
	return 0;
}

int envd_fs_create_watcher(struct envd_req *r, struct MHD_Connection *c, json_t *body,
                           json_t **reply, const char **code, char *msg, size_t msglen)
{
	(void)c;
	int fd = watch_open(r, body, code, msg, msglen);
	if (fd < 0)
		return -1;
	struct watcher w = { .fd = fd, .used = mono_ms() };
	snprintf(w.sb_id, sizeof(w.sb_id), "%s", coved_sb_id(r->sb));
	if (new_watcher_id(w.id) < 0) {
		close(fd);
		*code = "internal";
		snprintf(msg, msglen, "no random bytes for a watcher id");
		return -1;
	}
	pthread_mutex_lock(&wmu);
	sweep(r->d);
	bool room = nwatchers < ENVD_WATCHERS_MAX;
	if (room)
		watchers[nwatchers++] = w;
	pthread_mutex_unlock(&wmu);
	if (!room) {
		close(fd);
		*code = "resource_exhausted";
		snprintf(msg, msglen, "coved holds %d watchers already: remove one first",
		         ENVD_WATCHERS_MAX);
		return -1;
	}
	*reply = json_pack("{s:s}", "watcherId", w.id);
	return 0;
}

/* Reads what the watch has now into events: 0, or the watch's end. */
static int drain(int fd, json_t *events, char *msg, size_t msglen)
{
	while (json_array_size(events) < ENVD_WATCH_BATCH) {
		struct cove_watch_event ev;
		int r = cove_watch_next(fd, 0, &ev, msg, msglen);
		if (r < 0 || !ev.kind)
			return r;
		json_array_append_new(events, fs_event(&ev));
		cove_watch_event_free(&ev);
	}
	return 0;
}

int envd_fs_watcher_events(struct envd_req *r, struct MHD_Connection *c, json_t *body,
                           json_t **reply, const char **code, char *msg, size_t msglen)
{
	(void)c;
	const char *id;
	if (envd_parse_watcher_id(body, &id, msg, msglen) < 0) {
		*code = "invalid_argument";
		return -1;
	}
	pthread_mutex_lock(&wmu);
	struct watcher *w = wfind(id, coved_sb_id(r->sb));
	if (w && w->ended && !w->busy) {
		*code = w->ended == -ENOENT ? "not_found" : connect_code_from_errno(w->ended);
		snprintf(msg, msglen, "%s", w->why);
		unlist((size_t)(w - watchers));
		pthread_mutex_unlock(&wmu);
		return -1;
	}
	int fd = w && !w->busy ? w->fd : -1;
	if (fd >= 0) {
		w->busy = true;
		w->used = mono_ms();
	}
	pthread_mutex_unlock(&wmu);
	if (fd < 0) {
		*code = w ? "aborted" : "not_found";
		snprintf(msg, msglen, w ? "watcher %s is being read already" : "no watcher %s", id);
		return -1;
	}
	json_t *events = json_array();
	int rc = events ? drain(fd, events, msg, msglen) : -ENOMEM;
	pthread_mutex_lock(&wmu);
	w = wfind(id, coved_sb_id(r->sb));
	bool dropped = !w;
	if (w) {
		w->busy = false;
		/* A watch that ended: said now, or after the events it gave. */
		if (rc < 0 && json_array_size(events) == 0) {
			unlist((size_t)(w - watchers));
		} else if (rc < 0) {
			w->ended = rc;
			snprintf(w->why, sizeof(w->why), "%s", msg);
		}
	}
	pthread_mutex_unlock(&wmu);
	if (dropped)
		close(fd);
	if (rc < 0 && json_array_size(events) == 0) {
		json_decref(events);
		*code = rc == -ENOENT ? "not_found" : connect_code_from_errno(rc);
		return -1;
	}
	*reply = json_pack("{s:o}", "events", events);
	return 0;
}

int envd_fs_remove_watcher(struct envd_req *r, struct MHD_Connection *c, json_t *body,
                           json_t **reply, const char **code, char *msg, size_t msglen)
{
	(void)c;
	const char *id;
	if (envd_parse_watcher_id(body, &id, msg, msglen) < 0) {
		*code = "invalid_argument";
		return -1;
	}
	pthread_mutex_lock(&wmu);
	struct watcher *w = wfind(id, coved_sb_id(r->sb));
	if (w)
		unlist((size_t)(w - watchers));
	pthread_mutex_unlock(&wmu);
	if (!w) {
		*code = "not_found";
		snprintf(msg, msglen, "no watcher %s", id);
		return -1;
	}
	*reply = json_object();
	return 0;
}

void envd_watchers_fini(void)
{
	pthread_mutex_lock(&wmu);
	while (nwatchers)
		unlist(nwatchers - 1);
	pthread_mutex_unlock(&wmu);
}
