/* Request schemas (docs/protocol.md): everything a handler may assume about a
 * request is checked here, before anything touches the system. */
#include "request.h"
#include "errf.h"
#include "hex.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto_json.h"
#include "sys.h"
#include "users.h"

#define SIGNAL_MAX 64
#define ID_MAX     ((int64_t)UINT32_MAX - 1) /* (uid_t)-1 means "unchanged" to the kernel */
#define MODE_MAX   07777
/* Timeouts beyond this are as good as none; it keeps deadline sums far from
 * overflow. */
#define TIMEOUT_MAX    ((int64_t)1 << 42)
#define RESTORE_ID_MAX 64

#define bad(err, errlen, ...) errf(err, errlen, -EPROTO, __VA_ARGS__)

bool agent_path_valid(const char *path)
{
	return path && path[0] == '/' && strnlen(path, PATH_MAX) < PATH_MAX;
}

static int get_path(const json_t *o, const char *key, const char **out, char *err, size_t errlen)
{
	if (proto_json_str(o, key, out) < 0 || !*out)
		return bad(err, errlen, "\"%s\" must be a string", key);
	if (!agent_path_valid(*out))
		return bad(err, errlen, "\"%s\" must be an absolute path", key);
	return 0;
}

static int get_int(const json_t *o, const char *key, int64_t min, int64_t max, int64_t def,
                   int64_t *out, char *err, size_t errlen)
{
	if (proto_json_int(o, key, min, max, def, out) < 0)
		return bad(err, errlen, "\"%s\" must be an integer in [%lld, %lld]", key,
		           (long long)min, (long long)max);
	return 0;
}

static int get_bool(const json_t *o, const char *key, bool def, bool *out, char *err, size_t errlen)
{
	if (proto_json_bool(o, key, def, out) < 0)
		return bad(err, errlen, "\"%s\" must be true or false", key);
	return 0;
}

static int parse_argv(struct agent_exec_req *x, const json_t *o, char *err, size_t errlen)
{
	json_t *a = json_object_get(o, "argv");
	if (!json_is_array(a) || json_array_size(a) == 0)
		return bad(err, errlen, "\"argv\" must be a non-empty array of strings");
	size_t n = json_array_size(a);
	x->argv = calloc(n + 1, sizeof(*x->argv));
	if (!x->argv)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const char *s = json_string_value(json_array_get(a, i));
		if (!s)
			return bad(err, errlen, "\"argv\" must be a non-empty array of strings");
		x->argv[i] = s;
	}
	if (!x->argv[0][0])
		return bad(err, errlen, "\"argv[0]\" must not be empty");
	return 0;
}

/* An "env" object into "KEY=VALUE" strings (a bare "KEY" for null, where
 * allowed); NULL-terminated and malloc'ed into *out, NULL when absent. */
static int env_strings(const json_t *o, char ***out, bool nulls, char *err, size_t errlen)
{
	json_t *env = json_object_get(o, "env");
	if (!env || json_is_null(env))
		return 0;
	if (!json_is_object(env))
		return bad(err, errlen, "\"env\" must be an object of strings");
	if (!nulls && json_object_size(env) > AGENT_DEFAULTS_ENV_MAX)
		return bad(err, errlen, "\"env\" has more than %d variables",
		           AGENT_DEFAULTS_ENV_MAX);
	*out = calloc(json_object_size(env) + 1, sizeof(**out));
	if (!*out)
		return -ENOMEM;
	size_t i = 0;
	const char *key;
	json_t *val;
	json_object_foreach(env, key, val)
	{
		if (!key[0] || strchr(key, '='))
			return bad(err, errlen, "\"env\" has an invalid name");
		if (!json_is_string(val) && !(nulls && json_is_null(val)))
			return bad(err, errlen, "\"env\" values must be strings%s",
			           nulls ? " or null" : "");
		const char *v = json_string_value(val);
		size_t klen = strlen(key), vlen = v ? strlen(v) : 0;
		if (!nulls && (vlen != json_string_length(val) || vlen > AGENT_DEFAULTS_VALUE_MAX))
			return bad(err, errlen, "\"env\" value of %s is over %d bytes or holds NUL",
			           key, AGENT_DEFAULTS_VALUE_MAX);
		char *kv = malloc(klen + vlen + 2);
		if (!kv)
			return -ENOMEM;
		memcpy(kv, key, klen);
		if (v) {
			kv[klen] = '=';
			memcpy(kv + klen + 1, v, vlen + 1);
		} else {
			kv[klen] = 0;
		}
		(*out)[i++] = kv;
	}
	return 0;
}

static int get_user(const json_t *o, const char **user, char *err, size_t errlen)
{
	if (proto_json_str(o, "user", user) < 0 || (*user && !agent_user_spec_valid(*user)))
		return bad(err, errlen,
		           "\"user\" must be a user, uid, user:group or uid:gid (at most %d bytes)",
		           AGENT_USER_SPEC_MAX);
	return 0;
}

static void strv_free(char **v)
{
	for (char **e = v; e && *e; e++)
		free(*e);
	free(v);
}

static int parse_winsize(const json_t *o, uint16_t *rows, uint16_t *cols, char *err, size_t errlen)
{
	int64_t r, c;
	if (get_int(o, "rows", 1, UINT16_MAX, AGENT_DEFAULT_ROWS, &r, err, errlen) < 0 ||
	    get_int(o, "cols", 1, UINT16_MAX, AGENT_DEFAULT_COLS, &c, err, errlen) < 0)
		return -EPROTO;
	*rows = (uint16_t)r;
	*cols = (uint16_t)c;
	return 0;
}

static int parse_exec(struct agent_exec_req *x, const json_t *o, char *err, size_t errlen)
{
	int r = parse_argv(x, o, err, errlen);
	if (r == 0)
		r = env_strings(o, &x->env, true, err, errlen);
	if (r == 0)
		r = get_user(o, &x->user, err, errlen);
	if (r < 0)
		return r;
	if (proto_json_str(o, "cwd", &x->cwd) < 0 || (x->cwd && !agent_path_valid(x->cwd)))
		return bad(err, errlen, "\"cwd\" must be an absolute path");
	int64_t t;
	if (get_int(o, "uid", 0, ID_MAX, -1, &x->uid, err, errlen) < 0 ||
	    get_int(o, "gid", 0, ID_MAX, -1, &x->gid, err, errlen) < 0 ||
	    get_int(o, "timeout_ms", 0, TIMEOUT_MAX, 0, &t, err, errlen) < 0 ||
	    get_bool(o, "stdin", false, &x->stdin_open, err, errlen) < 0)
		return -EPROTO;
	x->timeout_ms = (uint64_t)t;
	json_t *pty = json_object_get(o, "pty");
	x->rows = AGENT_DEFAULT_ROWS;
	x->cols = AGENT_DEFAULT_COLS;
	if (json_is_object(pty)) {
		x->pty = true;
		return parse_winsize(pty, &x->rows, &x->cols, err, errlen);
	}
	if (json_is_boolean(pty)) {
		x->pty = json_is_true(pty);
		return 0;
	}
	if (pty && !json_is_null(pty))
		return bad(err, errlen, "\"pty\" must be an object {\"rows\", \"cols\"}");
	return 0;
}

/* A sandbox id: a host name's rules plus '_', which sandbox names may
 * hold.  It only ever becomes file contents, never a path. */
static bool sandbox_id_valid(const char *id)
{
	size_t n = strlen(id);
	if (n == 0 || n > RESTORE_ID_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		char ch = id[i];
		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		      (ch >= '0' && ch <= '9') || ch == '-' || ch == '.' || ch == '_'))
			return false;
	}
	return true;
}

static int parse_restored(struct agent_restore_req *x, const json_t *o, char *err, size_t errlen)
{
	/* Required, so not proto_json_int(): absent or null is no default. */
	json_t *t = json_object_get(o, "time_ns");
	if (!json_is_integer(t) || json_integer_value(t) < 1)
		return bad(err, errlen, "\"time_ns\" must be an integer in [1, %lld]",
		           (long long)INT64_MAX);
	x->time_ns = (uint64_t)json_integer_value(t);
	if (proto_json_str(o, "hostname", &x->hostname) < 0 || !x->hostname ||
	    !agent_hostname_valid(x->hostname))
		return bad(err, errlen,
		           "\"hostname\" must be 1-64 characters of A-Z, a-z, 0-9, '-', '.'");
	if (proto_json_str(o, "sandbox_id", &x->sandbox_id) < 0 || !x->sandbox_id ||
	    !sandbox_id_valid(x->sandbox_id))
		return bad(
		    err, errlen,
		    "\"sandbox_id\" must be 1-64 characters of A-Z, a-z, 0-9, '-', '.', '_'");
	const char *seed;
	if (proto_json_str(o, "seed", &seed) < 0 || !seed || strlen(seed) != 2 * sizeof(x->seed))
		goto bad_seed;
	for (size_t i = 0; i < sizeof(x->seed); i++) {
		int hi = hex_digit(seed[2 * i]), lo = hex_digit(seed[2 * i + 1]);
		if (hi < 0 || lo < 0)
			goto bad_seed;
		x->seed[i] = (uint8_t)(hi << 4 | lo);
	}
	return 0;
bad_seed:
	return bad(err, errlen, "\"seed\" must be %zu hex digits", 2 * sizeof(x->seed));
}

static int parse_symlink(struct agent_req *req, const json_t *o, char *err, size_t errlen)
{
	const char *t;
	if (get_path(o, "path", &req->u.symlink.path, err, errlen) < 0 ||
	    get_int(o, "uid", 0, ID_MAX, -1, &req->u.symlink.uid, err, errlen) < 0 ||
	    get_int(o, "gid", 0, ID_MAX, -1, &req->u.symlink.gid, err, errlen) < 0 ||
	    get_user(o, &req->u.symlink.user, err, errlen) < 0)
		return -EPROTO;
	if (proto_json_str(o, "target", &t) < 0 || !t || !t[0] || strnlen(t, PATH_MAX) >= PATH_MAX)
		return bad(err, errlen, "\"target\" must be a non-empty string under %d bytes",
		           PATH_MAX);
	req->u.symlink.target = t;
	return 0;
}

/* DEFAULTS: {"env", "cwd", "user"}, each optional. */
static int parse_defaults(struct agent_req *req, const json_t *o, char *err, size_t errlen)
{
	int r = env_strings(o, &req->u.defaults.env, false, err, errlen);
	if (r == 0)
		r = get_user(o, &req->u.defaults.user, err, errlen);
	if (r < 0)
		return r;
	const char *cwd;
	if (proto_json_str(o, "cwd", &cwd) < 0 || (cwd && !agent_path_valid(cwd)))
		return bad(err, errlen, "\"cwd\" must be an absolute path");
	req->u.defaults.cwd = cwd;
	return 0;
}

/* Types 40-47: detached processes and MOVE. */
static int parse_proc(struct agent_req *req, const json_t *o, char *err, size_t errlen)
{
	int64_t v;
	if (req->type == PROTO_PROC_LIST)
		return 0;
	if (req->type == PROTO_MOVE) {
		if (get_path(o, "from", &req->u.move.from, err, errlen) < 0 ||
		    get_path(o, "to", &req->u.move.to, err, errlen) < 0)
			return -EPROTO;
		return 0;
	}
	if (req->type == PROTO_PROC_START) {
		int r = parse_exec(&req->u.exec, o, err, errlen);
		if (r < 0)
			return r;
		if (proto_json_str(o, "tag", &req->tag) < 0 ||
		    (req->tag && strlen(req->tag) > AGENT_TAG_MAX))
			return bad(err, errlen, "\"tag\" must be a string of at most %d bytes",
			           AGENT_TAG_MAX);
		return 0;
	}
	if (!json_object_get(o, "pid"))
		return bad(err, errlen, "\"pid\" is required");
	if (get_int(o, "pid", 1, INT32_MAX, 0, &v, err, errlen) < 0)
		return -EPROTO;
	req->u.proc.pid = (int32_t)v;
	switch (req->type) {
	case PROTO_PROC_ATTACH:
		if (get_int(o, "offset", 0, INT64_MAX, 0, &v, err, errlen) < 0)
			return -EPROTO;
		req->u.proc.offset = (uint64_t)v;
		return 0;
	case PROTO_PROC_SIGNAL:
		if (!json_object_get(o, "signal"))
			return bad(err, errlen, "\"signal\" is required");
		if (get_int(o, "signal", 1, SIGNAL_MAX, 0, &v, err, errlen) < 0)
			return -EPROTO;
		req->u.proc.sig = (int)v;
		return 0;
	case PROTO_PROC_RESIZE:
		return parse_winsize(o, &req->u.proc.rows, &req->u.proc.cols, err, errlen);
	default:
		return 0;
	}
}

/* PROC_INPUT: u32 pid (LE) then the bytes for its stdin. */
static int parse_proc_input(struct agent_req *req, const struct proto_hdr *h,
                            const uint8_t *payload, char *err, size_t errlen)
{
	if (h->len < 4 || !payload)
		return bad(err, errlen, "PROC_INPUT needs a 4-byte pid");
	uint32_t pid = (uint32_t)payload[0] | (uint32_t)payload[1] << 8 |
	               (uint32_t)payload[2] << 16 | (uint32_t)payload[3] << 24;
	if (pid < 1 || pid > INT32_MAX)
		return bad(err, errlen, "PROC_INPUT pid %u out of range", pid);
	req->u.proc.pid = (int32_t)pid;
	req->u.proc.data = payload + 4;
	req->u.proc.len = h->len - 4;
	return 0;
}

static int parse_json_body(struct agent_req *req, char *err, size_t errlen)
{
	const json_t *o = req->json;
	int64_t v;
	switch (req->type) {
	case PROTO_PING:
	case PROTO_SYNC:
	case PROTO_SHUTDOWN:
	case PROTO_ERROR:
	case PROTO_THAW:
		return 0;
	case PROTO_FREEZE:
		if (get_int(o, "timeout_ms", 1, 60000, 10000, &v, err, errlen) < 0)
			return -EPROTO;
		req->u.freeze.timeout_ms = (uint32_t)v;
		return 0;
	case PROTO_EXEC:
		return parse_exec(&req->u.exec, o, err, errlen);
	case PROTO_SIGNAL:
		if (!json_object_get(o, "signal"))
			return bad(err, errlen, "\"signal\" is required");
		if (get_int(o, "signal", 1, SIGNAL_MAX, 0, &v, err, errlen) < 0)
			return -EPROTO;
		req->u.signal.sig = (int)v;
		return 0;
	case PROTO_RESIZE:
		return parse_winsize(o, &req->u.resize.rows, &req->u.resize.cols, err, errlen);
	case PROTO_FILE_PUT:
		req->u.put.uid = req->u.put.gid = -1;
		if (get_path(o, "path", &req->u.put.path, err, errlen) < 0 ||
		    get_int(o, "mode", 0, MODE_MAX, 0644, &v, err, errlen) < 0 ||
		    get_int(o, "uid", 0, ID_MAX, -1, &req->u.put.uid, err, errlen) < 0 ||
		    get_int(o, "gid", 0, ID_MAX, -1, &req->u.put.gid, err, errlen) < 0 ||
		    get_user(o, &req->u.put.user, err, errlen) < 0)
			return -EPROTO;
		req->u.put.mode = (uint32_t)v;
		return 0;
	case PROTO_FILE_GET:
	case PROTO_STAT:
	case PROTO_LIST:
		return get_path(o, "path", &req->u.file.path, err, errlen);
	case PROTO_MKDIR:
		if (get_path(o, "path", &req->u.mkdir.path, err, errlen) < 0 ||
		    get_int(o, "mode", 0, MODE_MAX, 0755, &v, err, errlen) < 0 ||
		    get_bool(o, "parents", false, &req->u.mkdir.parents, err, errlen) < 0 ||
		    get_int(o, "uid", 0, ID_MAX, -1, &req->u.mkdir.uid, err, errlen) < 0 ||
		    get_int(o, "gid", 0, ID_MAX, -1, &req->u.mkdir.gid, err, errlen) < 0 ||
		    get_user(o, &req->u.mkdir.user, err, errlen) < 0 ||
		    get_bool(o, "keep_existing", false, &req->u.mkdir.keep_existing, err, errlen) <
		        0)
			return -EPROTO;
		req->u.mkdir.mode = (uint32_t)v;
		return 0;
	case PROTO_REMOVE:
		if (get_path(o, "path", &req->u.remove.path, err, errlen) < 0 ||
		    get_bool(o, "recursive", false, &req->u.remove.recursive, err, errlen) < 0)
			return -EPROTO;
		return 0;
	case PROTO_WATCH:
		if (get_path(o, "path", &req->u.watch.path, err, errlen) < 0 ||
		    get_bool(o, "recursive", false, &req->u.watch.recursive, err, errlen) < 0)
			return -EPROTO;
		return 0;
	case PROTO_PORT:
		if (get_int(o, "port", 1, 65535, 0, &v, err, errlen) < 0)
			return -EPROTO;
		if (v == 0) /* absent or null */
			return bad(err, errlen, "\"port\" is required");
		req->u.port.port = (uint16_t)v;
		if (get_int(o, "timeout_ms", 1, AGENT_PORT_TIMEOUT_MAX, AGENT_PORT_TIMEOUT_DEFAULT,
		            &v, err, errlen) < 0)
			return -EPROTO;
		req->u.port.timeout_ms = (uint32_t)v;
		return 0;
	case PROTO_RESTORED:
		return parse_restored(&req->u.restored, o, err, errlen);
	case PROTO_CA:
		return 0; /* guest-agent/ca.c reads req->json */
	case PROTO_SYMLINK:
		return parse_symlink(req, o, err, errlen);
	case PROTO_DEFAULTS:
		return parse_defaults(req, o, err, errlen);
	case PROTO_USER:
		if (get_user(o, &req->u.user.spec, err, errlen) < 0)
			return -EPROTO;
		return req->u.user.spec ? 0 : bad(err, errlen, "\"user\" is required");
	case PROTO_PROC_START:
	case PROTO_PROC_ATTACH:
	case PROTO_PROC_CLOSE_STDIN:
	case PROTO_PROC_SIGNAL:
	case PROTO_PROC_LIST:
	case PROTO_PROC_RESIZE:
	case PROTO_MOVE:
		return parse_proc(req, o, err, errlen);
	default:
		return bad(err, errlen, "frame type %u is not a request", req->type);
	}
}

int agent_req_parse(const struct proto_hdr *h, const uint8_t *payload, struct agent_req *req,
                    char *err, size_t errlen)
{
	memset(req, 0, sizeof(*req));
	req->type = h->type;
	req->id = h->id;
	switch (h->type) {
	case PROTO_STDIN:
	case PROTO_DATA:
		return 0;
	case PROTO_PROC_INPUT:
		return parse_proc_input(req, h, payload, err, errlen);
	case PROTO_HELLO:
	case PROTO_PONG:
	case PROTO_STARTED:
	case PROTO_STDOUT:
	case PROTO_STDERR:
	case PROTO_EXIT:
	case PROTO_OK:
	case PROTO_WATCH_EVENT:
		return bad(err, errlen, "frame type %u is not a request", h->type);
	default:
		break;
	}
	if (!proto_type_is_json(h->type))
		return bad(err, errlen, "unknown frame type %u", h->type);
	int r = proto_json_parse(payload, h->len, &req->json, err, errlen);
	if (r < 0)
		return r;
	return parse_json_body(req, err, errlen);
}

void agent_req_free(struct agent_req *req)
{
	if (req->type == PROTO_EXEC || req->type == PROTO_PROC_START) {
		free(req->u.exec.argv);
		strv_free(req->u.exec.env);
	}
	if (req->type == PROTO_DEFAULTS)
		strv_free(req->u.defaults.env);
	json_decref(req->json);
	memset(req, 0, sizeof(*req));
}
