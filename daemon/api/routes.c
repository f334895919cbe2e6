/* coved's control-plane routes: one table of (method, path pattern,
 * handler); E2B's paths and field names where a Cove concept matches.
 * Every route sees only the caller's tenant's sandboxes: another tenant's
 * is "not found", word for word as a missing one. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/api/routes.h"

#include "daemon/api/body.h"
#include "daemon/api/diff.h"
#include "daemon/api/events.h"
#include "daemon/api/logs.h"
#include "daemon/api/nodes.h"
#include "daemon/api/sb_metrics.h"
#include "daemon/api/templates.h"
#include "daemon/cluster/cluster.h"
#include "daemon/cluster/route.h"
#include "daemon/http/json_body.h"
#include "daemon/http/reply.h"
#include "daemon/sandboxes/builds.h"
#include "daemon/sandboxes/create.h"
#include "daemon/sandboxes/hourly.h"
#include "daemon/sandboxes/lifecycle.h"
#include "daemon/sandboxes/list_filter.h"
#include "daemon/sandboxes/metrics.h"
#include "daemon/sandboxes/sandbox.h"
#include "daemon/sandboxes/snap_query.h"
#include "daemon/sandboxes/snapshot.h"
#include "daemon/sandboxes/snapshots.h"
#include "daemon/sandboxes/state.h"
#include "daemon/sandboxes/table.h"
#include "daemon/sandboxes/view.h"

struct ctx {
	struct coved *d;
	struct MHD_Connection *c;
	struct coved_tenant *t; /* the caller's; NULL only for an open /metrics */
	struct coved_sb *sb;    /* for /sandboxes/{id}/..., the tenant's */
	json_t *body;           /* POST and PUT: the parsed object */
	const char *url, *raw;  /* the path and the body as sent (cluster forwards) */
	size_t raw_len;
};

static enum MHD_Result err_reply(struct ctx *x, int status, const char *msg)
{
	return coved_json_error(x->c, (unsigned int)status, msg);
}

static enum MHD_Result no_content(struct ctx *x)
{
	return coved_json_reply(x->c, 204, NULL);
}

static enum MHD_Result create(struct ctx *x)
{
	struct coved_create req;
	char msg[600], store[COVED_BUILD_STORE_LEN + 1];
	if (coved_parse_create(x->body, &req, msg, sizeof(msg)) < 0)
		return err_reply(x, 400, msg);
	struct coved_sb *sb;
	/* Cluster mode: placed by this node, or by the node that sent it. */
	const char *placed = MHD_lookup_connection_value(x->c, MHD_HEADER_KIND, "X-Cove-Placed");
	if (placed && coved_cluster_node_call(x->d, x->c)) {
		if (strlen(placed) != COVED_ID_LEN ||
		    strspn(placed, "abcdefghijklmnopqrstuvwxyz0123456789") != COVED_ID_LEN) {
			coved_create_free(&req);
			return err_reply(x, 400, "X-Cove-Placed is not a sandbox id");
		}
		snprintf(req.placed_id, sizeof(req.placed_id), "%s", placed);
	} else if (x->d->cluster && !coved_build_ready(x->d, x->t, req.template_id, store) &&
	           !coved_snap_here(x->d, x->t, req.template_id)) {
		/* A template the tenant built, or its snapshot (by id or name),
		 * lives on this node: its creates stay. */
		enum MHD_Result ret;
		uint64_t cpus = req.cpus ? req.cpus : x->d->cfg.cpus;
		uint64_t mem = req.memory_mib ? req.memory_mib : x->d->cfg.memory_mib;
		if (coved_cluster_place(x->d, x->c, x->t, x->url, x->raw, x->raw_len,
		                        req.template_id, cpus, mem, req.placed_id, &ret)) {
			coved_create_free(&req);
			return ret;
		}
	}
	int st = coved_sb_create(x->d, x->t, &req, &sb, msg, sizeof(msg));
	if (st && req.placed_id[0])
		coved_cluster_release(x->d, req.placed_id);
	coved_create_free(&req);
	if (st == 429)
		return coved_json_error(x->c, 429, msg); /* Retry-After from the server */
	if (st)
		return err_reply(x, st, msg);
	json_t *o = coved_sb_json(sb, true);
	coved_sb_unref(sb);
	return coved_json_reply(x->c, 201, o);
}

struct states {
	char buf[128];
	size_t len;
};

/* state=a,b or state=a&state=b (openapi-fetch's form style for arrays). */
static enum MHD_Result collect_state(void *cls, enum MHD_ValueKind kind, const char *key,
                                     const char *value)
{
	(void)kind;
	struct states *st = cls;
	if (strcmp(key, "state") == 0 && value) {
		int n = snprintf(st->buf + st->len, sizeof(st->buf) - st->len, "%s%s",
		                 st->len ? "," : "", value);
		if (n > 0 && (size_t)n < sizeof(st->buf) - st->len)
			st->len += (size_t)n;
	}
	return MHD_YES;
}

static enum MHD_Result list(struct ctx *x, bool paged)
{
	struct states sts = { .len = 0 };
	sts.buf[0] = 0;
	MHD_get_connection_values(x->c, MHD_GET_ARGUMENT_KIND, collect_state, &sts);
	const char *state = sts.len ? sts.buf : NULL;
	const char *meta = MHD_lookup_connection_value(x->c, MHD_GET_ARGUMENT_KIND, "metadata");
	const char *tpl = MHD_lookup_connection_value(x->c, MHD_GET_ARGUMENT_KIND, "template");
	struct coved_list_filter f = { .states = paged ? state : "running,paused,dead",
		                       .metadata = meta,
		                       .template_id = tpl };
	const char *lim = MHD_lookup_connection_value(x->c, MHD_GET_ARGUMENT_KIND, "limit");
	const char *next = MHD_lookup_connection_value(x->c, MHD_GET_ARGUMENT_KIND, "nextToken");
	unsigned long limit = 100;
	if (paged && lim) {
		char *end;
		limit = strtoul(lim, &end, 10);
		if (*end || limit == 0 || limit > 1000)
			return err_reply(x, 400, "'limit' must be 1 to 1000");
	}
	if (!paged)
		limit = (unsigned long)-1;
	size_t n;
	struct coved_sb **all = coved_sb_all(x->d, &n);
	if (!all)
		return err_reply(x, 500, "out of memory");
	json_t *arr = json_array();
	size_t i = 0;
	bool found_next = !next || !*next;
	if (!found_next) {
		for (; i < n && !found_next; i++)
			found_next =
			    strcmp(coved_sb_id(all[i]), next) == 0 && coved_sb_owned(all[i], x->t);
		if (!found_next) {
			for (size_t k = 0; k < n; k++)
				coved_sb_unref(all[k]);
			free(all);
			json_decref(arr);
			return err_reply(x, 400, "'nextToken' names no sandbox");
		}
	}
	const char *last = NULL;
	bool more = false;
	for (; i < n; i++) {
		struct coved_sb *sb = all[i];
		if (!coved_sb_owned(sb, x->t))
			continue;
		if (!coved_sb_listed(sb, &f))
			continue;
		if (json_array_size(arr) == limit) {
			more = true;
			break;
		}
		json_array_append_new(arr, coved_sb_json(sb, false));
		last = coved_sb_id(sb);
	}
	if (!more)
		coved_cluster_list_more(x->d, x->c, x->t, x->url, arr, limit);
	struct MHD_Response *r;
	char *text = json_dumps(arr, JSON_COMPACT);
	json_decref(arr);
	enum MHD_Result ret = MHD_NO;
	if (text &&
	    (r = MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE))) {
		MHD_add_response_header(r, "Content-Type", "application/json");
		coved_reply_private(r);
		if (more && last)
			MHD_add_response_header(r, "X-Next-Token", last);
		ret = MHD_queue_response(x->c, 200, r);
		MHD_destroy_response(r);
	} else {
		free(text);
	}
	for (size_t k = 0; k < n; k++)
		coved_sb_unref(all[k]);
	free(all);
	return ret;
}

static enum MHD_Result list_v2(struct ctx *x)
{
	return list(x, true);
}

static enum MHD_Result list_v1(struct ctx *x)
{
	return list(x, false);
}

/* GET /sandboxes/counts: the caller's tenant's sandboxes by state, without
 * listing them (the console's overview). */
static enum MHD_Result counts(struct ctx *x)
{
	static const char *const states[] = { "running", "paused", "stopped", "dead" };
	json_int_t n[4] = { 0 };
	size_t len;
	struct coved_sb **all = coved_sb_all(x->d, &len);
	if (!all)
		return err_reply(x, 500, "out of memory");
	for (size_t i = 0; i < len; i++) {
		for (size_t k = 0; k < 4 && coved_sb_owned(all[i], x->t); k++)
			if (coved_sb_listed(all[i],
			                    &(struct coved_list_filter){ .states = states[k] })) {
				n[k]++;
				break;
			}
		coved_sb_unref(all[i]);
	}
	free(all);
	return coved_json_reply(x->c, 200,
	                        json_pack("{s:I, s:I, s:I, s:I}", states[0], n[0], states[1], n[1],
	                                  states[2], n[2], states[3], n[3]));
}

/* GET /sandboxes/hour: the caller's tenant's last hour (hourly.h):
 * creates and egress denials by minute, create to first command. */
static enum MHD_Result hour(struct ctx *x)
{
	json_t *o = coved_hourly_json(x->d, x->t->name);
	return o ? coved_json_reply(x->c, 200, o) : err_reply(x, 500, "out of memory");
}

/* GET /nodes: in cluster mode, every node's capacity and commitment,
 * lease and draining (nodes.h), for any key: the console's overview. */
static enum MHD_Result nodes(struct ctx *x)
{
	if (!x->d->cluster)
		return err_reply(x, 404, "coved is not in cluster mode");
	json_t *st = coved_cluster_status(x->d);
	json_t *a = coved_nodes_public(st);
	json_decref(st);
	return a ? coved_json_reply(x->c, 200, a) : err_reply(x, 500, "out of memory");
}

static enum MHD_Result info(struct ctx *x)
{
	return coved_json_reply(x->c, 200, coved_sb_json(x->sb, true));
}

static enum MHD_Result delete_sb(struct ctx *x)
{
	char msg[600];
	int st = coved_sb_delete(x->sb, msg, sizeof(msg));
	return st ? err_reply(x, st, msg) : no_content(x);
}

static enum MHD_Result set_timeout(struct ctx *x)
{
	char msg[600];
	uint64_t t;
	if (coved_parse_timeout(x->body, true, &t, msg, sizeof(msg)) < 0)
		return err_reply(x, 400, msg);
	int st = coved_sb_set_timeout(x->sb, t, msg, sizeof(msg));
	return st ? err_reply(x, st, msg) : no_content(x);
}

static enum MHD_Result pause_sb(struct ctx *x)
{
	char msg[600];
	json_t *mem = json_object_get(x->body, "memory");
	if (mem && !json_is_null(mem) && !json_is_true(mem))
		return err_reply(x, 400,
		                 "'memory' false (a file-system-only pause) is not supported");
	int st = coved_sb_pause(x->sb, msg, sizeof(msg));
	return st ? err_reply(x, st, msg) : no_content(x);
}

static enum MHD_Result connect_sb(struct ctx *x)
{
	char msg[600];
	uint64_t t;
	if (coved_parse_timeout(x->body, false, &t, msg, sizeof(msg)) < 0)
		return err_reply(x, 400, msg);
	json_t *mem = json_object_get(x->body, "memory");
	if (mem && !json_is_null(mem) && !json_is_true(mem))
		return err_reply(x, 400,
		                 "'memory' false (a reboot instead of a restore) is not "
		                 "supported");
	bool resumed;
	int st = coved_sb_resume(x->sb, t, &resumed, msg, sizeof(msg));
	if (st)
		return err_reply(x, st, msg);
	return coved_json_reply(x->c, resumed ? 201 : 200, coved_sb_json(x->sb, true));
}

static enum MHD_Result resume_v1(struct ctx *x)
{
	char msg[600];
	uint64_t t;
	if (coved_parse_timeout(x->body, false, &t, msg, sizeof(msg)) < 0)
		return err_reply(x, 400, msg);
	bool resumed;
	int st = coved_sb_resume(x->sb, t, &resumed, msg, sizeof(msg));
	if (st)
		return err_reply(x, st, msg);
	if (!resumed)
		return err_reply(x, 409, "sandbox is already running");
	return coved_json_reply(x->c, 201, coved_sb_json(x->sb, true));
}

static enum MHD_Result stop_sb(struct ctx *x)
{
	char msg[600];
	int st = coved_sb_stop(x->sb, msg, sizeof(msg));
	return st ? err_reply(x, st, msg) : no_content(x);
}

/* POST /sandboxes/{id}/snapshots {name?}: a name moves to the new one. */
static enum MHD_Result snapshot_sb(struct ctx *x)
{
	char msg[600], id[64];
	json_t *name = json_object_get(x->body, "name");
	const char *label = json_is_null(name) ? NULL : json_string_value(name);
	if (name && !json_is_null(name) && (!label || strlen(label) != json_string_length(name)))
		return err_reply(x, 400, "'name' must be a string without NUL");
	if (label && !coved_snap_name_ok(label, msg, sizeof(msg)))
		return err_reply(x, 400, msg);
	int st = coved_sb_snapshot(x->sb, label, id, sizeof(id), msg, sizeof(msg));
	if (st)
		return err_reply(x, st, msg);
	return coved_json_reply(
	    x->c, 201, json_pack("{s:s, s:[s]}", "snapshotID", id, "names", label ? label : id));
}

/* GET /snapshots?sandboxID=&name=&limit=&nextToken=: the tenant's, newest
 * first; X-Next-Token when more follow. */
static enum MHD_Result list_snapshots(struct ctx *x)
{
	char msg[300], next[COVED_SNAP_TOKEN_LEN];
	struct coved_snap_query q;
	enum MHD_ValueKind k = MHD_GET_ARGUMENT_KIND;
	if (coved_snap_query_parse(MHD_lookup_connection_value(x->c, k, "sandboxID"),
	                           MHD_lookup_connection_value(x->c, k, "name"),
	                           MHD_lookup_connection_value(x->c, k, "limit"),
	                           MHD_lookup_connection_value(x->c, k, "nextToken"), &q, msg,
	                           sizeof(msg)) < 0)
		return err_reply(x, 400, msg);
	json_t *arr = coved_snap_list(x->d, x->t, &q, next, sizeof(next));
	char *text = arr ? json_dumps(arr, JSON_COMPACT) : NULL;
	json_decref(arr);
	struct MHD_Response *r;
	if (!text ||
	    !(r = MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE))) {
		free(text);
		return err_reply(x, 500, "out of memory");
	}
	MHD_add_response_header(r, "Content-Type", "application/json");
	coved_reply_private(r);
	if (next[0])
		MHD_add_response_header(r, "X-Next-Token", next);
	enum MHD_Result ret = MHD_queue_response(x->c, 200, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result fork_sb(struct ctx *x)
{
	char msg[600];
	unsigned int count;
	uint64_t t;
	if (coved_parse_fork(x->body, &count, &t, msg, sizeof(msg)) < 0)
		return err_reply(x, 400, msg);
	json_t *res;
	int st = coved_sb_fork(x->sb, count, t, &res, msg, sizeof(msg));
	if (st)
		return err_reply(x, st, msg);
	return coved_json_reply(x->c, 201, res);
}

static enum MHD_Result network_sb(struct ctx *x)
{
	char msg[600];
	/* The SDK sends {allowOut, denyOut, allow_internet_access} flat. */
	struct coved_net net;
	if (coved_parse_net_update(x->body, &net, msg, sizeof(msg)) < 0) {
		coved_net_free(&net);
		return err_reply(x, 400, msg);
	}
	int st = coved_sb_set_network(x->sb, &net, msg, sizeof(msg));
	coved_net_free(&net);
	return st ? err_reply(x, st, msg) : no_content(x);
}

/* GET /sandboxes/{id}/logs: pages, ?since=, ?verify=1, ?follow=1 (logs.c). */
static enum MHD_Result logs_sb(struct ctx *x)
{
	return coved_logs_get(x->d, x->c, x->sb);
}

/* POST /sandboxes/{id}/traces/export: the journal as spans (logs.c). */
static enum MHD_Result traces_export_sb(struct ctx *x)
{
	return coved_logs_export(x->d, x->c, x->sb, x->body);
}

/* GET /sandboxes/{id}/metrics: getMetrics' samples (sb_metrics.c). */
static enum MHD_Result metrics_sb(struct ctx *x)
{
	return coved_sb_metrics_reply(x->d, x->c, x->sb);
}

static enum MHD_Result diff_sb(struct ctx *x)
{
	return coved_diff_reply(x->sb, x->c); /* daemon/api/diff.c */
}

static enum MHD_Result metrics(struct ctx *x)
{
	size_t len;
	char *text = coved_metrics_text(x->d, &len);
	if (!text)
		return err_reply(x, 500, "out of memory");
	return coved_text_reply(x->c, 200, "text/plain; version=0.0.4; charset=utf-8", text, len);
}

typedef enum MHD_Result (*route_fn)(struct ctx *x);

struct route {
	const char *method;
	const char *pattern; /* "{id}" stands for one path segment */
	route_fn fn;
};

static const struct route routes[] = {
	{ "POST", "/v2/sandboxes", create },
	{ "POST", "/sandboxes", create },
	{ "GET", "/v2/sandboxes", list_v2 },
	{ "GET", "/sandboxes", list_v1 },
	{ "GET", "/sandboxes/counts", counts }, /* before {id}: an id is 20 of [a-z0-9] */
	{ "GET", "/sandboxes/hour", hour },
	{ "GET", "/nodes", nodes },
	{ "GET", "/sandboxes/{id}", info },
	{ "DELETE", "/sandboxes/{id}", delete_sb },
	{ "POST", "/sandboxes/{id}/timeout", set_timeout },
	{ "POST", "/sandboxes/{id}/pause", pause_sb },
	{ "POST", "/sandboxes/{id}/resume", resume_v1 },
	{ "POST", "/v2/sandboxes/{id}/connect", connect_sb },
	{ "POST", "/sandboxes/{id}/stop", stop_sb },
	{ "POST", "/sandboxes/{id}/snapshots", snapshot_sb },
	{ "GET", "/snapshots", list_snapshots },
	{ "POST", "/sandboxes/{id}/fork", fork_sb },
	{ "PUT", "/sandboxes/{id}/network", network_sb },
	{ "GET", "/sandboxes/{id}/logs", logs_sb },
	{ "POST", "/sandboxes/{id}/traces/export", traces_export_sb },
	{ "GET", "/sandboxes/{id}/metrics", metrics_sb },
	{ "GET", "/sandboxes/{id}/diff", diff_sb },
	{ "GET", "/metrics", metrics },
};

/* Matches url against pattern; the {id} segment goes to id. */
static bool match(const char *pattern, const char *url, char *id, size_t idlen)
{
	const char *p = pattern, *u = url;
	while (*p) {
		if (strncmp(p, "{id}", 4) == 0) {
			size_t l = strcspn(u, "/");
			if (l == 0 || l >= idlen)
				return false;
			memcpy(id, u, l);
			id[l] = 0;
			u += l;
			p += 4;
			continue;
		}
		if (*p != *u)
			return false;
		p++;
		u++;
	}
	return *u == 0 || (u[0] == '/' && u[1] == 0);
}

enum MHD_Result coved_route(struct coved *d, struct coved_tenant *t, struct MHD_Connection *c,
                            const char *method, const char *url, const char *body, size_t body_len)
{
	char id[128];
	bool path_known = false;
	enum MHD_Result tr;
	if (coved_templates_route(d, t, c, method, url, body, body_len, &tr))
		return tr;
	if (coved_events_route(d, t, c, method, url, body, body_len, &tr))
		return tr;
	for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
		const struct route *rt = &routes[i];
		id[0] = 0;
		if (!match(rt->pattern, url, id, sizeof(id)))
			continue;
		path_known = true;
		if (strcmp(rt->method, method) != 0)
			continue;
		if (!t && rt->fn != metrics)
			return coved_json_error(c, 401, "missing or invalid API key (X-API-KEY)");
		struct ctx x = {
			.d = d, .c = c, .t = t, .url = url, .raw = body, .raw_len = body_len
		};
		if (strcmp(method, "POST") == 0 || strcmp(method, "PUT") == 0) {
			char msg[300];
			x.body =
			    coved_body_load(body, body_len, d->cfg.max_depth, msg, sizeof(msg));
			if (!x.body)
				return coved_json_error(c, 400, msg);
		} else if (body_len) {
			return coved_json_error(c, 400, "this request takes no body");
		}
		if (strstr(rt->pattern, "{id}")) {
			x.sb = coved_sb_find_for(d, id, t);
			if (!x.sb) {
				char msg[200];
				snprintf(msg, sizeof(msg), "sandbox %.64s not found", id);
				json_decref(x.body);
				return coved_json_error(c, 404, msg);
			}
		}
		enum MHD_Result r = rt->fn(&x);
		coved_sb_unref(x.sb);
		json_decref(x.body);
		return r;
	}
	if (path_known)
		return coved_json_error(c, 405, "method not allowed on this path");
	return coved_json_error(c, 404, "no such route");
}
