/* Template build bodies: coved's own and the e2b SDK's (template_body.h). */
#include "daemon/api/template_body.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/api/body.h"
#include "errf.h"

#define CPUS_MAX   64
#define MEMORY_MAX (1024 * 1024) /* MiB */
#define DISK_MAX   (16 * 1024 * 1024)

/* A field that is absent or null counts as not given. */
/* A string of 1 to max bytes without NUL, or NULL (message in err). */
static const char *str_of(json_t *v, size_t max, const char *what, char *err, size_t errlen)
{
	if (!json_is_string(v) || json_string_length(v) == 0 || json_string_length(v) > max ||
	    strlen(json_string_value(v)) != json_string_length(v)) {
		errf(err, errlen, -EINVAL, "'%s' must be a string of 1 to %zu bytes without NUL",
		     what, max);
		return NULL;
	}
	return json_string_value(v);
}

/* An optional string field copied into *out (left NULL when absent). */
static int opt_str(json_t *o, const char *key, size_t max, char **out, char *err, size_t errlen)
{
	json_t *v = coved_body_field(o, key);
	if (!v)
		return 0;
	const char *s = str_of(v, max, key, err, errlen);
	if (!s)
		return -EINVAL;
	free(*out);
	*out = strdup(s);
	return *out ? 0 : errf(err, errlen, -ENOMEM, "out of memory");
}

static int opt_bool(json_t *o, const char *key, bool *out, char *err, size_t errlen)
{
	json_t *v = coved_body_field(o, key);
	if (v && !json_is_boolean(v))
		return errf(err, errlen, -EINVAL, "'%s' must be true or false", key);
	if (v)
		*out = json_is_true(v);
	return 0;
}

static bool env_name_ok(const char *s)
{
	if (!*s || (*s >= '0' && *s <= '9'))
		return false;
	return strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") ==
	       strlen(s);
}

/* Appends ENV "K=V" after checking K and the whole. */
static int add_env(struct coved_build_req *r, const char *k, const char *v, const char *where,
                   char *err, size_t errlen)
{
	if (!env_name_ok(k) || strlen(k) > 256)
		return errf(err, errlen, -EINVAL,
		            "%s: '%.64s' is not a variable name ([A-Za-z_][A-Za-z0-9_]*, at most "
		            "256 bytes)",
		            where, k);
	size_t n = strlen(k) + 1 + strlen(v) + 1;
	if (n > COVED_BUILD_ARG_MAX)
		return errf(err, errlen, -EINVAL, "%s: '%.64s' is over %d bytes", where, k,
		            COVED_BUILD_ARG_MAX);
	char kv[COVED_BUILD_ARG_MAX];
	memcpy(kv, k, strlen(k));
	kv[strlen(k)] = '=';
	memcpy(kv + strlen(k) + 1, v, strlen(v) + 1); /* n checked it fits */
	return coved_build_req_add(r, COVED_BSTEP_ENV, kv, NULL, NULL, NULL, NULL, err, errlen);
}

/* A path inside an uploaded archive: relative, no ".." component. */
static bool src_ok(const char *s)
{
	if (*s == '/')
		return false;
	for (const char *p = s; *p;) {
		size_t l = strcspn(p, "/");
		if (l == 2 && p[0] == '.' && p[1] == '.')
			return false;
		p += l;
		p += *p == '/';
	}
	return true;
}

static bool hash_ok(const char *s)
{
	return strlen(s) == COVED_FILES_HASH_LEN &&
	       strspn(s, "0123456789abcdef") == COVED_FILES_HASH_LEN;
}

static int parse_from(json_t *o, const char *from, const char *tmpl, struct coved_build_req *out,
                      char *err, size_t errlen)
{
	int r;
	if ((r = opt_str(o, from, COVED_BUILD_FROM_MAX, &out->from, err, errlen)) < 0 ||
	    (r = opt_str(o, tmpl, COVED_BUILD_NAME_MAX, &out->from_template, err, errlen)) < 0)
		return r;
	if (!out->from == !out->from_template)
		return errf(err, errlen, -EINVAL, "give exactly one of '%s' and '%s'", from, tmpl);
	if (out->from_template && !coved_build_name_ok(out->from_template))
		return errf(err, errlen, -EINVAL, "'%s' may hold only [A-Za-z0-9_-]", tmpl);
	return 0;
}

/* ---- POST /templates ---- */

static int native_copy(json_t *c, size_t i, struct coved_build_req *out, char *err, size_t errlen)
{
	char w[64];
	snprintf(w, sizeof(w), "steps[%zu].copy", i);
	if (!json_is_object(c))
		return errf(err, errlen, -EINVAL,
		            "'%s' must be an object {files, src, dest, chown, mode}", w);
	const char *k;
	json_t *v;
	json_object_foreach(c, k, v)
	{
		if (strcmp(k, "files") && strcmp(k, "src") && strcmp(k, "dest") &&
		    strcmp(k, "chown") && strcmp(k, "mode"))
			return errf(err, errlen, -EINVAL, "unknown field '%.64s' in %s", k, w);
	}
	json_t *fv = coved_body_field(c, "files"), *sv = coved_body_field(c, "src"),
	       *dv = coved_body_field(c, "dest");
	json_t *cv = coved_body_field(c, "chown");
	const char *files = fv ? str_of(fv, COVED_FILES_HASH_LEN, "files", err, errlen) : NULL;
	if (!files || !hash_ok(files))
		return errf(
		    err, errlen, -EINVAL,
		    "'%s.files' must be the SHA-256 (64 of [0-9a-f]) of an uploaded archive", w);
	const char *src = sv ? str_of(sv, COVED_BUILD_ARG_MAX, "src", err, errlen) : ".";
	if (!src || !src_ok(src))
		return errf(err, errlen, -EINVAL, "'%s.src' must be a relative path without '..'",
		            w);
	const char *dest = dv ? str_of(dv, COVED_BUILD_ARG_MAX, "dest", err, errlen) : NULL;
	if (!dest || dest[0] != '/')
		return errf(err, errlen, -EINVAL, "'%s.dest' must be an absolute path", w);
	const char *chown = cv ? str_of(cv, 256, "chown", err, errlen) : NULL;
	if (cv && !chown)
		return errf(err, errlen, -EINVAL, "'%s.chown' must be a user[:group] string", w);
	json_t *mv = coved_body_field(c, "mode");
	const char *mode = mv ? json_string_value(mv) : "";
	if (!mode || (mv && !coved_build_mode_ok(mode)))
		return errf(err, errlen, -EINVAL,
		            "'%s.mode' must be 3 or 4 octal digits (\"0755\")", w);
	int r =
	    coved_build_req_add(out, COVED_BSTEP_COPY, NULL, files, src, dest, chown, err, errlen);
	if (r == 0)
		snprintf(out->steps[out->nsteps - 1].mode, sizeof(out->steps[0].mode), "%s", mode);
	return r;
}

static int native_step(json_t *s, size_t i, struct coved_build_req *out, char *err, size_t errlen)
{
	if (!json_is_object(s) || json_object_size(s) != 1)
		return errf(err, errlen, -EINVAL,
		            "'steps[%zu]' must be an object of one key: run, env, workdir, user or "
		            "copy",
		            i);
	const char *k = json_object_iter_key(json_object_iter(s));
	json_t *v = json_object_iter_value(json_object_iter(s));
	char w[64];
	snprintf(w, sizeof(w), "steps[%zu].%.16s", i, k);
	if (strcmp(k, "copy") == 0)
		return native_copy(v, i, out, err, errlen);
	if (strcmp(k, "env") == 0) {
		if (!json_is_object(v) || json_object_size(v) == 0 ||
		    json_object_size(v) > COVED_E2B_ENV_MAX)
			return errf(err, errlen, -EINVAL,
			            "'%s' must be an object of 1 to %d strings", w,
			            COVED_E2B_ENV_MAX);
		const char *name;
		json_t *val;
		json_object_foreach(v, name, val)
		{
			const char *sv = json_is_string(val) && json_string_length(val) == 0
			                     ? ""
			                     : str_of(val, COVED_BUILD_ARG_MAX, w, err, errlen);
			int r = sv ? add_env(out, name, sv, w, err, errlen) : -EINVAL;
			if (r < 0)
				return r;
		}
		return 0;
	}
	static const struct {
		const char *key;
		enum coved_bstep_kind kind;
	} plain[] = { { "run", COVED_BSTEP_RUN },
		      { "workdir", COVED_BSTEP_WORKDIR },
		      { "user", COVED_BSTEP_USER } };
	for (size_t j = 0; j < sizeof(plain) / sizeof(plain[0]); j++) {
		if (strcmp(k, plain[j].key))
			continue;
		const char *a = str_of(v, COVED_BUILD_ARG_MAX, w, err, errlen);
		if (!a)
			return -EINVAL;
		if (plain[j].kind == COVED_BSTEP_WORKDIR && a[0] != '/')
			return errf(err, errlen, -EINVAL, "'%s' must be an absolute path", w);
		return coved_build_req_add(out, plain[j].kind, a, NULL, NULL, NULL, NULL, err,
		                           errlen);
	}
	return errf(err, errlen, -EINVAL,
	            "'steps[%zu]': unknown step '%.32s' (run, env, workdir, user, copy)", i, k);
}

int coved_parse_template(json_t *o, struct coved_build_req *out, char *err, size_t errlen)
{
	memset(out, 0, sizeof(*out));
	static const char *const known[] = {
		"name",      "from",       "from_template", "steps",
		"start_cmd", "ready_cmd",  "ready_port",    "ready_timeout_s",
		"cpus",      "memory_mib", "disk_mib",      "force",
		NULL
	};
	const char *k;
	json_t *v;
	json_object_foreach(o, k, v)
	{
		bool ok = false;
		for (size_t i = 0; known[i]; i++)
			ok |= strcmp(known[i], k) == 0;
		if (!ok)
			return errf(err, errlen, -EINVAL, "unknown field '%.64s'", k);
	}
	json_t *n = coved_body_field(o, "name");
	if (!n || !json_is_string(n) || !coved_build_name_ok(json_string_value(n)) ||
	    strlen(json_string_value(n)) != json_string_length(n))
		return errf(err, errlen, -EINVAL, "'name' must be 1 to %d of [A-Za-z0-9_-]",
		            COVED_BUILD_NAME_MAX);
	snprintf(out->name, sizeof(out->name), "%s", json_string_value(n));
	uint64_t cpus = 0, port = 0, rt = 0;
	int r;
	if ((r = parse_from(o, "from", "from_template", out, err, errlen)) < 0 ||
	    (r = opt_str(o, "start_cmd", COVED_BUILD_ARG_MAX, &out->start_cmd, err, errlen)) < 0 ||
	    (r = opt_str(o, "ready_cmd", COVED_BUILD_ARG_MAX, &out->ready_cmd, err, errlen)) < 0 ||
	    (r = coved_body_uint(o, "ready_port", 65535, &port, NULL, err, errlen)) < 0 ||
	    (r = coved_body_uint(o, "ready_timeout_s", 3600, &rt, NULL, err, errlen)) < 0 ||
	    (r = coved_body_uint(o, "cpus", CPUS_MAX, &cpus, NULL, err, errlen)) < 0 ||
	    (r = coved_body_uint(o, "memory_mib", MEMORY_MAX, &out->memory_mib, NULL, err,
	                         errlen)) < 0 ||
	    (r = coved_body_uint(o, "disk_mib", DISK_MAX, &out->disk_mib, NULL, err, errlen)) < 0 ||
	    (r = opt_bool(o, "force", &out->force, err, errlen)) < 0)
		return r;
	out->cpus = (unsigned int)cpus;
	out->ready_port = (unsigned int)port;
	out->ready_timeout_s = (unsigned int)rt;
	if (out->ready_cmd && out->ready_port)
		return errf(err, errlen, -EINVAL,
		            "give at most one of 'ready_cmd' and 'ready_port'");
	if ((out->ready_cmd || out->ready_port) && !out->start_cmd)
		return errf(err, errlen, -EINVAL,
		            "'ready_cmd' and 'ready_port' need a 'start_cmd'");
	json_t *steps = coved_body_field(o, "steps");
	if (steps && (!json_is_array(steps) || json_array_size(steps) > COVED_BUILD_STEPS_MAX))
		return errf(err, errlen, -EINVAL, "'steps' must be an array of at most %d steps",
		            COVED_BUILD_STEPS_MAX);
	size_t i;
	json_array_foreach(steps, i, v)
	{
		if ((r = native_step(v, i, out, err, errlen)) < 0)
			return r;
	}
	return 0;
}

/* ---- the e2b SDK's ---- */

int coved_parse_e2b_request(json_t *o, struct coved_build_req *out, char *err, size_t errlen)
{
	memset(out, 0, sizeof(*out));
	json_t *n = coved_body_field(o, "name");
	if (!n)
		n = coved_body_field(o, "alias");
	const char *name = n ? str_of(n, 256, "name", err, errlen) : NULL;
	if (!name)
		return errf(err, errlen, -EINVAL, "'name' must be a template name");
	if (strchr(name, ':'))
		return errf(err, errlen, -EINVAL,
		            "'name': tags (name:tag) are not supported by coved");
	if (!coved_build_name_ok(name))
		return errf(err, errlen, -EINVAL, "'name' must be 1 to %d of [A-Za-z0-9_-]",
		            COVED_BUILD_NAME_MAX);
	snprintf(out->name, sizeof(out->name), "%s", name);
	json_t *tags = coved_body_field(o, "tags");
	if (tags && (!json_is_array(tags) || json_array_size(tags) > 0))
		return errf(err, errlen, -EINVAL, "'tags' are not supported by coved");
	uint64_t cpus = 0, disk = 0;
	int r;
	if ((r = coved_body_uint(o, "cpuCount", CPUS_MAX, &cpus, NULL, err, errlen)) < 0 ||
	    (r = coved_body_uint(o, "memoryMB", MEMORY_MAX, &out->memory_mib, NULL, err, errlen)) <
	        0 ||
	    (r = coved_body_uint(o, "minFreeDiskMb", DISK_MAX, &disk, NULL, err, errlen)) < 0)
		return r;
	out->cpus = (unsigned int)cpus;
	return 0;
}

/* What the steps so far left as the default user and folder (E2B's
 * builder resolves a COPY's relative dest and owner from them). */
struct e2b_ctx {
	const char *user, *workdir; /* into out's steps; NULL: unset */
};

/* args[i] as a string of at most max bytes ("" allowed), or NULL. */
static const char *arg_at(json_t *args, size_t i, size_t max)
{
	json_t *v = json_array_get(args, i);
	if (!json_is_string(v) || json_string_length(v) > max ||
	    strlen(json_string_value(v)) != json_string_length(v))
		return NULL;
	return json_string_value(v);
}

static int e2b_run(json_t *args, size_t i, struct e2b_ctx *x, struct coved_build_req *out,
                   char *err, size_t errlen)
{
	const char *cmd = arg_at(args, 0, COVED_BUILD_ARG_MAX);
	const char *user = json_array_size(args) > 1 ? arg_at(args, 1, 256) : "";
	if (!cmd || !*cmd || !user || json_array_size(args) > 2)
		return errf(err, errlen, -EINVAL, "steps[%zu]: RUN takes args [command, user?]", i);
	/* A RUN of its own user: USER steps around it, back to the default
	 * the steps set (root when they set none). */
	bool own = *user && (!x->user || strcmp(user, x->user) != 0);
	int r;
	if (own && (r = coved_build_req_add(out, COVED_BSTEP_USER, user, NULL, NULL, NULL, NULL,
	                                    err, errlen)) < 0)
		return r;
	if ((r = coved_build_req_add(out, COVED_BSTEP_RUN, cmd, NULL, NULL, NULL, NULL, err,
	                             errlen)) < 0)
		return r;
	if (own) {
		r = coved_build_req_add(out, COVED_BSTEP_USER, x->user ? x->user : "root", NULL,
		                        NULL, NULL, NULL, err, errlen);
		if (r == 0)
			x->user = out->steps[out->nsteps - 1].arg;
	}
	return r;
}

static int e2b_copy(json_t *step, json_t *args, size_t i, struct e2b_ctx *x,
                    struct coved_build_req *out, char *err, size_t errlen)
{
	size_t n = json_array_size(args);
	const char *src = arg_at(args, 0, COVED_BUILD_ARG_MAX);
	const char *dest = arg_at(args, 1, COVED_BUILD_ARG_MAX);
	const char *user = n > 2 ? arg_at(args, 2, 256) : "";
	const char *mode = n > 3 ? arg_at(args, 3, 8) : "";
	if (!src || !*src || !dest || !*dest || !user || !mode || n < 2 || n > 4)
		return errf(err, errlen, -EINVAL,
		            "steps[%zu]: COPY takes args [src, dest, user?, mode?]", i);
	if (*mode && !coved_build_mode_ok(mode))
		return errf(err, errlen, -EINVAL,
		            "steps[%zu]: COPY's mode must be 3 or 4 octal digits", i);
	if (!src_ok(src))
		return errf(err, errlen, -EINVAL,
		            "steps[%zu]: COPY's src must be a relative path without '..'", i);
	json_t *h = coved_body_field(step, "filesHash");
	const char *hash = h ? json_string_value(h) : NULL;
	if (!hash || !hash_ok(hash))
		return errf(err, errlen, -EINVAL,
		            "steps[%zu]: COPY needs 'filesHash' (64 of [0-9a-f])", i);
	char abs[COVED_BUILD_ARG_MAX];
	if (dest[0] != '/') {
		if (!x->workdir)
			return errf(err, errlen, -EINVAL,
			            "steps[%zu]: COPY to a relative path needs a WORKDIR before it",
			            i);
		int l = snprintf(abs, sizeof(abs), "%s/%s", x->workdir,
		                 strncmp(dest, "./", 2) == 0 ? dest + 2 : dest);
		if (l < 0 || (size_t)l >= sizeof(abs))
			return errf(err, errlen, -EINVAL, "steps[%zu]: COPY's dest is too long", i);
		dest = abs;
	}
	const char *owner = *user ? user : x->user;
	int r =
	    coved_build_req_add(out, COVED_BSTEP_COPY, NULL, hash, src, dest, owner, err, errlen);
	if (r == 0)
		snprintf(out->steps[out->nsteps - 1].mode, sizeof(out->steps[0].mode), "%s", mode);
	return r;
}

static int e2b_step(json_t *s, size_t i, struct e2b_ctx *x, struct coved_build_req *out, char *err,
                    size_t errlen)
{
	json_t *t = coved_body_field(s, "type"), *args = coved_body_field(s, "args");
	const char *type = json_is_string(t) ? json_string_value(t) : NULL;
	if (!json_is_object(s) || !type)
		return errf(err, errlen, -EINVAL, "steps[%zu] must be an object with a 'type'", i);
	if (args && (!json_is_array(args) || json_array_size(args) > 2 * COVED_E2B_ENV_MAX))
		return errf(err, errlen, -EINVAL, "steps[%zu].args must be an array of strings", i);
	size_t n = json_array_size(args);
	if (strcmp(type, "RUN") == 0)
		return e2b_run(args, i, x, out, err, errlen);
	if (strcmp(type, "COPY") == 0)
		return e2b_copy(s, args, i, x, out, err, errlen);
	char w[32];
	snprintf(w, sizeof(w), "steps[%zu] ENV", i);
	if (strcmp(type, "ENV") == 0) {
		if (n == 0 || n % 2)
			return errf(err, errlen, -EINVAL, "%s takes args [name, value, ...]", w);
		for (size_t j = 0; j < n; j += 2) {
			const char *k = arg_at(args, j, 256),
			           *v = arg_at(args, j + 1, COVED_BUILD_ARG_MAX);
			int r = k && v ? add_env(out, k, v, w, err, errlen)
			               : errf(err, errlen, -EINVAL, "%s: args must be strings", w);
			if (r < 0)
				return r;
		}
		return 0;
	}
	bool wd = strcmp(type, "WORKDIR") == 0;
	if (wd || strcmp(type, "USER") == 0) {
		const char *a = arg_at(args, 0, wd ? COVED_BUILD_ARG_MAX : 256);
		if (!a || !*a || n != 1 || (wd && a[0] != '/'))
			return errf(err, errlen, -EINVAL, "steps[%zu]: %s takes args [%s]", i, type,
			            wd ? "an absolute path" : "user");
		int r = coved_build_req_add(out, wd ? COVED_BSTEP_WORKDIR : COVED_BSTEP_USER, a,
		                            NULL, NULL, NULL, NULL, err, errlen);
		if (r == 0 && wd) /* the step's own copy: it lives as long as out */
			x->workdir = out->steps[out->nsteps - 1].arg;
		else if (r == 0)
			x->user = out->steps[out->nsteps - 1].arg;
		return r;
	}
	return errf(err, errlen, -EINVAL, "steps[%zu]: step type '%.32s' is not supported", i,
	            type);
}

int coved_parse_e2b_build(json_t *o, struct coved_build_req *out, char *err, size_t errlen)
{
	if (coved_body_field(o, "fromImageRegistry"))
		return errf(err, errlen, -EINVAL,
		            "'fromImageRegistry': registry credentials are not supported by coved");
	int r;
	if ((r = parse_from(o, "fromImage", "fromTemplate", out, err, errlen)) < 0 ||
	    (r = opt_str(o, "startCmd", COVED_BUILD_ARG_MAX, &out->start_cmd, err, errlen)) < 0 ||
	    (r = opt_str(o, "readyCmd", COVED_BUILD_ARG_MAX, &out->ready_cmd, err, errlen)) < 0 ||
	    (r = opt_bool(o, "force", &out->force, err, errlen)) < 0)
		return r;
	if (out->ready_cmd && !out->start_cmd)
		return errf(err, errlen, -EINVAL, "'readyCmd' needs a 'startCmd'");
	json_t *steps = coved_body_field(o, "steps");
	if (steps && (!json_is_array(steps) || json_array_size(steps) > COVED_BUILD_STEPS_MAX))
		return errf(err, errlen, -EINVAL, "'steps' must be an array of at most %d steps",
		            COVED_BUILD_STEPS_MAX);
	struct e2b_ctx x = { 0 };
	size_t i;
	json_t *s;
	json_array_foreach(steps, i, s)
	{
		if ((r = e2b_step(s, i, &x, out, err, errlen)) < 0)
			return r;
	}
	return 0;
}
