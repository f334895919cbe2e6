/* coved's template routes: its own and the e2b SDK's (templates.h). */
#include "daemon/api/templates.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/api/template_body.h"
#include "daemon/http/json_body.h"
#include "daemon/http/reply.h"
#include "daemon/sandboxes/build_files.h"
#include "daemon/sandboxes/build_json.h"
#include "daemon/sandboxes/builds.h"
#include "daemon/sandboxes/snap_query.h"
#include "daemon/sandboxes/snapshots.h"
#include "daemon/sandboxes/state.h"
#include "daemon/sandboxes/table.h"
#include "daemon/sandboxes/templates.h"
#include "lib/template/template.h"

#define E2B_LOGS_MAX 100 /* log entries one status answer gives, as E2B's */

struct tctx {
	struct coved *d;
	struct MHD_Connection *c;
	struct coved_tenant *t;
	json_t *body;
	char a[130], b[130]; /* the path's {a} and {b} segments */
};

/* COPY steps' archives must be in before a build starts. */
static enum MHD_Result start(struct tctx *x, const char *id, struct coved_build_req *req)
{
	char msg[600];
	for (size_t i = 0; i < req->nsteps; i++) {
		const struct coved_bstep *s = &req->steps[i];
		if (s->kind == COVED_BSTEP_COPY &&
		    !coved_files_present(x->d, x->t->name, s->files)) {
			coved_build_req_free(req);
			snprintf(msg, sizeof(msg), "steps[%zu]: the files %s were not uploaded", i,
			         s->files);
			return coved_json_error(x->c, 400, msg);
		}
		char ctx[4400], words[4096], err[400];
		if (s->kind == COVED_BSTEP_COPY && s->mode[0]) {
			coved_files_dir(x->d, x->t->name, s->files, ctx, sizeof(ctx));
			if (coved_files_mode_targets(ctx, s->src, s->dest, words,
			                             sizeof(words) - 64, err, sizeof(err)) < 0) {
				coved_build_req_free(req);
				snprintf(msg, sizeof(msg), "steps[%zu]: %s", i, err);
				return coved_json_error(x->c, 400, msg);
			}
		}
	}
	if (req->cpus > x->d->cfg.max_cpus || req->memory_mib > x->d->cfg.max_memory_mib) {
		coved_build_req_free(req);
		snprintf(msg, sizeof(msg), "cpus are at most %u and memory at most %llu MiB here",
		         x->d->cfg.max_cpus, (unsigned long long)x->d->cfg.max_memory_mib);
		return coved_json_error(x->c, 400, msg);
	}
	json_t *out;
	int st = coved_build_start(x->d, x->t, id, req, &out, msg, sizeof(msg));
	coved_build_req_free(req);
	if (st)
		return coved_json_error(x->c, (unsigned)st, msg);
	if (id) {
		json_decref(out);
		return coved_json_reply(x->c, 202, NULL);
	}
	return coved_json_reply(x->c, 202, out);
}

/* POST /templates */
static enum MHD_Result build_native(struct tctx *x)
{
	struct coved_build_req req;
	char msg[600];
	if (coved_parse_template(x->body, &req, msg, sizeof(msg)) < 0) {
		coved_build_req_free(&req);
		return coved_json_error(x->c, 400, msg);
	}
	return start(x, NULL, &req);
}

/* The operator's templates: "base", the config's names, the store's own
 * (not the tenants' "t." ones, nor the images' "base-" ones). */
static void builtins(struct coved *d, json_t *arr)
{
	json_array_append_new(
	    arr, json_pack("{s:s, s:s, s:b}", "name", "base", "status", "ready", "builtin", 1));
	const char *k;
	json_t *v;
	json_object_foreach(d->cfg.templates, k, v)
	{
		json_array_append_new(
		    arr, json_pack("{s:s, s:s, s:b}", "name", k, "status", "ready", "builtin", 1));
	}
	size_t nb;
	const struct coved_builtin *b = coved_template_builtins(&nb);
	for (size_t i = 0; i < nb; i++) {
		char *img = NULL, msg[300];
		if (!json_object_get(d->cfg.templates, b[i].tid) &&
		    coved_template_shared(d, b[i].tid, &img, msg, sizeof(msg)) == 0 && img)
			json_array_append_new(arr, json_pack("{s:s, s:s, s:b}", "name", b[i].tid,
			                                     "status", "ready", "builtin", 1));
		free(img);
	}
	struct cove_template_info *list = NULL;
	size_t n = 0;
	char err[300];
	if (!d->cfg.templates_dir)
		return;
	cove_template_set_store(d->cfg.templates_dir);
	if (cove_template_list(&list, &n, err, sizeof(err)) < 0)
		return;
	for (size_t i = 0; i < n; i++)
		if (strncmp(list[i].name, "t.", 2) && strncmp(list[i].name, "base-", 5))
			json_array_append_new(arr,
			                      json_pack("{s:s, s:s, s:b}", "name", list[i].name,
			                                "status", "ready", "builtin", 1));
	free(list);
}

/* GET /templates */
static enum MHD_Result list(struct tctx *x)
{
	json_t *arr = coved_builds_list(x->d, x->t);
	if (arr)
		builtins(x->d, arr);
	return arr ? coved_json_reply(x->c, 200, arr)
	           : coved_json_error(x->c, 500, "out of memory");
}

static enum MHD_Result not_found(struct tctx *x, const char *name)
{
	char msg[200];
	snprintf(msg, sizeof(msg), "template '%.64s' not found", name);
	return coved_json_error(x->c, 404, msg);
}

/* GET /templates/{name}?offset=N: the build, its log from line N. */
static enum MHD_Result info(struct tctx *x)
{
	const char *off = MHD_lookup_connection_value(x->c, MHD_GET_ARGUMENT_KIND, "offset");
	char *end;
	unsigned long long o = off ? strtoull(off, &end, 10) : 0;
	if (off && (*end || !*off))
		return coved_json_error(x->c, 400, "'offset' must be a line number");
	json_t *j = coved_build_json(x->d, x->t, x->a, true, o);
	return j ? coved_json_reply(x->c, 200, j) : not_found(x, x->a);
}

/* DELETE /templates/{name}: a build, or a snapshot (the SDK's
 * deleteSnapshot) by its id or, when no build has it, its name. */
static enum MHD_Result delete_tmpl(struct tctx *x)
{
	char msg[600], smsg[600];
	int st = coved_snap_id_ok(x->a) ? coved_snap_delete(x->d, x->t, x->a, msg, sizeof(msg))
	                                : coved_build_delete(x->d, x->t, x->a, msg, sizeof(msg));
	if (st == 404 && !coved_snap_id_ok(x->a)) {
		int ss = coved_snap_delete(x->d, x->t, x->a, smsg, sizeof(smsg));
		if (ss && ss != 404) /* a snapshot's name: its answer, else the build's 404 */
			snprintf(msg, sizeof(msg), "%s", smsg);
		st = ss;
	}
	return st ? coved_json_error(x->c, (unsigned)st, msg) : coved_json_reply(x->c, 204, NULL);
}

/* POST /v3/templates: a build is requested, its steps come later. */
static enum MHD_Result e2b_request(struct tctx *x)
{
	struct coved_build_req req;
	char msg[600], id[COVED_BUILD_ID_LEN + 1], name[COVED_BUILD_NAME_MAX + 1];
	if (coved_parse_e2b_request(x->body, &req, msg, sizeof(msg)) < 0) {
		coved_build_req_free(&req);
		return coved_json_error(x->c, 400, msg);
	}
	if (req.cpus > x->d->cfg.max_cpus || req.memory_mib > x->d->cfg.max_memory_mib) {
		coved_build_req_free(&req);
		snprintf(msg, sizeof(msg), "cpuCount is at most %u and memoryMB at most %llu here",
		         x->d->cfg.max_cpus, (unsigned long long)x->d->cfg.max_memory_mib);
		return coved_json_error(x->c, 400, msg);
	}
	snprintf(name, sizeof(name), "%s", req.name);
	int st = coved_build_request(x->d, x->t, &req, id, msg, sizeof(msg));
	coved_build_req_free(&req);
	if (st)
		return coved_json_error(x->c, (unsigned)st, msg);
	return coved_json_reply(x->c, 202,
	                        json_pack("{s:s, s:s, s:[s], s:[s], s:[], s:b}", "templateID", name,
	                                  "buildID", id, "names", name, "aliases", name, "tags",
	                                  "public", 0));
}

/* The scheme and host the caller reached us by, for a link back: the
 * Host header when it is a plain host[:port]. */
static void base_url(struct tctx *x, char *out, size_t len)
{
	const char *h = MHD_lookup_connection_value(x->c, MHD_HEADER_KIND, "Host");
	if (!h || !*h || strlen(h) > 255 ||
	    strspn(h, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-:[]") !=
	        strlen(h))
		h = x->d->cfg.tcp ? x->d->cfg.tcp : "localhost";
	snprintf(out, len, "%s://%s", x->d->cfg.tls_cert ? "https" : "http", h);
}

/* GET /templates/{id}/files/{hash}: whether the archive is in, else a
 * link to upload it (PUT, no key: the token is the key). */
static enum MHD_Result e2b_files(struct tctx *x)
{
	const char *hash = x->b;
	if (strlen(hash) != COVED_FILES_HASH_LEN ||
	    strspn(hash, "0123456789abcdef") != COVED_FILES_HASH_LEN)
		return coved_json_error(x->c, 400, "the files hash must be 64 of [0-9a-f]");
	if (!coved_build_pending(x->d, x->t, x->a, NULL))
		return not_found(x, x->a);
	if (coved_files_present(x->d, x->t->name, hash))
		return coved_json_reply(x->c, 201, json_pack("{s:b}", "present", 1));
	char token[65], url[600];
	if (coved_upload_link(x->d, x->t->name, hash, token) < 0)
		return coved_json_error(x->c, 429, "too many upload links out: use some first");
	base_url(x, url, sizeof(url) - 100);
	size_t n = strlen(url);
	snprintf(url + n, sizeof(url) - n, "/templates/uploads/%s", token);
	return coved_json_reply(x->c, 201, json_pack("{s:b, s:s}", "present", 0, "url", url));
}

/* POST /v2/templates/{id}/builds/{id}: the steps; the build starts. */
static enum MHD_Result e2b_build(struct tctx *x)
{
	struct coved_build_req req = { 0 };
	char msg[600];
	snprintf(req.name, sizeof(req.name), "%.64s", x->a);
	if (!coved_build_pending(x->d, x->t, x->a, x->b)) {
		snprintf(msg, sizeof(msg), "build %.64s of template '%.64s' not found or started",
		         x->b, x->a);
		return coved_json_error(x->c, 404, msg);
	}
	if (coved_parse_e2b_build(x->body, &req, msg, sizeof(msg)) < 0) {
		coved_build_req_free(&req);
		return coved_json_error(x->c, 400, msg);
	}
	return start(x, x->b, &req);
}

/* GET /templates/{id}/builds/{id}/status?logsOffset=N&limit=M */
static enum MHD_Result e2b_status(struct tctx *x)
{
	const char *off = MHD_lookup_connection_value(x->c, MHD_GET_ARGUMENT_KIND, "logsOffset");
	const char *lim = MHD_lookup_connection_value(x->c, MHD_GET_ARGUMENT_KIND, "limit");
	char *end;
	unsigned long long o = 0, l = E2B_LOGS_MAX;
	if (off && (o = strtoull(off, &end, 10), *end || !*off))
		return coved_json_error(x->c, 400, "'logsOffset' must be a number");
	if (lim && (l = strtoull(lim, &end, 10), *end || l > E2B_LOGS_MAX))
		return coved_json_error(x->c, 400, "'limit' must be 0 to 100");
	json_t *j = coved_build_e2b_status(x->d, x->t, x->a, x->b, o, (size_t)l);
	if (!j) {
		char msg[300];
		snprintf(msg, sizeof(msg), "build %.64s of template '%.64s' not found", x->b, x->a);
		return coved_json_error(x->c, 404, msg);
	}
	return coved_json_reply(x->c, 200, j);
}

/* GET /templates/aliases/{alias} (Template.exists): 200 when the tenant
 * has a build of that name, else 404. */
static enum MHD_Result e2b_alias(struct tctx *x)
{
	json_t *j = coved_build_json(x->d, x->t, x->a, false, 0);
	if (!j)
		return not_found(x, x->a);
	json_decref(j);
	return coved_json_reply(x->c, 200,
	                        json_pack("{s:s, s:b}", "templateID", x->a, "public", 0));
}

struct troute {
	const char *method, *pattern; /* {a} and {b}: one path segment each */
	enum MHD_Result (*fn)(struct tctx *x);
};

static const struct troute troutes[] = {
	{ "POST", "/templates", build_native },
	{ "GET", "/templates", list },
	{ "POST", "/v3/templates", e2b_request },
	{ "GET", "/templates/aliases/{a}", e2b_alias },
	{ "GET", "/templates/{a}/files/{b}", e2b_files },
	{ "POST", "/v2/templates/{a}/builds/{b}", e2b_build },
	{ "GET", "/templates/{a}/builds/{b}/status", e2b_status },
	{ "GET", "/templates/{a}", info },
	{ "DELETE", "/templates/{a}", delete_tmpl },
};

static bool tmatch(const char *p, const char *u, char *a, char *b)
{
	while (*p) {
		if (p[0] == '{' && (p[1] == 'a' || p[1] == 'b') && p[2] == '}') {
			size_t l = strcspn(u, "/");
			if (l == 0 || l >= 130)
				return false;
			char *dst = p[1] == 'a' ? a : b;
			memcpy(dst, u, l);
			dst[l] = 0;
			u += l;
			p += 3;
			continue;
		}
		if (*p++ != *u++)
			return false;
	}
	return *u == 0 || (u[0] == '/' && u[1] == 0);
}

bool coved_templates_route(struct coved *d, struct coved_tenant *t, struct MHD_Connection *c,
                           const char *method, const char *url, const char *body, size_t len,
                           enum MHD_Result *ret)
{
	struct tctx x = { .d = d, .c = c, .t = t };
	bool path_known = false;
	for (size_t i = 0; i < sizeof(troutes) / sizeof(troutes[0]); i++) {
		const struct troute *rt = &troutes[i];
		if (!tmatch(rt->pattern, url, x.a, x.b))
			continue;
		path_known = true;
		if (strcmp(rt->method, method))
			continue;
		if (!t) {
			*ret = coved_json_error(c, 401, "missing or invalid API key (X-API-KEY)");
			return true;
		}
		char msg[300];
		if (!strcmp(method, "POST")) {
			if (!(x.body =
			          coved_body_load(body, len, d->cfg.max_depth, msg, sizeof(msg)))) {
				*ret = coved_json_error(c, 400, msg);
				return true;
			}
		} else if (len) {
			*ret = coved_json_error(c, 400, "this request takes no body");
			return true;
		}
		*ret = rt->fn(&x);
		json_decref(x.body);
		return true;
	}
	if (path_known)
		*ret = coved_json_error(c, 405, "method not allowed on this path");
	return path_known;
}
