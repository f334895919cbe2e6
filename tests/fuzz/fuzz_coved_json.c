/* libFuzzer target: coved's request bodies (daemon/api/body.c and
 * template_body.c) as they come off the network: the depth scan, the JSON
 * load and every typed parser; and a template build's record as coved
 * reads it back at start-up (daemon/sandboxes/build_req.c); getMetrics'
 * ?start=&end= (daemon/sandboxes/samples.c); a webhook's registration
 * (daemon/sandboxes/webhook_req.c); GET /snapshots' query and a
 * snapshot's name (daemon/sandboxes/snap_query.c).
 * A body the parsers accept holds only bounded, checked values. */
#include <assert.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "daemon/api/body.h"
#include "daemon/api/template_body.h"
#include "daemon/http/json_body.h"
#include "daemon/sandboxes/build_req.h"
#include "daemon/sandboxes/samples.h"
#include "daemon/sandboxes/snap_query.h"
#include "daemon/sandboxes/webhook_req.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A build request the parsers accept holds bounded steps of known kinds. */
static void check_build(const struct coved_build_req *r)
{
	assert(r->nsteps <= COVED_BUILD_STEPS_MAX);
	assert(!r->from != !r->from_template);
	for (size_t i = 0; i < r->nsteps; i++) {
		const struct coved_bstep *s = &r->steps[i];
		assert(s->kind <= COVED_BSTEP_COPY);
		if (s->kind == COVED_BSTEP_COPY)
			assert(s->src && s->dest && s->dest[0] == '/' &&
			       strlen(s->files) == COVED_FILES_HASH_LEN);
		else
			assert(s->arg && strlen(s->arg) < COVED_BUILD_ARG_MAX);
	}
}

static void check_templates(json_t *o)
{
	char err[512];
	struct coved_build_req r;
	if (coved_parse_template(o, &r, err, sizeof(err)) == 0) {
		assert(coved_build_name_ok(r.name));
		check_build(&r);
	} else {
		assert(err[0] && !strchr(err, '\n'));
	}
	coved_build_req_free(&r);
	if (coved_parse_e2b_request(o, &r, err, sizeof(err)) == 0)
		assert(coved_build_name_ok(r.name));
	coved_build_req_free(&r);
	memset(&r, 0, sizeof(r));
	if (coved_parse_e2b_build(o, &r, err, sizeof(err)) == 0)
		check_build(&r);
	coved_build_req_free(&r);
}

/* The bytes as getMetrics' two query values, cut at the first '&'. */
static void check_range(const uint8_t *data, size_t size)
{
	char q[64], err[128];
	size_t n = size < sizeof(q) - 1 ? size : sizeof(q) - 1;
	memcpy(q, data, n);
	q[n] = 0;
	char *amp = strchr(q, '&');
	if (amp)
		*amp = 0;
	int64_t s, e;
	if (coved_metrics_range(q, amp ? amp + 1 : NULL, &s, &e, err, sizeof(err)) == 0)
		assert(s >= 0 && e >= 0 && (!s || !e || s <= e));
}

/* The bytes as GET /snapshots' four values, cut at each '&'; the first
 * also as a name and as a page token. */
static void check_snap_query(const uint8_t *data, size_t size)
{
	char q[256], err[160], *v[4] = { NULL };
	size_t n = size < sizeof(q) - 1 ? size : sizeof(q) - 1;
	memcpy(q, data, n);
	q[n] = 0;
	v[0] = q;
	for (int i = 1; i < 4 && v[i - 1]; i++)
		if ((v[i] = strchr(v[i - 1], '&')))
			*v[i]++ = 0;
	if (coved_snap_name_ok(q, err, sizeof(err)))
		assert(strlen(q) <= COVED_SNAP_NAME_MAX && strncmp(q, "snap-", 5) != 0);
	else
		assert(err[0] && !strchr(err, '\n'));
	struct coved_snap_key k;
	if (coved_snap_token_parse(q, &k) == 0) {
		char t[COVED_SNAP_TOKEN_LEN];
		coved_snap_token(&k, t, sizeof(t));
		struct coved_snap_key back;
		assert(k.ms >= 0 && coved_snap_id_ok(k.id));
		assert(coved_snap_token_parse(t, &back) == 0 && coved_snap_key_cmp(&k, &back) == 0);
	}
	struct coved_snap_query sq;
	if (coved_snap_query_parse(v[0], v[1], v[2], v[3], &sq, err, sizeof(err)) == 0)
		assert(sq.limit >= 1 && sq.limit <= COVED_SNAP_LIMIT_MAX &&
		       strlen(sq.sandbox_id) <= COVED_SNAP_NAME_MAX &&
		       strlen(sq.name) <= COVED_SNAP_NAME_MAX &&
		       (!sq.after_given || sq.after.ms >= 0));
	else
		assert(err[0] && !strchr(err, '\n'));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[512];
	check_range(data, size);
	check_snap_query(data, size);
	json_t *o = coved_body_load((const char *)data, size, 16, err, sizeof(err));
	if (!o) {
		assert(err[0]);
		return 0;
	}
	struct coved_create c;
	if (coved_parse_create(o, &c, err, sizeof(err)) == 0) {
		assert(c.template_id[0] && strlen(c.template_id) <= COVED_TEMPLATE_LEN_MAX);
		assert(!c.metadata || json_object_size(c.metadata) <= COVED_META_MAX);
		assert(!c.env_vars || json_object_size(c.env_vars) <= COVED_ENV_MAX);
		assert(c.cpus <= 64);
		coved_create_free(&c);
	}
	/* A record file: taken only under the name its tenant and name make. */
	struct coved_build_record rec;
	if (coved_build_record_parse(o, "x.json", &rec) == 0)
		assert(coved_build_name_ok(rec.name) && strlen(rec.id) == COVED_BUILD_ID_LEN);
	struct coved_net n;
	if (coved_parse_net(o, &n, err, sizeof(err)) == 0)
		coved_net_free(&n);
	uint64_t t;
	unsigned int count;
	(void)coved_parse_timeout(o, true, &t, err, sizeof(err));
	if (coved_parse_fork(o, &count, &t, err, sizeof(err)) == 0)
		assert(count >= 1 && count <= COVED_FORK_MAX);
	check_templates(o);
	struct coved_webhook_req wh;
	if (coved_webhook_parse(o, &wh, err, sizeof(err)) == 0) {
		assert(strlen(wh.url) <= COVED_WEBHOOK_URL_MAX && !strchr(wh.url, ' '));
		assert(strlen(wh.secret) >= COVED_WEBHOOK_SECRET_MIN);
		coved_webhook_req_free(&wh);
	} else {
		assert(err[0] && !strchr(err, '\n'));
	}
	json_decref(o);
	return 0;
}
