/* The cluster's etcd records as JSON (records.h). */
#include "daemon/cluster/records.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RECORD_MAX (64 * 1024)

bool cl_id_ok(const char *s, size_t max)
{
	size_t n = 0;
	for (; s && s[n]; n++)
		if (!((s[n] >= 'a' && s[n] <= 'z') || (s[n] >= '0' && s[n] <= '9') || s[n] == '-'))
			return false;
	return n >= 1 && n <= max;
}

static json_t *load(const char *text, size_t len)
{
	if (!text || len > RECORD_MAX)
		return NULL;
	json_t *o = json_loadb(text, len, JSON_REJECT_DUPLICATES, NULL);
	if (o && !json_is_object(o)) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/* A string field into buf (bounded); absent is "" unless required. */
static int str_field(json_t *o, const char *key, char *buf, size_t size, bool required)
{
	json_t *v = json_object_get(o, key);
	buf[0] = 0;
	if (!v || (json_is_null(v) && !required))
		return v || !required ? 0 : -EPROTO;
	const char *s = json_string_value(v);
	if (!s || strlen(s) >= size)
		return -EPROTO;
	memcpy(buf, s, strlen(s) + 1);
	return 0;
}

static int u64_field(json_t *o, const char *key, uint64_t *out)
{
	json_t *v = json_object_get(o, key);
	*out = 0;
	if (!v)
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < 0)
		return -EPROTO;
	*out = (uint64_t)json_integer_value(v);
	return 0;
}

static char *dump(json_t *o)
{
	char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	return s;
}

/* [first, last] of two integers, first <= last. */
static int pair_field(json_t *o, const char *key, uint64_t *first, uint64_t *last)
{
	json_t *v = json_object_get(o, key), *a = json_array_get(v, 0), *b = json_array_get(v, 1);
	*first = *last = 0;
	if (!v)
		return 0;
	if (json_array_size(v) != 2 || !json_is_integer(a) || !json_is_integer(b) ||
	    json_integer_value(a) < 0 || json_integer_value(b) < json_integer_value(a))
		return -EPROTO;
	*first = (uint64_t)json_integer_value(a);
	*last = (uint64_t)json_integer_value(b);
	return 0;
}

static int ranges_decode(json_t *o, struct cl_ranges *g)
{
	memset(g, 0, sizeof(*g));
	if (!o)
		return 0;
	if (!json_is_object(o))
		return -EPROTO;
	g->given = true;
	int r = str_field(o, "state_dir", g->state_dir, sizeof(g->state_dir), false);
	if (!r)
		r = str_field(o, "runtime_dir", g->runtime_dir, sizeof(g->runtime_dir), false);
	if (!r)
		r = str_field(o, "cgroup_parent", g->cgroup_parent, sizeof(g->cgroup_parent),
		              false);
	if (!r)
		r = pair_field(o, "jail_ids", &g->jail_first, &g->jail_last);
	if (!r)
		r = pair_field(o, "net_indexes", &g->net_first, &g->net_last);
	return r;
}

static bool overlap(uint64_t a0, uint64_t a1, uint64_t b0, uint64_t b1)
{
	return a0 <= b1 && b0 <= a1;
}

bool cl_ranges_collide(const struct cl_ranges *a, const struct cl_ranges *b, char *why, size_t len)
{
	if (!a->given || !b->given)
		return false;
	if (a->state_dir[0] && strcmp(a->state_dir, b->state_dir) == 0)
		return snprintf(why, len, "the same state_dir %s", a->state_dir), true;
	if (strcmp(a->runtime_dir, b->runtime_dir) == 0)
		return false; /* one runtime dir: its claim files keep them apart */
	if (strcmp(a->cgroup_parent, b->cgroup_parent) == 0)
		return snprintf(why, len,
		                "the same cgroup_parent '%s' with runtime dirs of their own",
		                a->cgroup_parent),
		       true;
	if (overlap(a->jail_first, a->jail_last, b->jail_first, b->jail_last))
		return snprintf(why, len, "jail_ids %llu-%llu and %llu-%llu overlap",
		                (unsigned long long)a->jail_first, (unsigned long long)a->jail_last,
		                (unsigned long long)b->jail_first,
		                (unsigned long long)b->jail_last),
		       true;
	if (overlap(a->net_first, a->net_last, b->net_first, b->net_last))
		return snprintf(why, len, "net_indexes %llu-%llu and %llu-%llu overlap",
		                (unsigned long long)a->net_first, (unsigned long long)a->net_last,
		                (unsigned long long)b->net_first, (unsigned long long)b->net_last),
		       true;
	return false;
}

char *cl_node_encode(const struct cl_node_rec *n)
{
	json_t *t = json_array();
	for (size_t i = 0; i < n->ntemplates; i++)
		json_array_append_new(t, json_string(n->templates[i]));
	const struct cl_ranges *g = &n->ranges;
	return dump(json_pack(
	    "{s:s, s:s, s:s, s:s, s:I, s:I, s:{s:I, s:I}, s:o, s:{s:s, s:s, s:s, "
	    "s:[I, I], s:[I, I]}}",
	    "id", n->id, "addr", n->addr, "version", n->version, "host", n->host, "vcpus",
	    (json_int_t)n->vcpus, "memory_mib", (json_int_t)n->memory_mib, "sandboxes", "running",
	    (json_int_t)n->running, "paused", (json_int_t)n->paused, "templates", t, "ranges",
	    "state_dir", g->state_dir, "runtime_dir", g->runtime_dir, "cgroup_parent",
	    g->cgroup_parent, "jail_ids", (json_int_t)g->jail_first, (json_int_t)g->jail_last,
	    "net_indexes", (json_int_t)g->net_first, (json_int_t)g->net_last));
}

void cl_node_clear(struct cl_node_rec *n)
{
	for (size_t i = 0; i < n->ntemplates; i++)
		free(n->templates[i]);
	memset(n, 0, sizeof(*n));
}

int cl_node_decode(const char *text, size_t len, struct cl_node_rec *n)
{
	memset(n, 0, sizeof(*n));
	json_t *o = load(text, len);
	if (!o)
		return -EPROTO;
	json_t *sbs = json_object_get(o, "sandboxes"), *t = json_object_get(o, "templates");
	int r = str_field(o, "id", n->id, sizeof(n->id), true);
	if (!r)
		r = str_field(o, "addr", n->addr, sizeof(n->addr), true);
	if (!r)
		r = str_field(o, "version", n->version, sizeof(n->version), false);
	if (!r)
		r = str_field(o, "host", n->host, sizeof(n->host), false);
	if (!r)
		r = u64_field(o, "vcpus", &n->vcpus);
	if (!r)
		r = u64_field(o, "memory_mib", &n->memory_mib);
	if (!r && sbs && !json_is_object(sbs))
		r = -EPROTO;
	if (!r && sbs)
		r = u64_field(sbs, "running", &n->running);
	if (!r && sbs)
		r = u64_field(sbs, "paused", &n->paused);
	if (!r && t && !json_is_array(t))
		r = -EPROTO;
	if (!r)
		r = ranges_decode(json_object_get(o, "ranges"), &n->ranges);
	if (!r && !cl_id_ok(n->id, CL_NODE_ID_MAX))
		r = -EPROTO;
	size_t i;
	json_t *v;
	json_array_foreach(r ? NULL : t, i, v)
	{
		const char *s = json_string_value(v);
		if (!s || strlen(s) > 128) {
			r = -EPROTO;
			break;
		}
		if (n->ntemplates < CL_TEMPLATES && !(n->templates[n->ntemplates++] = strdup(s))) {
			n->ntemplates--;
			r = -ENOMEM;
			break;
		}
	}
	json_decref(o);
	if (r)
		cl_node_clear(n);
	return r;
}

bool cl_node_has_template(const struct cl_node_rec *n, const char *name)
{
	for (size_t i = 0; name && i < n->ntemplates; i++)
		if (strcmp(n->templates[i], name) == 0)
			return true;
	return false;
}

char *cl_alloc_encode(const struct cl_alloc *a)
{
	return dump(json_pack("{s:I, s:I}", "vcpus", (json_int_t)a->vcpus, "memory_mib",
	                      (json_int_t)a->memory_mib));
}

int cl_alloc_decode(const char *text, size_t len, struct cl_alloc *a)
{
	memset(a, 0, sizeof(*a));
	json_t *o = load(text, len);
	if (!o)
		return -EPROTO;
	int r = u64_field(o, "vcpus", &a->vcpus);
	if (!r)
		r = u64_field(o, "memory_mib", &a->memory_mib);
	json_decref(o);
	return r;
}

char *cl_dir_encode(const struct cl_dir *r)
{
	return dump(json_pack("{s:s, s:s, s:s, s:s, s:I, s:I, s:b, s:s*}", "node", r->node, "state",
	                      r->state, "tenant", r->tenant, "template", r->template_id, "vcpus",
	                      (json_int_t)r->vcpus, "memory_mib", (json_int_t)r->memory_mib,
	                      "shared", r->shared, "reason", r->reason[0] ? r->reason : NULL));
}

int cl_dir_decode(const char *text, size_t len, struct cl_dir *d)
{
	memset(d, 0, sizeof(*d));
	json_t *o = load(text, len);
	if (!o)
		return -EPROTO;
	json_t *sh = json_object_get(o, "shared");
	int r = str_field(o, "node", d->node, sizeof(d->node), true);
	if (!r)
		r = str_field(o, "state", d->state, sizeof(d->state), true);
	if (!r)
		r = str_field(o, "tenant", d->tenant, sizeof(d->tenant), true);
	if (!r)
		r = str_field(o, "template", d->template_id, sizeof(d->template_id), false);
	if (!r)
		r = str_field(o, "reason", d->reason, sizeof(d->reason), false);
	if (!r)
		r = u64_field(o, "vcpus", &d->vcpus);
	if (!r)
		r = u64_field(o, "memory_mib", &d->memory_mib);
	if (!r && sh && !json_is_boolean(sh))
		r = -EPROTO;
	d->shared = json_is_true(sh);
	if (!r && !cl_id_ok(d->node, CL_NODE_ID_MAX))
		r = -EPROTO;
	json_decref(o);
	if (r)
		memset(d, 0, sizeof(*d));
	return r;
}

bool cl_dir_commits(const struct cl_dir *r)
{
	return strcmp(r->state, "running") == 0;
}
