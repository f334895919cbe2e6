/* coved's request bodies: bounded JSON into typed structs. */
#include "daemon/api/body.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "errf.h"

/* A field that is absent or null counts as not given. */
json_t *coved_body_field(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);
	return json_is_null(v) ? NULL : v;
}

int coved_body_uint(json_t *o, const char *key, uint64_t max, uint64_t *out, bool *given, char *err,
                    size_t errlen)
{
	json_t *v = coved_body_field(o, key);
	if (given)
		*given = v != NULL;
	if (!v)
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < 0 ||
	    (uint64_t)json_integer_value(v) > max)
		return errf(err, errlen, -EINVAL, "'%s' must be an integer from 0 to %llu", key,
		            (unsigned long long)max);
	*out = (uint64_t)json_integer_value(v);
	return 0;
}

static bool env_name_ok(const char *s)
{
	if (!*s || (*s >= '0' && *s <= '9'))
		return false;
	for (; *s; s++)
		if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') ||
		      (*s >= '0' && *s <= '9') || *s == '_'))
			return false;
	return true;
}

/* An object of strings with bounded entries; checks names as env names
 * when env is set. */
static int string_map(json_t *v, const char *key, size_t max_n, size_t max_k, size_t max_v,
                      bool env, char *err, size_t errlen)
{
	if (!json_is_object(v))
		return errf(err, errlen, -EINVAL, "'%s' must be an object of strings", key);
	if (json_object_size(v) > max_n)
		return errf(err, errlen, -EINVAL, "'%s' has more than %zu entries", key, max_n);
	const char *k;
	json_t *s;
	json_object_foreach(v, k, s)
	{
		if (!json_is_string(s))
			return errf(err, errlen, -EINVAL, "'%s.%.64s' must be a string", key, k);
		if (strlen(k) == 0 || strlen(k) > max_k)
			return errf(err, errlen, -EINVAL, "'%s' has a key of %zu bytes (1 to %zu)",
			            key, strlen(k), max_k);
		if (env && !env_name_ok(k))
			return errf(
			    err, errlen, -EINVAL,
			    "'%s' key '%.64s' is not a variable name ([A-Za-z_][A-Za-z0-9_]*)", key,
			    k);
		size_t n = json_string_length(s);
		if (n > max_v || strlen(json_string_value(s)) != n)
			return errf(err, errlen, -EINVAL,
			            "'%s.%.64s' must be a string of at most %zu bytes without NUL",
			            key, k, max_v);
	}
	return 0;
}

static int rule_list(json_t *v, const char *key, char *err, size_t errlen)
{
	if (!json_is_array(v))
		return errf(err, errlen, -EINVAL, "'network.%s' must be an array of strings", key);
	if (json_array_size(v) > 256)
		return errf(err, errlen, -EINVAL, "'network.%s' has more than 256 rules", key);
	size_t i;
	json_t *s;
	json_array_foreach(v, i, s)
	{
		if (!json_is_string(s) || json_string_length(s) == 0 ||
		    json_string_length(s) > COVED_RULE_LEN_MAX ||
		    strlen(json_string_value(s)) != json_string_length(s))
			return errf(err, errlen, -EINVAL,
			            "'network.%s[%zu]' must be a rule string of 1 to %d bytes", key,
			            i, COVED_RULE_LEN_MAX);
	}
	return 0;
}

/* Every key of o is known (or skip, which may be NULL). */
static int check_keys(json_t *o, const char *const *known, const char *skip, const char *where,
                      char *err, size_t errlen)
{
	const char *k;
	json_t *v;
	json_object_foreach(o, k, v)
	{
		bool ok = skip && strcmp(skip, k) == 0;
		for (size_t i = 0; known[i]; i++)
			ok |= strcmp(known[i], k) == 0;
		if (!ok)
			return errf(err, errlen, -EINVAL, "unknown field '%.64s' in %s", k, where);
	}
	return 0;
}

/* allow_internet_access of o; absent or null: not given. */
static int parse_internet(json_t *o, struct coved_net *out, char *err, size_t errlen)
{
	memset(out, 0, sizeof(*out));
	out->internet = true;
	json_t *ia = coved_body_field(o, "allow_internet_access");
	if (ia) {
		if (!json_is_boolean(ia))
			return errf(err, errlen, -EINVAL,
			            "'allow_internet_access' must be a boolean");
		out->internet = json_is_true(ia);
		out->internet_given = true;
		out->given = true;
	}
	return 0;
}

/* The fields of a network object (skip: a key of net that is not one). */
static int net_fields(json_t *net, const char *skip, struct coved_net *out, char *err,
                      size_t errlen)
{
	static const char *const known[] = {
		"allowOut",           "denyOut",         "egressProxy", "rules",
		"allowPublicTraffic", "maskRequestHost", NULL
	};
	int r = check_keys(net, known, skip, "'network'", err, errlen);
	if (r < 0)
		return r;
	static const char *const unsupported[] = { "egressProxy", "rules", "maskRequestHost",
		                                   NULL };
	for (size_t i = 0; unsupported[i]; i++)
		if (coved_body_field(net, unsupported[i]))
			return errf(err, errlen, -EINVAL, "'network.%s' is not supported by coved",
			            unsupported[i]);
	json_t *a = coved_body_field(net, "allowOut"), *dn = coved_body_field(net, "denyOut");
	if (a && (r = rule_list(a, "allowOut", err, errlen)) < 0)
		return r;
	if (dn && (r = rule_list(dn, "denyOut", err, errlen)) < 0)
		return r;
	/* Who may reach the sandbox's ports is not its egress policy. */
	json_t *pt = coved_body_field(net, "allowPublicTraffic");
	if (pt && !json_is_boolean(pt))
		return errf(err, errlen, -EINVAL, "'network.allowPublicTraffic' must be a boolean");
	if (pt && skip)
		return errf(err, errlen, -EINVAL,
		            "'allowPublicTraffic' is set at create and cannot change");
	out->public_given = pt != NULL;
	out->public_traffic = !pt || json_is_true(pt);
	/* A network object that only says this asks for no network. */
	out->given = !(pt && json_object_size(net) == 1);
	out->allow_out = a ? json_incref(a) : NULL;
	out->deny_out = dn ? json_incref(dn) : NULL;
	return 0;
}

int coved_parse_net(json_t *o, struct coved_net *out, char *err, size_t errlen)
{
	int r = parse_internet(o, out, err, errlen);
	if (r < 0)
		return r;
	json_t *net = coved_body_field(o, "network");
	if (!net)
		return 0;
	if (!json_is_object(net))
		return errf(err, errlen, -EINVAL, "'network' must be an object");
	return net_fields(net, NULL, out, err, errlen);
}

int coved_parse_net_update(json_t *o, struct coved_net *out, char *err, size_t errlen)
{
	int r = parse_internet(o, out, err, errlen);
	if (r < 0)
		return r;
	return net_fields(o, "allow_internet_access", out, err, errlen);
}

int coved_parse_create(json_t *o, struct coved_create *out, char *err, size_t errlen)
{
	memset(out, 0, sizeof(*out));
	static const char *const known[] = {
		"templateID",
		"metadata",
		"envVars",
		"timeout",
		"allow_internet_access",
		"network",
		"autoPause",
		"autoPauseMemory",
		"autoResume",
		"mcp",
		"iam",
		"volumeMounts",
		"secure",
		"cpuCount",
		"memoryMB",
		"idleTimeout",
		NULL,
	};
	int r = check_keys(o, known, NULL, "the create request", err, errlen);
	if (r < 0)
		return r;
	static const char *const unsupported[] = { "mcp", "iam", "volumeMounts", NULL };
	for (size_t i = 0; unsupported[i]; i++)
		if (coved_body_field(o, unsupported[i]))
			return errf(err, errlen, -EINVAL, "'%s' is not supported by coved",
			            unsupported[i]);
	json_t *t = coved_body_field(o, "templateID");
	if (t) {
		if (!json_is_string(t) || json_string_length(t) == 0 ||
		    json_string_length(t) > COVED_TEMPLATE_LEN_MAX)
			return errf(err, errlen, -EINVAL,
			            "'templateID' must be a string of 1 to %d bytes",
			            COVED_TEMPLATE_LEN_MAX);
		const char *s = json_string_value(t);
		for (const char *p = s; *p; p++)
			if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
			      (*p >= '0' && *p <= '9') || *p == '_' || *p == '-'))
				return errf(err, errlen, -EINVAL,
				            "'templateID' may hold only [A-Za-z0-9_-]");
		if (strlen(s) != json_string_length(t))
			return errf(err, errlen, -EINVAL, "'templateID' holds a NUL");
		snprintf(out->template_id, sizeof(out->template_id), "%s", s);
	} else {
		snprintf(out->template_id, sizeof(out->template_id), "base");
	}
	json_t *m = coved_body_field(o, "metadata");
	if (m && (r = string_map(m, "metadata", COVED_META_MAX, COVED_META_KEY_MAX,
	                         COVED_META_VAL_MAX, false, err, errlen)) < 0)
		return r;
	json_t *e = coved_body_field(o, "envVars");
	if (e && (r = string_map(e, "envVars", COVED_ENV_MAX, 256, COVED_ENV_VAL_MAX, true, err,
	                         errlen)) < 0)
		return r;
	bool given;
	if ((r = coved_body_uint(o, "timeout", UINT32_MAX, &out->timeout_s, &given, err, errlen)) <
	    0)
		return r;
	if (given && out->timeout_s == 0)
		return errf(err, errlen, -EINVAL, "'timeout' must be at least 1 second");
	json_t *ap = coved_body_field(o, "autoPause");
	if (ap) {
		if (!json_is_boolean(ap))
			return errf(err, errlen, -EINVAL, "'autoPause' must be a boolean");
		out->auto_pause = json_is_true(ap);
		out->auto_pause_given = true;
	}
	json_t *apm = coved_body_field(o, "autoPauseMemory");
	if (apm && !json_is_true(apm))
		return errf(err, errlen, -EINVAL,
		            "'autoPauseMemory' false (a file-system-only pause) is not supported "
		            "by coved");
	json_t *ar = coved_body_field(o, "autoResume");
	if (ar) {
		json_t *en = json_is_object(ar) ? json_object_get(ar, "enabled") : NULL;
		if (!json_is_object(ar) || (en && !json_is_boolean(en)))
			return errf(err, errlen, -EINVAL,
			            "'autoResume' must be {\"enabled\": bool}");
		out->auto_resume = json_is_true(en);
		out->auto_resume_given = true;
		if (out->auto_resume && !(out->auto_pause_given && out->auto_pause))
			return errf(err, errlen, -EINVAL,
			            "'autoResume' enabled needs 'autoPause': true");
	}
	if ((r = coved_body_uint(o, "idleTimeout", UINT32_MAX, &out->idle_s, &given, err, errlen)) <
	    0)
		return r;
	if (given && out->idle_s == 0)
		return errf(err, errlen, -EINVAL, "'idleTimeout' must be at least 1 second");
	json_t *sec = coved_body_field(o, "secure");
	if (sec && !json_is_boolean(sec))
		return errf(err, errlen, -EINVAL, "'secure' must be a boolean");
	uint64_t v = 0;
	if ((r = coved_body_uint(o, "cpuCount", 64, &v, &given, err, errlen)) < 0)
		return r;
	out->cpus = (unsigned int)v;
	if ((r = coved_body_uint(o, "memoryMB", (uint64_t)1 << 20, &out->memory_mib, &given, err,
	                         errlen)) < 0)
		return r;
	if ((r = coved_parse_net(o, &out->net, err, errlen)) < 0)
		return r;
	out->metadata = m ? json_incref(m) : NULL;
	out->env_vars = e ? json_incref(e) : NULL;
	return 0;
}

int coved_parse_timeout(json_t *o, bool required, uint64_t *timeout_s, char *err, size_t errlen)
{
	bool given;
	*timeout_s = 0;
	int r = coved_body_uint(o, "timeout", UINT32_MAX, timeout_s, &given, err, errlen);
	if (r < 0)
		return r;
	if (required && !given)
		return errf(err, errlen, -EINVAL, "'timeout' (seconds) is required");
	if (given && *timeout_s == 0)
		return errf(err, errlen, -EINVAL, "'timeout' must be at least 1 second");
	return 0;
}

int coved_parse_fork(json_t *o, unsigned int *count, uint64_t *timeout_s, char *err, size_t errlen)
{
	bool given;
	uint64_t c = 1;
	int r = coved_body_uint(o, "count", COVED_FORK_MAX, &c, &given, err, errlen);
	if (r < 0)
		return r;
	if (c == 0)
		return errf(err, errlen, -EINVAL, "'count' must be 1 to %d", COVED_FORK_MAX);
	*count = (unsigned int)c;
	return coved_parse_timeout(o, false, timeout_s, err, errlen);
}
