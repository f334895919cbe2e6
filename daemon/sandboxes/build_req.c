/* A template build request: its steps and names (build_req.h). */
#include "daemon/sandboxes/build_req.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errf.h"
#include "lib/base/sha256.h"

void coved_build_req_free(struct coved_build_req *r)
{
	for (size_t i = 0; i < r->nsteps; i++) {
		free(r->steps[i].arg);
		free(r->steps[i].src);
		free(r->steps[i].dest);
		free(r->steps[i].chown);
	}
	free(r->steps);
	free(r->from);
	free(r->from_template);
	free(r->start_cmd);
	free(r->ready_cmd);
	memset(r, 0, sizeof(*r));
}

static char *dup_or_null(const char *s, bool *oom)
{
	if (!s)
		return NULL;
	char *d = strdup(s);
	if (!d)
		*oom = true;
	return d;
}

int coved_build_req_add(struct coved_build_req *r, enum coved_bstep_kind kind, const char *arg,
                        const char *files, const char *src, const char *dest, const char *chown,
                        char *err, size_t errlen)
{
	if (r->nsteps >= COVED_BUILD_STEPS_MAX)
		return errf(err, errlen, -EINVAL,
		            "'steps': more than %d once each ENV variable and "
		            "a RUN's own user are steps of their own",
		            COVED_BUILD_STEPS_MAX);
	struct coved_bstep *v = realloc(r->steps, (r->nsteps + 1) * sizeof(*v));
	if (!v)
		return errf(err, errlen, -ENOMEM, "out of memory");
	r->steps = v;
	struct coved_bstep *s = &v[r->nsteps];
	memset(s, 0, sizeof(*s));
	bool oom = false;
	s->kind = kind;
	s->arg = dup_or_null(arg, &oom);
	s->src = dup_or_null(src, &oom);
	s->dest = dup_or_null(dest, &oom);
	s->chown = dup_or_null(chown, &oom);
	if (files)
		snprintf(s->files, sizeof(s->files), "%s", files);
	r->nsteps++; /* freed with the request, whole or not */
	return oom ? errf(err, errlen, -ENOMEM, "out of memory") : 0;
}

bool coved_build_mode_ok(const char *s)
{
	size_t n = strlen(s);
	return (n == 3 || n == 4) && strspn(s, "01234567") == n;
}

bool coved_build_name_ok(const char *s)
{
	size_t n = s ? strlen(s) : 0;
	/* "snap-" names the tenant's snapshots. */
	if (n == 0 || n > COVED_BUILD_NAME_MAX || strncmp(s, "snap-", 5) == 0)
		return false;
	return strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") == n;
}

const char *coved_bstep_name(enum coved_bstep_kind kind)
{
	static const char *const names[] = { "RUN", "ENV", "WORKDIR", "USER", "COPY" };
	return (unsigned)kind < sizeof(names) / sizeof(names[0]) ? names[kind] : "?";
}

void coved_build_store_name(const char *tenant, const char *name,
                            char out[COVED_BUILD_STORE_LEN + 1])
{
	struct sha256 h;
	uint8_t sum[SHA256_LEN];
	sha256_init(&h);
	sha256_update(&h, tenant, strlen(tenant) + 1); /* the NUL keeps the two apart */
	sha256_update(&h, name, strlen(name));
	sha256_final(&h, sum);
	memcpy(out, "t.", 2);
	for (int i = 0; i < 12; i++)
		snprintf(out + 2 + 2 * i, 3, "%02x", sum[i]);
}

int coved_build_record_parse(const json_t *o, const char *file, struct coved_build_record *r)
{
	const char *tenant = json_string_value(json_object_get(o, "tenant"));
	const char *name = json_string_value(json_object_get(o, "name"));
	const char *id = json_string_value(json_object_get(o, "build_id"));
	const char *st = json_string_value(json_object_get(o, "status"));
	const char *reason = json_string_value(json_object_get(o, "reason"));
	memset(r, 0, sizeof(*r));
	if (!tenant || !name || !id || !st || !coved_tenant_name_ok(tenant, strlen(tenant)) ||
	    !coved_build_name_ok(name) || strlen(id) != COVED_BUILD_ID_LEN)
		return -EINVAL;
	coved_build_store_name(tenant, name, r->store);
	size_t sl = strlen(r->store);
	if (strncmp(file, r->store, sl) || strcmp(file + sl, ".json"))
		return -EINVAL;
	snprintf(r->tenant, sizeof(r->tenant), "%s", tenant);
	snprintf(r->name, sizeof(r->name), "%s", name);
	snprintf(r->id, sizeof(r->id), "%s", id);
	snprintf(r->reason, sizeof(r->reason), "%s", reason ? reason : "");
	r->created_ms = json_integer_value(json_object_get(o, "created_ms"));
	r->finished_ms = json_integer_value(json_object_get(o, "finished_ms"));
	r->ready = !strcmp(st, "ready");
	r->built = r->ready || json_is_true(json_object_get(o, "built"));
	r->running = !r->ready && strcmp(st, "error");
	return 0;
}
