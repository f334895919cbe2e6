/* template.json (docs/templates.md): a template's manifest parsed from a
 * file we may not have written ourselves (a store is a directory someone
 * could edit), so every field is checked and unknown keys refused; and
 * its text. */
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cove_limits.h"
#include "errf.h"
#include "lib/base/cove_types.h"
#include "lib/template/template_json.h"

#define MANIFEST_MAX   (1 << 20)
#define DISK_SIZE_MAX  (64ULL << 40)
#define MEMORY_MAX_MIB (1ULL << 20)
#define GUEST_PATH_MAX 4096
#define LIST_MAX       4096 /* entries of a config list */

static int get_str(json_t *o, const char *key, size_t max, bool abs, char **out, char *err,
                   size_t errlen)
{
	json_t *v = json_object_get(o, key);
	const char *s = json_string_value(v);
	if (!s || json_string_length(v) == 0 || json_string_length(v) >= max ||
	    strlen(s) != json_string_length(v) || (abs && s[0] != '/'))
		return errf(err, errlen, -EINVAL,
		            "template.json: '%s' must be %s of under %zu bytes", key,
		            abs ? "an absolute path" : "a string", max);
	if (!(*out = strdup(s)))
		return errf(err, errlen, -ENOMEM, "out of memory");
	return 0;
}

/* An optional string: absent or null leaves *out NULL. */
static int opt_str(json_t *o, const char *key, size_t max, bool abs, char **out, char *err,
                   size_t errlen)
{
	json_t *v = json_object_get(o, key);
	return !v || json_is_null(v) ? 0 : get_str(o, key, max, abs, out, err, errlen);
}

static int get_uint(json_t *o, const char *key, uint64_t lo, uint64_t hi, uint64_t *out, char *err,
                    size_t errlen)
{
	json_t *v = json_object_get(o, key);
	if (!json_is_integer(v) || json_integer_value(v) < 0 ||
	    (uint64_t)json_integer_value(v) < lo || (uint64_t)json_integer_value(v) > hi)
		return errf(err, errlen, -EINVAL,
		            "template.json: '%s' must be an integer from %llu to %llu", key,
		            (unsigned long long)lo, (unsigned long long)hi);
	*out = (uint64_t)json_integer_value(v);
	return 0;
}

/* A list of strings into a NULL-terminated vector; absent leaves NULL. */
static int get_strv(json_t *o, const char *key, size_t max, char ***out, size_t *n, char *err,
                    size_t errlen)
{
	json_t *a = json_object_get(o, key);
	if (!a || json_is_null(a))
		return 0;
	if (!json_is_array(a) || json_array_size(a) > max)
		return errf(err, errlen, -EINVAL,
		            "template.json: '%s' must be a list of at most %zu strings", key, max);
	char **v = calloc(json_array_size(a) + 1, sizeof(*v));
	if (!v)
		return errf(err, errlen, -ENOMEM, "out of memory");
	*out = v;
	size_t i;
	json_t *e;
	json_array_foreach(a, i, e)
	{
		const char *s = json_string_value(e);
		if (!s || strlen(s) != json_string_length(e) || strlen(s) > COVE_TEMPLATE_RUN_MAX)
			return errf(err, errlen, -EINVAL,
			            "template.json: '%s' must be a list of strings", key);
		if (!(v[i] = strdup(s)))
			return errf(err, errlen, -ENOMEM, "out of memory");
		if (n)
			*n = i + 1;
	}
	return 0;
}

static bool only_keys(json_t *o, const char *const *keys, size_t n, const char **bad)
{
	const char *k;
	json_t *v;
	json_object_foreach(o, k, v)
	{
		bool ok = false;
		for (size_t i = 0; i < n && !ok; i++)
			ok = !strcmp(k, keys[i]);
		if (!ok) {
			*bad = k;
			return false;
		}
	}
	return true;
}

/* A one-string step: {"env": "K=V"} and the like, added through the
 * adder that checks it. */
static const struct {
	const char *key;
	enum cove_template_step_kind kind;
} simple[] = {
	{ "run", COVE_STEP_RUN },
	{ "env", COVE_STEP_ENV },
	{ "workdir", COVE_STEP_WORKDIR },
	{ "user", COVE_STEP_USER },
	{ "arg", COVE_STEP_ARG },
	{ "cmd", COVE_STEP_CMD },
	{ "entrypoint", COVE_STEP_ENTRYPOINT },
};

static int parse_copy(json_t *j, struct cove_template_spec *s, char *err, size_t errlen)
{
	static const char *const keys[] = { "copy", "to", "srcs", "chown" };
	const char *bad;
	if (!only_keys(j, keys, 4, &bad))
		return errf(err, errlen, -EINVAL, "template.json: a copy step has no '%.32s'", bad);
	struct cove_template_step *t = NULL;
	if (s->nsteps >= COVE_TEMPLATE_STEPS_MAX)
		return errf(err, errlen, -EINVAL, "template.json: too many steps");
	struct cove_template_step *n = realloc(s->steps, (s->nsteps + 1) * sizeof(*n));
	if (!n)
		return errf(err, errlen, -ENOMEM, "out of memory");
	s->steps = n;
	t = memset(&n[s->nsteps++], 0, sizeof(*t));
	t->kind = COVE_STEP_COPY;
	int r;
	if ((r = get_str(j, "copy", PATH_MAX, true, &t->local, err, errlen)) < 0 ||
	    (r = get_str(j, "to", GUEST_PATH_MAX, true, &t->guest, err, errlen)) < 0 ||
	    (r = opt_str(j, "chown", 258, false, &t->chown, err, errlen)) < 0 ||
	    (r = get_strv(j, "srcs", COVE_TEMPLATE_SRCS_MAX, &t->srcs, &t->nsrcs, err, errlen)) < 0)
		return r;
	return 0;
}

static int parse_step(json_t *j, struct cove_template_spec *s, char *err, size_t errlen)
{
	if (!json_is_object(j))
		return errf(err, errlen, -EINVAL, "template.json: a step must be an object");
	if (json_object_get(j, "copy"))
		return parse_copy(j, s, err, errlen);
	for (size_t i = 0; i < sizeof(simple) / sizeof(simple[0]); i++) {
		const char *v = json_string_value(json_object_get(j, simple[i].key));
		if (!json_object_get(j, simple[i].key))
			continue;
		if (json_object_size(j) != 1 || !v)
			return errf(err, errlen, -EINVAL, "template.json: a %s step is {\"%s\": S}",
			            simple[i].key, simple[i].key);
		char e[256];
		int r = cove_template_add_step(s, simple[i].kind, v, e, sizeof(e));
		return r < 0 ? errf(err, errlen, r, "template.json: %s", e) : 0;
	}
	static const char *const keys[] = { "put", "to" };
	const char *bad;
	if (json_object_size(j) != 2 || !only_keys(j, keys, 2, &bad))
		return errf(err, errlen, -EINVAL,
		            "template.json: a step is run, put, copy, env, "
		            "workdir, user or arg");
	if (s->nsteps >= COVE_TEMPLATE_STEPS_MAX)
		return errf(err, errlen, -EINVAL, "template.json: too many steps");
	struct cove_template_step *n = realloc(s->steps, (s->nsteps + 1) * sizeof(*n));
	if (!n)
		return errf(err, errlen, -ENOMEM, "out of memory");
	s->steps = n;
	struct cove_template_step *t = memset(&n[s->nsteps++], 0, sizeof(*t));
	t->kind = COVE_STEP_PUT;
	int r = get_str(j, "put", PATH_MAX, true, &t->local, err, errlen);
	return r < 0 ? r : get_str(j, "to", GUEST_PATH_MAX, true, &t->guest, err, errlen);
}

static int parse_config(json_t *o, struct cove_template_config *c, char *err, size_t errlen)
{
	json_t *j = json_object_get(o, "config");
	if (!j)
		return 0;
	static const char *const keys[] = { "env",        "workdir", "user",
		                            "entrypoint", "cmd",     "image_digest" };
	const char *bad;
	if (!json_is_object(j) || !only_keys(j, keys, 6, &bad))
		return errf(err, errlen, -EINVAL, "template.json: 'config' is an object of %s",
		            "env, workdir, user, entrypoint, cmd, image_digest");
	char *digest = NULL;
	int r;
	if ((r = get_strv(j, "env", LIST_MAX, &c->env, &c->nenv, err, errlen)) < 0 ||
	    (r = opt_str(j, "workdir", GUEST_PATH_MAX, true, &c->workdir, err, errlen)) < 0 ||
	    (r = opt_str(j, "user", 258, false, &c->user, err, errlen)) < 0 ||
	    (r = get_strv(j, "entrypoint", LIST_MAX, &c->entrypoint, NULL, err, errlen)) < 0 ||
	    (r = get_strv(j, "cmd", LIST_MAX, &c->cmd, NULL, err, errlen)) < 0 ||
	    (r = opt_str(j, "image_digest", sizeof(c->image_digest), false, &digest, err, errlen)) <
	        0)
		return r;
	for (size_t i = 0; i < c->nenv; i++)
		if (!strchr(c->env[i], '=') || c->env[i][0] == '=') {
			free(digest);
			return errf(err, errlen, -EINVAL, "template.json: 'config.env' has '%.32s'",
			            c->env[i]);
		}
	if (digest)
		snprintf(c->image_digest, sizeof(c->image_digest), "%s", digest);
	free(digest);
	return 0;
}

/* The spec's optional keys: where the build starts from and its start. */
static int parse_origin(json_t *o, struct cove_template_spec *s, char *err, size_t errlen)
{
	int r;
	uint64_t v = 0;
	if ((r = opt_str(o, "from", PATH_MAX + 32, false, &s->from, err, errlen)) < 0 ||
	    (r = opt_str(o, "from_template", COVE_TEMPLATE_NAME_MAX + 1, false, &s->from_template,
	                 err, errlen)) < 0 ||
	    (r = opt_str(o, "agent", PATH_MAX, true, &s->agent, err, errlen)) < 0 ||
	    (r = opt_str(o, "start_cmd", COVE_TEMPLATE_RUN_MAX + 1, false, &s->start_cmd, err,
	                 errlen)) < 0 ||
	    (r = opt_str(o, "ready_cmd", COVE_TEMPLATE_RUN_MAX + 1, false, &s->ready_cmd, err,
	                 errlen)) < 0)
		return r;
	if (s->from_template && !cove_template_name_valid(s->from_template))
		return errf(err, errlen, -EINVAL, "template.json: 'from_template' is not a name");
	if (json_object_get(o, "ready_port") &&
	    (r = get_uint(o, "ready_port", 1, 65535, &v, err, errlen)) < 0)
		return r;
	s->ready_port = (unsigned int)v;
	v = 0;
	if (json_object_get(o, "ready_timeout_s") &&
	    (r = get_uint(o, "ready_timeout_s", 1, COVE_TEMPLATE_READY_MAX, &v, err, errlen)) < 0)
		return r;
	s->ready_timeout_s = (unsigned int)v;
	return 0;
}

static int parse_head(json_t *o, struct cove_template_manifest *m, char *err, size_t errlen)
{
	struct cove_template_spec *s = &m->spec;
	char *name = NULL, *hash = NULL;
	uint64_t v;
	int r;
	if ((r = get_uint(o, "version", 1, 1, &v, err, errlen)) < 0 ||
	    (r = get_str(o, "name", COVE_TEMPLATE_NAME_MAX + 1, false, &name, err, errlen)) < 0)
		return r;
	bool ok = cove_template_name_valid(name);
	if (ok)
		snprintf(s->name, sizeof(s->name), "%s", name);
	free(name);
	if (!ok)
		return errf(err, errlen, -EINVAL,
		            "template.json: 'name' is not a valid template name");
	if ((r = get_str(o, "inputs_hash", SHA256_HEX, false, &hash, err, errlen)) < 0)
		return r;
	bool hex = strlen(hash) == SHA256_HEX - 1;
	for (size_t i = 0; hex && hash[i]; i++)
		hex = (hash[i] >= '0' && hash[i] <= '9') || (hash[i] >= 'a' && hash[i] <= 'f');
	if (hex)
		memcpy(m->inputs_hash, hash, SHA256_HEX);
	free(hash);
	if (!hex)
		return errf(err, errlen, -EINVAL,
		            "template.json: 'inputs_hash' must be 64 hex digits");
	if ((r = get_uint(o, "created", 0, (uint64_t)1 << 40, &v, err, errlen)) < 0)
		return r;
	m->created = (int64_t)v;
	return 0;
}

static int parse_body(json_t *o, struct cove_template_spec *s, char *err, size_t errlen)
{
	uint64_t v;
	int r;
	if ((r = get_str(o, "vmm", PATH_MAX, true, &s->vmm, err, errlen)) < 0 ||
	    (r = get_str(o, "kernel", PATH_MAX, true, &s->kernel, err, errlen)) < 0 ||
	    (r = get_str(o, "image", PATH_MAX, true, &s->image, err, errlen)) < 0 ||
	    (r = get_uint(o, "cpus", 1, COVE_CPUS_MAX, &v, err, errlen)) < 0)
		return r;
	s->cpus = (unsigned int)v;
	if ((r = get_uint(o, "memory_mib", COVE_MEMORY_MIN_MIB, MEMORY_MAX_MIB, &s->memory_mib, err,
	                  errlen)) < 0 ||
	    (r = get_uint(o, "disk_size", 0, DISK_SIZE_MAX, &s->disk_size, err, errlen)) < 0)
		return r;
	const char *net = json_string_value(json_object_get(o, "net"));
	s->net = !net                   ? -1
	         : !strcmp(net, "off")  ? COVE_TEMPLATE_NET_OFF
	         : !strcmp(net, "none") ? COVE_TEMPLATE_NET_NONE
	         : !strcmp(net, "open") ? COVE_TEMPLATE_NET_OPEN
	                                : -1;
	if (s->net < 0)
		return errf(err, errlen, -EINVAL, "template.json: 'net' must be off, none or open");
	json_t *steps = json_object_get(o, "steps"), *jv;
	if (!json_is_array(steps) || json_array_size(steps) > COVE_TEMPLATE_STEPS_MAX)
		return errf(err, errlen, -EINVAL,
		            "template.json: 'steps' must be an array of at most %d",
		            COVE_TEMPLATE_STEPS_MAX);
	size_t i;
	json_array_foreach(steps, i, jv)
	{
		if ((r = parse_step(jv, s, err, errlen)) < 0)
			return r;
	}
	return parse_origin(o, s, err, errlen);
}

int template_manifest_parse(const char *text, size_t len, struct cove_template_manifest *m,
                            char *err, size_t errlen)
{
	memset(m, 0, sizeof(*m));
	if (len > MANIFEST_MAX)
		return errf(err, errlen, -EINVAL, "template.json is larger than %d bytes",
		            MANIFEST_MAX);
	json_error_t je;
	json_t *o = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	if (!json_is_object(o)) {
		json_decref(o);
		return errf(err, errlen, -EINVAL, "template.json: not a JSON object (%s)",
		            o ? "another type" : je.text);
	}
	static const char *const known[] = {
		"version",   "name",      "inputs_hash", "created",         "vmm",
		"kernel",    "image",     "cpus",        "memory_mib",      "disk_size",
		"net",       "steps",     "from",        "from_template",   "agent",
		"start_cmd", "ready_cmd", "ready_port",  "ready_timeout_s", "config",
	};
	const char *bad;
	int r;
	if (!only_keys(o, known, sizeof(known) / sizeof(known[0]), &bad))
		r = errf(err, errlen, -EINVAL, "template.json: unknown key '%.64s'", bad);
	else if ((r = parse_head(o, m, err, errlen)) == 0 &&
	         (r = parse_body(o, &m->spec, err, errlen)) == 0)
		r = parse_config(o, &m->config, err, errlen);
	json_decref(o);
	if (r < 0)
		cove_template_manifest_free(m);
	return r;
}

/* ---- the text ---- */

static json_t *strv_json(char *const *v, size_t n)
{
	json_t *a = json_array();
	for (size_t i = 0; a && v && (n ? i < n : v[i] != NULL); i++)
		json_array_append_new(a, json_string(v[i]));
	return a;
}

static json_t *step_json(const struct cove_template_step *t)
{
	if (t->kind == COVE_STEP_PUT)
		return json_pack("{s:s, s:s}", "put", t->local, "to", t->guest);
	if (t->kind == COVE_STEP_COPY) {
		json_t *j = json_pack("{s:s, s:s}", "copy", t->local, "to", t->guest);
		if (j && t->nsrcs)
			json_object_set_new(j, "srcs", strv_json(t->srcs, t->nsrcs));
		if (j && t->chown)
			json_object_set_new(j, "chown", json_string(t->chown));
		return j;
	}
	for (size_t i = 0; i < sizeof(simple) / sizeof(simple[0]); i++)
		if (simple[i].kind == t->kind)
			return json_pack("{s:s}", simple[i].key, t->run);
	return NULL;
}

static void set_opt(json_t *o, const char *key, const char *v)
{
	if (v)
		json_object_set_new(o, key, json_string(v));
}

static json_t *config_json(const struct cove_template_config *c)
{
	json_t *j = json_object();
	if (!j)
		return NULL;
	json_object_set_new(j, "env", strv_json(c->env, c->nenv));
	set_opt(j, "workdir", c->workdir);
	set_opt(j, "user", c->user);
	if (c->entrypoint)
		json_object_set_new(j, "entrypoint", strv_json(c->entrypoint, 0));
	if (c->cmd)
		json_object_set_new(j, "cmd", strv_json(c->cmd, 0));
	if (c->image_digest[0])
		json_object_set_new(j, "image_digest", json_string(c->image_digest));
	return j;
}

char *template_manifest_dump(const struct cove_template_manifest *m)
{
	const struct cove_template_spec *s = &m->spec;
	json_t *steps = json_array();
	for (size_t i = 0; steps && i < s->nsteps; i++) {
		json_t *j = step_json(&s->steps[i]);
		if (!j || json_array_append_new(steps, j) < 0) {
			json_decref(steps);
			return NULL;
		}
	}
	static const char *const nets[] = { "off", "none", "open" };
	const char *net = s->net >= 0 && s->net <= COVE_TEMPLATE_NET_OPEN ? nets[s->net] : "off";
	json_t *o =
	    json_pack("{s:i, s:s, s:s, s:I, s:s, s:s, s:s, s:i, s:I, s:I, s:s, s:o}", "version", 1,
	              "name", s->name, "inputs_hash", m->inputs_hash, "created",
	              (json_int_t)m->created, "vmm", s->vmm, "kernel", s->kernel, "image", s->image,
	              "cpus", (int)s->cpus, "memory_mib", (json_int_t)s->memory_mib, "disk_size",
	              (json_int_t)s->disk_size, "net", net, "steps", steps);
	if (o) {
		set_opt(o, "from", s->from);
		set_opt(o, "from_template", s->from_template);
		set_opt(o, "agent", s->agent);
		set_opt(o, "start_cmd", s->start_cmd);
		set_opt(o, "ready_cmd", s->ready_cmd);
		if (s->ready_port)
			json_object_set_new(o, "ready_port", json_integer(s->ready_port));
		if (s->ready_timeout_s)
			json_object_set_new(o, "ready_timeout_s", json_integer(s->ready_timeout_s));
		json_object_set_new(o, "config", config_json(&m->config));
	}
	char *text = o ? json_dumps(o, JSON_INDENT(1) | JSON_PRESERVE_ORDER) : NULL;
	json_decref(o);
	return text;
}
