/* Talking to cove-agent: connection set-up, requests, file transfer. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "clock.h"
#include "errf.h"
#include "io.h"
#include "lib/agent/agent_client.h"
#include "lib/agent/conn.h"
#include "lib/agent/notice.h"
#include "lib/base/cove_types.h"
#include "lib/base/handle.h"
#include "proto.h"

#define FILE_CHUNK (256 * 1024)
/* The last OK of an upload comes after the guest synced the file. */
#define FILE_SYNC_MS 120000

int agent_connect_cancel(struct cove_sandbox *sb, int64_t deadline, volatile int *cancel, char *err,
                         size_t errlen)
{
	/* A restore notice still in flight is answered before anything else
	 * talks to the agent (notice.c). */
	int r = notice_settle(sb, err, errlen);
	return r < 0 ? r : agent_connect_unsettled(sb, deadline, cancel, err, errlen);
}

int agent_connect_until(struct cove_sandbox *sb, int64_t deadline, char *err, size_t errlen)
{
	return agent_connect_cancel(sb, deadline, NULL, err, errlen);
}

int cove_agent_connect(struct cove_sandbox *sb, char *err, size_t errlen)
{
	return agent_connect_until(sb, mono_ms() + AGENT_STEP_MS, err, errlen);
}

int cove_ping(struct cove_sandbox *sb, char *err, size_t errlen)
{
	int fd = cove_agent_connect(sb, err, errlen);
	if (fd < 0)
		return fd;
	int r = cove_send_json(fd, PROTO_PING, json_object(), err, errlen);
	if (!r)
		r = cove_expect(fd, PROTO_PONG, NULL, NULL, err, errlen);
	close(fd);
	return r;
}

int cove_ping_until(struct cove_sandbox *sb, int64_t deadline, char *err, size_t errlen)
{
	int64_t t0 = mono_ms();
	int fd = agent_connect_until(sb, deadline, err, errlen);
	if (fd < 0)
		return fd;
	int r = proto_send_until(fd, PROTO_PING, 0, "{}", 2, deadline);
	if (r == -ETIMEDOUT)
		r = agent_timeout(t0, err, errlen);
	else if (r < 0)
		r = errf(err, errlen, r, "ping: %s", strerror(-r));
	else
		r = cove_expect_until(fd, PROTO_PONG, NULL, NULL, deadline, err, errlen);
	close(fd);
	return r;
}

bool cove_user_valid(const char *user)
{
	size_t n = user ? strnlen(user, COVE_USER_MAX + 1) : 0;
	if (n == 0 || n > COVE_USER_MAX)
		return false;
	const char *colon = strchr(user, ':');
	if (colon && (colon == user || !colon[1] || strchr(colon + 1, ':')))
		return false;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)user[i] <= ' ' || (unsigned char)user[i] >= 0x7f)
			return false;
	return true;
}

int agent_request(struct cove_sandbox *sb, uint16_t type, json_t *req, json_t **reply, char *err,
                  size_t errlen)
{
	if (reply)
		*reply = NULL;
	int fd = cove_agent_connect(sb, err, errlen);
	if (fd < 0) {
		json_decref(req);
		return fd;
	}
	int r = cove_send_json(fd, type, req, err, errlen);
	uint8_t *payload = NULL;
	if (r == 0)
		r = cove_expect(fd, PROTO_OK, &payload, NULL, err, errlen);
	if (r == 0 && reply && !(*reply = payload ? json_loads((char *)payload, 0, NULL) : NULL))
		r = errf(err, errlen, -EPROTO, "the agent's reply is not JSON");
	free(payload);
	close(fd);
	return r;
}

int cove_user_lookup(struct cove_sandbox *sb, const char *user, long *uid, long *gid, char *err,
                     size_t errlen)
{
	if (!cove_user_valid(user))
		return errf(err, errlen, -EINVAL, "user '%.64s' is not a user[:group]",
		            user ? user : "");
	json_t *o = NULL;
	int r = agent_request(sb, PROTO_USER, json_pack("{s:s}", "user", user), &o, err, errlen);
	if (r < 0)
		return r;
	json_t *u = json_object_get(o, "uid"), *g = json_object_get(o, "gid");
	if (!json_is_integer(u) || !json_is_integer(g) || json_integer_value(u) < 0 ||
	    json_integer_value(u) >= UINT32_MAX || json_integer_value(g) < 0 ||
	    json_integer_value(g) >= UINT32_MAX) {
		r = errf(err, errlen, -EPROTO, "the agent's reply has no valid uid and gid");
	} else {
		*uid = (long)json_integer_value(u);
		*gid = (long)json_integer_value(g);
	}
	json_decref(o);
	return r;
}

/* uid and gid for a request: -1 (unchanged) or a valid id. */
static bool id_ok(long id)
{
	return id == -1 || (id >= 0 && (unsigned long)id < UINT32_MAX);
}

/* {"uid", "gid"} of the ones given, into req. */
static json_t *with_owner(json_t *req, long uid, long gid)
{
	if (req && uid >= 0)
		json_object_set_new(req, "uid", json_integer(uid));
	if (req && gid >= 0)
		json_object_set_new(req, "gid", json_integer(gid));
	return req;
}

int cove_put_file(struct cove_sandbox *sb, const char *local, const char *guest, uint32_t mode,
                  char *err, size_t errlen)
{
	return cove_put_file_owned(sb, local, guest, mode, -1, -1, err, errlen);
}

int cove_mkdir(struct cove_sandbox *sb, const char *path, uint32_t mode, long uid, long gid,
               bool parents, char *err, size_t errlen)
{
	if (!path || path[0] != '/')
		return errf(err, errlen, -EINVAL, "'%.200s' is not an absolute path",
		            path ? path : "");
	if (mode > 07777 || !id_ok(uid) || !id_ok(gid))
		return errf(err, errlen, -EINVAL, "mkdir %.200s: mode, uid or gid out of range",
		            path);
	json_t *req =
	    json_pack("{s:s, s:i, s:b}", "path", path, "mode", (int)mode, "parents", (int)parents);
	if (!with_owner(req, uid, gid))
		return errf(err, errlen, -ENOMEM, "out of memory");
	return agent_request(sb, PROTO_MKDIR, req, NULL, err, errlen);
}

int cove_symlink(struct cove_sandbox *sb, const char *target, const char *path, long uid, long gid,
                 char *err, size_t errlen)
{
	if (!path || path[0] != '/')
		return errf(err, errlen, -EINVAL, "'%.200s' is not an absolute path",
		            path ? path : "");
	if (!target || !target[0])
		return errf(err, errlen, -EINVAL, "symlink %.200s: no target", path);
	if (!id_ok(uid) || !id_ok(gid))
		return errf(err, errlen, -EINVAL, "symlink %.200s: uid or gid out of range", path);
	json_t *req = json_pack("{s:s, s:s}", "path", path, "target", target);
	if (!with_owner(req, uid, gid))
		return errf(err, errlen, -ENOMEM, "out of memory");
	return agent_request(sb, PROTO_SYMLINK, req, NULL, err, errlen);
}

int cove_put_file_owned(struct cove_sandbox *sb, const char *local, const char *guest,
                        uint32_t mode, long uid, long gid, char *err, size_t errlen)
{
	if (mode > 07777 || !id_ok(uid) || !id_ok(gid))
		return errf(err, errlen, -EINVAL, "put %.200s: mode, uid or gid out of range",
		            guest);
	int in = open(local, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return errf(err, errlen, -errno, "cannot open '%s': %s", local, strerror(errno));
	struct stat st;
	if (fstat(in, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(in);
		return errf(err, errlen, -EINVAL, "'%s' is not a regular file", local);
	}
	if (mode == 0)
		mode = st.st_mode & 07777;
	int fd = cove_agent_connect(sb, err, errlen);
	if (fd < 0) {
		close(in);
		return fd;
	}
	char *buf = malloc(FILE_CHUNK);
	json_t *req =
	    with_owner(json_pack("{s:s, s:i}", "path", guest, "mode", (int)mode), uid, gid);
	int r = -ENOMEM;
	if (buf && req)
		r = cove_send_json(fd, PROTO_FILE_PUT, req, err, errlen);
	else
		json_decref(req);
	while (r == 0) {
		ssize_t n = read(in, buf, FILE_CHUNK);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = errf(err, errlen, -errno, "reading '%s': %s", local, strerror(errno));
			break;
		}
		/* Each chunk within AGENT_STEP_MS: an inactivity deadline. */
		int64_t t0 = mono_ms();
		r = proto_send_until(fd, PROTO_DATA, 0, buf, (uint32_t)n, t0 + AGENT_STEP_MS);
		if (r == -ETIMEDOUT)
			agent_timeout(t0, err, errlen);
		else if (r < 0)
			errf(err, errlen, r, "sending '%s': %s", local, strerror(-r));
		if (n == 0)
			break;
	}
	/* The guest writes and syncs the file before it answers. */
	if (r == 0)
		r = cove_expect_until(fd, PROTO_OK, NULL, NULL, mono_ms() + FILE_SYNC_MS, err,
		                      errlen);
	free(buf);
	close(fd);
	close(in);
	return r;
}

/* A file from the guest gets its mode bits & 0755 & ~umask: no set-id,
 * sticky or group/other write bits that the guest chose. */
static mode_t local_mode(mode_t guest)
{
	mode_t um = umask(0);
	umask(um);
	return guest & 0755 & ~um;
}

int cove_get_file_max(struct cove_sandbox *sb, const char *guest, const char *local,
                      uint64_t max_bytes, char *err, size_t errlen)
{
	int fd = cove_agent_connect(sb, err, errlen);
	if (fd < 0)
		return fd;
	char tmp[PATH_MAX];
	int out = -1;
	uint8_t *payload = NULL;
	int r = cove_send_json(fd, PROTO_FILE_GET, json_pack("{s:s}", "path", guest), err, errlen);
	if (r == 0)
		r = cove_expect(fd, PROTO_OK, &payload, NULL, err, errlen);
	if (r < 0)
		goto done;
	mode_t mode = 0644;
	json_t *o = json_loads((const char *)payload, 0, NULL);
	json_t *size = o ? json_object_get(o, "size") : NULL;
	if (o && json_is_integer(json_object_get(o, "mode")))
		mode = (mode_t)json_integer_value(json_object_get(o, "mode")) & 0777;
	bool too_big = json_is_integer(size) && json_integer_value(size) >= 0 &&
	               (uint64_t)json_integer_value(size) > max_bytes;
	json_decref(o);
	if (too_big) {
		r = errf(err, errlen, -EFBIG, "the file is larger than the limit of %llu bytes",
		         (unsigned long long)max_bytes);
		goto done;
	}
	/* Beside the destination, so the rename stays in its file system. */
	if (snprintf(tmp, sizeof(tmp), "%s.cove-XXXXXX", local) >= (int)sizeof(tmp)) {
		r = errf(err, errlen, -ENAMETOOLONG, "path '%s' is too long", local);
		goto done;
	}
	out = mkostemp(tmp, O_CLOEXEC); /* O_EXCL, 0600 */
	if (out < 0) {
		r = errf(err, errlen, -errno, "cannot write '%s': %s", local, strerror(errno));
		goto done;
	}
	uint64_t total = 0;
	for (;;) {
		uint8_t *data = NULL;
		uint32_t len = 0;
		/* Each DATA frame within AGENT_STEP_MS: an inactivity deadline. */
		r = cove_expect(fd, PROTO_DATA, &data, &len, err, errlen);
		if (r < 0)
			break;
		total += len;
		if (total > max_bytes) {
			free(data);
			r = errf(err, errlen, -EFBIG,
			         "the file is larger than the limit of %llu bytes",
			         (unsigned long long)max_bytes);
			break;
		}
		r = len ? write_all(out, data, len) : 0;
		free(data);
		if (r < 0) {
			errf(err, errlen, r, "writing '%s': %s", local, strerror(-r));
			break;
		}
		if (len == 0)
			break;
	}
	if (r == 0 && fchmod(out, local_mode(mode)) < 0)
		r = errf(err, errlen, -errno, "chmod '%s': %s", local, strerror(errno));
	if (r == 0 && rename(tmp, local) < 0)
		r = errf(err, errlen, -errno, "cannot write '%s': %s", local, strerror(errno));
	if (r < 0)
		unlink(tmp);
done:
	if (out >= 0)
		close(out);
	free(payload);
	close(fd);
	return r;
}

int cove_get_file(struct cove_sandbox *sb, const char *guest, const char *local, char *err,
                  size_t errlen)
{
	return cove_get_file_max(sb, guest, local, COVE_GET_MAX_DEFAULT, err, errlen);
}
