/* The envd surface's front: one table of routes, authentication by
 * E2b-Sandbox-Id + X-Access-Token, bounded bodies, Connect errors.  The
 * handlers are in proc.c (process.Process) and files.c
 * (filesystem.Filesystem, /files) and watch.c (its watches). */
#include "daemon/envd/envd.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "cove.h"
#include "daemon/envd/files.h"
#include "daemon/envd/messages.h"
#include "daemon/envd/proc.h"
#include "daemon/envd/rpc.h"
#include "daemon/envd/watch.h"
#include "daemon/http/connect.h"
#include "daemon/http/reply.h"
#include "daemon/sandboxes/idle.h"
#include "daemon/sandboxes/lifecycle.h"
#include "daemon/sandboxes/sandbox.h"
#include "daemon/sandboxes/table.h"

/* RPCs are Connect calls, each under its service's path prefix; HTTP
 * paths are plain requests; an open path needs no sandbox. */
enum envd_kind { ENVD_UNARY, ENVD_STREAM, ENVD_HTTP, ENVD_OPEN };

struct envd_route_ent {
	const char *method, *path; /* method NULL: any */
	enum envd_kind kind;
	/* Unary: *reply (an object) or a Connect error (*code, msg).  Stream:
	 * queues its own response.  HTTP: queues its own response once the
	 * body is in; an upload begins at the first call (begin) and takes
	 * each piece of the body (feed).  Open: queues its response at once. */
	enum MHD_Result (*stream)(struct envd_req *r, struct MHD_Connection *c, json_t *body);
	int (*unary)(struct envd_req *r, struct MHD_Connection *c, json_t *body, json_t **reply,
	             const char **code, char *msg, size_t msglen);
	enum MHD_Result (*http)(struct envd_req *r, struct MHD_Connection *c);
	int (*begin)(struct envd_req *r, struct MHD_Connection *c, char *msg, size_t msglen);
	void (*feed)(struct envd_req *r, const uint8_t *data, size_t len);
	enum MHD_Result (*open)(struct coved *d, struct MHD_Connection *c);
};

static enum MHD_Result envs_get(struct envd_req *r, struct MHD_Connection *c);
static enum MHD_Result health(struct coved *d, struct MHD_Connection *c);

/* The routes, with the kind of call each is: every lookup reads this. */
static const struct envd_route_ent routes[] = {
	{ "POST", "/process.Process/Start", ENVD_STREAM, .stream = envd_proc_start },
	{ "POST", "/process.Process/Connect", ENVD_STREAM, .stream = envd_proc_connect },
	{ "POST", "/process.Process/SendInput", ENVD_UNARY, .unary = envd_proc_input },
	{ "POST", "/process.Process/SendSignal", ENVD_UNARY, .unary = envd_proc_signal },
	{ "POST", "/process.Process/CloseStdin", ENVD_UNARY, .unary = envd_proc_close_stdin },
	{ "POST", "/process.Process/List", ENVD_UNARY, .unary = envd_proc_list },
	{ "POST", "/process.Process/Update", ENVD_UNARY, .unary = envd_proc_update },
	{ "POST", "/filesystem.Filesystem/Stat", ENVD_UNARY, .unary = envd_fs_stat },
	{ "POST", "/filesystem.Filesystem/ListDir", ENVD_UNARY, .unary = envd_fs_list },
	{ "POST", "/filesystem.Filesystem/MakeDir", ENVD_UNARY, .unary = envd_fs_mkdir },
	{ "POST", "/filesystem.Filesystem/Move", ENVD_UNARY, .unary = envd_fs_move },
	{ "POST", "/filesystem.Filesystem/Remove", ENVD_UNARY, .unary = envd_fs_remove },
	{ "POST", "/filesystem.Filesystem/WatchDir", ENVD_STREAM, .stream = envd_fs_watch_dir },
	{ "POST", "/filesystem.Filesystem/CreateWatcher", ENVD_UNARY,
	  .unary = envd_fs_create_watcher },
	{ "POST", "/filesystem.Filesystem/GetWatcherEvents", ENVD_UNARY,
	  .unary = envd_fs_watcher_events },
	{ "POST", "/filesystem.Filesystem/RemoveWatcher", ENVD_UNARY,
	  .unary = envd_fs_remove_watcher },
	{ "GET", "/files", ENVD_HTTP, .http = envd_files_get },
	{ "POST", "/files", ENVD_HTTP, .http = envd_files_post_end, .begin = envd_files_post_begin,
	  .feed = envd_files_post_feed },
	{ "GET", "/envs", ENVD_HTTP, .http = envs_get },
	{ NULL, "/health", ENVD_OPEN, .open = health },
};
#define NROUTES (sizeof(routes) / sizeof(routes[0]))

/* Whether url is under rt: an RPC's service prefix (its path up to the
 * last '/'), or another route's path exactly. */
static bool under(const struct envd_route_ent *rt, const char *url)
{
	if (rt->kind == ENVD_UNARY || rt->kind == ENVD_STREAM) {
		size_t n = (size_t)(strrchr(rt->path, '/') - rt->path) + 1;
		return strncmp(url, rt->path, n) == 0;
	}
	return strcmp(url, rt->path) == 0;
}

static bool is_rpc(const char *url)
{
	for (size_t i = 0; i < NROUTES; i++)
		if ((routes[i].kind == ENVD_UNARY || routes[i].kind == ENVD_STREAM) &&
		    under(&routes[i], url))
			return true;
	return false;
}

bool envd_route(struct MHD_Connection *c, const char *url)
{
	if (MHD_lookup_connection_value(c, MHD_HEADER_KIND, "E2b-Sandbox-Id"))
		return true;
	for (size_t i = 0; i < NROUTES; i++)
		if (under(&routes[i], url))
			return true;
	return false;
}

int envd_init(struct coved *d)
{
	(void)d;
	return 0;
}

void envd_fini(struct coved *d)
{
	(void)d;
	envd_watchers_fini();
}

static enum MHD_Result envs_get(struct envd_req *r, struct MHD_Connection *c)
{
	json_t *o = json_object();
	for (const char *const *e = coved_sb_envs(r->sb); o && e && *e; e++) {
		const char *eq = strchr(*e, '=');
		if (!eq)
			continue;
		char *k = strndup(*e, (size_t)(eq - *e));
		if (k)
			json_object_set_new(o, k, json_string(eq + 1));
		free(k);
	}
	char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	if (!text)
		return MHD_NO;
	return coved_text_reply(c, MHD_HTTP_OK, "application/json", text, strlen(text));
}

/* Whether the sandbox named by the request answers as its own envd would:
 * known, the caller holds its access token (else it is as unknown: the
 * token is envd's only tenant context), running, and its agent answers a
 * ping by ENVD_HEALTH_MS.  A paused sandbox is not woken. */
static bool sandbox_up(struct coved *d, struct MHD_Connection *c, const char *id)
{
	struct coved_sb *sb = coved_sb_find(d, id);
	if (!sb)
		return false;
	const char *token = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Access-Token");
	bool up = false;
	struct cove_sandbox *cs = coved_sb_token_ok(sb, token) ? coved_sb_cove(sb) : NULL;
	if (cs) {
		char err[256];
		up = cove_ping_until(cs, mono_ms() + ENVD_HEALTH_MS, err, sizeof(err)) == 0;
	}
	coved_sb_unref(sb);
	return up;
}

/* 204 when the E2b-Sandbox-Id sandbox is up, 502 (the SDK's "not running")
 * when it is paused, ended, unknown or silent; without the header, coved's
 * own liveness: 204. */
static enum MHD_Result health(struct coved *d, struct MHD_Connection *c)
{
	const char *id = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "E2b-Sandbox-Id");
	bool up = !id || sandbox_up(d, c, id);
	struct MHD_Response *resp =
	    MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
	if (!resp)
		return MHD_NO;
	enum MHD_Result ret =
	    MHD_queue_response(c, up ? MHD_HTTP_NO_CONTENT : MHD_HTTP_BAD_GATEWAY, resp);
	MHD_destroy_response(resp);
	return ret;
}

static const struct envd_route_ent *route_find(const char *method, const char *url)
{
	for (size_t i = 0; i < NROUTES; i++) {
		if (!strcmp(routes[i].path, url) &&
		    (!routes[i].method || !strcmp(routes[i].method, method)))
			return &routes[i];
	}
	return NULL;
}

static bool is_stream_ctype(struct MHD_Connection *c)
{
	const char *ct = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type");
	return ct && !strncmp(ct, "application/connect+json", 24);
}

/* An error before the handler ran: in the form the caller's kind expects. */
static enum MHD_Result early_error(struct MHD_Connection *c, const char *url, const char *code,
                                   const char *msg)
{
	if (is_rpc(url))
		return is_stream_ctype(c) ? envd_stream_error(c, code, msg)
		                          : envd_connect_error(c, code, msg);
	return coved_json_error(c, connect_http_status(code), msg);
}

static enum MHD_Result run_rpc(struct envd_req *r, struct MHD_Connection *c)
{
	const struct envd_route_ent *rt = r->route;
	char msg[512] = "";
	const char *code = NULL;
	json_t *body = NULL;
	bool stream = rt->kind == ENVD_STREAM;
	if (r->too_big) {
		code = "resource_exhausted";
		snprintf(msg, sizeof(msg), "the request body is over %u bytes", ENVD_BODY_MAX);
		goto fail;
	}
	const uint8_t *m = r->body;
	size_t mlen = r->len;
	if (stream && connect_unwrap(r->body, r->len, &m, &mlen, msg, sizeof(msg)) < 0) {
		code = "invalid_argument";
		goto fail;
	}
	if (mlen == 0) {
		body = json_object();
	} else if (envd_json(m, mlen, &body, msg, sizeof(msg)) < 0) {
		code = "invalid_argument";
		goto fail;
	}
	if (stream) {
		enum MHD_Result ret = rt->stream(r, c, body);
		json_decref(body);
		return ret;
	}
	json_t *reply = NULL;
	if (rt->unary(r, c, body, &reply, &code, msg, sizeof(msg)) < 0 || !reply) {
		json_decref(reply);
		if (!code)
			code = "internal";
		goto fail;
	}
	json_decref(body);
	char *text = json_dumps(reply, JSON_COMPACT);
	json_decref(reply);
	if (!text)
		return MHD_NO;
	return coved_text_reply(c, MHD_HTTP_OK, "application/json", text, strlen(text));
fail:
	json_decref(body);
	return stream ? envd_stream_error(c, code, msg) : envd_connect_error(c, code, msg);
}

/* The first call: route, authenticate, set up. */
static enum MHD_Result first_call(struct coved *d, struct MHD_Connection *c, const char *url,
                                  const char *method, void **req_cls)
{
	const struct envd_route_ent *rt = route_find(method, url);
	if (!rt)
		return early_error(c, url, is_rpc(url) ? "unimplemented" : "not_found",
		                   "no such envd method or path");
	if (rt->kind == ENVD_OPEN)
		return rt->open(d, c);
	const char *id = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "E2b-Sandbox-Id");
	if (!id || !id[0])
		return early_error(c, url, "invalid_argument",
		                   "the E2b-Sandbox-Id header is missing");
	struct coved_sb *sb = coved_sb_find(d, id);
	if (!sb)
		return early_error(c, url, "not_found", "no such sandbox");
	const char *token = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Access-Token");
	if (!coved_sb_token_ok(sb, token)) {
		coved_sb_unref(sb);
		return early_error(c, url, "unauthenticated", "a valid X-Access-Token is required");
	}
	/* autoResume: a request to it paused resumes it first. */
	char wmsg[600];
	if (coved_sb_wake(sb, wmsg, sizeof(wmsg)) != 0) {
		coved_sb_unref(sb);
		return early_error(c, url, "unavailable", wmsg);
	}
	struct envd_req *r = calloc(1, sizeof(*r));
	if (!r) {
		coved_sb_unref(sb);
		return MHD_NO;
	}
	const char *uq = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "username");
	const char *auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
	if (envd_user(uq, auth, r->user, sizeof(r->user)) < 0) {
		free(r);
		coved_sb_unref(sb);
		return early_error(c, url, "invalid_argument",
		                   "the user (Basic auth or username) is not a usable user name");
	}
	r->d = d;
	r->sb = sb;
	r->route = rt;
	*req_cls = r;
	coved_sb_busy(sb); /* the idle timeout waits for its end */
	r->busy = true;
	if (rt->begin) {
		char msg[512] = "";
		if (rt->begin(r, c, msg, sizeof(msg)) < 0) {
			/* Answered once the body has been taken; see envd_files_post_end. */
		}
	}
	return MHD_YES;
}

enum MHD_Result envd_handle(struct coved *d, struct MHD_Connection *c, const char *url,
                            const char *method, const char *upload_data, size_t *upload_data_size,
                            void **req_cls)
{
	if (!*req_cls)
		return first_call(d, c, url, method, req_cls);
	struct envd_req *r = *req_cls;
	if (*upload_data_size) {
		size_t n = *upload_data_size;
		*upload_data_size = 0;
		if (r->route->feed) {
			r->route->feed(r, (const uint8_t *)upload_data, n);
			return MHD_YES;
		}
		if (r->route->kind == ENVD_HTTP || r->too_big)
			return MHD_YES; /* GET bodies are dropped */
		if (n > ENVD_BODY_MAX + CONNECT_HDR - r->len) {
			r->too_big = true;
			free(r->body);
			r->body = NULL;
			r->len = 0;
			return MHD_YES;
		}
		uint8_t *nb = realloc(r->body, r->len + n);
		if (!nb)
			return MHD_NO;
		memcpy(nb + r->len, upload_data, n);
		r->body = nb;
		r->len += n;
		return MHD_YES;
	}
	if (r->route->kind == ENVD_HTTP)
		return r->route->http(r, c);
	return run_rpc(r, c);
}

void envd_request_done(struct coved *d, void **req_cls)
{
	(void)d;
	struct envd_req *r = *req_cls;
	if (!r)
		return;
	*req_cls = NULL;
	envd_upload_free(r->up);
	if (r->busy)
		coved_sb_unbusy(r->sb);
	if (r->sb)
		coved_sb_unref(r->sb);
	free(r->body);
	free(r);
}
