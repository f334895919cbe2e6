/* filesystem.Filesystem (Stat, ListDir, MakeDir, Move, Remove) over the
 * agent's STAT/LIST/MKDIR/MOVE/REMOVE, and envd's /files: downloads stream
 * DATA frames straight into the response, uploads (multipart, field
 * "file", or a raw octet-stream body) stream body pieces into FILE_PUT as
 * MHD hands them over.  Neither holds a whole file. */
#include "daemon/envd/files.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "cove.h"
#include "daemon/envd/messages.h"
#include "daemon/envd/rpc.h"
#include "daemon/http/connect.h"
#include "daemon/http/multipart.h"
#include "daemon/http/reply.h"
#include "daemon/http/status.h"
#include "daemon/sandboxes/journal.h"
#include "daemon/sandboxes/sandbox.h"
#include "daemon/sandboxes/table.h"
#include "daemon/trace/tracer.h"
#include "proto.h"

#define LIST_DEPTH_MAX   16
#define LIST_ENTRIES_MAX 20000

/* ---- EntryInfo ------------------------------------------------------------ */

static const char *file_type(const char *t)
{
	if (t && !strcmp(t, "file"))
		return "FILE_TYPE_FILE";
	if (t && !strcmp(t, "dir"))
		return "FILE_TYPE_DIRECTORY";
	if (t && !strcmp(t, "symlink"))
		return "FILE_TYPE_SYMLINK";
	return NULL; /* the SDK skips other types */
}

static void permissions(const char *type, uint32_t mode, char out[11])
{
	out[0] = type && !strcmp(type, "dir") ? 'd' : type && !strcmp(type, "symlink") ? 'L' : '-';
	static const char rwx[] = "rwxrwxrwx";
	for (int i = 0; i < 9; i++)
		out[1 + i] = mode & (1u << (8 - i)) ? rwx[i] : '-';
	out[10] = 0;
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');
	return s && s[1] ? s + 1 : path;
}

/* An EntryInfo from the agent's stat (or list entry) o for path. */
static json_t *entry_info(const json_t *o, const char *path, const char *name)
{
	const char *type = json_string_value(json_object_get(o, "type"));
	const char *ft = file_type(type);
	if (!ft)
		return NULL;
	json_int_t size = json_integer_value(json_object_get(o, "size"));
	uint32_t mode = (uint32_t)json_integer_value(json_object_get(o, "mode")) & 07777;
	char perm[11];
	permissions(type, mode, perm);
	json_t *e =
	    json_pack("{s:s, s:s, s:s, s:I, s:i, s:s}", "name", name, "type", ft, "path", path,
	              "size", size < 0 ? 0 : size, "mode", (int)mode, "permissions", perm);
	if (!e)
		return NULL;
	json_t *uid = json_object_get(o, "uid"), *gid = json_object_get(o, "gid");
	char num[24];
	if (json_is_integer(uid)) {
		snprintf(num, sizeof(num), "%lld", (long long)json_integer_value(uid));
		json_object_set_new(e, "owner",
		                    json_string(json_integer_value(uid) ? num : "root"));
	}
	if (json_is_integer(gid)) {
		snprintf(num, sizeof(num), "%lld", (long long)json_integer_value(gid));
		json_object_set_new(e, "group",
		                    json_string(json_integer_value(gid) ? num : "root"));
	}
	json_t *mt = json_object_get(o, "mtime");
	if (json_is_integer(mt)) {
		time_t t = (time_t)json_integer_value(mt);
		struct tm tm;
		char ts[40];
		if (gmtime_r(&t, &tm) && strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%SZ", &tm))
			json_object_set_new(e, "modifiedTime", json_string(ts));
	}
	const char *target = json_string_value(json_object_get(o, "target"));
	if (target)
		json_object_set_new(e, "symlinkTarget", json_string(target));
	return e;
}

static int agent_call(struct envd_req *r, uint16_t type, json_t *req, json_t **reply,
                      const char **code, char *msg, size_t msglen)
{
	struct cove_sandbox *sb = envd_cove(r, code, msg, msglen);
	if (!sb) {
		json_decref(req);
		return -EAGAIN;
	}
	int rc = cove_agent_call(sb, type, req, reply, msg, msglen);
	if (rc < 0)
		*code = connect_code_from_errno(rc);
	return rc;
}

/* STAT path -> *entry; a Connect error otherwise. */
static int stat_entry(struct envd_req *r, const char *path, json_t **entry, const char **code,
                      char *msg, size_t msglen)
{
	json_t *st = NULL;
	int rc =
	    agent_call(r, PROTO_STAT, json_pack("{s:s}", "path", path), &st, code, msg, msglen);
	if (rc < 0)
		return rc;
	*entry = entry_info(st, path, base_name(path));
	json_decref(st);
	if (!*entry) {
		*code = "internal";
		snprintf(msg, msglen, "'%.300s' is not a file, directory or symlink", path);
		return -EINVAL;
	}
	return 0;
}

#define PATH_ARG(key)                                                          \
	char path[ENVD_PATH_MAX + 1];                                          \
	(void)c;                                                               \
	if (envd_parse_path(body, key, path, sizeof(path), msg, msglen) < 0) { \
		*code = "invalid_argument";                                    \
		return -1;                                                     \
	}

int envd_fs_stat(struct envd_req *r, struct MHD_Connection *c, json_t *body, json_t **reply,
                 const char **code, char *msg, size_t msglen)
{
	PATH_ARG("path");
	json_t *e = NULL;
	if (stat_entry(r, path, &e, code, msg, msglen) < 0)
		return -1;
	*reply = json_pack("{s:o}", "entry", e);
	return 0;
}

static int list_into(struct envd_req *r, const char *dir, unsigned depth, json_t *out,
                     const char **code, char *msg, size_t msglen)
{
	json_t *res = NULL;
	int rc =
	    agent_call(r, PROTO_LIST, json_pack("{s:s}", "path", dir), &res, code, msg, msglen);
	if (rc < 0)
		return rc;
	json_t *entries = json_object_get(res, "entries");
	size_t i;
	json_t *ent;
	json_array_foreach(entries, i, ent)
	{
		const char *name = json_string_value(json_object_get(ent, "name"));
		if (!name || !name[0] || strchr(name, '/'))
			continue;
		char path[ENVD_PATH_MAX + 1];
		if (snprintf(path, sizeof(path), "%s%s%s", dir, strcmp(dir, "/") ? "/" : "",
		             name) >= (int)sizeof(path))
			continue;
		json_t *e = entry_info(ent, path, name);
		if (!e)
			continue;
		if (json_array_size(out) >= LIST_ENTRIES_MAX) {
			json_decref(e);
			json_decref(res);
			*code = "resource_exhausted";
			snprintf(msg, msglen, "more than %d entries", LIST_ENTRIES_MAX);
			return -E2BIG;
		}
		json_array_append_new(out, e);
		const char *type = json_string_value(json_object_get(ent, "type"));
		if (depth > 1 && type && !strcmp(type, "dir")) {
			rc = list_into(r, path, depth - 1, out, code, msg, msglen);
			if (rc < 0 && rc != -EACCES && rc != -ENOENT) {
				json_decref(res);
				return rc;
			}
		}
	}
	json_decref(res);
	return 0;
}

static void journal_file(struct envd_req *r, const char *op, const char *path, uint64_t bytes,
                         int64_t t0, int err);

int envd_fs_list(struct envd_req *r, struct MHD_Connection *c, json_t *body, json_t **reply,
                 const char **code, char *msg, size_t msglen)
{
	PATH_ARG("path");
	int64_t t0 = mono_ms();
	json_t *dv = json_object_get(body, "depth");
	json_int_t depth = json_is_integer(dv) ? json_integer_value(dv) : 1;
	if (depth < 1)
		depth = 1;
	if (depth > LIST_DEPTH_MAX)
		depth = LIST_DEPTH_MAX;
	json_t *out = json_array();
	if (!out)
		return -1;
	if (list_into(r, path, (unsigned)depth, out, code, msg, msglen) < 0) {
		json_decref(out);
		return -1;
	}
	/* "bytes" of a listing: its entries */
	journal_file(r, "list", path, json_array_size(out), t0, 0);
	*reply = json_pack("{s:o}", "entries", out);
	return 0;
}

int envd_fs_mkdir(struct envd_req *r, struct MHD_Connection *c, json_t *body, json_t **reply,
                  const char **code, char *msg, size_t msglen)
{
	PATH_ARG("path");
	json_t *e = NULL;
	if (stat_entry(r, path, &e, code, msg, msglen) == 0) {
		json_decref(e);
		*code = "already_exists";
		snprintf(msg, msglen, "'%.300s' already exists", path);
		return -1;
	}
	json_t *req = json_pack("{s:s, s:i, s:b, s:b}", "path", path, "mode", 0755, "parents", 1,
	                        "keep_existing", 1);
	if (req && envd_req_user(r))
		json_object_set_new(req, "user", json_string(envd_req_user(r)));
	if (agent_call(r, PROTO_MKDIR, req, NULL, code, msg, msglen) < 0)
		return -1;
	if (stat_entry(r, path, &e, code, msg, msglen) < 0)
		return -1;
	*reply = json_pack("{s:o}", "entry", e);
	return 0;
}

int envd_fs_move(struct envd_req *r, struct MHD_Connection *c, json_t *body, json_t **reply,
                 const char **code, char *msg, size_t msglen)
{
	PATH_ARG("source");
	char to[ENVD_PATH_MAX + 1];
	if (envd_parse_path(body, "destination", to, sizeof(to), msg, msglen) < 0) {
		*code = "invalid_argument";
		return -1;
	}
	if (agent_call(r, PROTO_MOVE, json_pack("{s:s, s:s}", "from", path, "to", to), NULL, code,
	               msg, msglen) < 0)
		return -1;
	json_t *e = NULL;
	if (stat_entry(r, to, &e, code, msg, msglen) < 0)
		return -1;
	*reply = json_pack("{s:o}", "entry", e);
	return 0;
}

int envd_fs_remove(struct envd_req *r, struct MHD_Connection *c, json_t *body, json_t **reply,
                   const char **code, char *msg, size_t msglen)
{
	PATH_ARG("path");
	int64_t t0 = mono_ms();
	if (agent_call(r, PROTO_REMOVE, json_pack("{s:s, s:b}", "path", path, "recursive", 1), NULL,
	               code, msg, msglen) < 0)
		return -1;
	journal_file(r, "remove", path, 0, t0, 0);
	*reply = json_object();
	return 0;
}

/* ---- /files --------------------------------------------------------------- */

static void journal_file(struct envd_req *r, const char *op, const char *path, uint64_t bytes,
                         int64_t t0, int err)
{
	json_t *j =
	    json_pack("{s:s, s:s, s:s, s:I, s:I}", "type", "file", "op", op, "path", path, "bytes",
	              (json_int_t)bytes, "duration_ms", (json_int_t)(mono_ms() - t0));
	if (j && err)
		json_object_set_new(j, "errno", json_integer(err < 0 ? -err : err));
	/* The guest user the SDK named; null: the sandbox's default. */
	if (j)
		json_object_set_new(j, "user",
		                    envd_req_user(r) ? json_string(envd_req_user(r)) : json_null());
	if (j)
		coved_journal(r->sb, j);
}

struct fget {
	struct coved *d;
	struct coved_sb *sb;
	int fd;
	uint8_t *data;
	uint32_t len, off;
	bool done;
	uint64_t bytes;
	int64_t t0;
	int err;
	char path[ENVD_PATH_MAX + 1];
	char user[COVE_USER_MAX + 1]; /* "" for the default */
	/* The request's trace context: the line is written when libmicrohttpd
	 * frees the response, after the request's end (daemon/trace). */
	json_t *trace;
};

static ssize_t fget_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	(void)pos;
	struct fget *g = cls;
	while (g->off == g->len) {
		free(g->data);
		g->data = NULL;
		g->len = g->off = 0;
		if (g->done)
			return MHD_CONTENT_READER_END_OF_STREAM;
		char err[256];
		int r = cove_get_next(g->fd, &g->data, &g->len, err, sizeof(err));
		if (r < 0) {
			g->err = r;
			return MHD_CONTENT_READER_END_WITH_ERROR; /* the client sees a cut body */
		}
		if (g->len == 0)
			g->done = true;
	}
	size_t n = g->len - g->off;
	if (n > max)
		n = max;
	memcpy(buf, g->data + g->off, n);
	g->off += (uint32_t)n;
	g->bytes += n;
	return (ssize_t)n;
}

static void fget_free(void *cls)
{
	struct fget *g = cls;
	json_t *j = json_pack("{s:s, s:s, s:s, s:I, s:I}", "type", "file", "op", "read", "path",
	                      g->path, "bytes", (json_int_t)g->bytes, "duration_ms",
	                      (json_int_t)(mono_ms() - g->t0));
	if (j && (g->err || !g->done))
		json_object_set_new(j, "complete", json_false());
	if (j)
		json_object_set_new(j, "user", g->user[0] ? json_string(g->user) : json_null());
	if (j && g->trace)
		json_object_update(j, g->trace);
	if (j)
		coved_journal(g->sb, j);
	json_decref(g->trace);
	close(g->fd);
	free(g->data);
	coved_sb_unref(g->sb);
	free(g);
}

static int query_path(struct MHD_Connection *c, char *out, size_t outlen)
{
	const char *p = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "path");
	if (!p || !p[0])
		return -ENOENT;
	return envd_resolve_path(p, out, outlen) < 0 ? -EINVAL : 0;
}

enum MHD_Result envd_files_get(struct envd_req *r, struct MHD_Connection *c)
{
	char path[ENVD_PATH_MAX + 1], msg[512];
	if (query_path(c, path, sizeof(path)) < 0)
		return coved_json_error(c, 400, "the path query parameter is missing or unusable");
	const char *code;
	struct cove_sandbox *sb = envd_cove(r, &code, msg, sizeof(msg));
	if (!sb)
		return coved_json_error(c, 503, msg);
	uint64_t size = 0;
	int64_t t0 = mono_ms();
	int fd = cove_get_begin(sb, path, &size, msg, sizeof(msg));
	if (fd < 0) {
		journal_file(r, "read", path, 0, t0, fd);
		return coved_json_error(c, http_status_of(fd, HTTP_OP_FILE), msg);
	}
	struct fget *g = calloc(1, sizeof(*g));
	if (!g) {
		close(fd);
		return MHD_NO;
	}
	g->d = r->d;
	g->sb = coved_sb_find(r->d, coved_sb_id(r->sb));
	g->fd = fd;
	g->t0 = t0;
	snprintf(g->path, sizeof(g->path), "%s", path);
	snprintf(g->user, sizeof(g->user), "%s", envd_req_user(r) ? envd_req_user(r) : "");
	g->trace = json_object();
	trace_req_mark(g->trace, NULL);
	if (!g->sb) {
		json_decref(g->trace);
		close(fd);
		free(g);
		return coved_json_error(c, 404, "the sandbox went away");
	}
	struct MHD_Response *resp = MHD_create_response_from_callback(
	    MHD_SIZE_UNKNOWN, ENVD_STREAM_BLOCK, fget_read, g, fget_free);
	if (!resp) {
		fget_free(g);
		return MHD_NO;
	}
	MHD_add_response_header(resp, "Content-Type", "application/octet-stream");
	coved_reply_private(resp);
	char disp[ENVD_PATH_MAX + 64];
	snprintf(disp, sizeof(disp), "attachment; filename=\"%s\"", base_name(path));
	if (!strpbrk(disp + 22, "\"\r\n\\"))
		MHD_add_response_header(resp, "Content-Disposition", disp);
	enum MHD_Result ret = MHD_queue_response(c, MHD_HTTP_OK, resp);
	MHD_destroy_response(resp);
	return ret;
}

struct envd_upload {
	struct envd_req *r;
	struct cove_sandbox *sb;
	bool multipart, skipping;
	struct mp_parser *mp;
	char qpath[ENVD_PATH_MAX + 1]; /* the path query parameter, "" when absent */
	char cur[ENVD_PATH_MAX + 1];
	int fd; /* the current put, -1 */
	uint64_t bytes;
	int64_t t0;
	json_t *written;     /* [{name, type, path}] */
	unsigned int status; /* non-zero: failed, answered with msg */
	char msg[512];
};

void envd_upload_free(struct envd_upload *up)
{
	if (!up)
		return;
	if (up->fd >= 0)
		close(up->fd); /* an abandoned put: the agent drops its temporary file */
	free(up->mp);
	json_decref(up->written);
	free(up);
}

static void up_fail(struct envd_upload *up, unsigned int status, int err, const char *msg)
{
	if (up->status)
		return;
	up->status = status;
	snprintf(up->msg, sizeof(up->msg), "%s", msg);
	if (up->fd >= 0) {
		close(up->fd);
		up->fd = -1;
		journal_file(up->r, "write", up->cur, up->bytes, up->t0, err ? err : EIO);
	}
}

/* Opens the put of one file at path (its parent directories made). */
static int up_open(struct envd_upload *up, const char *path)
{
	char err[512];
	if (envd_resolve_path(path, up->cur, sizeof(up->cur)) < 0) {
		up_fail(up, 400, EINVAL, "the file's path is unusable");
		return -EINVAL;
	}
	char dir[ENVD_PATH_MAX + 1];
	snprintf(dir, sizeof(dir), "%s", up->cur);
	char *slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = 0;
		/* The user gets the folders made for the file, not those there. */
		json_t *req = json_pack("{s:s, s:i, s:b, s:b}", "path", dir, "mode", 0755,
		                        "parents", 1, "keep_existing", 1);
		if (req && envd_req_user(up->r))
			json_object_set_new(req, "user", json_string(envd_req_user(up->r)));
		int rc = cove_agent_call(up->sb, PROTO_MKDIR, req, NULL, err, sizeof(err));
		if (rc < 0 && rc != -EEXIST) {
			up_fail(up, http_status_of(rc, HTTP_OP_FILE), rc, err);
			return rc;
		}
	}
	up->bytes = 0;
	up->t0 = mono_ms();
	up->fd = cove_put_begin_as(up->sb, up->cur, 0644, envd_req_user(up->r), err, sizeof(err));
	if (up->fd < 0) {
		int rc = up->fd;
		up->fd = -1;
		up_fail(up, http_status_of(rc, HTTP_OP_FILE), rc, err);
		return rc;
	}
	return 0;
}

static int up_data(struct envd_upload *up, const uint8_t *data, size_t len)
{
	if (up->fd < 0 || up->status)
		return 0;
	char err[512];
	int rc = cove_put_data(up->fd, data, len, err, sizeof(err));
	if (rc < 0) {
		up_fail(up, 502, rc, err);
		return 0;
	}
	up->bytes += len;
	return 0;
}

static int up_close(struct envd_upload *up)
{
	if (up->fd < 0 || up->status)
		return 0;
	char err[512];
	int fd = up->fd;
	up->fd = -1;
	int rc = cove_put_end(fd, NULL, err, sizeof(err));
	journal_file(up->r, "write", up->cur, up->bytes, up->t0, rc);
	if (rc < 0) {
		up_fail(up, http_status_of(rc, HTTP_OP_FILE), rc, err);
		return 0;
	}
	json_array_append_new(up->written, json_pack("{s:s, s:s, s:s}", "name", base_name(up->cur),
	                                             "type", "file", "path", up->cur));
	return 0;
}

static int mp_begin(void *opaque, const char *name, const char *filename)
{
	struct envd_upload *up = opaque;
	up->skipping = strcmp(name, "file") != 0;
	if (up->skipping || up->status)
		return 0;
	const char *dest = up->qpath[0] ? up->qpath : filename;
	if (!dest[0]) {
		up_fail(up, 400, EINVAL, "a file part has no path (query parameter or file name)");
		return 0;
	}
	(void)up_open(up, dest);
	return 0;
}

static int mp_data(void *opaque, const uint8_t *buf, size_t len)
{
	struct envd_upload *up = opaque;
	return up->skipping ? 0 : up_data(up, buf, len);
}

static int mp_end(void *opaque)
{
	struct envd_upload *up = opaque;
	return up->skipping ? 0 : up_close(up);
}

static const struct mp_callbacks mp_cbs = { .part_begin = mp_begin,
	                                    .data = mp_data,
	                                    .part_end = mp_end };

int envd_files_post_begin(struct envd_req *r, struct MHD_Connection *c, char *msg, size_t msglen)
{
	struct envd_upload *up = calloc(1, sizeof(*up));
	if (!up)
		return -ENOMEM;
	r->up = up;
	up->r = r;
	up->fd = -1;
	up->written = json_array();
	const char *code;
	up->sb = envd_cove(r, &code, msg, msglen);
	if (!up->sb) {
		up_fail(up, 503, EAGAIN, msg);
		return -EAGAIN;
	}
	int qp = query_path(c, up->qpath, sizeof(up->qpath));
	if (qp == -EINVAL) {
		up_fail(up, 400, EINVAL, "the path query parameter is unusable");
		return qp;
	}
	if (qp < 0)
		up->qpath[0] = 0;
	const char *enc = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Encoding");
	if (enc && strcmp(enc, "identity") != 0) {
		up_fail(up, 400, EINVAL,
		        "Content-Encoding is not supported: send the bytes as they are");
		return -EINVAL;
	}
	const char *ct = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type");
	char boundary[MP_BOUNDARY_MAX + 1];
	if (ct && !strncasecmp(ct, "multipart/", 10)) {
		up->multipart = true;
		up->mp = malloc(sizeof(*up->mp));
		if (!up->mp || mp_boundary(ct, boundary, sizeof(boundary)) < 0 ||
		    mp_init(up->mp, boundary, &mp_cbs, up) < 0) {
			up_fail(up, 400, EINVAL, "a multipart body needs a valid boundary");
			return -EINVAL;
		}
		return 0;
	}
	if (!up->qpath[0]) {
		up_fail(up, 400, EINVAL, "an octet-stream upload needs the path query parameter");
		return -EINVAL;
	}
	return up_open(up, up->qpath);
}

void envd_files_post_feed(struct envd_req *r, const uint8_t *data, size_t len)
{
	struct envd_upload *up = r->up;
	if (!up || up->status)
		return; /* failed: the rest of the body is taken and dropped */
	if (!up->multipart) {
		(void)up_data(up, data, len);
		return;
	}
	int rc = mp_feed(up->mp, data, len);
	if (rc < 0)
		up_fail(up, 400, EINVAL, "the multipart body is malformed");
}

enum MHD_Result envd_files_post_end(struct envd_req *r, struct MHD_Connection *c)
{
	struct envd_upload *up = r->up;
	if (!up)
		return coved_json_error(c, 500, "out of memory");
	if (!up->status) {
		if (up->multipart) {
			if (mp_finish(up->mp) < 0)
				up_fail(up, 400, EINVAL, "the multipart body ends early");
		} else {
			(void)up_close(up);
		}
	}
	if (!up->status && json_array_size(up->written) == 0)
		up_fail(up, 400, EINVAL, "no file in the request (multipart field \"file\")");
	if (up->status)
		return coved_json_error(c, up->status, up->msg);
	char *text = json_dumps(up->written, JSON_COMPACT);
	if (!text)
		return MHD_NO;
	struct MHD_Response *resp =
	    MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
	if (!resp) {
		free(text);
		return MHD_NO;
	}
	MHD_add_response_header(resp, "Content-Type", "application/json");
	enum MHD_Result ret = MHD_queue_response(c, MHD_HTTP_OK, resp);
	MHD_destroy_response(resp);
	return ret;
}
