/* The envd surface's front: one table of routes, authentication by
 * E2b-Sandbox-Id + X-Access-Token, bounded bodies, Connect errors.  The
 * handlers are in envd_proc.c (process.Process) and envd_files.c
 * (filesystem.Filesystem, /files). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "connect.h"
#include "cove.h"
#include "envd_priv.h"
#include "envd_req.h"

static enum MHD_Result envs_get(struct envd_req *r, struct MHD_Connection *c);

/* The routes, with the kind of call each is. */
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
	{ "GET", "/files", ENVD_HTTP, .http = envd_files_get },
	{ "POST", "/files", ENVD_HTTP, .http = envd_files_post_end },
	{ "GET", "/envs", ENVD_HTTP, .http = envs_get },
};

bool envd_route(struct MHD_Connection *c, const char *url)
{
	if (MHD_lookup_connection_value(c, MHD_HEADER_KIND, "E2b-Sandbox-Id"))
		return true;
	return strncmp(url, "/process.Process/", 17) == 0 ||
	       strncmp(url, "/filesystem.Filesystem/", 23) == 0 || strcmp(url, "/files") == 0 ||
	       strcmp(url, "/health") == 0 || strcmp(url, "/envs") == 0;
}

int envd_init(struct coved *d)
{
	(void)d;
	return 0;
}

void envd_fini(struct coved *d)
{
	(void)d;
}

static enum MHD_Result queue_text(struct MHD_Connection *c, unsigned int status, const char *ctype,
                                  char *text, size_t len)
{
	struct MHD_Response *resp =
	    MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
	if (!resp) {
		free(text);
		return MHD_NO;
	}
	if (ctype)
		MHD_add_response_header(resp, "Content-Type", ctype);
	enum MHD_Result ret = MHD_queue_response(c, status, resp);
	MHD_destroy_response(resp);
	return ret;
}

enum MHD_Result envd_connect_error(struct MHD_Connection *c, const char *code, const char *msg)
{
	json_t *o = json_pack("{s:s, s:s}", "code", code, "message", msg ? msg : "");
	char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	if (!text)
		return MHD_NO;
	return queue_text(c, connect_http_status(code), "application/json", text, strlen(text));
}

enum MHD_Result envd_stream_error(struct MHD_Connection *c, const char *code, const char *msg)
{
	size_t len = 0;
	uint8_t *f = connect_end_frame(code, msg, &len);
	if (!f)
		return MHD_NO;
	return queue_text(c, MHD_HTTP_OK, "application/connect+json", (char *)f, len);
}

struct cove_sandbox *envd_cove(struct envd_req *r, const char **code, char *msg, size_t msglen)
{
	struct cove_sandbox *sb = r->sb ? coved_sb_cove(r->sb) : NULL;
	if (!sb) {
		*code = "unavailable";
		snprintf(msg, msglen, "sandbox %s is not running", r->sb ? coved_sb_id(r->sb) : "");
	}
	return sb;
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
	return queue_text(c, MHD_HTTP_OK, "application/json", text, strlen(text));
}

static const struct envd_route_ent *route_find(const char *method, const char *url)
{
	for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
		if (!strcmp(routes[i].path, url) && !strcmp(routes[i].method, method))
			return &routes[i];
	}
	return NULL;
}

static bool is_rpc(const char *url)
{
	return strncmp(url, "/process.Process/", 17) == 0 ||
	       strncmp(url, "/filesystem.Filesystem/", 23) == 0;
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
	return queue_text(c, MHD_HTTP_OK, "application/json", text, strlen(text));
fail:
	json_decref(body);
	return stream ? envd_stream_error(c, code, msg) : envd_connect_error(c, code, msg);
}

/* The first call: route, authenticate, set up. */
static enum MHD_Result first_call(struct coved *d, struct MHD_Connection *c, const char *url,
                                  const char *method, void **req_cls)
{
	if (!strcmp(url, "/health")) {
		struct MHD_Response *resp =
		    MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
		if (!resp)
			return MHD_NO;
		enum MHD_Result ret = MHD_queue_response(c, MHD_HTTP_NO_CONTENT, resp);
		MHD_destroy_response(resp);
		return ret;
	}
	const struct envd_route_ent *rt = route_find(method, url);
	if (!rt)
		return early_error(c, url, is_rpc(url) ? "unimplemented" : "not_found",
		                   "no such envd method or path");
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
	struct envd_req *r = calloc(1, sizeof(*r));
	if (!r) {
		coved_sb_unref(sb);
		return MHD_NO;
	}
	r->d = d;
	r->sb = sb;
	r->route = rt;
	*req_cls = r;
	if (rt->http == envd_files_post_end) {
		char msg[512] = "";
		if (envd_files_post_begin(r, c, msg, sizeof(msg)) < 0) {
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
		if (r->route->http == envd_files_post_end) {
			envd_files_post_feed(r, (const uint8_t *)upload_data, n);
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
	if (r->sb)
		coved_sb_unref(r->sb);
	free(r->body);
	free(r);
}
