/* cove-vmm's control socket (--api PATH): the client writes one JSON object
 * a line, the VMM answers one JSON object a line ({"ok": true, ...} or
 * {"ok": false, "error": "..."}).  cove_snapshot and the snapshot note
 * (what `cove ls` shows for restored sandboxes) live here too. */
#include <errno.h>
#include <jansson.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "registry.h"
#include "sandbox_priv.h"

#define API_REPLY_MAX       (64 * 1024)
#define API_STATUS_MS       500
#define API_SNAPSHOT_MS     (10 * 60 * 1000)
#define SNAPSHOT_NOTE       "cove-sandbox.json"
#define SNAPSHOT_STOP_GRACE 10000

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int api_connect(const char *sock, char *err, size_t errlen)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	size_t plen = strlen(sock);
	if (plen >= sizeof(sa.sun_path))
		return cove_fail(err, errlen, -ENAMETOOLONG, "socket path '%s' is too long", sock);
	memcpy(sa.sun_path, sock, plen + 1);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return cove_fail(err, errlen, -errno, "socket: %s", strerror(errno));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int e = errno;
		close(fd);
		return cove_fail(err, errlen, -e, "cannot reach cove-vmm's control socket %s: %s",
		                 sock, strerror(e));
	}
	return fd;
}

/* Sends text (one line) and reads one line back into a malloc'ed string. */
static int api_exchange(int fd, const char *text, int timeout_ms, char **line, char *err,
                        size_t errlen)
{
	size_t len = strlen(text);
	for (size_t off = 0; off < len;) {
		ssize_t n = send(fd, text + off, len - off, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return cove_fail(err, errlen, -errno, "writing to cove-vmm: %s",
			                 strerror(errno));
		off += (size_t)n;
	}
	char *buf = malloc(API_REPLY_MAX);
	if (!buf)
		return cove_fail(err, errlen, -ENOMEM, "out of memory");
	size_t got = 0;
	int64_t deadline = mono_ms() + timeout_ms;
	for (;;) {
		int64_t left = deadline - mono_ms();
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int k = left > 0 ? poll(&p, 1, (int)left) : 0;
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			free(buf);
			return k < 0
			           ? cove_fail(err, errlen, -errno, "poll: %s", strerror(errno))
			           : cove_fail(err, errlen, -ETIMEDOUT,
			                       "cove-vmm did not answer within %d ms", timeout_ms);
		}
		ssize_t n = read(fd, buf + got, API_REPLY_MAX - 1 - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			int e = n < 0 ? errno : ECONNRESET;
			free(buf);
			return cove_fail(err, errlen, -e,
			                 "cove-vmm closed its control connection%s%s",
			                 n < 0 ? ": " : "", n < 0 ? strerror(e) : "");
		}
		char *nl = memchr(buf + got, '\n', (size_t)n);
		got += (size_t)n;
		if (nl) {
			*nl = 0;
			*line = buf;
			return 0;
		}
		if (got == API_REPLY_MAX - 1) {
			free(buf);
			return cove_fail(err, errlen, -EMSGSIZE, "cove-vmm's answer is too long");
		}
	}
}

int vmm_api_call(const char *sock, json_t *req, json_t **reply, int timeout_ms, char *err,
                 size_t errlen)
{
	if (reply)
		*reply = NULL;
	char *text = req ? json_dumps(req, JSON_COMPACT) : NULL;
	char *line = NULL;
	json_decref(req);
	if (!text)
		return cove_fail(err, errlen, -ENOMEM, "cannot encode a request");
	char *framed = NULL;
	int r = asprintf(&framed, "%s\n", text) < 0 ? -ENOMEM : 0;
	free(text);
	if (r < 0)
		return cove_fail(err, errlen, r, "out of memory");
	int fd = api_connect(sock, err, errlen);
	if (fd < 0) {
		free(framed);
		return fd;
	}
	r = api_exchange(fd, framed, timeout_ms, &line, err, errlen);
	close(fd);
	free(framed);
	if (r < 0)
		return r;
	json_t *o = json_loads(line, JSON_REJECT_DUPLICATES, NULL);
	free(line);
	json_t *ok = o ? json_object_get(o, "ok") : NULL;
	if (!json_is_object(o) || !json_is_boolean(ok)) {
		json_decref(o);
		return cove_fail(err, errlen, -EPROTO, "malformed answer from cove-vmm");
	}
	if (!json_is_true(ok)) {
		json_t *e = json_object_get(o, "error");
		r = cove_fail(err, errlen, -EIO, "cove-vmm: %s",
		              json_is_string(e) ? json_string_value(e) : "request failed");
		json_decref(o);
		return r;
	}
	if (reply)
		*reply = o;
	else
		json_decref(o);
	return 0;
}

int vmm_api_paused(const char *sock, bool *paused)
{
	json_t *reply;
	*paused = false;
	int r =
	    vmm_api_call(sock, json_pack("{s:s}", "op", "status"), &reply, API_STATUS_MS, NULL, 0);
	if (r < 0)
		return r;
	json_t *state = json_object_get(reply, "state");
	*paused = json_is_string(state) && !strcmp(json_string_value(state), "paused");
	json_decref(reply);
	return 0;
}

/* Makes path absolute for a directory that must not exist yet: its parent
 * is resolved (symlinks too), its last component kept. */
static int new_dir_path(const char *path, char *out, size_t len, char *err, size_t errlen)
{
	char buf[PATH_MAX], parent[PATH_MAX];
	if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
		return cove_fail(err, errlen, -ENAMETOOLONG, "path '%s' is too long", path);
	size_t n = strlen(buf);
	while (n > 1 && buf[n - 1] == '/')
		buf[--n] = 0;
	char *slash = strrchr(buf, '/');
	const char *leaf = slash ? slash + 1 : buf;
	if (!*leaf || !strcmp(leaf, ".") || !strcmp(leaf, ".."))
		return cove_fail(err, errlen, -EINVAL, "'%s' is not a new directory's path", path);
	if (slash)
		*slash = 0;
	const char *dir = !slash ? "." : slash == buf ? "/" : buf;
	if (!realpath(dir, parent))
		return cove_fail(err, errlen, -errno, "'%s': %s", dir, strerror(errno));
	if (snprintf(out, len, "%s/%s", strcmp(parent, "/") ? parent : "", leaf) >= (int)len)
		return cove_fail(err, errlen, -ENAMETOOLONG, "path '%s' is too long", path);
	struct stat st;
	if (lstat(out, &st) == 0)
		return cove_fail(err, errlen, -EEXIST, "'%s' already exists", out);
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
	char path[PATH_MAX];
	if (o && snprintf(path, sizeof(path), "%s/%s", snapdir, SNAPSHOT_NOTE) < (int)sizeof(path))
		(void)json_dump_file(o, path, JSON_COMPACT);
	json_decref(o);
	free(m);
}

void snapshot_note_read(const char *snapdir, unsigned int *cpus, uint64_t *memory_mib)
{
	char path[PATH_MAX];
	*cpus = 0;
	*memory_mib = 0;
	if (snprintf(path, sizeof(path), "%s/%s", snapdir, SNAPSHOT_NOTE) >= (int)sizeof(path))
		return;
	json_t *o = json_load_file(path, JSON_REJECT_DUPLICATES, NULL);
	json_t *c = o ? json_object_get(o, "cpus") : NULL;
	json_t *mem = o ? json_object_get(o, "memory_mib") : NULL;
	if (json_is_integer(c) && json_integer_value(c) > 0 && json_integer_value(c) <= 1024)
		*cpus = (unsigned int)json_integer_value(c);
	if (json_is_integer(mem) && json_integer_value(mem) > 0)
		*memory_mib = (uint64_t)json_integer_value(mem);
	json_decref(o);
}

int cove_snapshot(struct cove_sandbox *sb, const char *dir, bool stop_after, char *err,
                  size_t errlen)
{
	if (!sb || sb->stopped)
		return cove_fail(err, errlen, -ESRCH, "the sandbox is stopped");
	if (!dir || !*dir)
		return cove_fail(err, errlen, -EINVAL, "no snapshot directory given");
	char abs[PATH_MAX];
	int r = new_dir_path(dir, abs, sizeof(abs), err, errlen);
	if (r < 0)
		return r;
	json_t *req = json_pack("{s:s, s:s, s:s}", "op", "snapshot", "dir", abs, "then",
	                        stop_after ? "stop" : "resume");
	if ((r = vmm_api_call(sb->api, req, NULL, API_SNAPSHOT_MS, err, errlen)) < 0)
		return r;
	snapshot_note_write(sb, abs);
	if (stop_after)
		sandbox_finish(sb, SNAPSHOT_STOP_GRACE);
	return 0;
}

int cove_vmm_stats(struct cove_sandbox *sb, char **json, char *err, size_t errlen)
{
	*json = NULL;
	json_t *reply = NULL;
	int r =
	    vmm_api_call(sb->api, json_pack("{s:s}", "op", "stats"), &reply, 10000, err, errlen);
	if (r < 0)
		return r;
	*json = json_dumps(reply, JSON_COMPACT);
	json_decref(reply);
	return *json ? 0 : cove_fail(err, errlen, -ENOMEM, "out of memory");
}
