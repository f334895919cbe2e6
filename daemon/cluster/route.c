/* Requests in cluster mode (route.h). */
#include "daemon/cluster/route.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/cluster/cluster.h"
#include "daemon/cluster/forward.h"
#include "daemon/conf/keys.h"
#include "daemon/http/reply.h"
#include "daemon/sandboxes/record.h"
#include "daemon/sandboxes/sandbox.h"
#include "daemon/sandboxes/state.h"
#include "daemon/sandboxes/table.h"

#define CONNECT_MS  3000
#define IDLE_MS     (10 * 60 * 1000) /* a Connect stream keeps itself alive well within */
#define PLACE_TRIES 3
#define CREATE_MS   (5 * 60 * 1000) /* a create's boot, on the owner */
#define LIST_MS     10000
#define AUTH_HEADER "X-Cove-Node-Auth"
#define TENANT_HDR  "X-Cove-Tenant"
#define PLACED_HDR  "X-Cove-Placed"

bool coved_cluster_node_call(struct coved *d, struct MHD_Connection *c)
{
	if (!d->cluster)
		return false;
	const char *v = MHD_lookup_connection_value(c, MHD_HEADER_KIND, AUTH_HEADER);
	return v && coved_secret_eq(v, d->cfg.cluster.secret);
}

struct coved_tenant *coved_cluster_node_tenant(struct coved *d, struct MHD_Connection *c)
{
	if (!coved_cluster_node_call(d, c))
		return NULL;
	const char *name = MHD_lookup_connection_value(c, MHD_HEADER_KIND, TENANT_HDR);
	return name ? coved_tenant_find(d, name) : NULL;
}

/* The headers a node call carries: the secret, the tenant, the placed id. */
struct node_headers {
	char auth[600], tenant[100], placed[80];
	const char *v[4];
};

static void node_headers(struct coved *d, const struct coved_tenant *t, const char *placed,
                         struct node_headers *h)
{
	size_t n = 0;
	snprintf(h->auth, sizeof(h->auth), AUTH_HEADER ": %s", d->cfg.cluster.secret);
	h->v[n++] = h->auth;
	if (t) {
		snprintf(h->tenant, sizeof(h->tenant), TENANT_HDR ": %s", t->name);
		h->v[n++] = h->tenant;
	}
	if (placed) {
		snprintf(h->placed, sizeof(h->placed), PLACED_HDR ": %s", placed);
		h->v[n++] = h->placed;
	}
	h->v[n] = NULL;
}

static void node_headers_wipe(struct node_headers *h)
{
	explicit_bzero(h->auth, sizeof(h->auth));
}

/* The sandbox id a request is about, into id: the control plane's
 * /sandboxes/{id}... and /v2/sandboxes/{id}/..., envd's E2b-Sandbox-Id. */
static bool request_id(struct MHD_Connection *c, const char *url, bool envd, char *id, size_t len)
{
	const char *s = NULL;
	size_t l;
	if (envd) {
		s = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "E2b-Sandbox-Id");
		l = s ? strlen(s) : 0;
	} else {
		if (strncmp(url, "/sandboxes/", 11) == 0)
			s = url + 11;
		else if (strncmp(url, "/v2/sandboxes/", 14) == 0)
			s = url + 14;
		l = s ? strcspn(s, "/") : 0;
	}
	if (!s || l == 0 || l >= len)
		return false;
	memcpy(id, s, l);
	id[l] = 0;
	return cl_id_ok(id, 32);
}

/* A sandbox whose node is gone, as the API shows it: dead, with why;
 * DELETE forgets it. */
static enum MHD_Result lost_reply(struct coved *d, struct MHD_Connection *c, const char *method,
                                  const char *url, const char *id, const struct cl_dir *rec,
                                  bool envd)
{
	char msg[400];
	/* Paused with its snapshot on shared storage: any node resumes it. */
	bool resumable = strcmp(rec->state, "paused") == 0 && rec->shared;
	const char *why = rec->reason[0] ? rec->reason : "node lost";
	if (resumable)
		snprintf(msg, sizeof(msg),
		         "sandbox %s is paused and its node %s is gone: resume it to run it on "
		         "another node",
		         id, rec->node);
	else
		snprintf(msg, sizeof(msg), "sandbox %s is dead: %s", id, why);
	if (envd)
		return coved_json_error(c, 502, msg);
	char path[100];
	snprintf(path, sizeof(path), "/sandboxes/%s", id);
	bool info = strcmp(url, path) == 0; /* not a sub-resource */
	if (strcmp(method, "DELETE") == 0 && info) {
		char err[300];
		if (cl_dir_set(&d->cluster->dir, id, NULL, false, err, sizeof(err)) < 0)
			return coved_json_error(c, 503, err);
		return coved_json_reply(c, 204, NULL);
	}
	if (strcmp(method, "GET") != 0 || !info)
		return coved_json_error(c, 409, msg);
	return coved_json_reply(
	    c, 200,
	    json_pack("{s:s, s:s, s:s, s:s, s:s*, s:I, s:I, s:s}", "sandboxID", id, "templateID",
	              rec->template_id, "clientID", "cove", "state", resumable ? "paused" : "dead",
	              "deadReason", resumable ? NULL : why, "cpuCount", (json_int_t)rec->vcpus,
	              "memoryMB", (json_int_t)rec->memory_mib, "node", rec->node));
}

/* A resume of a paused sandbox whose node is gone and whose snapshot is
 * on the shared storage: this node claims its record (one transaction on
 * the revision seen: of two nodes resuming it at once, one wins and the
 * other answers 409) and adopts it from the record its node left there;
 * the resume itself then runs here as any other.  Return: -1 not such a
 * resume, 0 taken over (serve it here now), 1 answered (*ret). */
static int takeover(struct coved *d, struct MHD_Connection *c, const char *method, const char *url,
                    const char *id, const struct cl_dir *rec, enum MHD_Result *ret)
{
	const char *shared = d->cfg.cluster.shared_snapshot_dir;
	char p1[100], p2[100], path[4300], err[300], msg[500];
	snprintf(p1, sizeof(p1), "/sandboxes/%s/resume", id);
	snprintf(p2, sizeof(p2), "/v2/sandboxes/%s/connect", id);
	if (!shared || strcmp(method, "POST") != 0 || strcmp(rec->state, "paused") != 0 ||
	    !rec->shared || (strcmp(url, p1) != 0 && strcmp(url, p2) != 0))
		return -1;
	struct cl_dir want = *rec;
	snprintf(want.node, sizeof(want.node), "%s", d->cfg.cluster.node_id);
	int r = cl_dir_claim(&d->cluster->dir, id, rec, &want, err, sizeof(err));
	if (r == 0) {
		snprintf(msg, sizeof(msg), "sandbox %s is being resumed by another node", id);
		*ret = coved_json_error(c, 409, msg);
		return 1;
	}
	if (r < 0) {
		snprintf(msg, sizeof(msg), "cannot take sandbox %s over: %s", id, err);
		*ret = coved_json_error(c, 503, msg);
		return 1;
	}
	snprintf(path, sizeof(path), "%s/records/%s.json", shared, id);
	struct coved_sb *sb = coved_record_take(d, path, rec->tenant);
	if (!sb) {
		snprintf(msg, sizeof(msg),
		         "sandbox %s: its record on the shared storage is unreadable", id);
		*ret = coved_json_error(c, 500, msg);
		return 1;
	}
	fprintf(stderr, "coved: cluster: took %s over from lost node %s\n", id, rec->node);
	coved_sb_unref(sb);
	return 0;
}

bool coved_cluster_intercept(struct coved *d, struct MHD_Connection *c, const char *method,
                             const char *url, bool envd, struct coved_tenant *t, struct fwd **f,
                             enum MHD_Result *ret)
{
	char id[64], addr[CL_ADDR_MAX + 1], err[300];
	struct coved_cluster *cl = d->cluster;
	*f = NULL;
	if (!cl || coved_cluster_node_call(d, c) || !request_id(c, url, envd, id, sizeof(id)))
		return false;
	struct coved_sb *sb = coved_sb_find(d, id);
	if (sb) {
		coved_sb_unref(sb);
		return false;
	}
	struct cl_dir rec;
	enum cl_where w = cl_dir_lookup(&cl->dir, id, &rec, addr, sizeof(addr));
	/* Another tenant's sandbox answers as a missing one: here, 404. */
	if (!envd && (w == CL_THERE || w == CL_LOST) && (!t || strcmp(rec.tenant, t->name) != 0))
		return false;
	int took = w == CL_LOST && !envd ? takeover(d, c, method, url, id, &rec, ret) : -1;
	if (took >= 0)
		return took == 1;
	if (w == CL_LOST) {
		*ret = lost_reply(d, c, method, url, id, &rec, envd);
		return true;
	}
	if (w != CL_THERE)
		return false;
	struct node_headers h;
	node_headers(d, envd ? NULL : t, NULL, &h);
	struct fwd_target tg = { .base = addr,
		                 .headers = h.v,
		                 .connect_timeout_ms = CONNECT_MS,
		                 .idle_timeout_ms = IDLE_MS };
	*f = fwd_open(c, method, url, &tg, err, sizeof(err));
	node_headers_wipe(&h);
	if (!*f) {
		char msg[500];
		snprintf(msg, sizeof(msg), "sandbox %s is on node %s, which cannot be reached: %s",
		         id, rec.node, err);
		*ret = coved_json_error(c, 502, msg);
	}
	return true;
}

void coved_cluster_release(struct coved *d, const char *id)
{
	char err[300];
	if (d->cluster && coved_cluster_unreserve(d->cluster, id, true, err, sizeof(err)) < 0)
		fprintf(stderr, "coved: cluster: release of %s: %s (tried again later)\n", id, err);
}

int coved_cluster_place(struct coved *d, struct MHD_Connection *c, struct coved_tenant *t,
                        const char *url, const char *body, size_t len, const char *template_id,
                        uint64_t vcpus, uint64_t memory_mib, char *id, enum MHD_Result *ret)
{
	struct coved_cluster *cl = d->cluster;
	char why[400], err[400], node[CL_NODE_ID_MAX + 1], addr[CL_ADDR_MAX + 1];
	if (coved_cluster_fenced(d, why, sizeof(why))) {
		char msg[500];
		snprintf(msg, sizeof(msg), "this node cannot place sandboxes now: %s", why);
		*ret = coved_json_error(c, 503, msg);
		return 1;
	}
	struct cl_dir want = { .vcpus = vcpus, .memory_mib = memory_mib };
	snprintf(want.tenant, sizeof(want.tenant), "%s", t->name);
	snprintf(want.template_id, sizeof(want.template_id), "%s", template_id);
	char refused[PLACE_TRIES][CL_NODE_ID_MAX + 1];
	const char *skip[PLACE_TRIES + 1] = { NULL };
	const char *ctype = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type");
	char ctline[200];
	snprintf(ctline, sizeof(ctline), "Content-Type: %s", ctype ? ctype : "application/json");
	const char *client[] = { ctline, NULL };
	snprintf(why, sizeof(why), "no node answered");
	for (int i = 0; i < PLACE_TRIES; i++) {
		if (coved_new_id(id) < 0)
			break;
		int r = cl_place(&cl->dir, &want, id, skip, node, sizeof(node), addr, sizeof(addr),
		                 err, sizeof(err));
		if (r < 0) {
			snprintf(why, sizeof(why), "%s", err);
			/* An etcd call that failed may still have been applied:
			 * a reservation under this new id is dropped (a no-op
			 * when there is none). */
			if (r != -ENOSPC && r != -EBUSY && r != -EEXIST)
				coved_cluster_unreserve(cl, id, false, err, sizeof(err));
			break;
		}
		if (strcmp(node, cl->cfg->node_id) == 0)
			return 0;
		struct node_headers h;
		node_headers(d, t, id, &h);
		struct fwd_target tg = { .base = addr,
			                 .headers = h.v,
			                 .connect_timeout_ms = CONNECT_MS,
			                 .idle_timeout_ms = CREATE_MS };
		struct fwd_answer a = { 0 };
		r = fwd_call(&tg, "POST", url, client, body, len, CREATE_MS, &a, err, sizeof(err));
		node_headers_wipe(&h);
		if (r == 0 && a.status != 502 && a.status != 503) {
			*ret = fwd_relay(c, &a);
			fwd_answer_free(&a);
			return 1;
		}
		/* Not reached: the reservation is ours to undo.  Refused: the
		 * owner undid it. */
		if (r < 0)
			coved_cluster_unreserve(cl, id, false, why, sizeof(why));
		snprintf(why, sizeof(why), "node %s %s", node,
		         r < 0 ? "could not be reached" : "refused it");
		fwd_answer_free(&a);
		snprintf(refused[i], sizeof(refused[i]), "%s", node);
		skip[i] = refused[i];
	}
	char msg[600];
	snprintf(msg, sizeof(msg), "no node can place this sandbox: %s", why);
	*ret = coved_json_error(c, 503, msg);
	return 1;
}

void coved_cluster_list_more(struct coved *d, struct MHD_Connection *c, struct coved_tenant *t,
                             const char *url, json_t *arr, size_t limit)
{
	struct coved_cluster *cl = d->cluster;
	if (!cl || coved_cluster_node_call(d, c))
		return;
	/* Each node pages its own from the start: no nextToken. */
	char *path = NULL;
	if (fwd_request_url(c, "", url, "nextToken", &path) < 0)
		return;
	/* The nodes to ask, copied out of the view. */
	pthread_mutex_lock(&cl->dir.mu);
	size_t n = 0;
	char(*addrs)[CL_ADDR_MAX + 1] = calloc(cl->dir.nnodes + 1, sizeof(*addrs));
	for (size_t i = 0; addrs && i < cl->dir.nnodes; i++)
		if (cl->dir.nodes[i].live && strcmp(cl->dir.nodes[i].rec.id, cl->cfg->node_id) != 0)
			snprintf(addrs[n++], sizeof(addrs[0]), "%s", cl->dir.nodes[i].rec.addr);
	pthread_mutex_unlock(&cl->dir.mu);
	struct node_headers h;
	node_headers(d, t, NULL, &h);
	for (size_t i = 0; i < n && json_array_size(arr) < limit; i++) {
		struct fwd_target tg = { .base = addrs[i],
			                 .headers = h.v,
			                 .connect_timeout_ms = CONNECT_MS,
			                 .idle_timeout_ms = LIST_MS };
		struct fwd_answer a = { 0 };
		char err[300];
		if (fwd_call(&tg, "GET", path, NULL, NULL, 0, LIST_MS, &a, err, sizeof(err)) == 0 &&
		    a.status == 200) {
			json_t *more = json_loadb(a.body, a.len, 0, NULL);
			size_t k;
			json_t *v;
			json_array_foreach(more, k, v)
			{
				if (json_array_size(arr) >= limit)
					break;
				if (json_is_object(v))
					json_array_append(arr, v);
			}
			json_decref(more);
		} else {
			fprintf(stderr, "coved: cluster: list from %s: %s\n", addrs[i],
			        a.status ? "an error answer" : err);
		}
		fwd_answer_free(&a);
	}
	node_headers_wipe(&h);
	free(addrs);
	free(path);
}

enum MHD_Result coved_cluster_admin(struct coved *d, struct MHD_Connection *c, const char *method,
                                    const char *url, const char *body, size_t len)
{
	if (!d->cluster)
		return coved_json_error(c, 404, "coved is not in cluster mode");
	if (strcmp(url, "/cluster") == 0 || strcmp(url, "/cluster/") == 0) {
		if (strcmp(method, "GET") != 0)
			return coved_json_error(c, 405, "method not allowed on this path");
		json_t *o = coved_cluster_status(d);
		return o ? coved_json_reply(c, 200, o) : coved_json_error(c, 500, "out of memory");
	}
	const char *p = "/cluster/nodes/";
	char id[64], err[300];
	size_t l = strlen(p);
	if (strncmp(url, p, l) != 0)
		return coved_json_error(c, 404, "no such route");
	size_t il = strcspn(url + l, "/");
	if (il == 0 || il >= sizeof(id) || strcmp(url + l + il, "/drain") != 0)
		return coved_json_error(c, 404, "no such route");
	if (strcmp(method, "POST") != 0)
		return coved_json_error(c, 405, "method not allowed on this path");
	memcpy(id, url + l, il);
	id[il] = 0;
	json_t *o = len ? json_loadb(body, len, JSON_REJECT_DUPLICATES, NULL) : NULL;
	json_t *v = json_object_get(o, "drain");
	if ((len && !json_is_object(o)) || (v && !json_is_boolean(v))) {
		json_decref(o);
		return coved_json_error(c, 400, "the body must be {\"drain\": true|false}");
	}
	bool on = !v || json_is_true(v);
	json_decref(o);
	int r = coved_cluster_drain(d, id, on, err, sizeof(err));
	if (r == -EINVAL)
		return coved_json_error(c, 400, err);
	return r < 0 ? coved_json_error(c, 503, err) : coved_json_reply(c, 204, NULL);
}
