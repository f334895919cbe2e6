/* The views of template builds: coved's JSON and E2B's TemplateBuildInfo
 * (builds.h). */
#include "daemon/sandboxes/build_json.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "daemon/sandboxes/builds.h"
#include "daemon/sandboxes/builds_priv.h"
#include "daemon/sandboxes/state.h"
#include "daemon/sandboxes/table.h"

static const char *level_name(enum coved_blog_level l)
{
	return l == COVED_BLOG_ERROR ? "error" : l == COVED_BLOG_WARN ? "warn" : "info";
}

/* RFC 3339 in UTC with milliseconds, as E2B's timestamps. */
static void iso_time(int64_t ms, char out[32])
{
	time_t s = (time_t)(ms / 1000);
	struct tm tm;
	gmtime_r(&s, &tm);
	size_t n = strftime(out, 32, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(out + n, 32 - n, ".%03dZ", (int)(ms % 1000));
}

static void native_line(void *opaque, const struct coved_blog_line *l)
{
	json_array_append_new(opaque, json_pack("{s:I, s:s, s:s}", "ms", (json_int_t)l->ms, "level",
	                                        level_name(l->level), "line", l->text));
}

static void e2b_line(void *opaque, const struct coved_blog_line *l)
{
	char t[32];
	iso_time(l->ms, t);
	json_array_append_new(opaque, json_pack("{s:s, s:s, s:s}", "timestamp", t, "level",
	                                        level_name(l->level), "message", l->text));
}

/* Under mu: what a build is, without its log. */
static json_t *summary(const struct coved_build *b)
{
	const struct coved_build_req *r = &b->req;
	json_t *o =
	    json_pack("{s:s, s:s, s:s, s:I}", "name", b->name, "build_id", b->id, "status",
	              coved_bstatus_name(b->status), "created_ms", (json_int_t)b->created_ms);
	if (!o)
		return NULL;
	if (b->status == COVED_BUILD_ERROR)
		json_object_set_new(o, "reason", json_string(b->reason));
	if (b->finished_ms)
		json_object_set_new(o, "finished_ms", json_integer(b->finished_ms));
	json_object_set_new(o, "built", json_boolean(b->built));
	/* The request is known for builds of this run of coved only. */
	if (r->from)
		json_object_set_new(o, "from", json_string(r->from));
	if (r->from_template)
		json_object_set_new(o, "from_template", json_string(r->from_template));
	if (r->from || r->from_template) {
		json_object_set_new(o, "steps", json_integer((json_int_t)r->nsteps));
		json_object_set_new(o, "cpus", json_integer(r->cpus));
		json_object_set_new(o, "memory_mib", json_integer((json_int_t)r->memory_mib));
	}
	if (r->start_cmd)
		json_object_set_new(o, "start_cmd", json_string(r->start_cmd));
	if (r->ready_cmd)
		json_object_set_new(o, "ready_cmd", json_string(r->ready_cmd));
	if (r->ready_port)
		json_object_set_new(o, "ready_port", json_integer(r->ready_port));
	return o;
}

json_t *coved_build_json(struct coved *d, const struct coved_tenant *t, const char *name, bool log,
                         uint64_t offset)
{
	coved_builds_expire(d);
	struct coved_builds *bs = d->builds;
	pthread_mutex_lock(&bs->mu);
	struct coved_build *b = coved_build_find(bs, t->name, name);
	json_t *o = b ? summary(b) : NULL;
	if (o && log) {
		json_t *lines = json_array();
		uint64_t next = coved_blog_read(&b->log, offset, 10000, native_line, lines);
		json_object_set_new(o, "log", lines);
		json_object_set_new(o, "log_next", json_integer((json_int_t)next));
	}
	pthread_mutex_unlock(&bs->mu);
	return o;
}

json_t *coved_build_e2b_status(struct coved *d, const struct coved_tenant *t, const char *name,
                               const char *id, uint64_t offset, size_t limit)
{
	coved_builds_expire(d);
	struct coved_builds *bs = d->builds;
	pthread_mutex_lock(&bs->mu);
	struct coved_build *b = coved_build_find(bs, t->name, name);
	json_t *o = NULL;
	if (b && strcmp(b->id, id) == 0) {
		json_t *entries = json_array();
		coved_blog_read(&b->log, offset, limit, e2b_line, entries);
		/* Not started yet is "waiting" to E2B. */
		const char *st =
		    b->status == COVED_BUILD_PENDING ? "waiting" : coved_bstatus_name(b->status);
		o = json_pack("{s:s, s:s, s:s, s:o, s:[]}", "templateID", b->name, "buildID", b->id,
		              "status", st, "logEntries", entries, "logs");
		if (o && b->status == COVED_BUILD_ERROR)
			json_object_set_new(
			    o, "reason",
			    json_pack("{s:s, s:[]}", "message", b->reason, "logEntries"));
	}
	pthread_mutex_unlock(&bs->mu);
	return o;
}

json_t *coved_builds_list(struct coved *d, const struct coved_tenant *t)
{
	coved_builds_expire(d);
	struct coved_builds *bs = d->builds;
	json_t *arr = json_array();
	pthread_mutex_lock(&bs->mu);
	for (struct coved_build *b = bs->list; b && arr; b = b->next) {
		if (strcmp(b->tenant, t->name))
			continue;
		/* In name order: insert before the first greater one. */
		size_t i = 0;
		while (i < json_array_size(arr) &&
		       strcmp(json_string_value(json_object_get(json_array_get(arr, i), "name")),
		              b->name) < 0)
			i++;
		json_array_insert_new(arr, i, summary(b));
	}
	pthread_mutex_unlock(&bs->mu);
	return arr;
}
